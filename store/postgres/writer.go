package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchyard/switchyard/engine"
)

// Retry policy for events of a batch that failed to commit (as SQLite's).
const (
	defaultEventTries = 0 // 0: retry until written while the store is open
	closingEventTries = 4 // a closing store gives up after this many tries
	defaultRetryDelay = 50 * time.Millisecond
	maxRetryDelay     = 2 * time.Second
	// conflictRetries is how often a batch that lost a deadlock or a
	// serialization conflict with another process is run again at once.
	conflictRetries = 5
)

type opKind uint8

const (
	opEvent opKind = iota // an Emit: fire and forget
	opSync                // a function run in the batch; the caller waits for the commit
)

// op is one entry of the write queue; it holds copies only.
type op struct {
	kind  opKind
	ev    engine.Event // opEvent
	tries int          // failed batches this event was part of

	fn   func(t *wtx) error // opSync; must be safe to run again after a rolled back try
	pipe *pipelined         // opSync: the op's form that shares a round trip with its neighbours (see pipelined)
	ctx  context.Context    // opSync: a done ctx skips the op
	run  *engine.Run        // opSync: header reported to OnCommit hooks, may be nil
	evs  []engine.Event     // opSync: events fn writes, reported to OnCommit hooks
	done chan error         // opSync: buffered(1)

	written bool  // event row inserted
	settled bool  // sync op finished
	res     error // sync op result
}

// pipelined is the form of a sync op whose statements go to the server in
// one round trip with those of the ops and events around it in the batch,
// instead of round trips of its own (a batch of checkpoints and run
// creations of many runs then costs one round trip, plus the commit's).
// Both functions must be safe to run again after a rolled back try.
//
// An op with both forms (fn too) is optimistic: its pipelined statements
// fail on a constraint (a taken id, a missing workflow) where fn checks
// first and refuses the op alone. Such a failure rolls the batch back, and
// it runs again with those ops in their fn form.
type pipelined struct {
	// queue adds the op's statements to b.
	queue func(b *pgx.Batch)
	// read takes the results of exactly those statements, in order. An
	// error is fatal to the batch (a failed statement aborted the
	// transaction). follow, if not nil, runs in the transaction once the
	// round trip is over, e.g. to tell why a fenced write matched nothing;
	// it returns rejected to refuse the op.
	read func(br pgx.BatchResults) (follow func(t *wtx) error, err error)
}

// rejected marks an op refused (ErrNotFound, ErrConflict) before it wrote
// anything, so the rest of the batch still commits.
type rejected struct{ err error }

func (r rejected) Error() string { return r.err.Error() }
func (r rejected) Unwrap() error { return r.err }

// wtx is the transaction of one batch as seen by an op function. BEGIN is
// not a round trip of its own: it goes to the server in front of the
// batch's first statements (a step's events and checkpoint then cost two
// round trips with the COMMIT, an events-only batch one).
type wtx struct {
	ctx        context.Context
	conn       *pgx.Conn
	begun      bool
	commitSent bool // COMMIT went to the server: the batch may have committed
}

func (t *wtx) begin() error {
	if t.begun {
		return nil
	}
	t.begun = true
	_, err := t.conn.Exec(t.ctx, "BEGIN")
	return err
}

// sendBatch sends b, BEGIN first if the transaction has not begun.
func (t *wtx) sendBatch(b *pgx.Batch) pgx.BatchResults {
	if t.begun {
		return t.conn.SendBatch(t.ctx, b)
	}
	t.begun = true
	b.QueuedQueries = append([]*pgx.QueuedQuery{{SQL: "BEGIN"}}, b.QueuedQueries...)
	br := t.conn.SendBatch(t.ctx, b)
	if _, err := br.Exec(); err != nil { // BEGIN's result: no extra round trip
		return errResults{BatchResults: br, err: err}
	}
	return br
}

