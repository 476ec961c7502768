package faults

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pressly/goose/v3"
)

// TestRunStatesOnAPartlyMigratedFile: a process killed while it migrated
// a new file leaves it at an earlier schema version (each migration
// commits on its own), which the next process finishes. The suite's
// readers of the file take such a file for one without runs, as they take
// a file not made yet; they failed on the event packs' column
// ("no such column: n" in TestKillYAMLRunsCLI under load).
func TestRunStatesOnAPartlyMigratedFile(t *testing.T) {
	data := t.TempDir()
	db := openDB(t, data, 5000)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectSQLite3, db, os.DirFS(filepath.Join("..", "migrations", "sqlite")),
		goose.WithDisableGlobalRegistry(true), goose.WithLogger(goose.NopLogger()))
	if err != nil {
		t.Fatal(err)
	}
	// Up to the migration before the event packs (00012).
	if _, err := p.UpTo(context.Background(), 11); err != nil {
		t.Fatal(err)
	}
	if hasSchema(t, data) {
		t.Error("a file at schema version 11 taken for a migrated one")
	}
	if status, last := runStates(t, data); len(status) != 0 || len(last) != 0 {
		t.Errorf("runs %v, last seqs %v in a file with none", status, last)
	}
	if done := completedInDB(t, data); len(done) != 0 {
		t.Errorf("completed nodes %v in a file with none", done)
	}
}
