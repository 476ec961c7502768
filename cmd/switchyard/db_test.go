package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/internal/pgtest"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/postgres"
	"github.com/switchyard/switchyard/store/sqlite"
)

// TestDBCopy: switchyard db copy moves a data directory's SQLite database
// into PostgreSQL, and refuses to copy into a database that is not empty.
func TestDBCopy(t *testing.T) {
	t.Parallel()
	pg := pgtest.StartT(t)
	ctx := context.Background()
	data := t.TempDir()
	src, err := sqlite.Open(ctx, filepath.Join(data, "switchyard.db"))
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

// TestDBCopyRefusesANonDatabase: a mistyped --data (no database there),
// or a file that is not a Switchyard database, is refused, naming the
// path: nothing is created there and the destination stays empty.
func TestDBCopyRefusesANonDatabase(t *testing.T) {
	t.Parallel()
	pg := pgtest.StartT(t)
	ctx := context.Background()
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "switchyard.db"), []byte("not a database at all, just text\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// An SQLite database, but not Switchyard's.
	foreign := t.TempDir()
	fdb, err := sql.Open("sqlite", filepath.Join(foreign, "switchyard.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fdb.Exec(`CREATE TABLE notes (body TEXT)`); err != nil {
		t.Fatal(err)
	}
	fdb.Close()
	for _, tc := range []struct{ name, data string }{
		{"missing", filepath.Join(t.TempDir(), "mistyped")},
		{"not SQLite", other},
		{"another SQLite database", foreign},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := pg.NewDatabase(t)
			before, _ := os.ReadFile(filepath.Join(tc.data, "switchyard.db"))
			code, out, errOut := run(t, "db", "copy", "--data", tc.data, "--to", dsn)
			if code != exitFailed || !strings.Contains(errOut, filepath.Join(tc.data, "switchyard.db")) ||
				!strings.Contains(errOut, "not a Switchyard database") {
				t.Errorf("db copy --data %s: exit %d\nstdout: %s\nstderr: %s", tc.data, code, out, errOut)
			}
			after, err := os.ReadFile(filepath.Join(tc.data, "switchyard.db"))
			if string(after) != string(before) || (before == nil && !os.IsNotExist(err)) {
				t.Errorf("the source path was changed: %d bytes -> %d bytes (%v)", len(before), len(after), err)
			}
			if _, err := os.Stat(filepath.Join(tc.data, "switchyard.db-wal")); !os.IsNotExist(err) {
				t.Errorf("a WAL was created beside the source (%v)", err)
			}
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			var tables int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil || tables != 0 {
				t.Errorf("the destination was touched: %d tables (%v)", tables, err)
			}
		})
	}
}
