// Package commit is the group-commit write queue both SQL stores are built
// on, written once. Writes go through one writer goroutine that commits
// whatever is queued as one transaction (group commit), so a fast graph
// costs a handful of commits, not one per event, and the per-run order of
// events, checkpoints and lease changes is the order they were handed to
// the store. A store supplies only how a batch is written (its SQL): the
// queue does the batching, the backpressure, the retries of events of a
// failed batch, the commit hooks and the counters.
package commit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
)

// Retry policy for events of a batch that failed to commit.
const (
	DefaultEventTries = 0 // 0: retry until written while the store is open
	closingEventTries = 4 // a closing store gives up after this many tries
	DefaultRetryDelay = 50 * time.Millisecond
	maxRetryDelay     = 2 * time.Second
)

const (
	// lingerEvents is how long an events-only batch waits for more work.
	lingerEvents = time.Millisecond
	// firstSlice is the most ops the first transaction of a batch takes;
	// later slices double. A commit costs about as much as 10 event rows,
	// so this keeps that overhead small while the first slice commits in
	// about a millisecond.
	firstSlice = 128
)

// Kind tells an Emit from an operation a caller waits for.
type Kind uint8

const (
	Event Kind = iota // an Emit: fire and forget
	Sync              // a store operation; the caller waits for the commit
)

// Op is one entry of the write queue. It holds copies only: the caller may
// reuse its structs as soon as Emit or the enqueuing call returns. J is the
// store's form of an operation (what its batch writer runs).
type Op[J any] struct {
	Kind Kind
	Ev   engine.Event // Event
	// Tries counts failed batches this event was part of.
	Tries int

	Job J               // Sync: the store's operation
	Ctx context.Context // Sync: a done ctx skips the op
	Run *engine.Run     // Sync: header reported to the commit hooks, may be nil
	Evs []engine.Event  // Sync: events the op writes, reported to the commit hooks
	res chan error      // Sync: buffered(1), gets the outcome

	// Outcome within the current batch, set by the store's batch writer.
	Written bool  // event row inserted
	Settled bool  // sync op finished (Res is final unless the batch fails)
	Res     error // sync op result
}

// Reset clears the op's outcome before its batch is tried again.
func (o *Op[J]) Reset() { o.Written, o.Settled, o.Res = false, false, nil }

// Skip settles a sync op whose caller is gone (done context) without
// running it; it reports whether it did.
func (o *Op[J]) Skip() bool {
	if err := o.Ctx.Err(); err != nil {
		o.Settled, o.Res = true, err
		return true
	}
	return false
}

// Settle records a sync op's outcome: done, or refused (Rejected). Any
// other error is returned: it fails the whole batch.
func (o *Op[J]) Settle(err error) error {
	if err == nil { // most ops: no errors.As, whose target escapes
		o.Settled = true
		return nil
	}
	var rj Rejected
	if errors.As(err, &rj) {
		o.Settled, o.Res = true, rj.Err
		return nil
	}
	if err != nil {
		return err
	}
	o.Settled = true
	return nil
}

// Rejected marks an op that was refused (ErrNotFound, ErrConflict) before
// it changed anything, so the rest of the batch can still commit. Every op
// must reject before its first write; any other error aborts the batch.
type Rejected struct{ Err error }

func (r Rejected) Error() string { return r.Err.Error() }
func (r Rejected) Unwrap() error { return r.Err }

// Hook receives what a batch made durable: the events, in the order they
// were emitted (seq order per run), and the run headers written, in order.
type Hook func(events []engine.Event, runs []*engine.Run)

// Config configures a Queue.
type Config struct {
	Log        *slog.Logger
	Name       string // prefix of log messages: "store", "postgres"
	QueueSize  int
	EventTries int           // see DefaultEventTries
	RetryDelay time.Duration // first pause after a failed batch with events to retry
	// FailErr turns the error of a failed batch into what its waiting
	// callers get (SQLite marks a full disk); nil keeps it.
	FailErr func(error) error
	// Skipped explains, in the log, an event a committed batch did not
	// store.
	Skipped string
}