func (t *wtx) exec(query string, args ...any) (int64, error) {
	b := &pgx.Batch{}
	b.Queue(query, args...)
	br := t.sendBatch(b)
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (t *wtx) queryRow(query string, args ...any) pgx.Row {
	if err := t.begin(); err != nil {
		return errRow{err}
	}
	return t.conn.QueryRow(t.ctx, query, args...)
}

func (t *wtx) query(query string, args ...any) (pgx.Rows, error) {
	if err := t.begin(); err != nil {
		return nil, err
	}
	return t.conn.Query(t.ctx, query, args...)
}

// errResults reports a failed BEGIN for every statement of its batch.
type errResults struct {
	pgx.BatchResults
	err error
}

func (e errResults) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, e.err }
func (e errResults) Query() (pgx.Rows, error)         { return nil, e.err }
func (e errResults) QueryRow() pgx.Row                { return errRow{e.err} }
func (e errResults) Close() error {
	_ = e.BatchResults.Close() // e.err is the error to report
	return e.err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// commitHook receives what a batch made durable.
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
	// callMu makes hook calls one at a time: the writer's and, with
	// WithRemoteCommits, the listener's.
	callMu sync.Mutex

	retry      []op
	eventTries int
	retryDelay time.Duration
	failStreak int

	batches, eventsWritten, ops, writeErrors, retries atomic.Uint64
	connRetries                                       atomic.Uint64
	eventsRetried, eventsDropped, fullWaits           atomic.Uint64
	lastBatch, largestBatch                           atomic.Int64
	lastErr                                           atomic.Value // string
}

// sqlInsertEvent writes an event only while its owner (” = unfenced)
// holds the run, and keeps the run row share-locked until the batch
// commits: a takeover by another process (an UPDATE of that row) waits for
// these events instead of loading a log they are about to extend. An
// unknown run or a duplicate seq is a skipped row, not an error that would
// fail the batch.
const sqlInsertEvent = `INSERT INTO run_events (run_id, seq, node_id, type, content, ts, data)
SELECT $1::text, $2::bigint, $3::text, $4::text, $5::text, $6::timestamptz, $7::text
WHERE EXISTS (SELECT 1 FROM runs WHERE id = $1 AND ($8::text = '' OR owner = $8) FOR SHARE)
ON CONFLICT (run_id, seq) DO NOTHING`

func newWriter(s *Store, queueSize, tries int, delay time.Duration) *writer {
	w := &writer{s: s, ch: make(chan op, queueSize), cap: queueSize, done: make(chan struct{}),
		eventTries: tries, retryDelay: delay}
	w.lastErr.Store("")
	return w
}

// enqueue adds o to the queue, blocking while it is full until ctx ends.
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

func (w *writer) do(ctx context.Context, run *engine.Run, fn func(t *wtx) error) error {
	return w.doEvents(ctx, run, nil, fn)
}

// doPipelined is do for an op in its pipelined form.
func (w *writer) doPipelined(ctx context.Context, run *engine.Run, p *pipelined) error {
	return w.submit(ctx, op{kind: opSync, pipe: p, ctx: ctx, run: run, done: make(chan error, 1)})
}

// doEvents is do for an op that also writes evs: the hooks get them as if
// they had been emitted.
func (w *writer) doEvents(ctx context.Context, run *engine.Run, evs []engine.Event, fn func(t *wtx) error) error {
	return w.submit(ctx, op{kind: opSync, fn: fn, ctx: ctx, run: run, evs: evs, done: make(chan error, 1)})
}

// submit queues a sync op and waits for its result.
func (w *writer) submit(ctx context.Context, o op) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := w.enqueue(ctx, o); err != nil {
		return err
	}
	select {
	case err := <-o.done:
		return err
	case <-ctx.Done():
		return ctx.Err() // the op may still commit if the writer already started it
	}
}

func (w *writer) stop() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
	w.mu.Unlock()
	<-w.done
}

func (w *writer) isClosed() bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.closed
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
		Retries:        w.retries.Load(),
		ConnRetries:    w.connRetries.Load(),
		EventsRetried:  w.eventsRetried.Load(),
		EventsDropped:  w.eventsDropped.Load(),
		QueueFullWaits: w.fullWaits.Load(),
		LastBatchSize:  int(w.lastBatch.Load()),
		LargestBatch:   int(w.largestBatch.Load()),
		LastWriteError: w.lastErr.Load().(string),
	}
}

