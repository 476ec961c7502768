package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/internal/commit"
	zsqlite "zombiezen.com/go/sqlite"
)

var _ store.Store = (*Store)(nil)

// Emit queues ev to be appended to its run's log and returns. The store
// keeps a copy, so the caller may reuse ev. The event is committed by the
// writer together with everything else queued at that moment; it is visible
// to reads (and passed to OnCommit hooks) once committed.
//
// When the queue is full Emit blocks until the writer has made room: that
// is backpressure on a producer faster than the disk. Emit never fails; an
// event that cannot be written (after retries, for an unknown run, or after
// Close) is logged and counted in Stats().EventsDropped.
func (s *Store) Emit(ev *engine.Event) { s.w.Emit(ev) }

// OnCommit registers h, called after every commit that wrote events or run
// headers, with exactly what was committed, in order. Hooks run on the
// writer goroutine, one after the other: they must be fast (hand off to a
// channel), must not modify what they receive (it is shared between hooks)
// and must not call the store's write methods (Emit, Checkpoint, ...),
// which would wait for the writer they are blocking. Reads are fine.
func (s *Store) OnCommit(h func(events []engine.Event, runs []*engine.Run)) {
	s.w.OnCommit(h)
}

// CreateRun stores a new run, its initial node states and its first events
// (their RunID is set to r.ID) in one transaction. r.ID is required;
// ErrConflict if a run with that id exists, ErrNotFound if r.WorkflowID is
// set but names no stored workflow. It goes through the write queue, so it
// is ordered before the run's later events.
func (s *Store) CreateRun(ctx context.Context, r *engine.Run, nodes []*engine.NodeState, events []*engine.Event) error {
	if r == nil || r.ID == "" {
		return errors.New("store: create run: run id is required")
	}
	hdr := commit.CloneRun(r)
	approvals, err := commit.ApprovalsJSON(hdr.PendingApprovals)
	if err != nil {
		return fmt.Errorf("store: create run %s: pending approvals: %w", r.ID, err)
	}
	nrows, err := nodeRows(nodes)
	if err != nil {
		return fmt.Errorf("store: create run %s: %w", r.ID, err)
	}
	var wf any
	if hdr.WorkflowID != "" {
		wf = hdr.WorkflowID
	}
	// A drawn run's workflow is a saved one; a YAML run's is a file.
	checkWorkflow := wf != nil && hdr.Kind != engine.KindYAML
	var lease int64
	if hdr.Owner != "" {
		lease = toMicros(hdr.LeaseUntil)
	}
	evs := commit.CopyEvents(hdr.ID, events)
	defHash := definitionHash(hdr.Definition)
	var defKey string
	if h, ok := defHash.([]byte); ok {
		defKey = string(h)
	}
	err = s.w.doEvents(ctx, hdr, evs, func(t *wtx) error {
		if checkWorkflow {
			var one int
			err := t.queryRow(`SELECT 1 FROM workflows WHERE id = ?`, []any{wf}, &one)
			if errors.Is(err, sql.ErrNoRows) {
				return reject(fmt.Errorf("workflow %q: %w", hdr.WorkflowID, engine.ErrNotFound))
			}
			if err != nil {
				return err
			}
		}
		b := t.c.bind(sqlInsertRun)
		b.text(hdr.ID)
		if wf == nil {
			b.null()
		} else {
			b.text(hdr.WorkflowID)
		}
		b.text(string(hdr.Kind))
		b.text(string(hdr.Status))
		bindRunState(&b, hdr, approvals)
		b.text(hdr.Owner)
		b.int64(lease)
		b.int64(toMicros(hdr.CreatedAt))
		b.int64(toMicros(hdr.UpdatedAt))
		b.time(hdr.FinishedAt)
		bindUsage(&b, hdr.Usage)
		if h, ok := defHash.([]byte); ok {
			b.blob(h)
		} else {
			b.null()
		}
		n, err := t.c.run(&b)
		if err != nil {
			return err
		}
		if n == 0 {
			return reject(fmt.Errorf("run already exists: %w", engine.ErrConflict))
		}
		if defHash != nil && !t.w.defStored(defKey) { // the foreign key is checked at commit
			if _, err := t.exec(sqlInsertDefinition, defHash, string(hdr.Definition)); err != nil {
				return err
			}
			t.w.defsWritten.Add(1)
			t.newDefs = append(t.newDefs, defKey)
		}
		if err := t.writeCreated(evs); err != nil {
			return err
		}
		if len(evs) > 0 && hdr.Owner != "" {
			t.w.fenced[hdr.ID] = hdr.Owner
		}
		return upsertNodes(t, hdr.ID, nrows)
	})
	if err != nil {
		return fmt.Errorf("store: create run %s: %w", r.ID, err)
	}
	return nil
}

