package copy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/internal/pgtest"
	"github.com/switchyard/switchyard/store/postgres"
)

// pg is this package's private PostgreSQL cluster; every test gets a
// database of its own on it.
var pg *pgtest.Cluster

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pg)) }

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// openDSN opens a PostgreSQL store on dsn, closed when t ends.
func openDSN(t testing.TB, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(testCtx(t), dsn, postgres.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// openStore opens a PostgreSQL store on a new, empty database.
func openStore(t testing.TB) *postgres.Store {
	t.Helper()
	return openDSN(t, pg.NewDatabase(t))
}

func mustOK(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func wantIs(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got %v, want %v", what, err, target)
	}
}

func newRun(id string) *engine.Run {
	return &engine.Run{ID: id, Kind: engine.KindGraph, Definition: json.RawMessage(`{"nodes":[]}`),
		Status: engine.StatusRunning, CreatedAt: t0, UpdatedAt: t0}
}

func ev(runID string, seq int64, content string) *engine.Event {
	return &engine.Event{Seq: seq, RunID: runID, NodeID: "n", Type: engine.EvOutput, Content: content,
		Timestamp: t0.Add(time.Duration(seq) * time.Millisecond)}
}
