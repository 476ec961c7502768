package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/internal/pgtest"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/postgres"
)

// TestDBCopy: switchyard db copy moves a data directory's SQLite database
// into PostgreSQL, and refuses to copy into a database that is not empty.
func TestDBCopy(t *testing.T) {
	t.Parallel()
	pg := pgtest.StartT(t)
	ctx := context.Background()
	data := t.TempDir()
	src, err := store.Open(ctx, filepath.Join(data, "switchyard.db"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := src.CreateWorkflow(ctx, store.Workflow{Name: "w", Kind: engine.KindGraph, Definition: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	dsn := pg.NewDatabase(t)

	code, out, errOut := run(t, "db", "copy", "--data", data, "--to", dsn)
	if code != exitOK || !strings.Contains(out, "1 workflows (1 versions), 0 runs") {
		t.Fatalf("db copy: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	dst, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if got, err := dst.GetWorkflow(ctx, w.ID); err != nil || got.Name != "w" {
		t.Fatalf("copied workflow: %+v, %v", got, err)
	}

	code, _, errOut = run(t, "db", "copy", "--data", data, "--to", dsn)
	if code != exitFailed || !strings.Contains(errOut, "not empty") {
		t.Fatalf("second copy: exit %d, stderr %s", code, errOut)
	}
	if code, _, _ := run(t, "db", "copy"); code != exitUsage {
		t.Fatalf("db copy without --to: exit %d, want %d", code, exitUsage)
	}
}