// Hot run statements, prepared once by the writer.
const (
	sqlInsertRun = `INSERT INTO runs (id, workflow_id, kind, status, input,
waiting_for_input, current_node_id, pending_approvals, error, work_dir, owner, lease_until,
created_at, updated_at, finished_at, prompt_tokens, completion_tokens, total_tokens, cost_usd, definition_hash)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`
	// A definition is stored once, by content hash, for every run of it
	// (migration 10): not rewritten with the run's row on every status
	// change, and not copied per run.
	sqlInsertDefinition = `INSERT INTO definitions (hash, definition) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING`
	sqlAcquireRun       = `UPDATE runs SET owner = ?1, lease_until = ?2
WHERE id = ?3 AND (owner = '' OR owner = ?1 OR lease_until < ?4) AND (?5 = '' OR status = ?5)`
	sqlReleaseRun = `UPDATE runs SET owner = '', lease_until = 0 WHERE id = ? AND (owner = ? OR owner = '')`

	// Queries by owner say "owner <> ''" so SQLite uses the partial index
	// runs_owner; with "owner = ?" alone it cannot prove the index applies
	// and scans every run ever stored (TestQueriesUseIndexes).
	sqlRenewLeases   = `UPDATE runs SET lease_until = ? WHERE owner = ? AND owner <> ''`
	sqlExpireLeases  = `UPDATE runs SET lease_until = 0 WHERE owner = ? AND owner <> ''`
	sqlHeldRuns      = `SELECT id FROM runs WHERE owner = ? AND owner <> '' AND lease_until > ? ORDER BY id`
	sqlCancelPending = `SELECT EXISTS (SELECT 1 FROM runs WHERE owner = ? AND owner <> '' AND cancel_requested = 1)`
	sqlTakeCancels   = `UPDATE runs SET cancel_requested = 0
WHERE owner = ? AND owner <> '' AND cancel_requested = 1 RETURNING id`
	// The status list first, so the status index finds the candidates
	// instead of a scan of every run (this runs every lease period).
	sqlListOrphaned = `SELECT id FROM runs r
WHERE r.status IN ('pending', 'running', 'paused')
AND (r.owner = '' OR r.lease_until < ?1)
AND (r.status <> 'paused' OR EXISTS
  (SELECT 1 FROM node_states n WHERE n.run_id = r.id AND n.status = 'running'))
ORDER BY r.created_at, r.id`
)

