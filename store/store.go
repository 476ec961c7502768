// Package store is what the engine and the server use of Switchyard's
// stores: the Store interface, the types and errors every store shares, and
// the retention loop that prunes finished runs. The stores themselves are
// drivers beside it, as River lays out its drivers:
//
//   - store/sqlite: one SQLite file, for one machine (the default);
//   - store/postgres: a PostgreSQL database several processes share;
//   - store/memory: everything in memory (tests, and the engine's default);
//   - store/copy: copying an SQLite database into PostgreSQL.
//
// store/storetest is the one conformance suite all three pass, and
// store/internal/commit the group-commit write queue both SQL stores are
// built on (each supplies only the SQL of a batch). Their migrations live
// in the top-level migrations/ folder (migrations/sqlite,
// migrations/postgres), embedded by the root package.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchyard/switchyard/engine"
)

// Store is a complete Switchyard store: the engine's runs, the commit
// hooks and counters the server reads, saved workflows, sessions ended on
// the server, YAML canvas positions and retention. Implementations are
// safe for concurrent use.
type Store interface {
	engine.Store
	// OnCommit registers h, called after every commit that wrote events or
	// run headers with exactly what was committed, in seq order per run,
	// never concurrently. h must be fast, must not modify what it gets and
	// must not call the store's write methods.
	OnCommit(h func(events []engine.Event, runs []*engine.Run))
	// Stats returns the write queue's counters.
	Stats() Stats
	// NameRuns gives YAML runs stored without a workflow id (before
	// migration 9, or started outside the server) the id name returns for
	// them: only the server knows its workflows folder. A run name cannot
	// name ("") gets none for good, so each run is looked at once. It looks
	// at up to limit runs (<= 0: all), oldest first, and returns how many.
	NameRuns(ctx context.Context, name func(r *engine.Run) string, limit int) (int, error)
	// FirstEvents returns the first event (seq 1) of each of runIDs whose
	// first event has type typ, by run id; runs without one (or unknown)
	// are left out. One query for a page of runs: the runs list marks
	// forks with it (a fork's first event says whose it is).
	FirstEvents(ctx context.Context, runIDs []string, typ string) (map[string]engine.Event, error)
	Workflows
	Sessions
	Positions
	Pruner
	// Close commits what is queued and releases the store; idempotent.
	Close() error
}

// Workflows keeps saved workflows with every version.
type Workflows interface {
	// CreateWorkflow stores w as version 1 (an id is assigned if w.ID is
	// empty). ErrConflict if the id is taken; engine.ErrInvalidWorkflow
	// for a missing name, unknown kind or invalid definition.
	CreateWorkflow(ctx context.Context, w Workflow) (*Workflow, error)
	// UpdateWorkflow saves w as the next version of w.ID if its current
	// version is expectVersion (ErrConflict otherwise).
	UpdateWorkflow(ctx context.Context, w Workflow, expectVersion int) (*Workflow, error)
	// DeleteWorkflow deletes a workflow and its versions; its runs are kept,
	// with no workflow id. ErrNotFound if unknown.
	DeleteWorkflow(ctx context.Context, id string) error
	GetWorkflow(ctx context.Context, id string) (*Workflow, error)
	// ListWorkflows lists every workflow, most recently updated first,
	// without definitions.
	ListWorkflows(ctx context.Context) ([]*Workflow, error)
	// ListVersions lists a workflow's versions, newest first, without
	// definitions. ErrNotFound if unknown.
	ListVersions(ctx context.Context, id string) ([]WorkflowVersion, error)
	GetVersion(ctx context.Context, id string, v int) (*WorkflowVersion, error)
}

// Sessions keeps the sign-ins ended on the server.
type Sessions interface {
	// RevokeSession records that session id was ended; it stays refused
	// until exp, its own expiry.
	RevokeSession(ctx context.Context, id string, exp time.Time) error
	// RevokedSessions returns the ended sessions that have not expired.
	RevokedSessions(ctx context.Context) (map[string]time.Time, error)
}

