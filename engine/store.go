package engine

import (
	"context"
	"time"
)

// Sink receives every event of every run, in seq order per run. Emit must
// not block for long: the engine calls it on its hot path.
type Sink interface {
	Emit(ev *Event)
}

// RunFilter selects runs for listing, newest first.
type RunFilter struct {
	WorkflowID string
	Status     RunStatus
	Limit      int       // 0 means a default (50)
	Before     time.Time // only runs created strictly before; zero means no bound
}

// Store is how the engine persists runs. The SQLite store implements it for
// real; MemStore keeps everything in memory. Implementations are safe for
// concurrent use.
type Store interface {
	Sink

	// CreateRun stores a new run, its initial node states and its first
	// events, in one transaction. When r.Owner is set, the run is stored
	// held by r.Owner until r.LeaseUntil.
	CreateRun(ctx context.Context, r *Run, nodes []*NodeState, events []*Event) error
	// Checkpoint durably writes the run header and the given node states
	// (upsert by node id), strictly after every event of this run already
	// passed to Emit. It returns once they are committed. When r.Owner is
	// set and another owner holds the run, nothing is written and the error
	// is ErrConflict. A checkpoint of a terminal status (completed, failed,
	// cancelled) also releases the run: nothing drives a finished run.
	Checkpoint(ctx context.Context, r *Run, nodes []*NodeState) error
	// GetRun returns a run header; ErrNotFound if unknown.
	GetRun(ctx context.Context, runID string) (*Run, error)
	// LoadRun returns the header, every node state and the highest event seq
	// stored for the run.
	LoadRun(ctx context.Context, runID string) (*Run, []*NodeState, int64, error)
	// ListRuns lists run headers, newest first.
	ListRuns(ctx context.Context, f RunFilter) ([]*Run, error)
	// Events returns up to limit events with seq > after, in seq order
	// (limit <= 0: all).
	Events(ctx context.Context, runID string, after int64, limit int) ([]Event, error)

	// AcquireRun makes owner the run's driver until leaseUntil. It succeeds
	// when the run has no owner, is owned by owner, or its lease has expired
	// (checked against now), and when expect is empty or equals the stored
	// status; otherwise ErrConflict. This is the compare-and-swap that makes
	// two resumes or two recovering processes race safely.
	AcquireRun(ctx context.Context, runID, owner string, expect RunStatus, now, leaseUntil time.Time) error
	// ClaimWaitingNode atomically moves a node from waiting to running for
	// owner (who must hold the run) and stores decision with it;
	// ErrConflict if it was not waiting.
	ClaimWaitingNode(ctx context.Context, runID, nodeID, owner string, decision []byte) error
	// RenewLeases extends every lease owner holds.
	RenewLeases(ctx context.Context, owner string, leaseUntil time.Time) error
	// HeldRuns lists the runs owner holds now: owned by it, with a lease
	// that has not expired. A process learns from it which of the runs it
	// drives another process took over while it stalled.
	HeldRuns(ctx context.Context, owner string) ([]string, error)
	// ExpireLeases ends at once every lease owner holds: owner is known
	// dead (see Config.Owners), so its runs are orphaned now instead of
	// when their leases run out. Runs of other owners are untouched.
	ExpireLeases(ctx context.Context, owner string) error
	// ReleaseRun clears the owner of a run that owner holds.
	ReleaseRun(ctx context.Context, runID, owner string) error
	// RequestCancel durably asks whichever process drives the run to
	// cancel it; ErrNotFound if unknown.
	RequestCancel(ctx context.Context, runID string) error
	// TakeCancelRequests returns the runs owner holds whose cancel was
	// requested, and clears those requests.
	TakeCancelRequests(ctx context.Context, owner string) ([]string, error)
	// ListOrphaned lists ids of runs a dead process was driving: no owner
	// or a lease that expired before now, and status pending or running, or
	// paused with a node still running (in flight, or a claimed decision).
	ListOrphaned(ctx context.Context, now time.Time) ([]string, error)
}
