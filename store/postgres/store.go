// Package postgres is Switchyard's PostgreSQL store, a store.Store like the
// SQLite one (store/sqlite), for deployments where several processes share
// one database.
//
// Writes of one Store go through the group-commit queue
// (store/internal/commit): one writer goroutine commits whatever is queued
// as one transaction, with the events,
// checkpoints and run creations of a batch pipelined to the server in one
// round trip, then the commit in another. The per-run order of events,
// checkpoints and lease changes is the order they were handed to the store,
// as with SQLite. Reads use the pool and never wait for the writer.
//
// Several processes (several Stores) may share a database. What makes that
// safe:
//   - leases are set and compared in the database's clock (now()): a lease
//     time reaches SQL only as a distance from the moment it is used, so
//     hosts with skewed clocks agree on expiry;
//   - taking a run over is a compare-and-swap on its row (AcquireRun), and
//     ClaimOrphaned claims a set of orphaned runs with FOR UPDATE SKIP
//     LOCKED, so N processes recovering at once get disjoint runs;
//   - an event is written only while its owner holds the run, and the run
//     row stays share-locked until the event's batch commits, so a takeover
//     waits for the old owner's in-flight events instead of racing them;
//   - migrations run under a PostgreSQL advisory lock.
package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/internal/commit"
)

// DefaultQueueSize is the capacity of the write queue.
const DefaultQueueSize = 16384

// Store is the PostgreSQL store. It is safe for concurrent use.
type Store struct {
	log  *slog.Logger
	now  func() time.Time
	pool *pgxpool.Pool

	// offset is the database clock minus this process's clock at Open, in
	// nanoseconds (diagnostics only).
	offset atomic.Int64

	w *writer

	id          string // tells this Store's commit notices from others'
	cancelMu    sync.Mutex
	cancelHooks []func()
	listening   atomic.Bool
	stopListen  context.CancelFunc // nil without WithRemoteCommits
	listenDone  chan struct{}
	listenRetry time.Duration

	syncCommit string // synchronous_commit at Open

	closeOnce sync.Once
}

type config struct {
	log       *slog.Logger
	queueSize int
	maxConns  int32
	now       func() time.Time

	eventTries int
	retryDelay time.Duration

	remote      bool
	listenRetry time.Duration
}

// withListenRetry sets the pause before a lost listener reconnects (tests).
func withListenRetry(d time.Duration) Option { return func(c *config) { c.listenRetry = d } }

// Option configures Open.
type Option func(*config)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithQueueSize sets the capacity of the write queue (default
// DefaultQueueSize). When it is full, Emit blocks: backpressure.
func WithQueueSize(n int) Option { return func(c *config) { c.queueSize = n } }

// WithMaxConns sets the size of the connection pool (default: pgxpool's,
// at least 4). The writer holds one connection while it commits a batch.
func WithMaxConns(n int) Option { return func(c *config) { c.maxConns = int32(n) } }

// WithClock sets this process's clock (default time.Now): the clock of the
// workflow timestamps, and the one whose offset to the database clock is
// measured to translate lease times.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithRemoteCommits makes the store follow what other processes (other
// Stores on the database) commit and pass it to its OnCommit hooks too:
// their events in seq order per run, and the current header of each run
// whose header they wrote. Hooks are never called concurrently. A run is
// followed from the first notice about it; notices sent while the
// listening connection is down are lost, but the runs already followed
// catch up when it is back.
func WithRemoteCommits() Option { return func(c *config) { c.remote = true } }

// Open connects to the database at dsn (a PostgreSQL URL or key=value
// string), applies pending migrations and starts the writer. A database
// migrated by a newer switchyard is refused with an error matching
// store.ErrSchemaTooNew.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	cfg := config{
		log:         slog.Default(),
		queueSize:   DefaultQueueSize,
		now:         time.Now,
		eventTries:  commit.DefaultEventTries,
		retryDelay:  commit.DefaultRetryDelay,
		listenRetry: defaultListenRetry,
	}
	for _, o := range opts {
		o(&cfg)
	}
	cfg.queueSize = max(cfg.queueSize, 1)
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse dsn: %w", err)
	}
	if cfg.maxConns > 0 {
		pcfg.MaxConns = cfg.maxConns
	}
	// The writer holds a connection per batch; reads need at least one more.
	pcfg.MaxConns = max(pcfg.MaxConns, 4)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := migrate(ctx, pool, cfg.log); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Store{log: cfg.log, now: cfg.now, pool: pool, id: uuid.NewString(), listenRetry: cfg.listenRetry}
	if err := s.measureClock(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if off := s.ClockOffset(); off > 2*time.Second || off < -2*time.Second {
		// Leases do not mind (they use the database's clock); the times
		// this process writes (created, updated) are off by as much.
		s.log.Warn("postgres: this host's clock differs from the database's", "offset", off)
	}
	s.readDurability(ctx)
	s.w = newWriter(s, commit.Config{Log: cfg.log, QueueSize: cfg.queueSize,
		EventTries: cfg.eventTries, RetryDelay: cfg.retryDelay})
	if cfg.remote {
		lctx, cancel := context.WithCancel(context.Background())
		s.stopListen, s.listenDone = cancel, make(chan struct{})
		go s.listen(lctx)
	}
	return s, nil
}

