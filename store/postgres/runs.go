package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/internal/commit"
)

var _ store.Store = (*Store)(nil)

// Emit queues ev to be appended to its run's log and returns; it is
// committed with whatever else is queued, and passed to OnCommit hooks
// then. A full queue makes Emit block (backpressure). Emit never fails: an
// event that cannot be written is logged and counted in Stats.
func (s *Store) Emit(ev *engine.Event) { s.w.Emit(ev) }

// OnCommit registers h, called after every commit that wrote events or run
// headers with exactly what was committed, in order, on the writer
// goroutine: it must be fast, must not modify what it gets and must not
// call the store's write methods. Only this Store's commits are reported.
func (s *Store) OnCommit(h func(events []engine.Event, runs []*engine.Run)) {
	s.w.OnCommit(h)
}

const (
	sqlInsertRun = `INSERT INTO runs (id, workflow_id, kind, status, input, waiting_for_input,
current_node_id, pending_approvals, error, work_dir, owner, lease_until, created_at, updated_at, finished_at,
prompt_tokens, completion_tokens, total_tokens, cost_usd, definition_hash)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, (now() + $12::float8 * interval '1 microsecond'), $13, $14, $15, $16, $17, $18, $19, $20) ON CONFLICT (id) DO NOTHING`

	// sqlInsertRunStrict is sqlInsertRun failing on a taken id: the
	// pipelined CreateRun.
	sqlInsertRunStrict = `INSERT INTO runs (id, workflow_id, kind, status, input, waiting_for_input,
current_node_id, pending_approvals, error, work_dir, owner, lease_until, created_at, updated_at, finished_at,
prompt_tokens, completion_tokens, total_tokens, cost_usd, definition_hash)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, (now() + $12::float8 * interval '1 microsecond'), $13, $14, $15, $16, $17, $18, $19, $20)`

	// sqlInsertDefinition stores a definition once, by content hash, for
	// every run of it (migration 6). The run is inserted first: the
	// foreign key is checked at commit.
	sqlInsertDefinition = `INSERT INTO definitions (hash, definition) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING`

	sqlUpdateRun = `UPDATE runs SET status = $1, input = $2, waiting_for_input = $3, current_node_id = $4,
pending_approvals = $5, error = $6, work_dir = $7, updated_at = $8, finished_at = $9,
owner = CASE WHEN $10 THEN '' ELSE owner END, lease_until = CASE WHEN $10 THEN NULL ELSE lease_until END,
prompt_tokens = $13, completion_tokens = $14, total_tokens = $15, cost_usd = $16
WHERE id = $11 AND ($12 = '' OR owner = $12) AND status NOT IN ('completed', 'failed', 'cancelled')`

	sqlUpsertNode = `INSERT INTO node_states (run_id, node_id, status, input, output, handle, error,
visits, attempts, fired, wait, started_at, finished_at, rejection, decision)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
ON CONFLICT (run_id, node_id) DO UPDATE SET status = excluded.status, input = excluded.input,
output = excluded.output, handle = excluded.handle, error = excluded.error, visits = excluded.visits,
attempts = excluded.attempts, fired = excluded.fired, wait = excluded.wait,
started_at = excluded.started_at, finished_at = excluded.finished_at,
rejection = excluded.rejection, decision = excluded.decision`

	// sqlUpsertNodeFenced is sqlUpsertNode for a checkpoint: written only
	// while owner $16 ('' = unfenced) holds the run.
	sqlUpsertNodeFenced = `INSERT INTO node_states (run_id, node_id, status, input, output, handle, error,
visits, attempts, fired, wait, started_at, finished_at, rejection, decision)
SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::int, $9::int, $10::text,
$11::text, $12::timestamptz, $13::timestamptz, $14::text, $15::text
WHERE EXISTS (SELECT 1 FROM runs WHERE id = $1 AND ($16::text = '' OR owner = $16)
  AND status NOT IN ('completed', 'failed', 'cancelled') FOR SHARE)
ON CONFLICT (run_id, node_id) DO UPDATE SET status = excluded.status, input = excluded.input,
output = excluded.output, handle = excluded.handle, error = excluded.error, visits = excluded.visits,
attempts = excluded.attempts, fired = excluded.fired, wait = excluded.wait,
started_at = excluded.started_at, finished_at = excluded.finished_at,
rejection = excluded.rejection, decision = excluded.decision`

	// $4 is "now" in the database's clock. Concurrent acquires of one run
	// serialize on its row; the loser re-reads the winner's owner and lease
	// and matches nothing: a compare-and-swap.
	sqlAcquireRun = `UPDATE runs SET owner = $1, lease_until = (now() + $2::float8 * interval '1 microsecond')
WHERE id = $3 AND (owner = '' OR owner = $1 OR lease_until IS NULL OR lease_until < (now() + $4::float8 * interval '1 microsecond'))
AND ($5 = '' OR status = $5)`

	sqlOrphaned = `r.status IN ('pending', 'running', 'paused')
AND (r.owner = '' OR r.lease_until IS NULL OR r.lease_until < (now() + $1::float8 * interval '1 microsecond'))
AND (r.status <> 'paused' OR EXISTS
  (SELECT 1 FROM node_states n WHERE n.run_id = r.id AND n.status = 'running'))`
)

