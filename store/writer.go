package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/engine"
)

// Retry policy for events of a batch that failed to commit.
const (
	defaultEventTries = 0 // 0: retry until written while the store is open
	closingEventTries = 4 // a closing store gives up after this many tries
	defaultRetryDelay = 50 * time.Millisecond
	maxRetryDelay     = 2 * time.Second
)

type opKind uint8

const (
	opEvent opKind = iota // an Emit: fire and forget
	opSync                // a function run in the batch; the caller waits for the commit
)

// op is one entry of the write queue. It holds copies only: the caller may
// reuse its structs as soon as Emit or the enqueuing call returns.
type op struct {
	kind opKind
	ev   engine.Event // opEvent
	// tries counts failed batches this event was part of.
	tries int

	fn   func(t *wtx) error // opSync
	ctx  context.Context    // opSync: a done ctx skips the op
	run  *engine.Run        // opSync: header reported to OnCommit hooks, may be nil
	evs  []engine.Event     // opSync: events fn writes, reported to OnCommit hooks
	done chan error         // opSync: buffered(1), gets the outcome

	// outcome within the current batch
	written bool  // event row inserted
	settled bool  // sync op finished (res is final unless the batch fails)
	res     error // sync op result
}

// rejected marks an op that was refused (ErrNotFound, ErrConflict) before it
// changed anything, so the rest of the batch can still commit. Every op
// function must reject before its first write; any other error aborts the
// whole batch.
type rejected struct{ err error }

func (r rejected) Error() string { return r.err.Error() }
func (r rejected) Unwrap() error { return r.err }

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

// commitHook receives what a batch made durable: the events, in the order
// they were emitted (seq order per run), and the run headers written by
// CreateRun and Checkpoint, in order.
type commitHook func(events []engine.Event, runs []*engine.Run)

type writer struct {
	s   *Store
	ch  chan op
	cap int

	mu     sync.RWMutex // guards closed against sends on a closed ch
	closed bool
	done   chan struct{}

	hooksMu sync.Mutex
	hooks   []commitHook

	retry      []op // events of failed batches, oldest first
	eventTries int
	retryDelay time.Duration
	failStreak int

	// prepared on the writer connection
	insEvent, insEventFenced, updRun, upsNode *sql.Stmt
	cache                                     map[string]*sql.Stmt // writer goroutine only

	batches, eventsWritten, ops, writeErrors atomic.Uint64
	eventsRetried, eventsDropped, fullWaits  atomic.Uint64
	lastBatch, largestBatch                  atomic.Int64
	lastErr                                  atomic.Value // string
}