// Queue is the write queue and its writer goroutine.
type Queue[J any] struct {
	cfg   Config
	write func(batch []Op[J]) error
	ch    chan Op[J]

	mu     sync.RWMutex // guards closed against sends on a closed ch
	closed bool
	done   chan struct{}

	hooksMu sync.Mutex
	hooks   []Hook
	// callMu makes hook calls one at a time: the writer's, and those of a
	// store that reports other processes' commits too (PostgreSQL).
	callMu sync.Mutex

	retry      []Op[J] // events of failed batches, oldest first
	failStreak int

	batches, eventsWritten, ops, writeErrors, retries atomic.Uint64
	connRetries                                       atomic.Uint64
	eventsRetried, eventsDropped, fullWaits           atomic.Uint64
	lastBatch, largestBatch                           atomic.Int64
	lastErr                                           atomic.Value // string
	// busy is the writer's time writing batches and reporting them, in
	// nanoseconds (Stats.WriterBusy).
	busy atomic.Int64
}

// New returns a queue whose batches write runs, and starts its writer.
// write commits a batch as one transaction and sets each op's outcome, or
// returns why nothing of it was committed.
func New[J any](cfg Config, write func(batch []Op[J]) error) *Queue[J] {
	cfg.QueueSize = max(cfg.QueueSize, 1)
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	q := &Queue[J]{cfg: cfg, write: write, ch: make(chan Op[J], cfg.QueueSize), done: make(chan struct{})}
	q.lastErr.Store("")
	go q.loop()
	return q
}

// enqueue adds o to the queue, blocking while it is full (backpressure)
// until ctx ends; context.Background() waits as long as it takes.
func (q *Queue[J]) enqueue(ctx context.Context, o Op[J]) error {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return store.ErrClosed
	}
	select {
	case q.ch <- o:
		return nil
	default:
	}
	q.fullWaits.Add(1)
	select {
	case q.ch <- o:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Emit queues a copy of ev (data copied, time as it reads back) and
// returns. When the queue is full it blocks until the writer made room;
// an event that cannot be queued (the store is closed) is logged and
// counted as dropped.
func (q *Queue[J]) Emit(ev *engine.Event) {
	if ev == nil {
		return
	}
	o := Op[J]{Kind: Event, Ev: *ev}
	o.Ev.Data = bytes.Clone(ev.Data)
	o.Ev.Timestamp = NormTime(ev.Timestamp)
	if err := q.enqueue(context.Background(), o); err != nil {
		q.eventsDropped.Add(1)
		q.cfg.Log.Warn(q.cfg.Name+": event dropped", "run", ev.RunID, "seq", ev.Seq, "err", err)
	}
}

// Do runs job in the writer's next batch and waits for its outcome. run,
// if not nil, and evs (events job writes, in order) are passed to the
// commit hooks as if emitted. If ctx ends first, the op may still commit:
// the writer skips it only if it has not started it yet.
func (q *Queue[J]) Do(ctx context.Context, run *engine.Run, evs []engine.Event, job J) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	res := resChans.Get().(chan error)
	o := Op[J]{Kind: Sync, Job: job, Ctx: ctx, Run: run, Evs: evs, res: res}
	if err := q.enqueue(ctx, o); err != nil {
		resChans.Put(res)
		return err
	}
	select {
	case err := <-res:
		// Emptied: the writer sends one outcome per op, and has sent it.
		resChans.Put(res)
		return err
	case <-ctx.Done():
		// Not reused: the writer may still send the outcome into it.
		return ctx.Err()
	}
}

// resChans are the outcome channels of sync ops (buffered 1), reused
// once their outcome was received: one allocation less per op.
var resChans = sync.Pool{New: func() any { return make(chan error, 1) }}

// Stop closes the queue and waits until everything in it is written.
func (q *Queue[J]) Stop() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
	q.mu.Unlock()
	<-q.done
}

// Closed reports whether Stop was called.
func (q *Queue[J]) Closed() bool {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.closed
}

// OnCommit registers h (see Hook). Hooks run on the writer goroutine, one
// after the other; a panicking hook is logged, not fatal.
func (q *Queue[J]) OnCommit(h Hook) {
	q.hooksMu.Lock()
	q.hooks = append(q.hooks, h)
	q.hooksMu.Unlock()
}

func (q *Queue[J]) snapshotHooks() []Hook {
	q.hooksMu.Lock()
	defer q.hooksMu.Unlock()
	return q.hooks[:len(q.hooks):len(q.hooks)]
}