// CreateRun stores a new run, its initial node states and its first events
// in one transaction, through the write queue. ErrConflict if the id
// exists, ErrNotFound if r.WorkflowID names no stored workflow.
func (s *Store) CreateRun(ctx context.Context, r *engine.Run, nodes []*engine.NodeState, events []*engine.Event) error {
	if r == nil || r.ID == "" {
		return errors.New("postgres: create run: run id is required")
	}
	hdr := commit.CloneRun(r)
	approvals, err := commit.ApprovalsJSON(hdr.PendingApprovals)
	if err != nil {
		return fmt.Errorf("postgres: create run %s: pending approvals: %w", r.ID, err)
	}
	nargs, err := nodeArgs(r.ID, nodes)
	if err != nil {
		return fmt.Errorf("postgres: create run %s: %w", r.ID, err)
	}
	var wf *string
	if hdr.WorkflowID != "" {
		wf = &hdr.WorkflowID
	}
	var lease *float64
	if hdr.Owner != "" {
		l := s.fromNow(hdr.LeaseUntil)
		lease = &l
	}
	evs := commit.CopyEvents(hdr.ID, events)
	defHash := definitionHash(hdr.Definition)
	// A drawn run's workflow is a saved one; a YAML run's is a file.
	checkWorkflow := wf != nil && hdr.Kind != engine.KindYAML
	// The checking form: refuses a taken id or an unknown workflow alone.
	check := func(t *wtx) error {
		if checkWorkflow {
			var one int
			err := t.queryRow(`SELECT 1 FROM workflows WHERE id = $1`, *wf).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				return reject(fmt.Errorf("workflow %q: %w", hdr.WorkflowID, engine.ErrNotFound))
			}
			if err != nil {
				return err
			}
		}
		n, err := t.exec(sqlInsertRun, hdr.ID, wf, hdr.Kind, string(hdr.Status), hdr.Input,
			hdr.WaitingForInput, hdr.CurrentNodeID, string(approvals), hdr.Error, hdr.WorkDir,
			hdr.Owner, lease, hdr.CreatedAt, hdr.UpdatedAt, hdr.FinishedAt,
			hdr.Usage.PromptTokens, hdr.Usage.CompletionTokens, hdr.Usage.TotalTokens, hdr.Usage.CostUSD, defHash)
		if err != nil {
			return err
		}
		if n == 0 {
			return reject(fmt.Errorf("run already exists: %w", engine.ErrConflict))
		}
		b := &pgx.Batch{}
		if defHash != nil {
			b.Queue(sqlInsertDefinition, defHash, string(hdr.Definition))
		}
		for i := range evs {
			e := &evs[i]
			b.Queue(`INSERT INTO run_events (run_id, seq, node_id, type, content, ts, data)
VALUES ($1, $2, $3, $4, $5, $6, $7)`, e.RunID, e.Seq, e.NodeID, e.Type, e.Content, e.Timestamp, nullText(e.Data))
		}
		queueNodes(b, nargs)
		return t.sendBatch(b).Close()
	}
	// The pipelined form: the same rows, in the round trip of the batch's
	// other writes. A taken id breaks a constraint there, and an unknown
	// workflow is a miss of its look-up; either way the batch runs again
	// with check instead.
	queue := func(b *pgx.Batch) {
		if checkWorkflow {
			b.Queue(`SELECT count(*) FROM workflows WHERE id = $1`, *wf)
		}
		b.Queue(sqlInsertRunStrict, hdr.ID, wf, hdr.Kind, string(hdr.Status), hdr.Input,
			hdr.WaitingForInput, hdr.CurrentNodeID, string(approvals), hdr.Error, hdr.WorkDir,
			hdr.Owner, lease, hdr.CreatedAt, hdr.UpdatedAt, hdr.FinishedAt,
			hdr.Usage.PromptTokens, hdr.Usage.CompletionTokens, hdr.Usage.TotalTokens, hdr.Usage.CostUSD, defHash)
		if defHash != nil {
			b.Queue(sqlInsertDefinition, defHash, string(hdr.Definition))
		}
		for i := range evs {
			e := &evs[i]
			b.Queue(`INSERT INTO run_events (run_id, seq, node_id, type, content, ts, data)
VALUES ($1, $2, $3, $4, $5, $6, $7)`, e.RunID, e.Seq, e.NodeID, e.Type, e.Content, e.Timestamp, nullText(e.Data))
		}
		queueNodes(b, nargs)
	}
	statements := 1 + len(evs) + len(nargs)
	if defHash != nil {
		statements++
	}
	read := func(br pgx.BatchResults) (func(t *wtx) error, error) {
		if checkWorkflow {
			var n int
			if err := br.QueryRow().Scan(&n); err != nil {
				return nil, err
			}
			if n == 0 {
				return nil, errOptimisticMiss
			}
		}
		for range statements {
			if _, err := br.Exec(); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	err = s.w.Do(ctx, hdr, evs, job{fn: check, pipe: &pipelined{queue: queue, read: read}})
	if err != nil {
		return fmt.Errorf("postgres: create run %s: %w", r.ID, err)
	}
	return nil
}

// Checkpoint writes the run header and upserts the given node states in the
// writer's next batch, after every event already emitted, and returns once
// it committed. ErrNotFound for an unknown run; ErrConflict, writing
// nothing, when r.Owner is set and another owner holds the run;
// ErrTerminal, writing nothing, once the run has ended (its end is written
// once). A terminal status also releases the run.
func (s *Store) Checkpoint(ctx context.Context, r *engine.Run, nodes []*engine.NodeState) error {
	if r == nil {
		return errors.New("postgres: checkpoint: nil run")
	}
	hdr := commit.CloneRun(r)
	approvals, err := commit.ApprovalsJSON(hdr.PendingApprovals)
	if err != nil {
		return fmt.Errorf("postgres: checkpoint run %s: pending approvals: %w", r.ID, err)
	}
	nargs, err := nodeArgs(r.ID, nodes)
	if err != nil {
		return fmt.Errorf("postgres: checkpoint run %s: %w", r.ID, err)
	}
	release := hdr.Status.Terminal() // nothing drives a finished run
	// The node upserts, each fenced like the header, then the header, in
	// the round trip of the batch's other checkpoints and events. The first
	// upsert share-locks the run row, so the header update sees the same
	// owner and matches exactly when they did: a refused checkpoint wrote
	// nothing.
	err = s.w.doPipelined(ctx, hdr, &pipelined{
		queue: func(b *pgx.Batch) {
			for _, a := range nargs {
				b.Queue(sqlUpsertNodeFenced, append(a, hdr.Owner)...)
			}
			b.Queue(sqlUpdateRun, string(hdr.Status), hdr.Input, hdr.WaitingForInput, hdr.CurrentNodeID,
				string(approvals), hdr.Error, hdr.WorkDir, hdr.UpdatedAt, hdr.FinishedAt, release, hdr.ID, hdr.Owner,
				hdr.Usage.PromptTokens, hdr.Usage.CompletionTokens, hdr.Usage.TotalTokens, hdr.Usage.CostUSD)
		},
		read: func(br pgx.BatchResults) (func(t *wtx) error, error) {
			var tag pgconn.CommandTag
			for range len(nargs) + 1 {
				var err error
				if tag, err = br.Exec(); err != nil {
					return nil, err
				}
			}
			if tag.RowsAffected() == 0 {
				return func(t *wtx) error { return checkpointRefused(t, hdr) }, nil
			}
			return nil, nil
		},
	})
	if err != nil {
		return fmt.Errorf("postgres: checkpoint run %s: %w", r.ID, err)
	}
	return nil
}

func checkpointRefused(t *wtx, hdr *engine.Run) error {
	var holder, status string
	err := t.queryRow(`SELECT owner, status FROM runs WHERE id = $1`, hdr.ID).Scan(&holder, &status)
	if errors.Is(err, pgx.ErrNoRows) {
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

func scanRun(row pgx.Row) (*engine.Run, error) {
	var (
		r                engine.Run
		wf               *string
		def              string
		status           string
		approvals        string
		created, updated time.Time
	)
	if err := row.Scan(&r.ID, &wf, &r.Kind, &def, &status, &r.Input, &r.WaitingForInput,
		&r.CurrentNodeID, &approvals, &r.Error, &r.WorkDir, &created, &updated, &r.FinishedAt,
		&r.Usage.PromptTokens, &r.Usage.CompletionTokens, &r.Usage.TotalTokens, &r.Usage.CostUSD); err != nil {
		return nil, err
	}
	if wf != nil {
		r.WorkflowID = *wf
	}
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
	r.CreatedAt, r.UpdatedAt = created.UTC(), updated.UTC()
	r.FinishedAt = optTime(r.FinishedAt)
	return &r, nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func getRun(ctx context.Context, q querier, runID string) (*engine.Run, error) {
	r, err := scanRun(q.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, runID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, engine.ErrNotFound
	}
	return r, err
}

// GetRun implements engine.Store.
func (s *Store) GetRun(ctx context.Context, runID string) (*engine.Run, error) {
	r, err := getRun(ctx, s.pool, runID)
	if err != nil {
		return nil, fmt.Errorf("postgres: get run %s: %w", runID, err)
	}
	return r, nil
}

// LoadRun implements engine.Store. Header, node states (in the order first
// stored) and the highest event seq come from one snapshot.
func (s *Store) LoadRun(ctx context.Context, runID string) (*engine.Run, []*engine.NodeState, int64, error) {
	r, nodes, maxSeq, err := s.loadRun(ctx, runID)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("postgres: load run %s: %w", runID, err)
	}
	return r, nodes, maxSeq, nil
}

func (s *Store) loadRun(ctx context.Context, runID string) (*engine.Run, []*engine.NodeState, int64, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, nil, 0, err
	}
	defer func() { _ = tx.Rollback(ctx) }() // read-only: nothing to commit
	r, err := getRun(ctx, tx, runID)
	if err != nil {
		return nil, nil, 0, err
	}
	rows, err := tx.Query(ctx, `SELECT node_id, status, input, output, handle, error, visits,
attempts, fired, wait, started_at, finished_at, rejection, decision FROM node_states WHERE run_id = $1 ORDER BY ord`, runID)
	if err != nil {
		return nil, nil, 0, err
	}
	var nodes []*engine.NodeState
	for rows.Next() {
		var (
			n                     engine.NodeState
			status                string
			fired, wait, decision *string
		)
		if err := rows.Scan(&n.NodeID, &status, &n.Input, &n.Output, &n.Handle, &n.Error, &n.Visits,
			&n.Attempts, &fired, &wait, &n.StartedAt, &n.FinishedAt, &n.Rejection, &decision); err != nil {
			rows.Close()
			return nil, nil, 0, err
		}
		n.Status = engine.NodeStatus(status)
		if fired != nil {
			if err := json.Unmarshal([]byte(*fired), &n.Fired); err != nil {
				rows.Close()
				return nil, nil, 0, fmt.Errorf("node %s: fired: %w", n.NodeID, err)
			}
		}
		if wait != nil {
			n.Wait = json.RawMessage(*wait)
		}
		if decision != nil {
			n.Decision = json.RawMessage(*decision)
		}
		n.StartedAt, n.FinishedAt = optTime(n.StartedAt), optTime(n.FinishedAt)
		nodes = append(nodes, &n)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, 0, err
	}
	var maxSeq int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM run_events WHERE run_id = $1`, runID).
		Scan(&maxSeq); err != nil {
		return nil, nil, 0, err
	}
	return r, nodes, maxSeq, nil
}

// ListRuns implements engine.Store: newest first (creation time, then id).
func (s *Store) ListRuns(ctx context.Context, f engine.RunFilter) ([]*engine.Run, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.WorkflowID != "" {
		where = append(where, "workflow_id = "+arg(f.WorkflowID))
	}
	if f.Status != "" {
		where = append(where, "status = "+arg(string(f.Status)))
	}
	if !f.Before.IsZero() {
		where = append(where, "created_at < "+arg(f.Before))
	}
	limit := f.Limit
	if limit <= 0 {
		limit = store.DefaultListLimit
	}
	q := `SELECT ` + runColumns + ` FROM runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ` + arg(limit)
	runs, err := s.queryRuns(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list runs: %w", err)
	}
	return runs, nil
}

// queryRuns reads the run headers q selects (runColumns).
func (s *Store) queryRuns(ctx context.Context, q string, args ...any) ([]*engine.Run, error) {
	rows, err := s.pool.Query(ctx, q, args...)
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

// FirstEvents implements store.Store: one query, by primary key.
func (s *Store) FirstEvents(ctx context.Context, runIDs []string, typ string) (map[string]engine.Event, error) {
	out := map[string]engine.Event{}
	if len(runIDs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT run_id, seq, node_id, type, content, ts, data FROM run_events
WHERE type = $1 AND seq = 1 AND run_id = ANY($2)`, typ, runIDs)
	if err != nil {
		return nil, fmt.Errorf("postgres: first events: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ev engine.Event
		var data *string
		if err := rows.Scan(&ev.RunID, &ev.Seq, &ev.NodeID, &ev.Type, &ev.Content, &ev.Timestamp, &data); err != nil {
			return nil, fmt.Errorf("postgres: first events: %w", err)
		}
		ev.Timestamp = ev.Timestamp.UTC()
		if data != nil {
			ev.Data = json.RawMessage(*data)
		}
		out[ev.RunID] = ev
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: first events: %w", err)
	}
	return out, nil
}

// Events implements engine.Store. ErrNotFound for an unknown run.
func (s *Store) Events(ctx context.Context, runID string, after int64, limit int) ([]engine.Event, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, node_id, type, content, ts, data FROM run_events
WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, runID, after, lim)
	if err != nil {
		return nil, fmt.Errorf("postgres: events of run %s: %w", runID, err)
	}
	defer rows.Close()
	events := []engine.Event{}
	for rows.Next() {
		ev := engine.Event{RunID: runID}
		var data *string
		if err := rows.Scan(&ev.Seq, &ev.NodeID, &ev.Type, &ev.Content, &ev.Timestamp, &data); err != nil {
			return nil, fmt.Errorf("postgres: events of run %s: %w", runID, err)
		}
		ev.Timestamp = ev.Timestamp.UTC()
		if data != nil {
			ev.Data = json.RawMessage(*data)
		}
		events = append(events, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: events of run %s: %w", runID, err)
	}
	if len(events) == 0 {
		// Tell an unknown run from one with nothing new.
		var one int
		err := s.pool.QueryRow(ctx, `SELECT 1 FROM runs WHERE id = $1`, runID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("postgres: events of run %s: %w", runID, engine.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("postgres: events of run %s: %w", runID, err)
		}
	}
	return events, nil
}

// ListOrphaned implements engine.Store, oldest run first. now is this
// process's time, compared in the database's clock. Listing claims
// nothing: a process that acts on the list takes each run with AcquireRun
// (a compare-and-swap), or takes a set at once with ClaimOrphaned.
func (s *Store) ListOrphaned(ctx context.Context, now time.Time) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM runs r WHERE `+sqlOrphaned+` ORDER BY r.created_at, r.id`,
		s.fromNow(now))
	if err != nil {
		return nil, fmt.Errorf("postgres: list orphaned runs: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: list orphaned runs: %w", err)
	}
	if ids == nil {
		ids = []string{}
	}
	return ids, nil
}

// --- copying and argument building ---

// definitionHash is the content hash a run references its definition by
// (nil for none): sha256 of its bytes, as migration 6 computes it.
func definitionHash(def []byte) []byte {
	if len(def) == 0 {
		return nil
	}
	h := sha256.Sum256(def)
	return h[:]
}

// nodeArgs turns node states into statement arguments right away: the copy
// that lets the engine reuse its NodeState structs.
func nodeArgs(runID string, nodes []*engine.NodeState) ([][]any, error) {
	out := make([][]any, 0, len(nodes))
	for _, n := range nodes {
		if n == nil {
			continue
		}
		if n.NodeID == "" {
			return nil, errors.New("node state without node id")
		}
		var fired *string
		if len(n.Fired) > 0 {
			b, err := json.Marshal(n.Fired)
			if err != nil {
				return nil, fmt.Errorf("node %s: fired: %w", n.NodeID, err)
			}
			f := string(b)
			fired = &f
		}
		out = append(out, []any{runID, n.NodeID, string(n.Status), n.Input, n.Output, n.Handle,
			n.Error, n.Visits, n.Attempts, fired, nullText(n.Wait),
			commit.NormTimePtr(n.StartedAt), commit.NormTimePtr(n.FinishedAt), n.Rejection, nullText(n.Decision)})
	}
	return out, nil
}

func queueNodes(b *pgx.Batch, nargs [][]any) {
	for _, a := range nargs {
		b.Queue(sqlUpsertNode, a...)
	}
}
