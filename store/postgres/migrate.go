package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/switchyard/switchyard/store"
)

// The PostgreSQL migrations live beside the code that depends on them;
// the SQLite ones are embedded at the module root.
//
//go:embed migrations/*.sql
var migrations embed.FS

func newProvider(pool *pgxpool.Pool) (*goose.Provider, func() error, error) {
	fsys, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, nil, fmt.Errorf("migrations: %w", err)
	}
	// Processes starting together migrate one at a time: the first takes
	// a session advisory lock, the others wait and find nothing to do.
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, nil, fmt.Errorf("migrations: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithDisableGlobalRegistry(true),
		goose.WithLogger(goose.NopLogger()),
		goose.WithSessionLocker(locker),
	)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("migrations: %w", err)
	}
	return p, db.Close, nil
}

// SchemaVersion is the highest migration this binary ships.
func SchemaVersion() int64 {
	entries, err := fs.Glob(migrations, "migrations/*.sql")
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
