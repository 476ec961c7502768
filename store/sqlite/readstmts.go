package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// readStmts prepares the read pool's queries once. Without it modernc's
// SQLite parses the SQL on every QueryContext: that was about 7 % of the
// server's CPU for a short run answered on AgentFlow's POST /api/run (its
// answer reads the run's log back) and 2 % on POST /api/runs. A *sql.Stmt
// of the pool is prepared on each connection the first time it runs
// there, and kept.
//
// Preparing takes a connection of the pool. It is never done while
// holding one (a read transaction: see reader.prepared) nor while holding
// mu: as many concurrent LoadRuns as the pool has connections each held
// its transaction's connection and waited for another to prepare on, and
// every other read waited on mu behind them. A fresh server's first burst
// of approvals hung that way until the requests gave up.
type readStmts struct {
	db        *sql.DB
	mu        sync.RWMutex
	m         map[string]*sql.Stmt
	preparing map[string]bool // queries being prepared in the background
}

// maxReadStmts bounds the cache: queries built at run time (a list's
// filters, a chunk of ids) come in a few shapes; anything beyond runs
// unprepared as before.
const maxReadStmts = 128

func newReadStmts(db *sql.DB) *readStmts {
	return &readStmts{db: db, m: map[string]*sql.Stmt{}, preparing: map[string]bool{}}
}

// cached returns q's statement if it is prepared, and whether there is
// room to prepare it.
func (c *readStmts) cached(q string) (*sql.Stmt, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	st, ok := c.m[q]
	return st, !ok && len(c.m) < maxReadStmts
}

// stmt returns q prepared on the pool, or nil when the cache is full or
// preparing failed (the caller then runs q as text, which reports the
// error if there is one). The caller holds no connection of the pool.
func (c *readStmts) stmt(ctx context.Context, q string) *sql.Stmt {
	st, room := c.cached(q)
	if st != nil || !room {
		return st
	}
	st, err := c.db.PrepareContext(ctx, q)
	if err != nil {
		return nil
	}
	return c.keep(q, st)
}

// keep caches st for q and returns the statement kept: one prepared at
// the same time by another caller wins, and st is closed.
func (c *readStmts) keep(q string, st *sql.Stmt) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[q]; ok {
		_ = st.Close()
		return old
	}
	if len(c.m) >= maxReadStmts {
		_ = st.Close()
		return nil
	}
	c.m[q] = st
	return st
}

// prepareLater prepares q in the background, once: for a caller that
// holds a connection of the pool and must not wait for another.
func (c *readStmts) prepareLater(q string) {
	c.mu.Lock()
	if c.preparing[q] {
		c.mu.Unlock()
		return
	}
	c.preparing[q] = true
	c.mu.Unlock()
	go func() {
		defer func() {
			c.mu.Lock()
			delete(c.preparing, q)
			c.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c.stmt(ctx, q)
	}()
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
// with it, reusing the statement prepared on its connection), or nil. In
// a transaction a statement not prepared yet is prepared in the
// background, and q runs as text this time: the transaction holds a
// connection, and preparing needs another.
func (r reader) prepared(ctx context.Context, q string) *sql.Stmt {
	if r.tx == nil {
		return r.c.stmt(ctx, q)
	}
	st, room := r.c.cached(q)
	if st == nil {
		if room {
			r.c.prepareLater(q)
		}
		return nil
	}
	return r.tx.StmtContext(ctx, st)
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