// CallHooks passes events and runs to every hook, never concurrently with
// the writer's own calls: for what a store learns was committed elsewhere.
func (q *Queue[J]) CallHooks(events []engine.Event, runs []*engine.Run) {
	q.callHooks(q.snapshotHooks(), events, runs)
}

func (q *Queue[J]) callHooks(hooks []Hook, events []engine.Event, runs []*engine.Run) {
	q.callMu.Lock()
	defer q.callMu.Unlock()
	for _, h := range hooks {
		q.callHook(h, events, runs)
	}
}

// callHook isolates the writer from a panicking hook.
func (q *Queue[J]) callHook(h Hook, events []engine.Event, runs []*engine.Run) {
	defer func() {
		if p := recover(); p != nil {
			q.cfg.Log.Error(q.cfg.Name+": commit hook panicked", "panic", p)
		}
	}()
	h(events, runs)
}

// CountRetry counts a batch run again after losing a conflict with
// another transaction; CountConnRetry one run again after the database
// went away.
func (q *Queue[J]) CountRetry()     { q.retries.Add(1) }
func (q *Queue[J]) CountConnRetry() { q.connRetries.Add(1) }

// Stats returns the queue's counters.
func (q *Queue[J]) Stats() store.Stats {
	return store.Stats{
		QueueDepth:     len(q.ch),
		QueueCapacity:  q.cfg.QueueSize,
		Batches:        q.batches.Load(),
		EventsWritten:  q.eventsWritten.Load(),
		Ops:            q.ops.Load(),
		WriteErrors:    q.writeErrors.Load(),
		Retries:        q.retries.Load(),
		ConnRetries:    q.connRetries.Load(),
		EventsRetried:  q.eventsRetried.Load(),
		EventsDropped:  q.eventsDropped.Load(),
		QueueFullWaits: q.fullWaits.Load(),
		LastBatchSize:  int(q.lastBatch.Load()),
		LargestBatch:   int(q.largestBatch.Load()),
		LastWriteError: q.lastErr.Load().(string),
		WriterBusy:     time.Duration(q.busy.Load()),
	}
}

// EventsOnly reports whether batch holds nothing but emitted events.
func EventsOnly[J any](batch []Op[J]) bool {
	for i := range batch {
		if batch[i].Kind != Event {
			return false
		}
	}
	return true
}