// Checkpoint writes the run header and upserts the given node states in the
// writer's next batch, after every event already emitted, and returns once
// that batch committed. The header's mutable fields are written (status,
// input, waiting flag, current node, pending approvals, error, work dir,
// updated/finished times); id, workflow, kind, definition and creation time
// are fixed at CreateRun. ErrNotFound for an unknown run. If ctx ends first
// the checkpoint may or may not be committed.
func (s *Store) Checkpoint(ctx context.Context, r *engine.Run, nodes []*engine.NodeState) error {
	if r == nil {
		return errors.New("store: checkpoint: nil run")
	}
	hdr := commit.CloneRun(r)
	approvals, err := commit.ApprovalsJSON(hdr.PendingApprovals)
	if err != nil {
		return fmt.Errorf("store: checkpoint run %s: pending approvals: %w", r.ID, err)
	}
	nrows, err := nodeRows(nodes)
	if err != nil {
		return fmt.Errorf("store: checkpoint run %s: %w", r.ID, err)
	}
	release := hdr.Status.Terminal() // nothing drives a finished run
	err = s.w.do(ctx, hdr, func(t *wtx) error {
		if release {
			t.ownerMayChange(hdr.ID)
		}
		same := hdr.SameStatus && !release
		var b bound
		if same {
			b = t.c.bind(sqlUpdateRunSameStatus)
		} else {
			b = t.c.bind(sqlUpdateRun)
			b.text(string(hdr.Status))
		}
		bindRunState(&b, hdr, approvals)
		b.int64(toMicros(hdr.UpdatedAt))
		if !same {
			b.time(hdr.FinishedAt)
		}
		bindUsage(&b, hdr.Usage)
		if !same {
			b.bool(release)
			b.bool(release)
		}
		b.text(hdr.ID)
		b.text(hdr.Owner)
		b.text(hdr.Owner)
		n, err := t.c.run(&b)
		if err != nil {
			return err
		}
		if n == 0 {
			var holder, status string
			err := t.queryRow(`SELECT owner, status FROM runs WHERE id = ?`, []any{hdr.ID}, &holder, &status)
			if errors.Is(err, sql.ErrNoRows) {
				return reject(engine.ErrNotFound)
			}
			if err != nil {
				return err
			}
			if engine.RunStatus(status).Terminal() {
				// A run's end is written once and never changes.
				return reject(fmt.Errorf("run is %s: %w", status, engine.ErrTerminal))
			}
			return reject(fmt.Errorf("run is held by %q, not %q: %w", holder, hdr.Owner, engine.ErrConflict))
		}
		return upsertNodes(t, hdr.ID, nrows)
	})
	if err != nil {
		return fmt.Errorf("store: checkpoint run %s: %w", r.ID, err)
	}
	return nil
}