const (
	// lingerEvents is how long an events-only batch waits for more work, so
	// a step's first events share the commit of the checkpoint after them.
	lingerEvents = time.Millisecond
	// firstSlice is the most ops of the first transaction of a batch; later
	// slices double, so watchers see the start of a burst early.
	firstSlice = 128
)

// loop is the writer goroutine (the same shape as the SQLite writer's).
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
		if !closed && eventsOnly(batch) && len(batch) < firstSlice {
			t := time.NewTimer(lingerEvents)
		wait:
			for len(batch) < firstSlice {
				select {
				case o, ok := <-w.ch:
					if !ok {
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
		for rest, n := batch, firstSlice; len(rest) > 0; n *= 2 {
			n = min(n, len(rest))
			if err := w.runBatchRetrying(rest[:n]); err != nil {
				w.failBatch(rest, err)
				break
			}
			rest = rest[n:]
		}
		clear(batch)
	}
}

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

// retryable: the batch lost to another transaction (another process) and
// nothing of it committed; running it again is safe and usually succeeds.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// While the database cannot be reached or went away (a restart, a
// failover), a batch that cannot have committed runs again for up to
// connRetryFor, with backoff: callers wait out a short outage instead of
// failing. Longer outages are the callers' to handle (the engine keeps
// its runs' changes and tries again, or leaves the runs to recovery).
const (
	connRetryFor   = 10 * time.Second
	connRetryFirst = 50 * time.Millisecond
	connRetryMax   = time.Second
)

// connLost marks a batch that failed because the database could not be
// reached or went away, at a point where nothing of it can have
// committed: running it again is safe.
type connLost struct{ err error }

func (c connLost) Error() string { return c.err.Error() }
func (c connLost) Unwrap() error { return c.err }

// goneAway: the server said it is shutting down, starting up or cut the
// connection (SQLSTATE class 08, 57P01-57P03). It says so instead of
// answering the statement, so that statement (a COMMIT too) did not run.
func goneAway(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case "57P01", "57P02", "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
		return true
	}
	return strings.HasPrefix(pe.Code, "08") // connection exception
}

func (w *writer) runBatchRetrying(batch []op) error {
	careful := false // optimistic ops in their checking form
	var lostSince time.Time
	delay := connRetryFirst
	for try := 0; ; try++ {
		err := w.runBatch(batch, careful)
		if err == nil {
			if !lostSince.IsZero() {
				w.s.log.Info("postgres: the database is back", "after", time.Since(lostSince).Round(time.Millisecond))
			}
			return nil
		}
		var cl connLost
		switch {
		case errors.As(err, &cl):
			if lostSince.IsZero() {
				lostSince = time.Now()
				w.s.log.Warn("postgres: the database went away; waiting for it", "err", err, "for", connRetryFor)
			}
			if time.Since(lostSince) > connRetryFor || w.isClosed() {
				return err
			}
			w.connRetries.Add(1)
			time.Sleep(delay)
			delay = min(2*delay, connRetryMax)
			try-- // not a conflict: no try spent
		case !careful && violation(err) && hasOptimistic(batch):
			careful, try = true, try-1 // not a conflict: no try spent
			w.s.log.Debug("postgres: batch broke a constraint, running it again op by op", "err", err)
		case !retryable(err) || try == conflictRetries:
			return err
		default:
			w.retries.Add(1)
			w.s.log.Debug("postgres: batch lost a conflict, running it again", "err", err, "try", try+1)
		}
		for i := range batch {
			batch[i].written, batch[i].settled, batch[i].res = false, false, nil
		}
	}
}

// violation: a statement broke an integrity constraint (SQLSTATE class
// 23), which an optimistic op's checking form turns into its refusal.
func violation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && strings.HasPrefix(pe.Code, "23")
}

func hasOptimistic(batch []op) bool {
	for i := range batch {
		if batch[i].pipe != nil && batch[i].fn != nil {
			return true
		}
	}
	return false
}

