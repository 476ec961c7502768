package postgres

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	switchyard "github.com/switchyard/switchyard"
	"github.com/switchyard/switchyard/store"
)

// migrationsFS is the embedded migrations/postgres folder (the root
// package embeds both stores' migrations), rooted at the files.
func migrationsFS() (fs.FS, error) {
	return fs.Sub(switchyard.Migrations, "migrations/postgres")
}

// migrationLockID is the advisory lock key of migrations ("swyd" in ASCII
// plus 1), distinct from goose's own default key.
const migrationLockID int64 = 0x73777964_00000001

func newProvider(pool *pgxpool.Pool) (*goose.Provider, func() error, error) {
	fsys, err := migrationsFS()
	if err != nil {
		return nil, nil, fmt.Errorf("migrations: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithDisableGlobalRegistry(true),
		goose.WithLogger(goose.NopLogger()),
	)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("migrations: %w", err)
	}
	return p, db.Close, nil
}

// SchemaVersion is the highest migration this binary ships.
func SchemaVersion() int64 {
	fsys, err := migrationsFS()
	if err != nil {
		return 0
	}
	entries, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return 0
	}
	var v int64
	for _, name := range entries {
		if n, err := goose.NumericComponent(name); err == nil && n > v {
			v = n
		}
	}
	return v
}

// migrate applies pending migrations, each in its own transaction with the
// row recording it. A database newer than this binary is refused.
func migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	// Processes starting together migrate one at a time: each holds a
	// session advisory lock while it looks and migrates; the others block
	// on it (no polling) and then find nothing to do.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLockID); err != nil {
		return fmt.Errorf("migrations: take lock: %w", err)
	}
	defer func() {
		// A failed unlock leaves the lock with the session: closing the
		// connection frees it.
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLockID); err != nil {
			_ = conn.Conn().Close(context.Background())
		}
	}()
	p, closeDB, err := newProvider(pool)
	if err != nil {
		return err
	}
	defer closeDB()
	current, err := p.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("migrations: read schema version: %w", err)
	}
	if known := SchemaVersion(); current > known {
		return &store.SchemaTooNewError{DBVersion: current, KnownVersion: known}
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if len(results) > 0 {
		log.Info("postgres: database migrated", "from", current, "to", SchemaVersion(), "applied", len(results))
	}
	return nil
}
