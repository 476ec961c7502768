// Package sqlite is Switchyard's durable SQLite store, a store.Store: runs
// for the engine, saved workflows with their version history, sessions,
// YAML canvas positions and retention.
//
// One database file; WAL mode. Writes go through ONE connection driven by
// the group-commit queue (store/internal/commit): one writer goroutine
// commits whatever is queued as one transaction, so a fast graph costs a
// handful of commits, not one per event, and the per-run order of events,
// checkpoints and lease changes is the order they were handed to the
// store. Reads use a separate pool of read-only connections and never wait
// for the writer.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"
	zsqlite "zombiezen.com/go/sqlite"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/internal/commit"
)

// Defaults.
const (
	DefaultQueueSize = 16384
	busyTimeoutMS    = 5000
)

// migrateLockSuffix names the file beside the database whose lock
// migrations hold (switchyard.db-migrate.lock).
const migrateLockSuffix = "-migrate.lock"

// Store is the SQLite store. It is safe for concurrent use.
type Store struct {
	path string
	log  *slog.Logger
	now  func() time.Time

	wdb *sql.DB // the writer pool (one connection): migrations, workflows, prunes
	wc  *wconn  // the write queue's connection (writer.go)
	// wmu is held by whoever writes: a batch on wc or a transaction on
	// wdb. Both are connections of this process to one file: without it
	// one would wait on the other's lock in SQLite's busy handler, which
	// sleeps.
	wmu   sync.Mutex
	rdb   *sql.DB // read-only pool
	reads *readStmts

	w *writer

	closeOnce sync.Once
	closeErr  error
}

type config struct {
	log       *slog.Logger
	queueSize int
	readConns int
	now       func() time.Time

	eventTries int
	retryDelay time.Duration
	maxSize    int64
}

