package main

import (
	"context"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/server"
	"github.com/switchyard/switchyard/store/sqlite"
)

// runStore is what the program needs of the store under test.
type runStore interface {
	engine.Store
	server.Store
	Close() error
}

// openStore opens the SQLite store under test.
func openStore(ctx context.Context, path string) (runStore, error) { return sqlite.Open(ctx, path) }