const (
	// The run id is bound twice rather than as ?1: numbered parameters cost
	// the driver a name lookup per bind, and this runs once per event.
	// WHERE EXISTS turns an event of an unknown run into a skipped row
	// instead of a foreign key error that would fail the whole batch.
	// The owner test fences a process whose lease was taken over: its late
	// events are skipped instead of landing in another owner's log.
	sqlInsertEvent = `INSERT INTO run_events (run_id, seq, node_id, type, content, ts, data)
SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM runs WHERE id = ? AND (? = '' OR owner = ?))
ON CONFLICT (run_id, seq) DO NOTHING`

	// sqlInsertEventFenced is for an event whose run and owner were
	// checked earlier in the same transaction.
	sqlInsertEventFenced = `INSERT INTO run_events (run_id, seq, node_id, type, content, ts, data)
VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, seq) DO NOTHING`

	sqlUpdateRun = `UPDATE runs SET status = ?, input = ?, waiting_for_input = ?, current_node_id = ?,
pending_approvals = ?, error = ?, work_dir = ?, updated_at = ?, finished_at = ?,
prompt_tokens = ?, completion_tokens = ?, total_tokens = ?, cost_usd = ?,
owner = CASE WHEN ? THEN '' ELSE owner END, lease_until = CASE WHEN ? THEN 0 ELSE lease_until END
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

func newWriter(ctx context.Context, s *Store, queueSize int, tries int, delay time.Duration) (*writer, error) {
	w := &writer{
		s:          s,
		ch:         make(chan op, queueSize),
		cap:        queueSize,
		done:       make(chan struct{}),
		eventTries: tries,
		retryDelay: delay,
	}
	w.lastErr.Store("")
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
	w.upsNode = prep(sqlUpsertNode)
	// Prepared before any transaction: the writer pool has one connection.
	w.cache = map[string]*sql.Stmt{}
	for _, q := range []string{sqlInsertRun, sqlInsertDefinition, sqlAcquireRun, sqlReleaseRun} {
		w.cache[q] = prep(q)
	}
	if err != nil {
		w.closeStmts()
		return nil, fmt.Errorf("prepare statements: %w", err)
	}
	return w, nil
}

func (w *writer) closeStmts() error {
	var errs []error
	for _, st := range []*sql.Stmt{w.insEvent, w.insEventFenced, w.updRun, w.upsNode} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	for _, st := range w.cache {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}

// enqueue adds o to the queue, blocking while it is full (backpressure)
// until ctx ends; context.Background() waits as long as it takes.
func (w *writer) enqueue(ctx context.Context, o op) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return ErrClosed
	}
	select {
	case w.ch <- o:
		return nil
	default:
	}
	w.fullWaits.Add(1)
	select {
	case w.ch <- o:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// do runs fn in the writer's next batch and waits for the commit. run, if
// not nil, is passed to the commit hooks.
func (w *writer) do(ctx context.Context, run *engine.Run, fn func(t *wtx) error) error {
	return w.doEvents(ctx, run, nil, fn)
}

// doEvents is do for an op that also writes evs (in order): the commit
// hooks get them as if they had been emitted.
func (w *writer) doEvents(ctx context.Context, run *engine.Run, evs []engine.Event, fn func(t *wtx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o := op{kind: opSync, fn: fn, ctx: ctx, run: run, evs: evs, done: make(chan error, 1)}
	if err := w.enqueue(ctx, o); err != nil {
		return err
	}
	select {
	case err := <-o.done:
		return err
	case <-ctx.Done():
		// The op may still commit: the writer skips it only if it has not
		// started it yet.
		return ctx.Err()
	}
}

// stop closes the queue and waits until everything in it is written.
func (w *writer) stop() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
	w.mu.Unlock()
	<-w.done
}

func (w *writer) addHook(h commitHook) {
	w.hooksMu.Lock()
	w.hooks = append(w.hooks, h)
	w.hooksMu.Unlock()
}

func (w *writer) snapshotHooks() []commitHook {
	w.hooksMu.Lock()
	defer w.hooksMu.Unlock()
	return w.hooks[:len(w.hooks):len(w.hooks)]
}

func (w *writer) stats() Stats {
	return Stats{
		QueueDepth:     len(w.ch),
		QueueCapacity:  w.cap,
		Batches:        w.batches.Load(),
		EventsWritten:  w.eventsWritten.Load(),
		Ops:            w.ops.Load(),
		WriteErrors:    w.writeErrors.Load(),
		EventsRetried:  w.eventsRetried.Load(),
		EventsDropped:  w.eventsDropped.Load(),
		QueueFullWaits: w.fullWaits.Load(),
		LastBatchSize:  int(w.lastBatch.Load()),
		LargestBatch:   int(w.largestBatch.Load()),
		LastWriteError: w.lastErr.Load().(string),
	}
}

// loop is the writer goroutine: it takes everything queued (events of
// failed batches first, as they are older) and commits it as one
// transaction, until the queue is closed and drained.
func (w *writer) loop() {
	defer close(w.done)
	batch := make([]op, 0, 1024)
	for {
		batch = append(batch[:0], w.retry...)
		clear(w.retry)
		w.retry = w.retry[:0]
		if len(batch) == 0 {
			o, ok := <-w.ch
			if !ok {
				return
			}
			batch = append(batch, o)
		}
		closed := w.drain(&batch)
		// A batch of events alone lingers briefly for more work: the events
		// a step emits as it starts then share the commit of the checkpoint
		// that follows, instead of paying for a commit of their own (WAL
		// frame writes dominate the cost of a commit). Checkpoints and
		// claims never wait, nor does a batch that already fills a slice.
		if !closed && eventsOnly(batch) && len(batch) < firstSlice {
			t := time.NewTimer(lingerEvents)
		wait:
			for len(batch) < firstSlice {
				select {
				case o, ok := <-w.ch:
					if !ok {
						closed = true
						break wait
					}
					batch = append(batch, o)
					if o.kind != opEvent {
						w.drain(&batch)
						break wait
					}
				case <-t.C:
					break wait
				}
			}
			t.Stop()
		}
		// A long batch commits in slices that double in size: watchers get
		// the first events of a burst (hundreds from a chain of pure nodes)
		// once the first slice is durable, not after the whole burst, and
		// a large backlog still takes only a few commits. Slices commit in
		// order; after a failed one the rest fails too, so no event can
		// commit ahead of an earlier one of its run.
		for rest, n := batch, firstSlice; len(rest) > 0; n *= 2 {
			n = min(n, len(rest))
			if err := w.runBatch(rest[:n]); err != nil {
				w.failBatch(rest, err)
				break
			}
			rest = rest[n:]
		}
		clear(batch) // drop references to event data and closures
	}
}

const (
	// lingerEvents is how long an events-only batch waits for more work.
	lingerEvents = time.Millisecond
	// firstSlice is the most ops the first transaction of a batch takes;
	// later slices double. A commit costs about as much as 10 event rows,
	// so this keeps that overhead small while the first slice commits in
	// about a millisecond.
	firstSlice = 128
)

// drain appends whatever is queued without waiting; true if the queue closed.
func (w *writer) drain(batch *[]op) bool {
	for len(*batch) < w.cap {
		select {
		case o, ok := <-w.ch:
			if !ok {
				return true
			}
			*batch = append(*batch, o)
		default:
			return false
		}
	}
	return false
}

func eventsOnly(batch []op) bool {
	for i := range batch {
		if batch[i].kind != opEvent {
			return false
		}
	}
	return true
}

// runBatch commits batch as one transaction and reports it done, or
// returns why nothing of it was committed.
func (w *writer) runBatch(batch []op) error {
	ctx := context.Background()
	tx, err := w.s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	t := &wtx{ctx: ctx, tx: tx, w: w, stmts: make(map[*sql.Stmt]*sql.Stmt, 4), fenced: map[string]string{}}
	ins, insFenced := t.stmt(w.insEvent), t.stmt(w.insEventFenced)
	var fatal error
loop:
	for i := range batch {
		o := &batch[i]
		switch o.kind {
		case opEvent:
			e := &o.ev
			var (
				res sql.Result
				err error
			)
			known := e.Owner != "" && t.fenced[e.RunID] == e.Owner
			if known {
				res, err = insFenced.ExecContext(ctx, e.RunID, e.Seq, e.NodeID, e.Type, e.Content,
					toMicros(e.Timestamp), nullText(e.Data))
			} else {
				res, err = ins.ExecContext(ctx, e.RunID, e.Seq, e.NodeID, e.Type, e.Content,
					toMicros(e.Timestamp), nullText(e.Data), e.RunID, e.Owner, e.Owner)
			}
			if err != nil {
				fatal = fmt.Errorf("append event %s#%d: %w", e.RunID, e.Seq, err)
				break loop
			}
			n, err := res.RowsAffected()
			if err != nil {
				fatal = err
				break loop
			}
			o.written = n == 1
			if o.written && !known && e.Owner != "" {
				t.fenced[e.RunID] = e.Owner
			}
		case opSync:
			if err := o.ctx.Err(); err != nil {
				o.settled, o.res = true, err
				continue
			}
			err := o.fn(t)
			var rj rejected
			if errors.As(err, &rj) {
				o.settled, o.res = true, rj.err
				continue
			}
			if err != nil {
				fatal = err
				break loop
			}
			o.settled = true
		}
	}
	if fatal != nil {
		_ = tx.Rollback() // may fail if SQLite already rolled back; nothing to do then
	} else if err := tx.Commit(); err != nil {
		fatal = fmt.Errorf("commit: %w", err)
	}
	if fatal != nil {
		return fatal
	}
	w.commitDone(batch)
	return nil
}

func (w *writer) commitDone(batch []op) {
	w.failStreak = 0
	hooks := w.snapshotHooks()
	var events []engine.Event
	var runs []*engine.Run
	var written, skipped, ops uint64
	for i := range batch {
		o := &batch[i]
		switch o.kind {
		case opEvent:
			if !o.written {
				skipped++
				w.s.log.Warn("store: event not stored: unknown run or duplicate seq",
					"run", o.ev.RunID, "seq", o.ev.Seq, "type", o.ev.Type)
				continue
			}
			written++
			if len(hooks) > 0 {
				events = append(events, o.ev)
			}
		case opSync:
			if o.res == nil {
				ops++
				written += uint64(len(o.evs))
				if len(hooks) > 0 {
					events = append(events, o.evs...)
					if o.run != nil {
						runs = append(runs, o.run)
					}
				}
			}
		}
	}
	// Counters first: a caller woken below may read Stats at once.
	w.batches.Add(1)
	w.lastBatch.Store(int64(len(batch)))
	if int64(len(batch)) > w.largestBatch.Load() {
		w.largestBatch.Store(int64(len(batch)))
	}
	w.eventsWritten.Add(written)
	w.eventsDropped.Add(skipped)
	w.ops.Add(ops)
	// Hooks before waking waiters: once a Checkpoint returns, every hook has
	// seen the events committed with it (the CLI prints its last events
	// before the run's final result).
	if len(events) > 0 || len(runs) > 0 {
		for _, h := range hooks {
			w.callHook(h, events, runs)
		}
	}
	for i := range batch {
		if o := &batch[i]; o.kind == opSync {
			o.done <- o.res
		}
	}
}

// callHook isolates the writer from a panicking hook.
func (w *writer) callHook(h commitHook, events []engine.Event, runs []*engine.Run) {
	defer func() {
		if p := recover(); p != nil {
			w.s.log.Error("store: commit hook panicked", "panic", p)
		}
	}()
	h(events, runs)
}

// failBatch reports a batch that did not commit: nothing of it is in the
// database. Waiting callers get the error; events go back to the front of
// the queue until they have failed eventTries times.
func (w *writer) failBatch(batch []op, err error) {
	w.lastErr.Store(err.Error())
	w.writeErrors.Add(1)
	w.failStreak++
	var retried, dropped int
	for i := range batch {
		o := &batch[i]
		if o.kind != opEvent {
			continue
		}
		o.tries++
		o.written = false
		// An event is never dropped while the store is open: a later event
		// of its run committing would leave a gap in the log. Events wait
		// out the fault (the full queue makes Emit block: backpressure).
		// Only a closing store gives up, after a few tries.
		limit := w.eventTries
		if limit == 0 && w.isClosed() {
			limit = closingEventTries
		}
		if limit > 0 && o.tries >= limit {
			dropped++
			continue
		}
		retried++
		w.retry = append(w.retry, *o)
	}
	w.eventsRetried.Add(uint64(retried))
	w.eventsDropped.Add(uint64(dropped))
	w.s.log.Error("store: write failed", "err", err, "ops", len(batch),
		"events_retried", retried, "events_dropped", dropped)
	werr := fmt.Errorf("store write failed, nothing committed: %w", storageErr(err))
	for i := range batch {
		o := &batch[i]
		if o.kind != opSync {
			continue
		}
		if o.settled && o.res != nil && o.ctx.Err() != nil {
			o.done <- o.res // skipped for its own done context
			continue
		}
		o.done <- werr
	}
	if len(w.retry) > 0 {
		// Give a full disk or a lock held by another process time to clear.
		d := w.retryDelay << min(w.failStreak-1, 10)
		time.Sleep(min(d, maxRetryDelay))
	}
}

func (w *writer) isClosed() bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.closed
}
