package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/pressly/goose/v3"

	switchyard "github.com/switchyard/switchyard"
)

// ErrSchemaTooNew means the database was migrated by a newer switchyard.
// Opening it with this one could corrupt data that version relies on.
var ErrSchemaTooNew = errors.New("database schema is newer than this switchyard")

// SchemaTooNewError carries the versions; errors.Is(err, ErrSchemaTooNew).
type SchemaTooNewError struct {
	DBVersion    int64 // highest migration recorded in the database
	KnownVersion int64 // highest migration this binary ships
}

func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("database schema version %d is newer than this switchyard (%d): upgrade switchyard",
		e.DBVersion, e.KnownVersion)
}

// Unwrap makes errors.Is(err, ErrSchemaTooNew) true.
func (e *SchemaTooNewError) Unwrap() error { return ErrSchemaTooNew }

// migrationsFS is the embedded migrations directory, rooted at the files.
func migrationsFS() (fs.FS, error) {
	return fs.Sub(switchyard.Migrations, "migrations")
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
		return &SchemaTooNewError{DBVersion: current, KnownVersion: known}
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