// AcquireRun implements engine.Store. It is queued like a checkpoint, so it
// is ordered after the run's earlier writes.
func (s *Store) AcquireRun(ctx context.Context, runID, owner string, expect engine.RunStatus, now, leaseUntil time.Time) error {
	if owner == "" {
		return fmt.Errorf("store: acquire run %s: owner is required", runID)
	}
	err := s.w.do(ctx, nil, func(t *wtx) error {
		t.ownerMayChange(runID)
		n, err := t.exec(sqlAcquireRun,
			owner, toMicros(leaseUntil), runID, toMicros(now), string(expect))
		if err != nil {
			return err
		}
		if n == 1 {
			return nil
		}
		var status, holder string
		err = t.queryRow(`SELECT status, owner FROM runs WHERE id = ?`, []any{runID}, &status, &holder)
		if errors.Is(err, sql.ErrNoRows) {
			return reject(engine.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if expect != "" && status != string(expect) {
			return reject(fmt.Errorf("run is %s, not %s: %w", status, expect, engine.ErrConflict))
		}
		return reject(fmt.Errorf("run is held by %s: %w", holder, engine.ErrConflict))
	})
	if err != nil {
		return fmt.Errorf("store: acquire run %s for %s: %w", runID, owner, err)
	}
	return nil
}

// ClaimWaitingNode implements engine.Store: the node goes from waiting to
// running only if owner holds the run. Everything else about the node is
// left as is (its Wait state included) for the executor to resume from.
func (s *Store) ClaimWaitingNode(ctx context.Context, runID, nodeID, owner string, decision []byte) error {
	if owner == "" {
		return fmt.Errorf("store: claim node %s of run %s: owner is required", nodeID, runID)
	}
	dec := nullText(bytes.Clone(decision))
	err := s.w.do(ctx, nil, func(t *wtx) error {
		n, err := t.exec(`UPDATE node_states SET status = 'running', decision = ?4
WHERE run_id = ?1 AND node_id = ?2 AND status = 'waiting'
AND EXISTS (SELECT 1 FROM runs WHERE id = ?1 AND owner = ?3)`, runID, nodeID, owner, dec)
		if err != nil {
			return err
		}
		if n == 1 {
			return nil
		}
		var holder sql.NullString
		var status sql.NullString
		err = t.queryRow(`SELECT r.owner, n.status FROM runs r
LEFT JOIN node_states n ON n.run_id = r.id AND n.node_id = ?2 WHERE r.id = ?1`, []any{runID, nodeID}, &holder, &status)
		if errors.Is(err, sql.ErrNoRows) {
			return reject(fmt.Errorf("run: %w", engine.ErrNotFound))
		}
		if err != nil {
			return err
		}
		if !status.Valid {
			return reject(fmt.Errorf("node: %w", engine.ErrNotFound))
		}
		if holder.String != owner {
			return reject(fmt.Errorf("run is not held by %s: %w", owner, engine.ErrConflict))
		}
		return reject(fmt.Errorf("node is %q, not waiting: %w", status.String, engine.ErrConflict))
	})
	if err != nil {
		return fmt.Errorf("store: claim node %s of run %s: %w", nodeID, runID, err)
	}
	return nil
}

// ExpireLeases implements engine.Store. The owner stays recorded, so its
// writes stay fenced off; its runs become orphaned.
func (s *Store) ExpireLeases(ctx context.Context, owner string) error {
	if owner == "" {
		return nil // nobody's leases: never touch unowned runs
	}
	err := s.w.do(ctx, nil, func(t *wtx) error {
		_, err := t.exec(sqlExpireLeases, owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: expire leases of %s: %w", owner, err)
	}
	return nil
}

// RenewLeases implements engine.Store.
func (s *Store) RenewLeases(ctx context.Context, owner string, leaseUntil time.Time) error {
	if owner == "" {
		return nil // nobody's leases: never touch unowned runs
	}
	err := s.w.do(ctx, nil, func(t *wtx) error {
		_, err := t.exec(sqlRenewLeases, toMicros(leaseUntil), owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: renew leases of %s: %w", owner, err)
	}
	return nil
}

// HeldRuns implements engine.Store.
func (s *Store) HeldRuns(ctx context.Context, owner string) ([]string, error) {
	if owner == "" {
		return nil, nil
	}
	rows, err := s.rd().QueryContext(ctx, sqlHeldRuns, owner, toMicros(s.now()))
	if err != nil {
		return nil, fmt.Errorf("store: runs held by %s: %w", owner, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: runs held by %s: %w", owner, err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// ReleaseRun implements engine.Store. Releasing a run nobody holds is a
// no-op; ErrConflict if another owner holds it, ErrNotFound if unknown.
func (s *Store) ReleaseRun(ctx context.Context, runID, owner string) error {
	err := s.w.do(ctx, nil, func(t *wtx) error {
		t.ownerMayChange(runID)
		n, err := t.exec(sqlReleaseRun,
			runID, owner)
		if err != nil {
			return err
		}
		if n == 1 {
			return nil
		}
		var holder string
		err = t.queryRow(`SELECT owner FROM runs WHERE id = ?`, []any{runID}, &holder)
		if errors.Is(err, sql.ErrNoRows) {
			return reject(engine.ErrNotFound)
		}
		if err != nil {
			return err
		}
		return reject(fmt.Errorf("run is held by %s: %w", holder, engine.ErrConflict))
	})
	if err != nil {
		return fmt.Errorf("store: release run %s by %s: %w", runID, owner, err)
	}
	return nil
}

// RequestCancel implements engine.Store.
func (s *Store) RequestCancel(ctx context.Context, runID string) error {
	err := s.w.do(ctx, nil, func(t *wtx) error {
		n, err := t.exec(`UPDATE runs SET cancel_requested = 1 WHERE id = ?`, runID)
		if err != nil {
			return err
		}
		if n == 0 {
			return reject(engine.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: request cancel of run %s: %w", runID, err)
	}
	return nil
}

// TakeCancelRequests implements engine.Store. It first asks the read pool,
// so polling with nothing requested costs no write.
func (s *Store) TakeCancelRequests(ctx context.Context, owner string) ([]string, error) {
	if owner == "" {
		return nil, nil
	}
	var pending bool
	err := s.rd().QueryRowContext(ctx, sqlCancelPending, owner).Scan(&pending)
	if err != nil || !pending {
		return nil, err
	}
	var ids []string
	err = s.w.do(ctx, nil, func(t *wtx) error {
		ids = ids[:0]
		return t.c.query(sqlTakeCancels, []any{owner}, func(st *zsqlite.Stmt) error {
			ids = append(ids, st.ColumnText(0))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: take cancel requests of %s: %w", owner, err)
	}
	sort.Strings(ids)
	return ids, nil
}

// --- reads: all through the read pool, seeing committed data only ---

const runColumns = `id, workflow_id, kind,
coalesce((SELECT d.definition FROM definitions d WHERE d.hash = runs.definition_hash), ''),
status, input, waiting_for_input,
current_node_id, pending_approvals, error, work_dir, created_at, updated_at, finished_at,
prompt_tokens, completion_tokens, total_tokens, cost_usd`

type scanner interface{ Scan(dest ...any) error }

func scanRun(sc scanner) (*engine.Run, error) {
	var (
		r          engine.Run
		wf         sql.NullString
		def        string
		status     string
		approvals  string
		created    int64
		updated    int64
		finishedAt sql.NullInt64
		cost       sql.NullFloat64
	)
	if err := sc.Scan(&r.ID, &wf, &r.Kind, &def, &status, &r.Input, &r.WaitingForInput,
		&r.CurrentNodeID, &approvals, &r.Error, &r.WorkDir, &created, &updated, &finishedAt,
		&r.Usage.PromptTokens, &r.Usage.CompletionTokens, &r.Usage.TotalTokens, &cost); err != nil {
		return nil, err
	}
	if cost.Valid {
		r.Usage.CostUSD = &cost.Float64
	}
	r.WorkflowID = wf.String
	if def != "" {
		r.Definition = json.RawMessage(def)
	}
	r.Status = engine.RunStatus(status)
	if approvals != "" && approvals != "null" {
		if err := json.Unmarshal([]byte(approvals), &r.PendingApprovals); err != nil {
			return nil, fmt.Errorf("run %s: pending approvals: %w", r.ID, err)
		}
		for i := range r.PendingApprovals {
			r.PendingApprovals[i].Since = r.PendingApprovals[i].Since.UTC()
		}
	}
	r.CreatedAt = fromMicros(created)
	r.UpdatedAt = fromMicros(updated)
	r.FinishedAt = optTime(finishedAt)
	return &r, nil
}

// GetRun implements engine.Store.
func (s *Store) GetRun(ctx context.Context, runID string) (*engine.Run, error) {
	r, err := getRun(ctx, s.rd(), runID)
	if err != nil {
		return nil, fmt.Errorf("store: get run %s: %w", runID, err)
	}
	return r, nil
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func getRun(ctx context.Context, q queryer, runID string) (*engine.Run, error) {
	r, err := scanRun(q.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, runID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, engine.ErrNotFound
	}
	return r, err
}

// LoadRun implements engine.Store. Header, node states (in the order first
// stored) and the highest event seq (0 if none) come from one snapshot.
func (s *Store) LoadRun(ctx context.Context, runID string) (*engine.Run, []*engine.NodeState, int64, error) {
	r, nodes, maxSeq, err := s.loadRun(ctx, runID)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("store: load run %s: %w", runID, err)
	}
	return r, nodes, maxSeq, nil
}

func (s *Store) loadRun(ctx context.Context, runID string) (*engine.Run, []*engine.NodeState, int64, error) {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, 0, err
	}
	defer func() { _ = tx.Rollback() }() // read-only: nothing to commit
	rtx := reader{c: s.reads, tx: tx}
	r, err := getRun(ctx, rtx, runID)
	if err != nil {
		return nil, nil, 0, err
	}
	rows, err := rtx.QueryContext(ctx, `SELECT node_id, status, input, output, handle, error, visits,
attempts, fired, wait, started_at, finished_at, rejection, decision FROM node_states WHERE run_id = ? ORDER BY rowid`, runID)
	if err != nil {
		return nil, nil, 0, err
	}
	defer rows.Close()
	var nodes []*engine.NodeState
	for rows.Next() {
		var (
			n                 engine.NodeState
			status            string
			fired, wait       sql.NullString
			decision          sql.NullString
			started, finished sql.NullInt64
		)
		if err := rows.Scan(&n.NodeID, &status, &n.Input, &n.Output, &n.Handle, &n.Error, &n.Visits,
			&n.Attempts, &fired, &wait, &started, &finished, &n.Rejection, &decision); err != nil {
			return nil, nil, 0, err
		}
		n.Status = engine.NodeStatus(status)
		if fired.Valid {
			if err := json.Unmarshal([]byte(fired.String), &n.Fired); err != nil {
				return nil, nil, 0, fmt.Errorf("node %s: fired: %w", n.NodeID, err)
			}
		}
		if wait.Valid {
			n.Wait = json.RawMessage(wait.String)
		}
		if decision.Valid {
			n.Decision = json.RawMessage(decision.String)
		}
		n.StartedAt = optTime(started)
		n.FinishedAt = optTime(finished)
		nodes = append(nodes, &n)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, 0, err
	}
	var maxSeq int64
	if err := rtx.QueryRowContext(ctx, sqlLastSeq, runID).Scan(&maxSeq); err != nil {
		return nil, nil, 0, err
	}
	return r, nodes, maxSeq, nil
}

// ListRuns implements engine.Store: newest first (by creation time, then
// id), definitions included.
func (s *Store) ListRuns(ctx context.Context, f engine.RunFilter) ([]*engine.Run, error) {
	q, args := listRunsQuery(f)
	runs, err := s.queryRuns(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list runs: %w", err)
	}
	return runs, nil
}

// queryRuns reads the run headers q selects (runColumns).
func (s *Store) queryRuns(ctx context.Context, q string, args ...any) ([]*engine.Run, error) {
	rows, err := s.rd().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	runs := []*engine.Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, rows.Err()
}

// listRunsQuery builds ListRuns' query: every filter is served by an
// index that also yields the newest-first order (TestQueriesUseIndexes).
func listRunsQuery(f engine.RunFilter) (string, []any) {
	var where []string
	var args []any
	if f.WorkflowID != "" {
		where = append(where, "workflow_id = ?")
		args = append(args, f.WorkflowID)
	}
	if f.Status != "" {
		where = append(where, "status = ?")
		args = append(args, string(f.Status))
	}
	if !f.Before.IsZero() {
		where = append(where, "created_at < ?")
		args = append(args, toMicros(f.Before))
	}
	limit := f.Limit
	if limit <= 0 {
		limit = store.DefaultListLimit
	}
	q := `SELECT ` + runColumns + ` FROM runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	return q, append(args, limit)
}

const (
	// sqlEvents reads a run's events from the row holding after+1 (the
	// last one starting at or before it): rows are packs (packs.go).
	sqlEvents = `SELECT seq, node_id, type, content, ts, data, n, more FROM run_events
WHERE run_id = ? AND seq >= COALESCE((SELECT seq FROM run_events WHERE run_id = ? AND seq <= ?
ORDER BY seq DESC LIMIT 1), 0) ORDER BY seq LIMIT ?`
	// sqlLastSeq is a run's last event seq, 0 for none.
	sqlLastSeq = `SELECT COALESCE((SELECT seq + n - 1 FROM run_events WHERE run_id = ?
ORDER BY seq DESC LIMIT 1), 0)`
)

// Events implements engine.Store. ErrNotFound for an unknown run.
func (s *Store) Events(ctx context.Context, runID string, after int64, limit int) ([]engine.Event, error) {
	rowLimit := -1 // SQLite: no limit
	if limit > 0 {
		rowLimit = limit + 1 // the first row may hold only events at or before after
	}
	rows, err := s.rd().QueryContext(ctx, sqlEvents, runID, runID, after+1, rowLimit)
	if err != nil {
		return nil, fmt.Errorf("store: events of run %s: %w", runID, err)
	}
	defer rows.Close()
	events := []engine.Event{}
	for rows.Next() && (limit <= 0 || len(events) < limit) {
		ev := engine.Event{RunID: runID}
		var ts, n int64
		var data sql.NullString
		var more []byte
		if err := rows.Scan(&ev.Seq, &ev.NodeID, &ev.Type, &ev.Content, &ts, &data, &n, &more); err != nil {
			return nil, fmt.Errorf("store: events of run %s: %w", runID, err)
		}
		ev.Timestamp = fromMicros(ts)
		if data.Valid {
			ev.Data = json.RawMessage(data.String)
		}
		if ev.Seq > after && n == 1 {
			events = append(events, ev)
			continue
		}
		all, err := ExpandEvents(nil, ev, n, more)
		if err != nil {
			return nil, fmt.Errorf("store: events of run %s: %w", runID, err)
		}
		for _, e := range all {
			if e.Seq > after && (limit <= 0 || len(events) < limit) {
				events = append(events, e)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: events of run %s: %w", runID, err)
	}
	if len(events) == 0 {
		// Tell an unknown run from one with nothing new.
		var one int
		err := s.rd().QueryRowContext(ctx, `SELECT 1 FROM runs WHERE id = ?`, runID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("store: events of run %s: %w", runID, engine.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("store: events of run %s: %w", runID, err)
		}
	}
	return events, nil
}

// firstEventsChunk bounds the run ids of one FirstEvents query (SQLite's
// bound parameters).
const firstEventsChunk = 500

// FirstEvents implements store.Store: by primary key, a chunk of runs per
// query.
func (s *Store) FirstEvents(ctx context.Context, runIDs []string, typ string) (map[string]engine.Event, error) {
	out := map[string]engine.Event{}
	for len(runIDs) > 0 {
		chunk := runIDs[:min(len(runIDs), firstEventsChunk)]
		runIDs = runIDs[len(chunk):]
		args := make([]any, 0, len(chunk)+1)
		args = append(args, typ)
		for _, id := range chunk {
			args = append(args, id)
		}
		q := `SELECT run_id, seq, node_id, type, content, ts, data FROM run_events
WHERE type = ? AND seq = 1 AND run_id IN (?` + strings.Repeat(",?", len(chunk)-1) + `)`
		rows, err := s.rd().QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("store: first events: %w", err)
		}
		for rows.Next() {
			var ev engine.Event
			var ts int64
			var data sql.NullString
			if err := rows.Scan(&ev.RunID, &ev.Seq, &ev.NodeID, &ev.Type, &ev.Content, &ts, &data); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: first events: %w", err)
			}
			ev.Timestamp = fromMicros(ts)
			if data.Valid {
				ev.Data = json.RawMessage(data.String)
			}
			out[ev.RunID] = ev
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("store: first events: %w", err)
		}
	}
	return out, nil
}

// ListOrphaned implements engine.Store, oldest run first.
func (s *Store) ListOrphaned(ctx context.Context, now time.Time) ([]string, error) {
	rows, err := s.rd().QueryContext(ctx, sqlListOrphaned, toMicros(now))
	if err != nil {
		return nil, fmt.Errorf("store: list orphaned runs: %w", err)
	}
	defer rows.Close()
	ids := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: list orphaned runs: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list orphaned runs: %w", err)
	}
	return ids, nil
}

// --- copying and argument building ---

// bindRunState binds the run columns a checkpoint changes besides its
// status and times, in the order of the runs table's statements.
func bindRunState(b *bound, hdr *engine.Run, approvals []byte) {
	b.text(hdr.Input)
	b.bool(hdr.WaitingForInput)
	b.text(hdr.CurrentNodeID)
	b.textFrom(approvals)
	b.text(hdr.Error)
	b.text(hdr.WorkDir)
}

// bindUsage binds a run's token counts and cost, in the order of the runs
// table's statements.
func bindUsage(b *bound, u engine.Usage) {
	b.int64(int64(u.PromptTokens))
	b.int64(int64(u.CompletionTokens))
	b.int64(int64(u.TotalTokens))
	b.optFloat(u.CostUSD)
}

// nodeRow is a node state's row as the writer binds it, copied from the
// engine's NodeState right away (the engine reuses those structs).
type nodeRow struct {
	nodeID, status, input, output, handle, errText, rejection string
	visits, attempts                                          int64
	fired                                                     string // "" for NULL
	wait, decision                                            []byte // copies; NULL when empty
	startedAt, finishedAt                                     int64
	started, finished                                         bool
}

// nodeRows copies node states into rows.
func nodeRows(nodes []*engine.NodeState) ([]nodeRow, error) {
	out := make([]nodeRow, 0, len(nodes))
	for _, n := range nodes {
		if n == nil {
			continue
		}
		if n.NodeID == "" {
			return nil, errors.New("node state without node id")
		}
		r := nodeRow{nodeID: n.NodeID, status: string(n.Status), input: n.Input, output: n.Output,
			handle: n.Handle, errText: n.Error, rejection: n.Rejection,
			visits: int64(n.Visits), attempts: int64(n.Attempts)}
		if len(n.Fired) > 0 {
			b, err := json.Marshal(n.Fired)
			if err != nil {
				return nil, fmt.Errorf("node %s: fired: %w", n.NodeID, err)
			}
			r.fired = string(b)
		}
		if len(n.Wait) > 0 {
			r.wait = bytes.Clone(n.Wait)
		}
		if len(n.Decision) > 0 {
			r.decision = bytes.Clone(n.Decision)
		}
		if n.StartedAt != nil {
			r.startedAt, r.started = toMicros(*n.StartedAt), true
		}
		if n.FinishedAt != nil {
			r.finishedAt, r.finished = toMicros(*n.FinishedAt), true
		}
		out = append(out, r)
	}
	return out, nil
}

// upsertNodes writes rows of runID (sqlUpsertNode).
func upsertNodes(t *wtx, runID string, rows []nodeRow) error {
	for i := range rows {
		r := &rows[i]
		b := t.c.bind(sqlUpsertNode)
		b.text(runID)
		b.text(r.nodeID)
		b.text(r.status)
		b.text(r.input)
		b.text(r.output)
		b.text(r.handle)
		b.text(r.errText)
		b.int64(r.visits)
		b.int64(r.attempts)
		if r.fired == "" {
			b.null()
		} else {
			b.text(r.fired)
		}
		b.textBytes(r.wait)
		b.optInt64(r.startedAt, r.started)
		b.optInt64(r.finishedAt, r.finished)
		b.text(r.rejection)
		b.textBytes(r.decision)
		if _, err := t.c.run(&b); err != nil {
			return fmt.Errorf("node %s: %w", r.nodeID, err)
		}
	}
	return nil
}
