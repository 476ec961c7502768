package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// readStmts prepares the read pool's queries once. Without it modernc's
// SQLite parses the SQL on every QueryContext: that was about 7 % of the
// server's CPU for a short run answered on AgentFlow's POST /api/run (its
// answer reads the run's log back) and 2 % on POST /api/runs. A *sql.Stmt
// of the pool is prepared on each connection the first time it runs
// there, and kept.
type readStmts struct {
	db *sql.DB
	mu sync.RWMutex
	m  map[string]*sql.Stmt
}

// maxReadStmts bounds the cache: queries built at run time (a list's
// filters, a chunk of ids) come in a few shapes; anything beyond runs
// unprepared as before.
const maxReadStmts = 128

func newReadStmts(db *sql.DB) *readStmts {
	return &readStmts{db: db, m: map[string]*sql.Stmt{}}
}

// stmt returns q prepared on the pool, or nil when the cache is full or
// preparing failed (the caller then runs q as text, which reports the
// error if there is one).
func (c *readStmts) stmt(ctx context.Context, q string) *sql.Stmt {
	c.mu.RLock()
	st, ok := c.m[q]
	c.mu.RUnlock()
	if ok {
		return st
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[q]; ok {
		return st
	}
	if len(c.m) >= maxReadStmts {
		return nil
	}
	st, err := c.db.PrepareContext(ctx, q)
	if err != nil {
		return nil
	}
	c.m[q] = st
	return st
}

func (c *readStmts) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.m {
		_ = st.Close() // the pool closes next; nothing to do about an error
		delete(c.m, q)
	}
}

// reader is a queryer over the read pool with prepared statements; tx, if
// set, runs them inside that read transaction.
type reader struct {
	c  *readStmts
	tx *sql.Tx
}

// prepared returns q prepared (bound to the transaction, if any: closed
// with it, reusing the statement prepared on its connection), or nil.
func (r reader) prepared(ctx context.Context, q string) *sql.Stmt {
	st := r.c.stmt(ctx, q)
	if st != nil && r.tx != nil {
		return r.tx.StmtContext(ctx, st)
	}
	return st
}

// on is where q runs as text when it is not prepared.
func (r reader) on() queryer {
	if r.tx != nil {
		return r.tx
	}
	return r.c.db
}

func (r reader) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := r.prepared(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return r.on().QueryContext(ctx, q, args...)
}

func (r reader) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st := r.prepared(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return r.on().QueryRowContext(ctx, q, args...)
}
