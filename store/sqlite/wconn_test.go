package sqlite

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/engine"
)

// TestWConnBindsAsTheDriver writes every kind of argument the writer
// binds twice, once through wconn and once through database/sql and the
// driver (as the writer did before it had wconn), and reads both back:
// the same SQLite type and bytes each time.
func TestWConnBindsAsTheDriver(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t)
	f := 2.5
	var nilFloat *float64
	args := []struct {
		name string
		arg  any
	}{
		{"nil", nil},
		{"string", "héllo 'x'\x00tail"},
		{"empty string", ""},
		{"int64", int64(-1) << 40},
		{"int", 7},
		{"true", true},
		{"false", false},
		{"float64", 1.25},
		{"float pointer", &f},
		{"nil pointer", nilFloat},
		{"bytes", []byte{0, 1, 'a'}},
		{"empty bytes", []byte{}},
		{"nil bytes", []byte(nil)},
		{"named string", engine.KindYAML},
		{"hash", definitionHash([]byte("def"))},
		{"absent hash", definitionHash(nil)},
	}
	_, err := s.wdb.ExecContext(ctx, `CREATE TABLE bindings (k TEXT PRIMARY KEY, v ANY) STRICT`)
	mustOK(t, err, "create")
	s.wmu.Lock()
	for _, a := range args {
		n, err := s.wc.exec(`INSERT INTO bindings (k, v) VALUES (?, ?)`, "w "+a.name, a.arg)
		mustOK(t, err, a.name)
		if n != 1 {
			t.Errorf("%s: %d rows changed, want 1", a.name, n)
		}
	}
	s.wmu.Unlock()
	for _, a := range args {
		_, err := s.wdb.ExecContext(ctx, `INSERT INTO bindings (k, v) VALUES (?, ?)`, "d "+a.name, a.arg)
		mustOK(t, err, a.name+" (driver)")
	}
	read := func(k string) (typ, hex string) {
		mustOK(t, s.rdb.QueryRowContext(ctx, `SELECT typeof(v), hex(v) FROM bindings WHERE k = ?`, k).Scan(&typ, &hex), k)
		return typ, hex
	}
	for _, a := range args {
		wt, wh := read("w " + a.name)
		dt, dh := read("d " + a.name)
		if wt != dt || wh != dh {
			t.Errorf("%s: wconn stored %s %s, the driver %s %s", a.name, wt, wh, dt, dh)
		}
	}
}

// TestWConnRefusesWhatItCannotBind: a bad statement or argument is an
// error naming it, the connection stays usable, and scans say what they
// cannot fill.
func TestWConnRefusesWhatItCannotBind(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	c := s.wc
	mustOK(t, c.once(`CREATE TABLE r (k TEXT PRIMARY KEY, v TEXT)`), "create")
	for _, tt := range []struct {
		name string
		err  func() error
		want string
	}{
		{"too few arguments", func() error { _, err := c.exec(`INSERT INTO r VALUES (?, ?)`, "a"); return err }, "expected 2 arguments, got 1"},
		{"too many arguments", func() error { _, err := c.exec(`INSERT INTO r VALUES (?, ?)`, "a", "b", "c"); return err }, "expected 2 arguments, got 3"},
		{"unsupported type", func() error { _, err := c.exec(`INSERT INTO r VALUES (?, ?)`, "a", struct{}{}); return err }, "argument 2: unsupported type struct {}"},
		{"syntax", func() error { _, err := c.exec(`INSERT INTO nowhere VALUES (?)`, "a"); return err }, "no such table: nowhere"},
		{"no rows", func() error { var v string; return c.queryRow(`SELECT v FROM r WHERE k = ?`, []any{"none"}, &v) }, sql.ErrNoRows.Error()},
		{"NULL into a string", func() error { var v string; return c.queryRow(`SELECT NULL`, nil, &v) }, "NULL into a string"},
		{"column count", func() error { var v string; return c.queryRow(`SELECT 1, 2`, nil, &v) }, "expected 2 destination arguments"},
		{"destination", func() error { var v float32; return c.queryRow(`SELECT 1`, nil, &v) }, "unsupported destination *float32"},
	} {
		err := tt.err()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	if err := c.queryRow(`SELECT v FROM r`, nil, new(string)); !errors.Is(err, sql.ErrNoRows) {
		t.Errorf("after the errors: %v, want sql.ErrNoRows from a usable connection", err)
	}
	// Nothing was left bound or open: a statement that failed to bind runs
	// again with good arguments.
	n, err := c.exec(`INSERT INTO r VALUES (?, ?)`, "a", "b")
	mustOK(t, err, "insert after the errors")
	var v sql.NullString
	mustOK(t, c.queryRow(`SELECT v FROM r WHERE k = ?`, []any{"a"}, &v), "read back")
	if n != 1 || v.String != "b" || !v.Valid {
		t.Errorf("insert after the errors: %d rows, read %+v", n, v)
	}
}
