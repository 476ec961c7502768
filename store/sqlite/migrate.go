package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"

	"github.com/pressly/goose/v3"

	switchyard "github.com/switchyard/switchyard"
	"github.com/switchyard/switchyard/store"
)

// ErrNotSwitchyard means a path holds no Switchyard database: nothing is
// there, or a file that is not SQLite, or an SQLite database without
// Switchyard's tables.
var ErrNotSwitchyard = errors.New("not a Switchyard database")

// CheckDatabase reports whether path is an existing Switchyard database,
// creating and changing nothing (Open would create a missing one). The
// error names the path and matches ErrNotSwitchyard when it is not one.
func CheckDatabase(ctx context.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("store: database path %q: %w", path, err)
	}
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("store: %s: no such file: %w", abs, ErrNotSwitchyard)
	case err != nil:
		return fmt.Errorf("store: %s: %w", abs, err)
	case st.IsDir():
		return fmt.Errorf("store: %s is a directory: %w", abs, ErrNotSwitchyard)
	}
	// Read-only: a file: URI with mode=ro never creates the database.
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs),
		RawQuery: url.Values{"mode": {"ro"}, "_pragma": {fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS)}}.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return fmt.Errorf("store: open %s: %w", abs, err)
	}
	defer db.Close()
	var n int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table'
AND name IN ('goose_db_version', 'workflows', 'runs')`).Scan(&n)
	if err != nil {
		return fmt.Errorf("store: %s: %v: %w", abs, err, ErrNotSwitchyard)
	}
	if n != 3 {
		return fmt.Errorf("store: %s has no Switchyard tables: %w", abs, ErrNotSwitchyard)
	}
	return nil
}

// migrationsFS is the embedded migrations directory, rooted at the files.
func migrationsFS() (fs.FS, error) {
	return fs.Sub(switchyard.Migrations, "migrations/sqlite")
}

func newProvider(db *sql.DB) (*goose.Provider, error) {
	fsys, err := migrationsFS()
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, fsys,
		goose.WithDisableGlobalRegistry(true), // only our embedded files
		goose.WithLogger(goose.NopLogger()),   // migrate logs the outcome itself
	)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}

// SchemaVersion is the highest migration this binary ships.
func SchemaVersion() int64 {
	fsys, err := migrationsFS()
	if err != nil {
		return 0
	}
	// Collect the versions the same way goose does, without a database.
	entries, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return 0
	}
	var v int64
	for _, name := range entries {
		n, err := goose.NumericComponent(name)
		if err == nil && n > v {
			v = n
		}
	}
	return v
}

// migrate applies pending migrations. goose runs each migration file in its
// own transaction together with the row recording it, so a crash leaves the
// database at a recorded version.
func migrate(ctx context.Context, db *sql.DB, log *slog.Logger) error {
	p, err := newProvider(db)
	if err != nil {
		return err
	}
	sources := p.ListSources()
	known := sources[len(sources)-1].Version
	// Creates goose's version table on an empty database.
	current, err := p.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("migrations: read schema version: %w", err)
	}
	if current > known {
		return &store.SchemaTooNewError{DBVersion: current, KnownVersion: known}
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if len(results) > 0 {
		log.Info("store: database migrated", "from", current, "to", known, "applied", len(results))
	}
	return nil
}