// runBatch commits batch as one transaction and reports it done, or
// returns why nothing of it was committed. Consecutive events go to the
// server as one pipelined batch of statements: one round trip, not one
// per event.
func (w *writer) runBatch(batch []op, careful bool) error {
	ctx := context.Background()
	pc, err := w.s.pool.Acquire(ctx)
	if err != nil {
		return connLost{fmt.Errorf("connect: %w", err)}
	}
	// A connection released inside a transaction (a failed ROLLBACK) is
	// closed by the pool, never reused.
	defer pc.Release()
	t := &wtx{ctx: ctx, conn: pc.Conn()}
	notes := w.s.commitNotes(batch)
	var fatal error
	if eventsOnly(batch) {
		// BEGIN, the inserts, the notifications and COMMIT in one round trip.
		fatal = w.insertEvents(t, batch, true, notes)
	} else {
		fatal = w.runOps(t, batch, careful)
		if fatal == nil && t.begun {
			fatal = commit(t, notes)
		}
	}
	if fatal != nil {
		// A connection that broke before COMMIT was sent took its
		// transaction with it; after, the commit may have happened.
		broke := t.conn.IsClosed() && !t.commitSent
		if t.begun {
			_, _ = t.conn.Exec(ctx, "ROLLBACK") // the error that matters is fatal
		}
		if broke || goneAway(fatal) || pgconn.SafeToRetry(fatal) {
			return connLost{fatal}
		}
		return fatal
	}
	w.commitDone(batch)
	return nil
}

// commit sends the notifications and commits, in one round trip, and
// tells a transaction that failed and was rolled back (COMMIT then answers
// ROLLBACK, without an error) from a committed one.
func commit(t *wtx, notes []string) error {
	b := &pgx.Batch{}
	queueCommit(b, notes)
	t.commitSent = true
	br := t.sendBatch(b)
	defer br.Close() // every result is read below; Close reports nothing new
	return readCommit(br, notes)
}

// queueCommit queues the batch's notifications (delivered to listeners
// only if, and once, the transaction commits) and COMMIT.
func queueCommit(b *pgx.Batch, notes []string) {
	for _, n := range notes {
		b.Queue(`SELECT pg_notify('`+notifyChannel+`', $1)`, n)
	}
	b.Queue("COMMIT")
}

func readCommit(br pgx.BatchResults, notes []string) error {
	for range notes {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("notify: %w", err)
		}
	}
	tag, err := br.Exec()
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if tag.String() != "COMMIT" {
		return fmt.Errorf("commit: transaction was rolled back (%s)", tag)
	}
	return nil
}

func (w *writer) runOps(t *wtx, batch []op, careful bool) error {
	piped := func(o *op) bool {
		return o.kind == opEvent || (o.pipe != nil && (o.fn == nil || !careful))
	}
	for i := 0; i < len(batch); {
		if piped(&batch[i]) {
			// Events and pipelined ops, as many as follow each other: one
			// round trip.
			j := i
			for j < len(batch) && piped(&batch[j]) {
				j++
			}
			var err error
			if eventsOnly(batch[i:j]) {
				err = w.insertEvents(t, batch[i:j], false, nil)
			} else {
				err = w.runPipelined(t, batch[i:j])
			}
			if err != nil {
				return err
			}
			i = j
			continue
		}
		o := &batch[i]
		i++
		if err := o.ctx.Err(); err != nil {
			o.settled, o.res = true, err
			continue
		}
		if err := settle(o, o.fn(t)); err != nil {
			return err
		}
	}
	return nil
}

// settle records a sync op's outcome: done, or refused (rejected). Any
// other error is returned: it fails the batch.
func settle(o *op, err error) error {
	var rj rejected
	if errors.As(err, &rj) {
		o.settled, o.res = true, rj.err
		return nil
	}
	if err != nil {
		return err
	}
	o.settled = true
	return nil
}

