package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store/internal/commit"
)

// conflictRetries is how often a batch that lost a deadlock or a
// serialization conflict with another process is run again at once.
const conflictRetries = 5

// job is an operation of the write queue: fn runs in the batch's
// transaction, pipe (when set) is its form that shares a round trip with
// its neighbours. Both must be safe to run again after a rolled back try.
type job struct {
	fn   func(t *wtx) error
	pipe *pipelined
}

type op = commit.Op[job]

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
	// it returns reject(err) to refuse the op.
	read func(br pgx.BatchResults) (follow func(t *wtx) error, err error)
}

// reject marks an op refused (ErrNotFound, ErrConflict) before it wrote
// anything, so the rest of the batch still commits.
func reject(err error) error { return commit.Rejected{Err: err} }

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

// writer is the PostgreSQL side of the write queue: how it writes a batch
// (pipelined, retried after a lost conflict or a lost connection). The
// queue (commit.Queue) does the rest.
type writer struct {
	*commit.Queue[job]
	s *Store
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

func newWriter(s *Store, cfg commit.Config) *writer {
	w := &writer{s: s}
	cfg.Name = "postgres"
	cfg.Skipped = "unknown run, run not held by its owner, or duplicate seq"
	w.Queue = commit.New(cfg, w.runBatchRetrying)
	return w
}

func (w *writer) do(ctx context.Context, run *engine.Run, fn func(t *wtx) error) error {
	return w.Do(ctx, run, nil, job{fn: fn})
}

// doPipelined is do for an op in its pipelined form.
func (w *writer) doPipelined(ctx context.Context, run *engine.Run, p *pipelined) error {
	return w.Do(ctx, run, nil, job{pipe: p})
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
			if time.Since(lostSince) > connRetryFor || w.Closed() {
				return err
			}
			w.CountConnRetry()
			time.Sleep(delay)
			delay = min(2*delay, connRetryMax)
			try-- // not a conflict: no try spent
		case !careful && (violation(err) || errors.Is(err, errOptimisticMiss)) && hasOptimistic(batch):
			careful, try = true, try-1 // not a conflict: no try spent
			w.s.log.Debug("postgres: batch broke a constraint, running it again op by op", "err", err)
		case !retryable(err) || try == conflictRetries:
			return err
		default:
			w.CountRetry()
			w.s.log.Debug("postgres: batch lost a conflict, running it again", "err", err, "try", try+1)
		}
		for i := range batch {
			batch[i].Reset()
		}
	}
}

// errOptimisticMiss is returned by an optimistic op's pipelined form when
// a look-up found what its checking form would refuse (an unknown
// workflow): the batch runs again op by op, as after a violation.
var errOptimisticMiss = errors.New("optimistic op missed its precondition")

// violation: a statement broke an integrity constraint (SQLSTATE class
// 23), which an optimistic op's checking form turns into its refusal.
func violation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && strings.HasPrefix(pe.Code, "23")
}

func hasOptimistic(batch []op) bool {
	for i := range batch {
		if batch[i].Job.pipe != nil && batch[i].Job.fn != nil {
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
	if commit.EventsOnly(batch) {
		// BEGIN, the inserts, the notifications and COMMIT in one round trip.
		fatal = w.insertEvents(t, batch, true, notes)
	} else {
		fatal = w.runOps(t, batch, careful)
		if fatal == nil && t.begun {
			fatal = commitTx(t, notes)
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
	return nil
}

// commitTx sends the notifications and commits, in one round trip, and
// tells a transaction that failed and was rolled back (COMMIT then answers
// ROLLBACK, without an error) from a committed one.
func commitTx(t *wtx, notes []string) error {
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
		return o.Kind == commit.Event || (o.Job.pipe != nil && (o.Job.fn == nil || !careful))
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
			if commit.EventsOnly(batch[i:j]) {
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
		if o.Skip() {
			continue
		}
		if err := o.Settle(o.Job.fn(t)); err != nil {
			return err
		}
	}
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
		case o.Kind == commit.Event:
			queueEvent(b, &o.Ev)
		case o.Skip():
		default:
			o.Job.pipe.queue(b)
		}
	}
	br := t.sendBatch(b)
	follows := make([]func(t *wtx) error, len(ops))
	for i := range ops {
		o := &ops[i]
		if o.Kind == commit.Event {
			tag, err := br.Exec()
			if err != nil {
				_ = br.Close() // the statement's error is the one to report
				return fmt.Errorf("append event %s#%d: %w", o.Ev.RunID, o.Ev.Seq, err)
			}
			o.Written = tag.RowsAffected() == 1
			continue
		}
		if o.Settled {
			continue // skipped: its caller is gone
		}
		f, err := o.Job.pipe.read(br)
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
		if o.Kind == commit.Event || o.Settled {
			continue
		}
		var err error
		if follows[i] != nil {
			err = follows[i](t)
		}
		if err := o.Settle(err); err != nil {
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
		queueEvent(b, &evs[i].Ev)
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
			return fmt.Errorf("append event %s#%d: %w", evs[i].Ev.RunID, evs[i].Ev.Seq, err)
		}
		evs[i].Written = tag.RowsAffected() == 1
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
