package sqlite

import (
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
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

// TestRowsKeepTheirTypes pins the SQLite type of every column the
// writer's typed binds write (bound), for a sparse and a full row of
// each table: NULL where a value is absent, as the driver's ...any
// arguments stored them.
func TestRowsKeepTheirTypes(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t)
	sparse := newRun("run-sparse")
	sparse.Definition = nil
	mustOK(t, s.CreateRun(ctx, sparse, []*engine.NodeState{{NodeID: "a"}}, nil), "CreateRun sparse")
	wf, err := s.CreateWorkflow(ctx, store.Workflow{ID: "wf-types", Name: "wf", Kind: engine.KindYAML, Definition: json.RawMessage(`"steps: []"`)})
	mustOK(t, err, "workflow")
	full := newRun("run-full")
	full.WorkflowID, full.Owner, full.LeaseUntil = wf.ID, "me", t0.Add(time.Minute)
	full.Input, full.CurrentNodeID, full.WorkDir, full.WaitingForInput = "in", "b", "/w", true
	cost := 0.25
	full.Usage = engine.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7, CostUSD: &cost}
	started, finished := t0.Add(time.Second), t0.Add(2*time.Second)
	fullNode := &engine.NodeState{NodeID: "b", Status: engine.NodeWaiting, Input: "i", Output: "o", Handle: "h",
		Error: "e", Visits: 2, Attempts: 3, Fired: []string{"x"}, Rejection: "r",
		Decision: json.RawMessage(`{"d":1}`), Wait: json.RawMessage(`{"w":1}`), StartedAt: &started, FinishedAt: &finished}
	mustOK(t, s.CreateRun(ctx, full, []*engine.NodeState{fullNode}, []*engine.Event{
		{Seq: 1, NodeID: "b", Type: engine.EvOutput, Content: "one", Timestamp: t0, Data: json.RawMessage(`{"k":1}`), Owner: "me"},
		{Seq: 2, NodeID: "b", Type: engine.EvOutput, Content: "two", Timestamp: t0, Owner: "me"},
	}), "CreateRun full")
	done := *full
	done.Status, done.FinishedAt = engine.StatusCompleted, &finished
	mustOK(t, s.Checkpoint(ctx, &done, []*engine.NodeState{fullNode}), "Checkpoint full")
	s.Emit(&engine.Event{RunID: sparse.ID, Seq: 1, NodeID: "a", Type: engine.EvOutput, Content: "", Timestamp: t0})
	mustOK(t, s.Checkpoint(ctx, sparse, []*engine.NodeState{{NodeID: "a", Status: engine.NodeRunning}}), "Checkpoint sparse")

	types := func(q string, args ...any) string {
		t.Helper()
		var got string
		mustOK(t, s.rdb.QueryRowContext(ctx, q, args...).Scan(&got), q)
		return got
	}
	const runCols = `typeof(workflow_id)||' '||typeof(kind)||' '||typeof(status)||' '||typeof(input)||' '||
typeof(waiting_for_input)||' '||typeof(pending_approvals)||' '||typeof(owner)||' '||typeof(lease_until)||' '||
typeof(created_at)||' '||typeof(finished_at)||' '||typeof(prompt_tokens)||' '||typeof(cost_usd)||' '||typeof(definition_hash)`
	const nodeCols = `typeof(status)||' '||typeof(input)||' '||typeof(visits)||' '||typeof(fired)||' '||typeof(wait)||' '||
typeof(started_at)||' '||typeof(finished_at)||' '||typeof(rejection)||' '||typeof(decision)`
	const eventCols = `typeof(node_id)||' '||typeof(content)||' '||typeof(ts)||' '||typeof(data)||' '||typeof(n)||' '||typeof(more)`
	for _, tt := range []struct{ what, got, want string }{
		{"sparse run", types(`SELECT `+runCols+` FROM runs WHERE id = ?`, sparse.ID),
			"null text text text integer text text integer integer null integer null null"},
		{"full run", types(`SELECT `+runCols+` FROM runs WHERE id = ?`, full.ID),
			"text text text text integer text text integer integer integer integer real blob"},
		{"sparse node", types(`SELECT `+nodeCols+` FROM node_states WHERE run_id = ?`, sparse.ID),
			"text text integer null null null null text null"},
		{"full node", types(`SELECT `+nodeCols+` FROM node_states WHERE run_id = ?`, full.ID),
			"text text integer text text integer integer text text"},
		{"sparse event", types(`SELECT `+eventCols+` FROM run_events WHERE run_id = ?`, sparse.ID),
			"text text integer null integer null"},
		{"packed events", types(`SELECT `+eventCols+` FROM run_events WHERE run_id = ?`, full.ID),
			"text text integer text integer blob"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: column types %q, want %q", tt.what, tt.got, tt.want)
		}
	}
	// And they read back as they were written.
	got, nodes, _, err := s.LoadRun(ctx, full.ID)
	mustOK(t, err, "LoadRun")
	if got.Status != engine.StatusCompleted || got.WorkflowID != "wf-types" || got.Usage.CostUSD == nil ||
		*got.Usage.CostUSD != cost || got.Usage.TotalTokens != 7 || !got.WaitingForInput || got.FinishedAt == nil {
		t.Errorf("full run read back: %+v", got)
	}
	if n := nodes[0]; n.Output != "o" || n.Visits != 2 || string(n.Decision) != `{"d":1}` || string(n.Wait) != `{"w":1}` ||
		len(n.Fired) != 1 || n.StartedAt == nil || !n.StartedAt.Equal(started) {
		t.Errorf("full node read back: %+v", n)
	}
}