// runPipelined sends the statements of events and pipelined ops in one
// round trip, takes their results in order, then runs the follow-ups the
// ops asked for.
func (w *writer) runPipelined(t *wtx, ops []op) error {
	b := &pgx.Batch{}
	for i := range ops {
		o := &ops[i]
		switch {
		case o.kind == opEvent:
			queueEvent(b, &o.ev)
		case o.ctx.Err() != nil:
			o.settled, o.res = true, o.ctx.Err()
		default:
			o.pipe.queue(b)
		}
	}
	br := t.sendBatch(b)
	follows := make([]func(t *wtx) error, len(ops))
	for i := range ops {
		o := &ops[i]
		if o.kind == opEvent {
			tag, err := br.Exec()
			if err != nil {
				_ = br.Close() // the statement's error is the one to report
				return fmt.Errorf("append event %s#%d: %w", o.ev.RunID, o.ev.Seq, err)
			}
			o.written = tag.RowsAffected() == 1
			continue
		}
		if o.settled {
			continue // skipped: its caller is gone
		}
		f, err := o.pipe.read(br)
		if err != nil {
			_ = br.Close()
			return err
		}
		follows[i] = f
	}
	if err := br.Close(); err != nil {
		return err
	}
	for i := range ops {
		o := &ops[i]
		if o.kind == opEvent || o.settled {
			continue
		}
		var err error
		if follows[i] != nil {
			err = follows[i](t)
		}
		if err := settle(o, err); err != nil {
			return err
		}
	}
	return nil
}

// insertEvents appends evs in one pipelined round trip; with notes (the
// batch is events only) it also notifies and commits in that round trip.
func (w *writer) insertEvents(t *wtx, evs []op, andCommit bool, notes []string) error {
	b := &pgx.Batch{}
	for i := range evs {
		queueEvent(b, &evs[i].ev)
	}
	if andCommit {
		queueCommit(b, notes)
		t.commitSent = true
	}
	br := t.sendBatch(b)
	for i := range evs {
		tag, err := br.Exec()
		if err != nil {
			_ = br.Close() // the statement's error is the one to report
			return fmt.Errorf("append event %s#%d: %w", evs[i].ev.RunID, evs[i].ev.Seq, err)
		}
		evs[i].written = tag.RowsAffected() == 1
	}
	if andCommit {
		if err := readCommit(br, notes); err != nil {
			_ = br.Close()
			return err
		}
		t.begun = false // committed: nothing to roll back
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("append events: %w", err)
	}
	return nil
}

func queueEvent(b *pgx.Batch, e *engine.Event) {
	b.Queue(sqlInsertEvent, e.RunID, e.Seq, e.NodeID, e.Type, e.Content, e.Timestamp, nullText(e.Data), e.Owner)
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
				w.s.log.Warn("postgres: event not stored: unknown run, run not held by its owner, or duplicate seq",
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
	w.batches.Add(1)
	w.lastBatch.Store(int64(len(batch)))
	if int64(len(batch)) > w.largestBatch.Load() {
		w.largestBatch.Store(int64(len(batch)))
	}
	w.eventsWritten.Add(written)
	w.eventsDropped.Add(skipped)
	w.ops.Add(ops)
	// Hooks before waking waiters: once a Checkpoint returns, every hook has
	// seen the events committed with it.
	if len(events) > 0 || len(runs) > 0 {
		w.callHooks(hooks, events, runs)
	}
	for i := range batch {
		if o := &batch[i]; o.kind == opSync {
			o.done <- o.res
		}
	}
}

func (w *writer) callHooks(hooks []commitHook, events []engine.Event, runs []*engine.Run) {
	w.callMu.Lock()
	defer w.callMu.Unlock()
	for _, h := range hooks {
		w.callHook(h, events, runs)
	}
}

func (w *writer) callHook(h commitHook, events []engine.Event, runs []*engine.Run) {
	defer func() {
		if p := recover(); p != nil {
			w.s.log.Error("postgres: commit hook panicked", "panic", p)
		}
	}()
	h(events, runs)
}

// failBatch reports a batch that did not commit. Events go back to the
// front of the queue (never dropped while the store is open: a later event
// of the run committing would leave a gap in its log); waiting callers get
// the error.
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
	w.s.log.Error("postgres: write failed", "err", err, "ops", len(batch),
		"events_retried", retried, "events_dropped", dropped)
	werr := fmt.Errorf("store write failed, nothing committed: %w", err)
	for i := range batch {
		o := &batch[i]
		if o.kind != opSync {
			continue
		}
		if o.settled && o.res != nil && o.ctx.Err() != nil {
			o.done <- o.res
			continue
		}
		o.done <- werr
	}
	if len(w.retry) > 0 {
		d := w.retryDelay << min(w.failStreak-1, 10)
		time.Sleep(min(d, maxRetryDelay))
	}
}