// Positions keeps where the canvas shows the nodes of YAML workflow files
// (positions are never written into the user's files).
type Positions interface {
	YAMLPositions(ctx context.Context, workflowID string) (map[string]NodePosition, error)
	SetYAMLPositions(ctx context.Context, workflowID string, pos map[string]NodePosition) error
}

// DefaultListLimit is the page size of ListRuns when the filter gives none.
const DefaultListLimit = 50

// ErrClosed is returned by operations on a closed store.
var ErrClosed = errors.New("store is closed")

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

// Stats is a snapshot of a store's write counters, the same for every
// store, so the server's metrics read any of them alike.
type Stats struct {
	QueueDepth     int    // operations waiting in the queue
	QueueCapacity  int    // size of the queue
	Batches        uint64 // transactions committed
	EventsWritten  uint64 // events committed
	Ops            uint64 // synchronous operations committed (checkpoints, run creations, lease changes)
	WriteErrors    uint64 // batches that failed to commit
	Retries        uint64 // batches run again after a deadlock or serialization failure (PostgreSQL; 0 on SQLite)
	ConnRetries    uint64 // batches run again after the database could not be reached or went away, e.g. restarted (PostgreSQL; 0 on SQLite)
	EventsRetried  uint64 // events put back in the queue after a failed batch
	EventsDropped  uint64 // events given up on (repeated failures, unknown run or duplicate seq, store closed)
	QueueFullWaits uint64 // enqueues that found the queue full and had to wait
	LastBatchSize  int    // operations in the last committed batch
	LargestBatch   int    // most operations in one committed batch
	LastWriteError string // text of the last write error, "" if none
	// WriterBusy is the time the writer spent writing batches and
	// reporting their commits (hooks, waiting callers), the work that
	// one goroutine does for the whole process: its share of the elapsed
	// time is the writer's utilization, and throughput stops growing with
	// cores as it nears 100 % (SQLite; on PostgreSQL, per process).
	WriterBusy time.Duration
}

// Workflow is a saved workflow: its current version. Definition is the
// graph JSON, or for kind yaml a JSON value holding the YAML source as the
// server chooses; the store only requires valid JSON.
type Workflow struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Kind        string          `json:"kind"` // engine.KindGraph or engine.KindYAML
	Definition  json.RawMessage `json:"definition,omitempty"`
	Version     int             `json:"version"`
	CreatedAt   time.Time       `json:"createdAt"`
	UpdatedAt   time.Time       `json:"updatedAt"`
}

// WorkflowVersion is one saved version of a workflow.
type WorkflowVersion struct {
	WorkflowID  string          `json:"workflowId"`
	Version     int             `json:"version"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Kind        string          `json:"kind"`
	Definition  json.RawMessage `json:"definition,omitempty"`
	CreatedAt   time.Time       `json:"createdAt"` // when this version was saved
}

// ValidateWorkflow checks what every store requires of a workflow: a name,
// a known kind and a JSON definition (engine.ErrInvalidWorkflow otherwise).
func ValidateWorkflow(w *Workflow) error {
	var problems []string
	if strings.TrimSpace(w.Name) == "" {
		problems = append(problems, "name is required")
	}
	if w.Kind != engine.KindGraph && w.Kind != engine.KindYAML {
		problems = append(problems, fmt.Sprintf("kind %q must be %q or %q", w.Kind, engine.KindGraph, engine.KindYAML))
	}
	switch {
	case len(w.Definition) == 0:
		problems = append(problems, "definition is required")
	case !json.Valid(w.Definition):
		problems = append(problems, "definition is not valid JSON")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", engine.ErrInvalidWorkflow, strings.Join(problems, "; "))
	}
	return nil
}

// NodePosition is where the canvas shows a node.
type NodePosition struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}