// Option configures Open.
type Option func(*config)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithQueueSize sets the capacity of the write queue (default
// DefaultQueueSize). When it is full, Emit blocks: that is the backpressure
// a producer feels when the disk cannot keep up.
func WithQueueSize(n int) Option { return func(c *config) { c.queueSize = n } }

// WithReadConns sets the size of the read pool (default max(4, NumCPU)).
func WithReadConns(n int) Option { return func(c *config) { c.readConns = n } }

// WithMaxSize caps the database file at about n bytes (SQLite's
// max_page_count); writes beyond it fail with engine.ErrStorageFull, as on
// a full disk. 0 means no cap.
func WithMaxSize(n int64) Option { return func(c *config) { c.maxSize = n } }

// WithClock sets the clock used for workflow timestamps (default time.Now).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// withRetry sets how often an event of a failed batch is tried before it is
// dropped and the first delay between tries (tests).
func withRetry(tries int, delay time.Duration) Option {
	return func(c *config) { c.eventTries, c.retryDelay = tries, delay }
}

// DefaultPath is the database file used when none is given:
// $SWITCHYARD_DATA/switchyard.db, else ~/.switchyard/switchyard.db.
func DefaultPath() string {
	if dir := os.Getenv("SWITCHYARD_DATA"); dir != "" {
		return filepath.Join(dir, "switchyard.db")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = "."
	}
	return filepath.Join(home, ".switchyard", "switchyard.db")
}

// Open opens (creating it and its directory if needed) the database at path
// (DefaultPath() when empty), applies pending migrations and starts the
// writer. A database written by a newer switchyard is refused with an error
// matching ErrSchemaTooNew.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	cfg := config{
		log:       slog.Default(),
		queueSize: DefaultQueueSize,
		readConns: max(4, runtime.NumCPU()),
		now:       time.Now,

		eventTries: commit.DefaultEventTries,
		retryDelay: commit.DefaultRetryDelay,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.queueSize < 1 {
		cfg.queueSize = 1
	}
	if cfg.readConns < 1 {
		cfg.readConns = 1
	}
	if path == "" {
		path = DefaultPath()
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: database path %q: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("store: create data directory: %w", err)
	}

	// Migrations run under a lock beside the database, so processes
	// opening a new database together migrate it once (see lockFile).
	unlock, err := lockFile(ctx, abs+migrateLockSuffix)
	if err != nil {
		return nil, fmt.Errorf("store: %s: migrations: %w", abs, err)
	}
	defer unlock()

	wdb, err := sql.Open("sqlite", dsn(abs, false))
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", abs, err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)

	if err := migrate(ctx, wdb, cfg.log); err != nil {
		wdb.Close()
		return nil, fmt.Errorf("store: %s: %w", abs, err)
	}

	var maxPages int64
	if cfg.maxSize > 0 {
		if maxPages, err = capSize(ctx, wdb, cfg.maxSize); err != nil {
			wdb.Close()
			return nil, fmt.Errorf("store: %s: %w", abs, err)
		}
	}
	wc, err := openWConn(abs, maxPages)
	if err != nil {
		wdb.Close()
		return nil, fmt.Errorf("store: open %s for the writer: %w", abs, err)
	}

	// The read pool is opened after migrating so that its connections never
	// see a half-created schema (and journal_mode is already WAL).
	rdb, err := sql.Open("sqlite", dsn(abs, true))
	if err != nil {
		wdb.Close()
		wc.close()
		return nil, fmt.Errorf("store: open %s for reading: %w", abs, err)
	}
	rdb.SetMaxOpenConns(cfg.readConns)
	rdb.SetMaxIdleConns(cfg.readConns)
	if err := rdb.PingContext(ctx); err != nil {
		wdb.Close()
		wc.close()
		rdb.Close()
		return nil, fmt.Errorf("store: open %s for reading: %w", abs, err)
	}

	s := &Store{path: abs, log: cfg.log, now: cfg.now, wdb: wdb, wc: wc, rdb: rdb, reads: newReadStmts(rdb)}
	w, err := newWriter(s, commit.Config{Log: cfg.log, QueueSize: cfg.queueSize,
		EventTries: cfg.eventTries, RetryDelay: cfg.retryDelay})
	if err != nil {
		wdb.Close()
		wc.close()
		rdb.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	s.w = w
	return s, nil
}

// dsn builds the connection string. The _pragma parameters are applied by
// the driver to every connection the pool opens, not just the first one.
func dsn(abs string, readOnly bool) string {
	q := url.Values{}
	if !readOnly {
		// Before journal_mode: a new database then returns the pages
		// retention frees to the file system (migration 11); on an older
		// one it only says what VacuumFile converts it to.
		q.Add("_pragma", "auto_vacuum(INCREMENTAL)")
	}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	// Statement journals (each statement of a batch can be rolled back on
	// its own) stay in memory: as temp files they cost a write syscall per
	// page touched, a fifth of the writer's time in profiles.
	q.Add("_pragma", "temp_store(MEMORY)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		// Take the write lock at BEGIN, where busy_timeout applies, rather
		// than failing on a lock upgrade halfway through a transaction when
		// another process holds the database.
		q.Set("_txlock", "immediate")
	}
	// A file: URI so that any character in the path (?, #, %) is escaped.
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

// Path is the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Close stops accepting writes, commits everything already queued, stops
// the writer and closes both pools. It is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.w.Stop()
		var errs []error
		// Keeps the query planner's statistics fresh; cheap when nothing changed.
		if _, err := s.wdb.Exec("PRAGMA optimize"); err != nil {
			s.log.Warn("store: pragma optimize", "err", err)
		}
		s.reads.close()
		errs = append(errs, s.wc.close(), s.rdb.Close(), s.wdb.Close())
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// rd is the read pool with its prepared statements.
func (s *Store) rd() reader { return reader{c: s.reads} }

// Stats returns the writer's counters.
func (s *Store) Stats() store.Stats { return s.w.Stats() }

// toMicros and fromMicros fix the on-disk time representation: integer
// unix microseconds, read back in UTC.
func toMicros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func optTime(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

// nullText stores an empty byte slice as NULL.
func nullText(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// capSize sets max_page_count on the writer pool's connection (kept open
// for the store's lifetime) and returns it for the writer connection
// (wconn): the setting is per connection.
func capSize(ctx context.Context, wdb *sql.DB, n int64) (int64, error) {
	var page int64
	if err := wdb.QueryRowContext(ctx, "PRAGMA page_size").Scan(&page); err != nil {
		return 0, fmt.Errorf("read page size: %w", err)
	}
	pages := max(1, n/page)
	if _, err := wdb.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
		return 0, fmt.Errorf("cap size: %w", err)
	}
	return pages, nil
}

// storageErr marks an error of a write refused for lack of space (SQLITE_FULL,
// or ENOSPC from the file system) with engine.ErrStorageFull, so callers can
// tell "disk full" from other failures.
func storageErr(err error) error {
	if err == nil || errors.Is(err, engine.ErrStorageFull) {
		return err
	}
	var se *sqlite.Error
	if (errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_FULL) || errors.Is(err, syscall.ENOSPC) ||
		zsqlite.ErrCode(err).ToPrimary() == zsqlite.ResultFull { // the writer connection's (wconn)
		return fmt.Errorf("%w: %w", engine.ErrStorageFull, err)
	}
	return err
}
