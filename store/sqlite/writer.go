package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store/internal/commit"
)

// job is an operation of the write queue: it runs in a batch's
// transaction. It must reject (commit.Rejected) before its first write;
// any other error aborts the whole batch.
type job = func(t *wtx) error

type op = commit.Op[job]

// reject marks an op that was refused (ErrNotFound, ErrConflict) before
// it changed anything, so the rest of the batch can still commit.
func reject(err error) error { return commit.Rejected{Err: err} }

// wtx is the transaction of one batch as seen by an op function.
type wtx struct {
	ctx   context.Context
	tx    *sql.Tx
	w     *writer
	stmts map[*sql.Stmt]*sql.Stmt
	// fenced remembers, per run, the owner whose event was written in this
	// transaction: later events of that owner skip the owner check (one
	// index lookup per event) until an op may have changed the owner.
	fenced map[string]string
	// newDefs are the definition hashes this batch inserted: known stored
	// once it commits (writer.defs).
	newDefs []string
	// held are the emitted events of each run not yet written: they are
	// written packed, before the next op of their run (flushRun) or at
	// the end of the batch.
	held map[string][]heldEvent
	// evs and more are scratch space of writeEvents.
	evs  []*engine.Event
	more []byte
}

// ownerMayChange drops what fenced knows of runID; every op that can
// change a run's owner calls it.
func (t *wtx) ownerMayChange(runID string) { delete(t.fenced, runID) }

// stmt returns ps bound to the batch's transaction.
func (t *wtx) stmt(ps *sql.Stmt) *sql.Stmt {
	if s, ok := t.stmts[ps]; ok {
		return s
	}
	s := t.tx.StmtContext(t.ctx, ps)
	t.stmts[ps] = s
	return s
}