// readDurability notes the server's synchronous_commit (see
// SynchronousCommit); the store never changes it.
func (s *Store) readDurability(ctx context.Context) {
	if err := s.pool.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&s.syncCommit); err != nil {
		s.log.Warn("postgres: read synchronous_commit", "err", err)
	}
}

// SynchronousCommit is the database's synchronous_commit as read at Open
// ("" if it could not be read). With "off" the server acknowledges commits
// before they are durable: a node completion the engine was told is
// durable could be lost in a database crash and the node run again. "on"
// (the default), "remote_write" and "remote_apply" keep them.
func (s *Store) SynchronousCommit() string { return s.syncCommit }

// measureClock sets offset from one round trip: the server's clock is
// taken to be read halfway through it.
func (s *Store) measureClock(ctx context.Context) error {
	best := time.Duration(-1)
	// The fastest of a few round trips is the least skewed by scheduling.
	for range 3 {
		t1 := s.now()
		var db time.Time
		if err := s.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&db); err != nil {
			return fmt.Errorf("read database clock: %w", err)
		}
		t2 := s.now()
		rtt := t2.Sub(t1)
		if best >= 0 && rtt >= best {
			continue
		}
		best = rtt
		s.offset.Store(int64(db.Sub(t1.Add(rtt / 2))))
	}
	return nil
}

// ClockOffset is the database clock minus this process's clock, as
// measured at Open (for diagnostics: leases do not depend on it).
func (s *Store) ClockOffset() time.Duration { return time.Duration(s.offset.Load()) }

// fromNow is t as microseconds from this process's now: a lease time
// reaches the database only as a distance from the moment it is used, and
// the SQL turns it into a time of the database's clock there
// ("now() + $n::float8 * interval '1 microsecond'"). So leases are
// set and compared in the database's clock (now()); a process's clock adds
// only the distances it is given (a TTL), never its reading of the time.
func (s *Store) fromNow(t time.Time) float64 {
	return float64(t.Sub(s.now()).Microseconds())
}

// Listening reports whether a store opened WithRemoteCommits is listening
// for other processes' commits right now.
func (s *Store) Listening() bool { return s.listening.Load() }

// Pool is the connection pool (for tests and tools: the store owns it).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close stops accepting writes, commits everything already queued (events
// of a failing database are given up after a few tries), stops the writer
// and closes the pool. It is idempotent and returns nil: pgxpool's Close
// reports nothing.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.stopListen != nil {
			s.stopListen()
			<-s.listenDone
		}
		s.w.Stop()
		s.pool.Close()
	})
	return nil
}

// Stats returns the writer's counters.
func (s *Store) Stats() store.Stats { return s.w.Stats() }

// --- time and value helpers ---

func optTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// nullText stores an empty byte slice as NULL.
func nullText(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}
