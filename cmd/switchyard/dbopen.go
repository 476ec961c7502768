package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/internal/ownerlock"
	"github.com/switchyard/switchyard/server"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/postgres"
	"github.com/switchyard/switchyard/store/sqlite"
)

// runStore is what the commands need of a store: all of store.Store (the
// engine's runs, the server's reads, retention, Close). The SQLite and the
// PostgreSQL store are one.
type runStore = store.Store

var _ server.Store = runStore(nil)

// errDBURL is returned for a --db that is not a PostgreSQL URL.
var errDBURL = errors.New("want a PostgreSQL URL (postgres://user@host/db)")

// dbFlag registers --db (default $SWITCHYARD_DB).
func dbFlag(fs *flag.FlagSet) *string {
	v := os.Getenv("SWITCHYARD_DB")
	fs.Var(secretURL{&v}, "db",
		"PostgreSQL URL (postgres://user@host/db) of a database several processes share (default $SWITCHYARD_DB); without it, the SQLite file of --data")
	return &v
}

// secretURL is a flag holding a database URL: -h and usage errors show it
// without its password.
type secretURL struct{ v *string }

func (s secretURL) String() string {
	if s.v == nil || *s.v == "" {
		return ""
	}
	if r, err := redactDB(*s.v); err == nil {
		return r
	}
	return "(set)"
}

func (s secretURL) Set(v string) error { *s.v = v; return nil }

// opened is a store a command opened, with where it is.
type opened struct {
	st runStore
	// sqlite is the SQLite file; "" on PostgreSQL.
	sqlite string
	// where names the database in logs (a URL without its password).
	where string
	// artifacts is the root of the runs' $ARTIFACTS_DIR.
	artifacts string
}

// workspaces holds the folders of drawn runs whose agents use tools;
// worktrees the git worktrees of isolated YAML runs. Both sit beside the
// artifacts, in the data folder (files of this machine, on PostgreSQL too).
func (o *opened) workspaces() string { return filepath.Join(filepath.Dir(o.artifacts), "workspaces") }
func (o *opened) worktrees() string  { return filepath.Join(filepath.Dir(o.artifacts), "worktrees") }

// storeOptions say how a command opens the store.
type storeOptions struct {
	db, data string
	logger   *slog.Logger
	// remote follows other processes' commits (PostgreSQL): serve needs
	// it for live events of runs another process drives.
	remote bool
}

// openStore opens the PostgreSQL database of o.db when given, else the
// SQLite file of o.data.
func openStore(ctx context.Context, o storeOptions) (*opened, error) {
	if o.db == "" {
		opts := []sqlite.Option{}
		if o.logger != nil {
			opts = append(opts, sqlite.WithLogger(o.logger))
		}
		st, err := sqlite.Open(ctx, dbPath(o.data), opts...)
		if err != nil {
			return nil, err
		}
		return &opened{st: st, sqlite: st.Path(), where: st.Path(),
			artifacts: filepath.Join(filepath.Dir(st.Path()), "artifacts")}, nil
	}
	where, err := redactDB(o.db)
	if err != nil {
		return nil, err
	}
	opts := []postgres.Option{}
	if o.logger != nil {
		opts = append(opts, postgres.WithLogger(o.logger))
	}
	if o.remote {
		opts = append(opts, postgres.WithRemoteCommits())
	}
	st, err := postgres.Open(ctx, o.db, opts...)
	if err != nil {
		return nil, fmt.Errorf("--db %s: %w", where, err)
	}
	// Artifacts are files of this machine, beside where SQLite would be.
	return &opened{st: st, where: where, artifacts: filepath.Join(filepath.Dir(dbPath(o.data)), "artifacts")}, nil
}

// redactDB checks that db is a PostgreSQL URL and returns it without its
// password, for logs.
func redactDB(db string) (string, error) {
	u, err := url.Parse(db)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("--db: %w", errDBURL)
	}
	return u.Redacted(), nil
}

// registerOwners holds this process's owner lock beside a SQLite file
// (see registerOwner). On PostgreSQL there is none: processes on other
// machines cannot see a lock file, so leases alone decide.
func (o *opened) registerOwners(cfg *engine.Config, logger *slog.Logger) *ownerlock.Registry {
	if o.sqlite == "" {
		return nil
	}
	return registerOwner(cfg, o.sqlite, logger)
}