// exec runs query, as a prepared statement when it is one of the writer's
// hot queries (parsing SQL on every run start and lease change showed up
// in profiles).
func (t *wtx) exec(query string, args ...any) (int64, error) {
	var (
		res sql.Result
		err error
	)
	if ps, ok := t.w.cache[query]; ok {
		res, err = t.stmt(ps).ExecContext(t.ctx, args...)
	} else {
		res, err = t.tx.ExecContext(t.ctx, query, args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// writer is the SQLite side of the write queue: its statements and how it
// writes a batch. The queue (commit.Queue) does the rest.
type writer struct {
	*commit.Queue[job]
	s *Store

	// prepared on the writer connection
	insEvent, insEventFenced, updRun, updRunSame, upsNode *sql.Stmt
	cache                                                 map[string]*sql.Stmt // writer goroutine only

	// defs are hashes of definitions known to be in the definitions
	// table, so a run of a graph already stored does not write its
	// definition again: an insert that binds the whole text only to do
	// nothing, once per run. A hash is added once the batch that inserted
	// it commits, and the set is emptied by a prune (the only thing that
	// deletes definitions) before it commits, so a hash in it is always in
	// the table and the run's foreign key holds.
	defsMu sync.Mutex
	defs   map[string]struct{}
	// defsWritten counts the definition inserts made (tests).
	defsWritten atomic.Int64
}

// defsMax bounds writer.defs: past it the set starts again empty.
const defsMax = 4096

// defStored reports whether the definition with hash h is known stored.
func (w *writer) defStored(h string) bool {
	w.defsMu.Lock()
	defer w.defsMu.Unlock()
	_, ok := w.defs[h]
	return ok
}

// addDefs records hashes of definitions a committed batch stored.
func (w *writer) addDefs(hs []string) {
	w.defsMu.Lock()
	defer w.defsMu.Unlock()
	if len(w.defs)+len(hs) > defsMax {
		clear(w.defs)
	}
	for _, h := range hs {
		w.defs[h] = struct{}{}
	}
}

// forgetDefs empties the set: definitions are about to be deleted.
func (w *writer) forgetDefs() {
	w.defsMu.Lock()
	defer w.defsMu.Unlock()
	clear(w.defs)
}

const (
	// An event row holds n consecutive events of one run (a pack, see
	// packEvents). The run id is bound more than once rather than as ?1:
	// numbered parameters cost the driver a name lookup per bind, and this
	// runs once per row. WHERE EXISTS turns an event of an unknown run into
	// a skipped row instead of a foreign key error that would fail the
	// whole batch. The owner test fences a process whose lease was taken
	// over: its late events are skipped instead of landing in another
	// owner's log. sqlNoOverlap skips a row any of whose seqs is stored
	// already: the row with the highest seq at or below the last holds one
	// of them exactly when it reaches the first (one index seek).
	sqlInsertEvent = `INSERT INTO run_events (run_id, seq, node_id, type, content, ts, data, n, more)
SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM runs WHERE id = ? AND (? = '' OR owner = ?))
AND ` + sqlNoOverlap + `
ON CONFLICT (run_id, seq) DO NOTHING`

	// sqlInsertEventFenced is for events whose run and owner were checked
	// earlier in the same transaction.
	sqlInsertEventFenced = `INSERT INTO run_events (run_id, seq, node_id, type, content, ts, data, n, more)
SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE ` + sqlNoOverlap + `
ON CONFLICT (run_id, seq) DO NOTHING`

	sqlNoOverlap = `COALESCE((SELECT seq + n FROM run_events WHERE run_id = ? AND seq <= ?
ORDER BY seq DESC LIMIT 1), 0) <= ?`

	sqlUpdateRun = `UPDATE runs SET status = ?, input = ?, waiting_for_input = ?, current_node_id = ?,
pending_approvals = ?, error = ?, work_dir = ?, updated_at = ?, finished_at = ?,
prompt_tokens = ?, completion_tokens = ?, total_tokens = ?, cost_usd = ?,
owner = CASE WHEN ? THEN '' ELSE owner END, lease_until = CASE WHEN ? THEN 0 ELSE lease_until END
WHERE id = ? AND (? = '' OR owner = ?) AND status NOT IN ('completed', 'failed', 'cancelled')`

	// sqlUpdateRunSameStatus is sqlUpdateRun for a checkpoint whose status
	// is the one its driver last wrote (engine.Run.SameStatus): status,
	// finished_at, owner and lease_until are left out, and with them the
	// updates of runs_status_created, runs_owner and runs_finished that
	// SQLite makes for any column named in SET, even when the value is the
	// same (the statement took about twice as long with them).
	sqlUpdateRunSameStatus = `UPDATE runs SET input = ?, waiting_for_input = ?, current_node_id = ?,
pending_approvals = ?, error = ?, work_dir = ?, updated_at = ?,
prompt_tokens = ?, completion_tokens = ?, total_tokens = ?, cost_usd = ?
WHERE id = ? AND (? = '' OR owner = ?) AND status NOT IN ('completed', 'failed', 'cancelled')`

	sqlUpsertNode = `INSERT INTO node_states (run_id, node_id, status, input, output, handle, error,
visits, attempts, fired, wait, started_at, finished_at, rejection, decision)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (run_id, node_id) DO UPDATE SET status = excluded.status, input = excluded.input,
output = excluded.output, handle = excluded.handle, error = excluded.error, visits = excluded.visits,
attempts = excluded.attempts, fired = excluded.fired, wait = excluded.wait,
started_at = excluded.started_at, finished_at = excluded.finished_at,
rejection = excluded.rejection, decision = excluded.decision`
)

func newWriter(ctx context.Context, s *Store, cfg commit.Config) (*writer, error) {
	w := &writer{s: s, defs: map[string]struct{}{}}
	var err error
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = s.wdb.PrepareContext(ctx, q)
		return st
	}
	w.insEvent = prep(sqlInsertEvent)
	w.insEventFenced = prep(sqlInsertEventFenced)
	w.updRun = prep(sqlUpdateRun)
	w.updRunSame = prep(sqlUpdateRunSameStatus)
	w.upsNode = prep(sqlUpsertNode)
	// Prepared before any transaction: the writer pool has one connection.
	w.cache = map[string]*sql.Stmt{}
	for _, q := range hotStatements {
		w.cache[q] = prep(q)
	}
	if err != nil {
		w.closeStmts()
		return nil, fmt.Errorf("prepare statements: %w", err)
	}
	cfg.Name, cfg.FailErr = "store", storageErr
	cfg.Skipped = "unknown run or duplicate seq"
	w.Queue = commit.New(cfg, w.writeBatch)
	return w, nil
}

func (w *writer) closeStmts() error {
	var errs []error
	for _, st := range []*sql.Stmt{w.insEvent, w.insEventFenced, w.updRun, w.updRunSame, w.upsNode} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	for _, st := range w.cache {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// do runs fn in the writer's next batch and waits for the commit. run, if
// not nil, is passed to the commit hooks.
func (w *writer) do(ctx context.Context, run *engine.Run, fn job) error {
	return w.Do(ctx, run, nil, fn)
}

// doEvents is do for an op that also writes evs (in order): the commit
// hooks get them as if they had been emitted.
func (w *writer) doEvents(ctx context.Context, run *engine.Run, evs []engine.Event, fn job) error {
	return w.Do(ctx, run, evs, fn)
}

// writeBatch commits batch as one transaction, or returns why nothing of
// it was committed.
func (w *writer) writeBatch(batch []op) error {
	ctx := context.Background()
	tx, err := w.s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	t := &wtx{ctx: ctx, tx: tx, w: w, stmts: make(map[*sql.Stmt]*sql.Stmt, 4), fenced: map[string]string{},
		held: map[string][]heldEvent{}}
	var fatal error
loop:
	for i := range batch {
		o := &batch[i]
		switch o.Kind {
		case commit.Event:
			t.held[o.Ev.RunID] = append(t.held[o.Ev.RunID], heldEvent{&o.Ev, &o.Written})
		case commit.Sync:
			if o.Skip() {
				continue
			}
			// What the op reads or changes of its run (the owner, the
			// status) comes after the run's events handed over before it.
			var err error
			if o.Run != nil {
				err = t.flushRun(o.Run.ID)
			} else {
				err = t.flushAll()
			}
			if err == nil {
				err = o.Settle(o.Job(t))
			}
			if err != nil {
				fatal = err
				break loop
			}
		}
	}
	if fatal == nil {
		fatal = t.flushAll()
	}
	if fatal != nil {
		_ = tx.Rollback() // may fail if SQLite already rolled back; nothing to do then
		return fatal
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if len(t.newDefs) > 0 {
		w.addDefs(t.newDefs)
	}
	return nil
}
