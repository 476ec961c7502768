package sqlite

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"reflect"
	"time"
	"unsafe"

	zsqlite "zombiezen.com/go/sqlite"
)

// wconn is the connection the write queue's batches run on: SQLite
// itself (modernc.org/sqlite's transpiled library, the one the driver
// uses) through zombiezen.com/go/sqlite instead of database/sql and the
// driver. The writer is what bounds SQLite's throughput (one goroutine,
// every run's rows), and on its path database/sql and the driver cost
// a tenth to a quarter of its CPU and most of its allocations: converting and
// boxing every argument, a result and a connection lock per statement,
// and the driver's connections are opened SQLITE_OPEN_FULLMUTEX, so
// SQLite took a mutex (emulated in Go) on every call. This connection
// is opened SQLITE_OPEN_NOMUTEX: only the writer goroutine uses it, one
// batch at a time, under Store.wmu.
//
// Everything else that writes (migrations, workflows, prunes) stays on
// the database/sql writer pool; Store.wmu keeps the two from writing at
// once in this process, so neither waits on the other's file lock.
type wconn struct {
	c *zsqlite.Conn
}

// openWConn opens the writer connection on the migrated file at abs with
// the pragmas the pool's connections get (dsn), and maxPages when set
// (max_page_count is per connection).
func openWConn(abs string, maxPages int64) (*wconn, error) {
	c, err := zsqlite.OpenConn(abs, zsqlite.OpenReadWrite)
	if err != nil {
		return nil, err
	}
	c.SetBusyTimeout(busyTimeoutMS * time.Millisecond)
	w := &wconn{c: c}
	pragmas := []string{
		"PRAGMA synchronous = NORMAL",
		"PRAGMA foreign_keys = 1",
		// See dsn: statement journals in memory.
		"PRAGMA temp_store = MEMORY",
		// The writer checkpoints the WAL into the database itself, at the
		// commit that takes it past this many pages (SQLite's default is
		// 1,000): fsyncs of the WAL and the file, and a copy of each page
		// changed since the last checkpoint, all on the writer goroutine,
		// which the whole process waits on. A commit rewrites the same
		// pages (index right edges, the tails of logs in flight), so four
		// times fewer checkpoints copy far fewer pages in all, and the
		// writer stops for fsyncs a quarter as often: its busy time a run
		// fell 14-18 % (`load runs --cores 1 --against`, three times; 12 %
		// on the compat route, 6 % with the server on both cores of a
		// 2-core machine), which is what bounds runs/s on many cores; CPU
		// a run did not change beyond the errors. The WAL file grows to
		// about 16 MB and stays so while the store is open.
		"PRAGMA wal_autocheckpoint = 4000",
	}
	if maxPages > 0 {
		pragmas = append(pragmas, fmt.Sprintf("PRAGMA max_page_count = %d", maxPages))
	}
	for _, p := range pragmas {
		if err := w.once(p); err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return w, nil
}

// once runs q, stepping through any rows, without keeping it prepared.
func (w *wconn) once(q string) error {
	st, _, err := w.c.PrepareTransient(q)
	if err != nil {
		return err
	}
	defer st.Finalize()
	for {
		row, err := st.Step()
		if err != nil || !row {
			return err
		}
	}
}

func (w *wconn) close() error { return w.c.Close() }

// prep returns q prepared (kept for the connection's life) with args
// bound. Arguments are bound in order, as database/sql does with
// ordinals: ?NNN is parameter NNN and takes args[NNN-1].
func (w *wconn) prep(q string, args []any) (*zsqlite.Stmt, error) {
	st, err := w.c.Prepare(q)
	if err != nil {
		return nil, err
	}
	if n := st.BindParamCount(); n != len(args) {
		return nil, fmt.Errorf("sqlite: expected %d arguments, got %d", n, len(args))
	}
	for i, a := range args {
		if err := bind(st, i+1, a); err != nil {
			st.ClearBindings()
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
	}
	return st, nil
}

// done resets st and drops its bindings (text and blob copies are freed).
func done(st *zsqlite.Stmt) {
	st.Reset()
	st.ClearBindings()
}

// exec runs q with args and returns the rows it changed.
func (w *wconn) exec(q string, args ...any) (int64, error) {
	st, err := w.prep(q, args)
	if err != nil {
		return 0, err
	}
	defer done(st)
	for {
		row, err := st.Step()
		if err != nil {
			return 0, err
		}
		if !row {
			return int64(w.c.Changes()), nil
		}
	}
}

// queryRow runs q with args and scans its first row into dest;
// sql.ErrNoRows when it has none. The rest of the rows are stepped
// through, so that a RETURNING statement does all its work.
func (w *wconn) queryRow(q string, args []any, dest ...any) error {
	found := false
	err := w.query(q, args, func(st *zsqlite.Stmt) error {
		if found {
			return nil
		}
		found = true
		return scanRow(st, dest)
	})
	if err == nil && !found {
		err = sql.ErrNoRows
	}
	return err
}

// query runs q with args and calls each for every row.
func (w *wconn) query(q string, args []any, each func(st *zsqlite.Stmt) error) error {
	st, err := w.prep(q, args)
	if err != nil {
		return err
	}
	defer done(st)
	for {
		row, err := st.Step()
		if err != nil {
			return err
		}
		if !row {
			return nil
		}
		if err := each(st); err != nil {
			return err
		}
	}
}

// bind binds a at parameter i as database/sql with the driver would: the
// same Go types to the same SQLite types (a nil []byte is NULL, a bool
// an integer), named types by their kind.
func bind(st *zsqlite.Stmt, i int, a any) error {
	switch v := a.(type) {
	case nil:
		st.BindNull(i)
	case string:
		st.BindText(i, v)
	case int64:
		st.BindInt64(i, v)
	case int:
		st.BindInt64(i, int64(v))
	case bool:
		st.BindBool(i, v)
	case float64:
		st.BindFloat(i, v)
	case []byte:
		if v == nil {
			st.BindNull(i)
		} else {
			st.BindBytes(i, v)
		}
	case driver.Valuer:
		dv, err := v.Value()
		if err != nil {
			return err
		}
		return bind(st, i, dv)
	default:
		rv := reflect.ValueOf(a)
		switch rv.Kind() {
		case reflect.String:
			st.BindText(i, rv.String())
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			st.BindInt64(i, rv.Int())
		case reflect.Uint8, reflect.Uint16, reflect.Uint32:
			st.BindInt64(i, int64(rv.Uint()))
		case reflect.Bool:
			st.BindBool(i, rv.Bool())
		case reflect.Float32, reflect.Float64:
			st.BindFloat(i, rv.Float())
		case reflect.Pointer:
			if rv.IsNil() {
				st.BindNull(i)
				return nil
			}
			return bind(st, i, rv.Elem().Interface())
		default:
			return fmt.Errorf("unsupported type %T", a)
		}
	}
	return nil
}

// scanRow reads the current row of st into dest, one column each, for the
// types the writer's queries read.
func scanRow(st *zsqlite.Stmt, dest []any) error {
	if n := st.ColumnCount(); n != len(dest) {
		return fmt.Errorf("sqlite: expected %d destination arguments in Scan, not %d", n, len(dest))
	}
	for i, d := range dest {
		null := st.ColumnType(i) == zsqlite.TypeNull
		switch p := d.(type) {
		case *int64:
			*p = st.ColumnInt64(i)
		case *int:
			*p = int(st.ColumnInt64(i))
		case *bool:
			*p = st.ColumnInt64(i) != 0
		case *string:
			if null {
				return fmt.Errorf("sqlite: column %d: NULL into a string", i)
			}
			*p = st.ColumnText(i)
		case *sql.NullString:
			*p = sql.NullString{String: st.ColumnText(i), Valid: !null}
		case *sql.NullInt64:
			*p = sql.NullInt64{Int64: st.ColumnInt64(i), Valid: !null}
		case *[]byte:
			if null {
				*p = nil
			} else {
				b := make([]byte, st.ColumnLen(i))
				st.ColumnBytes(i, b)
				*p = b
			}
		default:
			return fmt.Errorf("sqlite: column %d: unsupported destination %T", i, d)
		}
	}
	return nil
}

// bound is a prepared statement whose parameters are bound in order, each
// by its type: the writer's hot statements bind this way, without boxing
// every argument into an interface as exec's ...any does (an allocation
// for most of them, 15 a node state). A binding error is kept for run.
type bound struct {
	st  *zsqlite.Stmt
	i   int
	err error
}

// bind prepares q (kept prepared) for binding with bound's methods.
func (w *wconn) bind(q string) bound {
	st, err := w.c.Prepare(q)
	return bound{st: st, err: err}
}

func (b *bound) next() bool {
	b.i++
	return b.err == nil
}

func (b *bound) text(s string) {
	if b.next() {
		b.st.BindText(b.i, s)
	}
}

func (b *bound) int64(v int64) {
	if b.next() {
		b.st.BindInt64(b.i, v)
	}
}

func (b *bound) bool(v bool) {
	if b.next() {
		b.st.BindBool(b.i, v)
	}
}

func (b *bound) null() {
	if b.next() {
		b.st.BindNull(b.i)
	}
}

// textBytes binds p as text, NULL when empty (nullText's rule), without
// copying it to a string first: SQLite's copy is made as it is bound.
func (b *bound) textBytes(p []byte) {
	if len(p) == 0 {
		b.null()
	} else if b.next() {
		b.st.BindText(b.i, unsafe.String(&p[0], len(p)))
	}
}

// textFrom binds p as text, "" when empty.
func (b *bound) textFrom(p []byte) {
	if len(p) == 0 {
		b.text("")
	} else if b.next() {
		b.st.BindText(b.i, unsafe.String(&p[0], len(p)))
	}
}

// time binds *t as Unix microseconds, or NULL when t is nil (optMicros).
func (b *bound) time(t *time.Time) {
	if t == nil {
		b.null()
	} else {
		b.int64(toMicros(*t))
	}
}

// blob binds p as a blob, NULL when nil (the driver's rule).
func (b *bound) blob(p []byte) {
	if p == nil {
		b.null()
	} else if b.next() {
		b.st.BindBytes(b.i, p)
	}
}

// optInt64 binds v, or NULL when !ok.
func (b *bound) optInt64(v int64, ok bool) {
	if ok {
		b.int64(v)
	} else {
		b.null()
	}
}

// optFloat binds *p, or NULL when p is nil.
func (b *bound) optFloat(p *float64) {
	if p == nil {
		b.null()
	} else if b.next() {
		b.st.BindFloat(b.i, *p)
	}
}

// run executes b's statement and returns the rows it changed. Every
// parameter must have been bound, no more.
func (w *wconn) run(b *bound) (int64, error) {
	if b.st == nil {
		return 0, b.err
	}
	defer done(b.st)
	if b.err != nil {
		return 0, b.err
	}
	if n := b.st.BindParamCount(); n != b.i {
		return 0, fmt.Errorf("sqlite: expected %d arguments, got %d", n, b.i)
	}
	for {
		row, err := b.st.Step()
		if err != nil {
			return 0, err
		}
		if !row {
			return int64(w.c.Changes()), nil
		}
	}
}