// loop is the writer goroutine: it takes everything queued (events of
// failed batches first, as they are older) and commits it as one
// transaction, until the queue is closed and drained.
func (q *Queue[J]) loop() {
	defer close(q.done)
	batch := make([]Op[J], 0, 1024)
	for {
		batch = append(batch[:0], q.retry...)
		clear(q.retry)
		q.retry = q.retry[:0]
		if len(batch) == 0 {
			o, ok := <-q.ch
			if !ok {
				return
			}
			batch = append(batch, o)
		}
		closed := q.drain(&batch)
		// Before a batch is cut, the goroutines ready to run go first,
		// once: under load they are about to queue more (the events and
		// checkpoints of other runs' steps), and a batch cut the moment
		// the writer wakes is small. Without this `load runs` on one core
		// fell, in four passes of six, into cutting batches of a few ops:
		// 0.36-0.43 commits per run instead of 0.18, 350-385 µs of CPU
		// per run instead of 300, end-to-end p50 100-270 ms instead of
		// 40, and peak RSS up to 126 MB. With it: 0.13 commits per run in
		// every pass. An idle server loses nothing: with no one else
		// ready, the yield returns at once.
		if !closed && len(batch) < firstSlice {
			runtime.Gosched()
			closed = q.drain(&batch)
		}
		// A batch of events alone lingers briefly for more work: the events
		// a step emits as it starts then share the commit of the checkpoint
		// that follows, instead of paying for a commit of their own (WAL
		// frame writes dominate the cost of a commit). Checkpoints and
		// claims never wait, nor does a batch that already fills a slice.
		if !closed && EventsOnly(batch) && len(batch) < firstSlice {
			t := time.NewTimer(lingerEvents)
		wait:
			for len(batch) < firstSlice {
				select {
				case o, ok := <-q.ch:
					if !ok {
						break wait
					}
					batch = append(batch, o)
					if o.Kind != Event {
						q.drain(&batch)
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
		start := time.Now()
		for rest, n := batch, firstSlice; len(rest) > 0; n *= 2 {
			n = min(n, len(rest))
			if err := q.write(rest[:n]); err != nil {
				q.failBatch(rest, err)
				break
			}
			q.commitDone(rest[:n])
			rest = rest[n:]
		}
		q.busy.Add(int64(time.Since(start)))
		clear(batch) // drop references to event data and closures
	}
}

// drain appends whatever is queued without waiting; true if the queue closed.
func (q *Queue[J]) drain(batch *[]Op[J]) bool {
	for len(*batch) < q.cfg.QueueSize {
		select {
		case o, ok := <-q.ch:
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

// commitDone reports a committed batch: counters, hooks, then the waiting
// callers.
func (q *Queue[J]) commitDone(batch []Op[J]) {
	q.failStreak = 0
	hooks := q.snapshotHooks()
	var events []engine.Event
	var runs []*engine.Run
	var written, skipped, ops uint64
	for i := range batch {
		o := &batch[i]
		switch o.Kind {
		case Event:
			if !o.Written {
				skipped++
				q.cfg.Log.Warn(q.cfg.Name+": event not stored: "+q.cfg.Skipped,
					"run", o.Ev.RunID, "seq", o.Ev.Seq, "type", o.Ev.Type)
				continue
			}
			written++
			if len(hooks) > 0 {
				events = append(events, o.Ev)
			}
		case Sync:
			if o.Res == nil {
				ops++
				written += uint64(len(o.Evs))
				if len(hooks) > 0 {
					events = append(events, o.Evs...)
					if o.Run != nil {
						runs = append(runs, o.Run)
					}
				}
			}
		}
	}
	// Counters first: a caller woken below may read Stats at once.
	q.batches.Add(1)
	q.lastBatch.Store(int64(len(batch)))
	if int64(len(batch)) > q.largestBatch.Load() {
		q.largestBatch.Store(int64(len(batch)))
	}
	q.eventsWritten.Add(written)
	q.eventsDropped.Add(skipped)
	q.ops.Add(ops)
	// Hooks before waking waiters: once a Checkpoint returns, every hook has
	// seen the events committed with it (the CLI prints its last events
	// before the run's final result).
	if len(events) > 0 || len(runs) > 0 {
		q.callHooks(hooks, events, runs)
	}
	for i := range batch {
		if o := &batch[i]; o.Kind == Sync {
			o.res <- o.Res
		}
	}
}

// failBatch reports a batch that did not commit: nothing of it is in the
// database. Waiting callers get the error; events go back to the front of
// the queue until they have failed EventTries times.
func (q *Queue[J]) failBatch(batch []Op[J], err error) {
	q.lastErr.Store(err.Error())
	q.writeErrors.Add(1)
	q.failStreak++
	var retried, dropped int
	for i := range batch {
		o := &batch[i]
		if o.Kind != Event {
			continue
		}
		o.Tries++
		o.Written = false
		// An event is never dropped while the store is open: a later event
		// of its run committing would leave a gap in the log. Events wait
		// out the fault (the full queue makes Emit block: backpressure).
		// Only a closing store gives up, after a few tries.
		limit := q.cfg.EventTries
		if limit == 0 && q.Closed() {
			limit = closingEventTries
		}
		if limit > 0 && o.Tries >= limit {
			dropped++
			continue
		}
		retried++
		q.retry = append(q.retry, *o)
	}
	q.eventsRetried.Add(uint64(retried))
	q.eventsDropped.Add(uint64(dropped))
	q.cfg.Log.Error(q.cfg.Name+": write failed", "err", err, "ops", len(batch),
		"events_retried", retried, "events_dropped", dropped)
	if q.cfg.FailErr != nil {
		err = q.cfg.FailErr(err)
	}
	werr := fmt.Errorf("store write failed, nothing committed: %w", err)
	for i := range batch {
		o := &batch[i]
		if o.Kind != Sync {
			continue
		}
		if o.Settled && o.Res != nil && o.Ctx.Err() != nil {
			o.res <- o.Res // skipped for its own done context
			continue
		}
		o.res <- werr
	}
	if len(q.retry) > 0 {
		// Give a full disk or a lock held by another process time to clear.
		d := q.cfg.RetryDelay << min(q.failStreak-1, 10)
		time.Sleep(min(d, maxRetryDelay))
	}
}
