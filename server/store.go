package server

import (
	"context"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
)

// Store is what the server needs of its store: exactly the methods it
// calls. Both stores implement it: the SQLite one (*store.Store, one
// machine) and the PostgreSQL one (*postgres.Store, several processes on
// one database; opened with postgres.WithRemoteCommits, OnCommit also
// delivers what other processes commit, so a websocket on any process
// follows any run). The workflow and stats types are package store's; the
// PostgreSQL store uses the same types (aliases), and the same ErrClosed.
type Store interface {
	// Runs (the engine writes them; the server reads).
	GetRun(ctx context.Context, runID string) (*engine.Run, error)
	LoadRun(ctx context.Context, runID string) (*engine.Run, []*engine.NodeState, int64, error)
	ListRuns(ctx context.Context, f engine.RunFilter) ([]*engine.Run, error)
	Events(ctx context.Context, runID string, after int64, limit int) ([]engine.Event, error)
	// OnCommit registers a hook called with every committed batch of
	// events and run headers, in seq order per run, never concurrently;
	// it must not block.
	OnCommit(h func(events []engine.Event, runs []*engine.Run))
	// Stats feeds the store gauges of /metrics.
	Stats() store.Stats
	// NameRuns stores the workflow id of YAML runs stored without one
	// (see yaml_runs.go).
	NameRuns(ctx context.Context, name func(r *engine.Run) string, limit int) (int, error)
	// FirstEvents: the forks among a page of runs (see markForks).
	FirstEvents(ctx context.Context, runIDs []string, typ string) (map[string]engine.Event, error)

	// Saved workflows and their versions.
	CreateWorkflow(ctx context.Context, w store.Workflow) (*store.Workflow, error)
	UpdateWorkflow(ctx context.Context, w store.Workflow, expectVersion int) (*store.Workflow, error)
	DeleteWorkflow(ctx context.Context, id string) error
	GetWorkflow(ctx context.Context, id string) (*store.Workflow, error)
	ListWorkflows(ctx context.Context) ([]*store.Workflow, error)
	ListVersions(ctx context.Context, id string) ([]store.WorkflowVersion, error)
	GetVersion(ctx context.Context, id string, v int) (*store.WorkflowVersion, error)

	// Sessions ended on the server (see revocations).
	RevokeSession(ctx context.Context, id string, exp time.Time) error
	RevokedSessions(ctx context.Context) (map[string]time.Time, error)
}

var _ Store = store.Store(nil)
