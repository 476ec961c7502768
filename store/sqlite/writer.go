package sqlite

import (
	"context"
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
	c *wconn
	w *writer
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

// ownerMayChange drops what the writer knows of runID's owner
// (writer.fenced); every op that can change a run's owner calls it.
func (t *wtx) ownerMayChange(runID string) { delete(t.w.fenced, runID) }

// exec runs query in the batch's transaction and returns the rows it
// changed. Every statement stays prepared on the writer connection
// (parsing SQL on every run start and lease change showed up in
// profiles).
func (t *wtx) exec(query string, args ...any) (int64, error) {
	return t.c.exec(query, args...)
}

// queryRow runs query and scans its first row into dest (sql.ErrNoRows
// if none).
func (t *wtx) queryRow(query string, args []any, dest ...any) error {
	return t.c.queryRow(query, args, dest...)
}

// writer is the SQLite side of the write queue: its statements and how it
// writes a batch. The queue (commit.Queue) does the rest.
type writer struct {
	*commit.Queue[job]
	s *Store

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

	// What the writer knows of runs' event logs, so that most event rows
	// are inserted without the lookups that guard them (each an index
	// seek, together as costly as the insert). Only the writer goroutine
	// uses them. They hold while nothing but the writer's batches writes
	// logs and owners; what else may is checked for at the start of each
	// batch (checkRunsKept): other processes on the same file (two serve
	// --data DIR, switchyard run) and prunes on the writer's connection.
	//
	// fenced is, per run, the owner its events were last checked against:
	// later events of that owner skip the owner check until an op may have
	// changed the owner (wtx.ownerMayChange).
	fenced map[string]string
	// tails is, per run, a seq above every event of it stored: an event row
	// from there on cannot overlap the log and skips that check.
	tails map[string]int64
	// runsDeleted counts prunes; keptAt is the count fenced and tails
	// were last emptied at, dataVersion the file's data_version then.
	runsDeleted atomic.Uint64
	keptAt      uint64
	dataVersion int64
}

// runsKnownMax bounds writer.fenced and writer.tails: past it they start
// again empty (a miss costs a lookup, not a wrong answer).
const runsKnownMax = 8192

// forgetRuns empties what the writer knows of runs: after a batch that
// did not commit (what it learnt may be rolled back) or a prune.
func (w *writer) forgetRuns() {
	clear(w.fenced)
	clear(w.tails)
}

// checkRunsKept forgets what the writer knows of runs if anything but its
// batches may have changed logs or owners since the last batch: another
// connection committed (PRAGMA data_version changes exactly then; the
// batch holds the write lock from BEGIN IMMEDIATE, so none can commit
// after it is read), or a prune ran on the writer's own connection (it
// counts itself before it commits, and the batch waits for that commit
// to get the connection). Also past runsKnownMax.
func (t *wtx) checkRunsKept() error {
	w := t.w
	var v int64
	if err := t.queryRow(`PRAGMA data_version`, nil, &v); err != nil {
		return fmt.Errorf("data_version: %w", err)
	}
	if n := w.runsDeleted.Load(); n != w.keptAt || v != w.dataVersion || len(w.fenced)+len(w.tails) > runsKnownMax {
		w.keptAt, w.dataVersion = n, v
		w.forgetRuns()
	}
	return nil
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
	// An event row holds n consecutive events of one run (a pack,
	// packs.go). Two guards, each an index seek, are left out where the
	// writer knows they hold (writer.fenced, writer.tails):
	//   - sqlRunOwned: the run exists (an event of an unknown run is a
	//     skipped row, not a foreign key error that would fail the whole
	//     batch) and the event's owner holds it (a process whose lease was
	//     taken over has its late events skipped instead of landing in
	//     another owner's log);
	//   - sqlNoOverlap: none of the row's seqs is stored: the row with the
	//     highest seq at or below the last holds one exactly when it
	//     reaches the first.
	// The run id is bound more than once rather than as ?1: numbered
	// parameters cost the driver a name lookup per bind, and this runs once
	// per row.
	sqlInsertEvent = `INSERT INTO run_events (run_id, seq, node_id, type, content, ts, data, n, more)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, seq) DO NOTHING`
	sqlInsertEventOwned = `INSERT INTO run_events (run_id, seq, node_id, type, content, ts, data, n, more)
SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE ` + sqlRunOwned + `
ON CONFLICT (run_id, seq) DO NOTHING`
	sqlInsertEventNew = `INSERT INTO run_events (run_id, seq, node_id, type, content, ts, data, n, more)
SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE ` + sqlNoOverlap + `
ON CONFLICT (run_id, seq) DO NOTHING`
	sqlInsertEventOwnedNew = `INSERT INTO run_events (run_id, seq, node_id, type, content, ts, data, n, more)
SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE ` + sqlRunOwned + ` AND ` + sqlNoOverlap + `
ON CONFLICT (run_id, seq) DO NOTHING`

	sqlRunOwned  = `EXISTS (SELECT 1 FROM runs WHERE id = ? AND (? = '' OR owner = ?))`
	sqlNoOverlap = `COALESCE((SELECT seq + n FROM run_events WHERE run_id = ? AND seq <= ?
ORDER BY seq DESC LIMIT 1), 0) <= ?`
	// sqlEventsTail is a seq above every stored event of a run.
	sqlEventsTail = `SELECT COALESCE((SELECT seq + n FROM run_events WHERE run_id = ?
ORDER BY seq DESC LIMIT 1), 1)`

	sqlUpdateRun = `UPDATE runs SET status = ?, input = ?, waiting_for_input = ?, current_node_id = ?,
pending_approvals = ?, error = ?, work_dir = ?, updated_at = ?, finished_at = ?,
prompt_tokens = ?, completion_tokens = ?, total_tokens = ?, cost_usd = ?,
owner = CASE WHEN ? THEN '' ELSE owner END, lease_until = CASE WHEN ? THEN 0 ELSE lease_until END
WHERE id = ? AND (? = '' OR owner = ?) AND ` + sqlNotEnded

	// sqlNotEnded is "status NOT IN ('completed', 'failed', 'cancelled')"
	// as comparisons: SQLite codes an IN list of three or more constants
	// as an ephemeral table, opened, filled and closed each time the
	// statement runs: at every checkpoint
	// (TestHotStatementsBuildNoTempTables). With migration 13 (the same
	// for runs_finished's condition) the writer's busy time a run fell
	// 8-15 % (paired `load runs --against`).
	sqlNotEnded = `status <> 'completed' AND status <> 'failed' AND status <> 'cancelled'`

	// sqlUpdateRunSameStatus is sqlUpdateRun for a checkpoint whose status
	// is the one its driver last wrote (engine.Run.SameStatus): status,
	// finished_at, owner and lease_until are left out, and with them the
	// updates of runs_status_created, runs_owner and runs_finished that
	// SQLite makes for any column named in SET, even when the value is the
	// same (the statement took about twice as long with them).
	sqlUpdateRunSameStatus = `UPDATE runs SET input = ?, waiting_for_input = ?, current_node_id = ?,
pending_approvals = ?, error = ?, work_dir = ?, updated_at = ?,
prompt_tokens = ?, completion_tokens = ?, total_tokens = ?, cost_usd = ?
WHERE id = ? AND (? = '' OR owner = ?) AND ` + sqlNotEnded

	sqlUpsertNode = `INSERT INTO node_states (run_id, node_id, status, input, output, handle, error,
visits, attempts, fired, wait, started_at, finished_at, rejection, decision)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (run_id, node_id) DO UPDATE SET status = excluded.status, input = excluded.input,
output = excluded.output, handle = excluded.handle, error = excluded.error, visits = excluded.visits,
attempts = excluded.attempts, fired = excluded.fired, wait = excluded.wait,
started_at = excluded.started_at, finished_at = excluded.finished_at,
rejection = excluded.rejection, decision = excluded.decision`
)

// insEvent[checkOwner][checkOverlap] inserts an event row with or
// without each guard (sqlRunOwned, sqlNoOverlap).
var insEvent = [2][2]string{{sqlInsertEvent, sqlInsertEventNew}, {sqlInsertEventOwned, sqlInsertEventOwnedNew}}

// preparedStatements are the writer's frequent statements, prepared when
// the store opens so that an error in one is found then (every statement
// the writer runs stays prepared once run: wconn).
var preparedStatements = []string{sqlInsertRun, sqlInsertDefinition, sqlAcquireRun, sqlReleaseRun,
	sqlInsertEvent, sqlInsertEventNew, sqlInsertEventOwned, sqlInsertEventOwnedNew, sqlEventsTail,
	sqlUpdateRun, sqlUpdateRunSameStatus, sqlUpsertNode, `PRAGMA data_version`}

func newWriter(s *Store, cfg commit.Config) (*writer, error) {
	w := &writer{s: s, defs: map[string]struct{}{}, fenced: map[string]string{}, tails: map[string]int64{}}
	for _, q := range preparedStatements {
		if _, err := s.wc.c.Prepare(q); err != nil {
			return nil, fmt.Errorf("prepare statements: %w", err)
		}
	}
	cfg.Name, cfg.FailErr = "store", storageErr
	cfg.Skipped = "unknown run or duplicate seq"
	w.Queue = commit.New(cfg, w.writeBatch)
	return w, nil
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
	w.s.wmu.Lock()
	defer w.s.wmu.Unlock()
	c := w.s.wc
	if _, err := c.exec("BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	t := &wtx{c: c, w: w, held: map[string][]heldEvent{}}
	rollback := func() {
		// May fail if SQLite already rolled back; nothing to do then.
		_, _ = c.exec("ROLLBACK")
	}
	if err := t.checkRunsKept(); err != nil {
		rollback()
		return fmt.Errorf("begin: %w", err)
	}
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
		rollback()
		w.forgetRuns() // what it learnt in the transaction may be undone
		return fatal
	}
	if _, err := c.exec("COMMIT"); err != nil {
		// A COMMIT that fails (SQLITE_BUSY, SQLITE_FULL) leaves the
		// transaction open: end it, so the next batch can begin.
		if !c.c.AutocommitEnabled() {
			rollback()
		}
		w.forgetRuns()
		return fmt.Errorf("commit: %w", err)
	}
	if len(t.newDefs) > 0 {
		w.addDefs(t.newDefs)
	}
	return nil
}
