package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/storetest"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func openAt(t testing.TB, path string, opts ...Option) *Store {
	t.Helper()
	opts = append([]Option{WithLogger(testLogger(t))}, opts...)
	s, err := Open(testCtx(t), path, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// testLogger sends the store's logs to the test's output.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func openStore(t testing.TB, opts ...Option) *Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "switchyard.db"), opts...)
}

func mustOK(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func wantIs(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got %v, want %v", what, err, target)
	}
}

func newRun(id string) *engine.Run {
	return &engine.Run{ID: id, Kind: engine.KindGraph, Definition: json.RawMessage(`{"nodes":[]}`),
		Status: engine.StatusRunning, CreatedAt: t0, UpdatedAt: t0}
}

func ev(runID string, seq int64, content string) *engine.Event {
	return &engine.Event{Seq: seq, RunID: runID, NodeID: "n", Type: engine.EvOutput, Content: content,
		Timestamp: t0.Add(time.Duration(seq) * time.Millisecond)}
}

// waitFor polls cond; it fails the test only after a generous deadline, so
// a busy machine makes it slower, not flaky.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, o storetest.Options) store.Store {
		var opts []Option
		if o.Now != nil {
			opts = append(opts, WithClock(o.Now))
		}
		if o.Share != nil {
			return openAt(t, o.Share.(*Store).Path(), opts...)
		}
		return openStore(t, opts...)
	})
}

func TestDefaultPathAndDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data dir", "nested")
	t.Setenv("SWITCHYARD_DATA", dir)
	if got, want := DefaultPath(), filepath.Join(dir, "switchyard.db"); got != want {
		t.Fatalf("DefaultPath() = %q, want %q", got, want)
	}
	s := openAt(t, "")
	if s.Path() != filepath.Join(dir, "switchyard.db") {
		t.Errorf("Path() = %q", s.Path())
	}
	if _, err := os.Stat(s.Path()); err != nil {
		t.Errorf("database file not created: %v", err)
	}

	t.Setenv("SWITCHYARD_DATA", "")
	home, err := os.UserHomeDir()
	mustOK(t, err, "UserHomeDir")
	if got, want := DefaultPath(), filepath.Join(home, ".switchyard", "switchyard.db"); got != want {
		t.Errorf("DefaultPath() without SWITCHYARD_DATA = %q, want %q", got, want)
	}
}

func TestPathWithURICharacters(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "we?ird #dir%20", "db?x.db")
	s := openAt(t, path)
	mustOK(t, s.CreateRun(testCtx(t), newRun("r"), nil, nil), "CreateRun")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the given path: %v", err)
	}
}

// --- migrations ---

func schemaVersion(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var v int64
	mustOK(t, db.QueryRow(`SELECT MAX(version_id) FROM goose_db_version`).Scan(&v), "read schema version")
	return v
}

func tableNames(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	mustOK(t, err, "list tables")
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		mustOK(t, rows.Scan(&n), "scan")
		names = append(names, n)
	}
	return names
}

func TestMigrateEmptyDatabase(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	if got, want := schemaVersion(t, s.rdb), SchemaVersion(); got != want || want < 1 {
		t.Fatalf("schema version %d, want %d (>= 1)", got, want)
	}
	want := []string{"definitions", "goose_db_version", "node_states", "revoked_sessions", "run_events", "runs", "workflow_versions", "workflows", "yaml_positions"}
	if got := tableNames(t, s.rdb); !slices.Equal(got, want) {
		t.Fatalf("tables %v, want %v", got, want)
	}
	var fkProblems int
	mustOK(t, s.rdb.QueryRow(`SELECT count(*) FROM pragma_foreign_key_check`).Scan(&fkProblems), "foreign_key_check")
	if fkProblems != 0 {
		t.Errorf("%d foreign key problems", fkProblems)
	}
}

// TestMigrateFromEachVersion brings a database to each schema version this
// binary knows, then lets Open apply the rest.
func TestMigrateFromEachVersion(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	p0, err := newProvider(mustRawDB(t, filepath.Join(t.TempDir(), "list.db")))
	mustOK(t, err, "newProvider")
	for _, src := range p0.ListSources() {
		t.Run(fmt.Sprintf("from_%d", src.Version), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "switchyard.db")
			db := mustRawDB(t, path)
			p, err := newProvider(db)
			mustOK(t, err, "newProvider")
			_, err = p.UpTo(ctx, src.Version)
			mustOK(t, err, fmt.Sprintf("migrate up to %d", src.Version))
			mustOK(t, db.Close(), "close raw db")

			s := openAt(t, path)
			if got := schemaVersion(t, s.rdb); got != SchemaVersion() {
				t.Fatalf("after Open: schema version %d, want %d", got, SchemaVersion())
			}
			// The migrated schema works.
			mustOK(t, s.CreateRun(ctx, newRun("r"), []*engine.NodeState{{NodeID: "a"}}, nil), "CreateRun")
			s.Emit(ev("r", 1, "x"))
			mustOK(t, s.Checkpoint(ctx, newRun("r"), nil), "Checkpoint")
		})
	}
}

// TestDefinitionsMoveToTheirOwnTable: runs stored before migration 3 keep
// their definitions, and going back down to 2 puts them back in the row.
func TestDefinitionsMoveToTheirOwnTable(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "switchyard.db")
	db := mustRawDB(t, path)
	p, err := newProvider(db)
	mustOK(t, err, "newProvider")
	_, err = p.UpTo(ctx, 2)
	mustOK(t, err, "migrate up to 2")
	const def = `{"nodes":[{"id":"s","type":"start"}],"edges":[]}`
	_, err = db.ExecContext(ctx, `INSERT INTO runs (id, kind, definition, status, created_at, updated_at)
VALUES ('old-run', 'graph', ?, 'completed', 1, 1)`, def)
	mustOK(t, err, "insert a version-2 run")
	mustOK(t, db.Close(), "close raw db")

	s := openAt(t, path)
	r, err := s.GetRun(ctx, "old-run")
	mustOK(t, err, "GetRun after migrating")
	if string(r.Definition) != def {
		t.Fatalf("definition after migrating: %q", r.Definition)
	}
	mustOK(t, s.Close(), "Close")

	db2 := mustRawDB(t, path)
	p2, err := newProvider(db2)
	mustOK(t, err, "newProvider")
	_, err = p2.DownTo(ctx, 2)
	mustOK(t, err, "down to 2")
	var got string
	mustOK(t, db2.QueryRowContext(ctx, `SELECT definition FROM runs WHERE id = 'old-run'`).Scan(&got), "read back")
	if got != def {
		t.Fatalf("definition after going down: %q", got)
	}
}

// TestRunsRebuildKeepsEverything: migration 9 rebuilds the runs table
// (to drop its foreign key to workflows); the runs, their definitions,
// node states and events, which reference runs, all survive, and the
// foreign keys still hold and cascade.
func TestRunsRebuildKeepsEverything(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "switchyard.db")
	db := mustRawDB(t, path)
	p, err := newProvider(db)
	mustOK(t, err, "newProvider")
	_, err = p.UpTo(ctx, 8)
	mustOK(t, err, "migrate up to 8")
	for _, q := range []string{
		`INSERT INTO workflows (id, name, kind, definition, version, created_at, updated_at) VALUES ('wf', 'w', 'graph', '{}', 1, 1, 1)`,
		`INSERT INTO runs (id, workflow_id, kind, status, owner, lease_until, created_at, updated_at, cancel_requested, total_tokens, cost_usd)
VALUES ('r1', 'wf', 'graph', 'paused', 'proc', 99, 5, 6, 1, 42, 0.5)`,
		`INSERT INTO run_definitions (run_id, definition) VALUES ('r1', '{"nodes":[]}')`,
		`INSERT INTO node_states (run_id, node_id, status) VALUES ('r1', 'b', 'waiting'), ('r1', 'a', 'completed')`,
		`INSERT INTO run_events (run_id, seq, node_id, type, content, ts) VALUES ('r1', 1, 'a', 'x', 'one', 7), ('r1', 2, 'b', 'x', 'two', 8)`,
	} {
		_, err := db.ExecContext(ctx, q)
		mustOK(t, err, q)
	}
	mustOK(t, db.Close(), "close raw db")

	s := openAt(t, path)
	r, nodes, last, err := s.LoadRun(ctx, "r1")
	mustOK(t, err, "LoadRun after the rebuild")
	if r.WorkflowID != "wf" || r.Status != engine.StatusPaused || r.Usage.TotalTokens != 42 || string(r.Definition) != `{"nodes":[]}` ||
		len(nodes) != 2 || nodes[0].NodeID != "b" || last != 2 {
		t.Fatalf("after the rebuild: run %+v, nodes %d, last seq %d", r, len(nodes), last)
	}
	ids, err := s.TakeCancelRequests(ctx, "proc")
	mustOK(t, err, "TakeCancelRequests")
	if !slices.Equal(ids, []string{"r1"}) {
		t.Fatalf("cancel requests after the rebuild: %v", ids)
	}
	var problems, fk int
	mustOK(t, s.rdb.QueryRow(`SELECT count(*) FROM pragma_foreign_key_check`).Scan(&problems), "foreign_key_check")
	mustOK(t, s.rdb.QueryRow(`SELECT count(*) FROM pragma_foreign_key_list('run_events') WHERE "table" = 'runs'`).Scan(&fk), "foreign keys of run_events")
	if problems != 0 || fk != 1 {
		t.Fatalf("%d foreign key problems; run_events has %d foreign keys to runs", problems, fk)
	}
	// A YAML run may now name its file.
	y := newRun("r-yaml")
	y.Kind, y.WorkflowID = engine.KindYAML, "yaml.a.yaml"
	mustOK(t, s.CreateRun(ctx, y, nil, nil), "CreateRun of a YAML run with its workflow id")
}

// TestDefinitionsStoredOnce: runs of one definition share its row (by
// content hash), from CreateRun and from migration 10 alike, and read
// their definition back byte for byte.
func TestDefinitionsStoredOnce(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	const a, b = `{"nodes":[{"id":"s","type":"start"}],"edges":[]}`, `{"nodes": []}`
	path := filepath.Join(t.TempDir(), "switchyard.db")
	db := mustRawDB(t, path)
	p, err := newProvider(db)
	mustOK(t, err, "newProvider")
	_, err = p.UpTo(ctx, 9)
	mustOK(t, err, "migrate up to 9")
	for i, def := range []string{a, a, ""} {
		id := fmt.Sprintf("old-%d", i)
		_, err := db.ExecContext(ctx, `INSERT INTO runs (id, kind, status, created_at, updated_at) VALUES (?, 'graph', 'completed', 1, 1)`, id)
		mustOK(t, err, "insert a version-9 run")
		_, err = db.ExecContext(ctx, `INSERT INTO run_definitions (run_id, definition) VALUES (?, ?)`, id, def)
		mustOK(t, err, "insert its definition")
	}
	mustOK(t, db.Close(), "close raw db")

	s := openAt(t, path)
	for i, def := range []string{a, b, a, ""} {
		r := newRun(fmt.Sprintf("new-%d", i))
		r.Definition = json.RawMessage(def)
		if def == "" {
			r.Definition = nil
		}
		mustOK(t, s.CreateRun(ctx, r, nil, nil), "CreateRun")
	}
	want := map[string]string{"old-0": a, "old-1": a, "old-2": "", "new-0": a, "new-1": b, "new-2": a, "new-3": ""}
	for id, def := range want {
		r, err := s.GetRun(ctx, id)
		mustOK(t, err, "GetRun "+id)
		if string(r.Definition) != def {
			t.Errorf("%s: definition %q, want %q", id, r.Definition, def)
		}
	}
	var rows, hashed int
	mustOK(t, s.rdb.QueryRow(`SELECT count(*) FROM definitions`).Scan(&rows), "count definitions")
	mustOK(t, s.rdb.QueryRow(`SELECT count(*) FROM runs WHERE definition_hash IS NOT NULL`).Scan(&hashed), "count hashed runs")
	if rows != 2 || hashed != 5 {
		t.Fatalf("%d definition rows for 2 distinct definitions, %d runs referencing one (want 5)", rows, hashed)
	}
}

// mustRawDB opens path with the store's writer settings but without
// migrating.
func mustRawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, false))
	mustOK(t, err, "sql.Open")
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func TestMigrationsDownAndUpAgain(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	db := mustRawDB(t, filepath.Join(t.TempDir(), "switchyard.db"))
	p, err := newProvider(db)
	mustOK(t, err, "newProvider")
	_, err = p.Up(ctx)
	mustOK(t, err, "up")
	_, err = p.DownTo(ctx, 0)
	mustOK(t, err, "down to 0")
	if got := tableNames(t, db); !slices.Equal(got, []string{"goose_db_version"}) {
		t.Fatalf("after down: tables %v", got)
	}
	_, err = p.Up(ctx)
	mustOK(t, err, "up again")
}

func TestRefuseNewerSchema(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "switchyard.db")
	s, err := Open(testCtx(t), path, WithLogger(testLogger(t)))
	mustOK(t, err, "Open")
	mustOK(t, s.Close(), "Close")

	newer := SchemaVersion() + 2
	db := mustRawDB(t, path)
	_, err = db.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, 1)`, newer)
	mustOK(t, err, "record a newer version")
	mustOK(t, db.Close(), "close raw db")

	_, err = Open(testCtx(t), path, WithLogger(testLogger(t)))
	wantIs(t, err, store.ErrSchemaTooNew, "Open of a newer database")
	var tooNew *store.SchemaTooNewError
	if !errors.As(err, &tooNew) || tooNew.DBVersion != newer || tooNew.KnownVersion != SchemaVersion() {
		t.Fatalf("error %v: want a *store.SchemaTooNewError with versions %d and %d", err, newer, SchemaVersion())
	}
	want := fmt.Sprintf("database schema version %d is newer than this switchyard (%d): upgrade switchyard",
		newer, SchemaVersion())
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

// --- connection settings ---

func TestPragmasOnEveryConnection(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	const readers = 3
	s := openStore(t, WithReadConns(readers))

	check := func(t *testing.T, name string, c *sql.Conn, queryOnly int) {
		t.Helper()
		var journal string
		var fk, sync, busy, qo int
		mustOK(t, c.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&journal), name+" journal_mode")
		mustOK(t, c.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk), name+" foreign_keys")
		mustOK(t, c.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync), name+" synchronous")
		mustOK(t, c.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy), name+" busy_timeout")
		mustOK(t, c.QueryRowContext(ctx, `PRAGMA query_only`).Scan(&qo), name+" query_only")
		if journal != "wal" || fk != 1 || sync != 1 || busy != busyTimeoutMS || qo != queryOnly {
			t.Errorf("%s: journal_mode=%s foreign_keys=%d synchronous=%d busy_timeout=%d query_only=%d; "+
				"want wal 1 1(NORMAL) %d %d", name, journal, fk, sync, busy, qo, busyTimeoutMS, queryOnly)
		}
	}

	wc, err := s.wdb.Conn(ctx)
	mustOK(t, err, "writer conn")
	check(t, "writer", wc, 0)
	mustOK(t, wc.Close(), "release writer conn")
	if got := s.wdb.Stats().MaxOpenConnections; got != 1 {
		t.Errorf("writer pool allows %d connections, want 1", got)
	}
	// The write queue's connection (wconn), between its batches.
	func() {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		var journal string
		var fk, sync, busy, temp int
		for _, q := range []struct {
			sql  string
			dest any
		}{{`PRAGMA journal_mode`, &journal}, {`PRAGMA foreign_keys`, &fk}, {`PRAGMA synchronous`, &sync},
			{`PRAGMA busy_timeout`, &busy}, {`PRAGMA temp_store`, &temp}} {
			mustOK(t, s.wc.queryRow(q.sql, nil, q.dest), "queue writer "+q.sql)
		}
		if journal != "wal" || fk != 1 || sync != 1 || busy != busyTimeoutMS || temp != 2 {
			t.Errorf("queue writer: journal_mode=%s foreign_keys=%d synchronous=%d busy_timeout=%d temp_store=%d; "+
				"want wal 1 1(NORMAL) %d 2(MEMORY)", journal, fk, sync, busy, temp, busyTimeoutMS)
		}
	}()

	// Hold all read connections at once so each is a distinct connection.
	var conns []*sql.Conn
	for i := range readers {
		c, err := s.rdb.Conn(ctx)
		mustOK(t, err, "reader conn")
		conns = append(conns, c)
		check(t, fmt.Sprintf("reader %d", i), c, 1)
	}
	if _, err := conns[0].ExecContext(ctx, `DELETE FROM runs`); err == nil {
		t.Error("a read-pool connection could write")
	}
	for _, c := range conns {
		c.Close()
	}
	if got := s.rdb.Stats().OpenConnections; got != readers {
		t.Errorf("read pool has %d open connections, want %d", got, readers)
	}
}

// --- durability and time handling ---

func TestDurableAcrossReopen(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "switchyard.db")
	s, err := Open(ctx, path, WithLogger(testLogger(t)))
	mustOK(t, err, "Open")
	wf, err := s.CreateWorkflow(ctx, store.Workflow{Name: "wf", Kind: engine.KindYAML, Definition: json.RawMessage(`"steps: []"`)})
	mustOK(t, err, "CreateWorkflow")
	r := newRun("run-durable")
	r.WorkflowID = wf.ID
	mustOK(t, s.CreateRun(ctx, r, []*engine.NodeState{{NodeID: "a", Status: engine.NodeQueued}}, nil), "CreateRun")
	mustOK(t, s.AcquireRun(ctx, r.ID, "proc", "", t0, t0.Add(time.Hour)), "AcquireRun")
	for i := int64(1); i <= 500; i++ {
		s.Emit(ev(r.ID, i, fmt.Sprint(i)))
	}
	// No checkpoint: Close must flush what is queued.
	mustOK(t, s.Close(), "Close")
	mustOK(t, s.Close(), "second Close")

	s2 := openAt(t, path)
	evs, err := s2.Events(ctx, r.ID, 0, 0)
	mustOK(t, err, "Events after reopen")
	if len(evs) != 500 || evs[499].Content != "500" {
		t.Fatalf("after reopen: %d events", len(evs))
	}
	got, nodes, maxSeq, err := s2.LoadRun(ctx, r.ID)
	mustOK(t, err, "LoadRun after reopen")
	if got.WorkflowID != wf.ID || len(nodes) != 1 || nodes[0].Status != engine.NodeQueued || maxSeq != 500 {
		t.Fatalf("after reopen: run %+v nodes %d maxSeq %d", got, len(nodes), maxSeq)
	}
	wantIs(t, s2.AcquireRun(ctx, r.ID, "other", "", t0.Add(time.Minute), t0.Add(2*time.Hour)),
		engine.ErrConflict, "the lease survived the reopen")
	w2, err := s2.GetWorkflow(ctx, wf.ID)
	mustOK(t, err, "GetWorkflow after reopen")
	if string(w2.Definition) != `"steps: []"` || w2.Kind != engine.KindYAML {
		t.Fatalf("workflow after reopen: %+v", w2)
	}
}

func TestTimesComeBackUTCAtMicroseconds(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t)
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	local := time.Date(2025, 6, 1, 9, 30, 0, 123456789, zone)
	fin := local.Add(time.Second)
	r := newRun("run-time")
	r.CreatedAt, r.UpdatedAt, r.FinishedAt = local, local, &fin
	r.PendingApprovals = []engine.PendingApproval{{NodeID: "a", Since: local}}
	mustOK(t, s.CreateRun(ctx, r, []*engine.NodeState{{NodeID: "a", StartedAt: &local}}, nil), "CreateRun")
	s.Emit(&engine.Event{RunID: r.ID, Seq: 1, Type: engine.EvOutput, Timestamp: local})
	mustOK(t, s.Checkpoint(ctx, r, nil), "Checkpoint")

	want := time.Date(2025, 6, 1, 4, 0, 0, 123456000, time.UTC)
	check := func(what string, got time.Time) {
		t.Helper()
		if !got.Equal(want) || got.Location() != time.UTC || got != want {
			t.Errorf("%s = %v (%v), want %v in UTC", what, got, got.Location(), want)
		}
	}
	got, nodes, _, err := s.LoadRun(ctx, r.ID)
	mustOK(t, err, "LoadRun")
	check("CreatedAt", got.CreatedAt)
	check("UpdatedAt", got.UpdatedAt)
	check("FinishedAt", got.FinishedAt.Add(-time.Second))
	check("PendingApprovals[0].Since", got.PendingApprovals[0].Since)
	check("StartedAt", *nodes[0].StartedAt)
	evs, err := s.Events(ctx, r.ID, 0, 0)
	mustOK(t, err, "Events")
	check("event Timestamp", evs[0].Timestamp)
}

// TestQueriesUseIndexes: the statements that run per event, per step or
// on a timer never scan a whole table (the runs table grows forever).
func TestQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	for _, q := range []string{sqlInsertEvent, sqlInsertEventOwned, sqlInsertEventNew, sqlInsertEventOwnedNew, sqlEventsTail, sqlUpdateRun, sqlUpsertNode, sqlInsertRun,
		sqlInsertDefinition, sqlAcquireRun, sqlReleaseRun, sqlRenewLeases, sqlExpireLeases, sqlCancelPending, sqlTakeCancels,
		sqlListOrphaned, sqlUnnamedRuns, sqlEvents, sqlLastSeq} {
		rows, err := s.rdb.Query("EXPLAIN QUERY PLAN "+q, make([]any, strings.Count(q, "?"))...)
		mustOK(t, err, "explain "+q)
		for rows.Next() {
			var id, parent, notused int
			var detail string
			mustOK(t, rows.Scan(&id, &parent, &notused, &detail), "scan plan")
			if strings.HasPrefix(detail, "SCAN ") && !strings.HasPrefix(detail, "SCAN CONSTANT ROW") {
				t.Errorf("%s\n  plan: %s", q, detail)
			}
		}
		mustOK(t, rows.Err(), "plan rows")
		rows.Close()
	}
	// Run lists read a page off an index in newest-first order: at most the
	// ties of the last sort term are sorted, never every matching run.
	for _, f := range []engine.RunFilter{{}, {Status: engine.StatusCompleted}, {WorkflowID: "w"},
		{Status: engine.StatusPaused, Before: t0}, {WorkflowID: "w", Before: t0}} {
		q, args := listRunsQuery(f)
		rows, err := s.rdb.Query("EXPLAIN QUERY PLAN "+q, args...)
		mustOK(t, err, "explain list")
		for rows.Next() {
			var id, parent, notused int
			var detail string
			mustOK(t, rows.Scan(&id, &parent, &notused, &detail), "scan plan")
			if detail == "SCAN runs" || detail == "USE TEMP B-TREE FOR ORDER BY" {
				t.Errorf("list %+v\n  plan: %s", f, detail)
			}
		}
		rows.Close()
	}
}

// TestHotStatementsBuildNoTempTables: no statement the writer runs per
// step builds a temporary b-tree each time it runs. SQLite codes "x IN
// (a, b, c)" (three or more constants) as an ephemeral table filled on
// every execution, and the checkpoint's run update spent about three
// quarters of its time opening and closing one (`load runs` profile,
// 2026-11-29); two constants or a chain of comparisons are coded inline.
func TestHotStatementsBuildNoTempTables(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	// Left out: sqlTakeCancels (RETURNING collects its rows in one; it runs
	// once a lease period) and the event inserts that check for stored
	// seqs (an INSERT reading its own table materializes what it reads;
	// they run only where a log has a gap or repeats a seq).
	rare := []string{sqlInsertEventNew, sqlInsertEventOwnedNew}
	hot := append(slices.Clone(preparedStatements), sqlRenewLeases, sqlExpireLeases, sqlCancelPending)
	for _, q := range hot {
		if slices.Contains(rare, q) {
			continue
		}
		rows, err := s.rdb.Query("EXPLAIN "+q, make([]any, strings.Count(q, "?"))...)
		mustOK(t, err, "explain "+q)
		cols, err := rows.Columns()
		mustOK(t, err, "columns")
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			mustOK(t, rows.Scan(ptrs...), "scan bytecode")
			if op := fmt.Sprint(vals[1]); op == "OpenEphemeral" || op == "OpenAutoindex" || op == "SorterOpen" {
				t.Errorf("%s\n  opens a temporary b-tree on every run (%s)", q, op)
			}
		}
		mustOK(t, rows.Err(), "bytecode rows")
		rows.Close()
	}
}

// --- the writer ---

// holdWriter emits first and parks the writer inside the commit that wrote
// it until release is called: ops queued meanwhile form one batch. seen,
// if not nil, collects the seq of every committed event, in commit order
// (read it once a later write has returned).
func holdWriter(t testing.TB, s *Store, first *engine.Event, seen *[]int64) (release func()) {
	entered, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.OnCommit(func(evs []engine.Event, _ []*engine.Run) {
		if seen != nil {
			for _, e := range evs {
				*seen = append(*seen, e.Seq)
			}
		}
		once.Do(func() {
			close(entered)
			<-held
		})
	})
	s.Emit(first)
	<-entered
	release = sync.OnceFunc(func() { close(held) })
	t.Cleanup(release) // a failed test must not leave Close waiting on the writer
	return release
}

// TestGroupCommit holds the writer inside a commit hook while 9,999 events
// queue up, then checks they went in as a few transactions: slices that
// double from 128 ops (so the first events are durable early).
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t)
	r := newRun("run-group")
	mustOK(t, s.CreateRun(ctx, r, nil, nil), "CreateRun")

	release := holdWriter(t, s, ev(r.ID, 1, "1"), nil)
	before := s.Stats()
	for i := int64(2); i <= 10000; i++ {
		s.Emit(ev(r.ID, i, "x"))
	}
	if d := s.Stats().QueueDepth; d != 9999 {
		t.Errorf("queue depth %d while the writer is held, want 9999", d)
	}
	release()
	mustOK(t, s.Checkpoint(ctx, r, nil), "Checkpoint")
	st := s.Stats()
	if st.EventsWritten != 10000 {
		t.Fatalf("EventsWritten = %d, want 10000", st.EventsWritten)
	}
	// 128+256+...+4096 = 8,064, then the remaining 1,936 and the checkpoint.
	if n := st.Batches - before.Batches; n != 7 {
		t.Errorf("9,999 queued events and a checkpoint took %d commits, want 7", n)
	}
	if st.LargestBatch != 4096 {
		t.Errorf("LargestBatch = %d, want 4096", st.LargestBatch)
	}
	t.Logf("stats: %+v", st)
}

// TestFailedSliceFailsTheRest: when a later slice of a batch fails, the
// slices after it are not committed either, so no event of a run lands
// ahead of an earlier one; the events are retried in order and the log
// ends gapless.
func TestFailedSliceFailsTheRest(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t, withRetry(0, time.Millisecond))
	r := newRun("run-slices")
	mustOK(t, s.CreateRun(ctx, r, nil, nil), "CreateRun")
	var order []int64 // seqs in the order they were committed
	release := holdWriter(t, s, ev(r.ID, 1, "1"), &order)
	for i := int64(2); i <= 150; i++ { // the first slice: 128 of these
		s.Emit(ev(r.ID, i, "x"))
	}
	boom := errors.New("boom")
	opErr := make(chan error, 1)
	go func() { opErr <- s.w.do(ctx, nil, func(*wtx) error { return boom }) }()
	waitFor(t, "the failing op queued", func() bool { return s.Stats().QueueDepth == 150 })
	for i := int64(151); i <= 400; i++ { // a third slice, after the failing one
		s.Emit(ev(r.ID, i, "y"))
	}
	release()
	if err := <-opErr; !errors.Is(err, boom) {
		t.Fatalf("failing op: %v", err)
	}
	mustOK(t, s.Checkpoint(ctx, r, nil), "Checkpoint")
	evs, err := s.Events(ctx, r.ID, 0, 0)
	mustOK(t, err, "Events")
	if len(evs) != 400 {
		t.Fatalf("%d events stored, want 400", len(evs))
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	for i, seq := range order { // the hook ran on the writer, done before Checkpoint returned
		if seq != int64(i+1) {
			t.Fatalf("commit %d was of seq %d: committed out of order", i, seq)
		}
	}
	if st := s.Stats(); st.WriteErrors != 1 || st.EventsDropped != 0 {
		t.Errorf("stats %+v: want one failed batch, nothing dropped", st)
	}
}

// TestFencingWithinOneTransaction: an owner's events skip the owner check
// once one was written in the transaction, so a takeover queued between
// them must still fence the old owner's later events out.
func TestFencingWithinOneTransaction(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t)
	r := newRun("run-fence-batch")
	mustOK(t, s.CreateRun(ctx, r, nil, nil), "CreateRun")
	mustOK(t, s.AcquireRun(ctx, r.ID, "A", "", t0, t0.Add(time.Second)), "AcquireRun A")
	other := newRun("run-other")
	mustOK(t, s.CreateRun(ctx, other, nil, nil), "CreateRun other")
	release := holdWriter(t, s, ev(other.ID, 1, "hold"), nil)
	// One batch: A writes, B takes over (A's lease expired), A writes
	// again (late), B writes.
	withOwner := func(e *engine.Event, owner string) *engine.Event { e.Owner = owner; return e }
	s.Emit(withOwner(ev(r.ID, 1, "A1"), "A"))
	acq := make(chan error, 1)
	go func() { acq <- s.AcquireRun(ctx, r.ID, "B", "", t0.Add(time.Minute), t0.Add(time.Hour)) }()
	waitFor(t, "the takeover queued", func() bool { return s.Stats().QueueDepth == 2 })
	s.Emit(withOwner(ev(r.ID, 2, "A2-late"), "A"))
	s.Emit(withOwner(ev(r.ID, 2, "B2"), "B"))
	s.Emit(withOwner(ev(r.ID, 3, "B3"), "B"))
	if d := s.Stats().QueueDepth; d != 5 {
		t.Fatalf("queue depth %d, want the 5 ops in one batch", d)
	}
	release()
	mustOK(t, <-acq, "AcquireRun B")
	mustOK(t, s.Checkpoint(ctx, r, nil), "barrier")
	evs, err := s.Events(ctx, r.ID, 0, 0)
	mustOK(t, err, "Events")
	var got []string
	for _, e := range evs {
		got = append(got, e.Content)
	}
	if want := []string{"A1", "B2", "B3"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v: the old owner's late event got in", got, want)
	}
}

// TestGroupCommitUnderLoad emits freely: the writer should still batch.
func TestGroupCommitUnderLoad(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t)
	r := newRun("run-load")
	mustOK(t, s.CreateRun(ctx, r, nil, nil), "CreateRun")
	for i := int64(1); i <= 10000; i++ {
		s.Emit(ev(r.ID, i, "x"))
	}
	mustOK(t, s.Checkpoint(ctx, r, nil), "Checkpoint")
	st := s.Stats()
	if st.EventsWritten != 10000 {
		t.Fatalf("EventsWritten = %d", st.EventsWritten)
	}
	// A commit costs far more than an Emit, so batches must form; the bound
	// is loose on purpose.
	if st.Batches > st.EventsWritten/2 {
		t.Errorf("%d batches for %d events: no group commit", st.Batches, st.EventsWritten)
	}
	t.Logf("10,000 events in %d batches (largest %d)", st.Batches, st.LargestBatch)
}

// TestEmitBlocksWhenQueueFull: a full queue makes Emit wait (backpressure)
// instead of dropping or growing without bound.
func TestEmitBlocksWhenQueueFull(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t, WithQueueSize(2))
	r := newRun("run-bp")
	mustOK(t, s.CreateRun(ctx, r, nil, nil), "CreateRun")
	release := holdWriter(t, s, ev(r.ID, 1, "1"), nil) // nothing leaves the queue
	s.Emit(ev(r.ID, 2, "2"))
	s.Emit(ev(r.ID, 3, "3"))
	var returned atomic.Bool
	emitted := make(chan struct{})
	go func() {
		s.Emit(ev(r.ID, 4, "4"))
		returned.Store(true)
		close(emitted)
	}()
	waitFor(t, "Emit to find the queue full", func() bool { return s.Stats().QueueFullWaits == 1 })
	if returned.Load() {
		t.Fatal("Emit returned although the queue was full and the writer held")
	}
	release()
	<-emitted
	mustOK(t, s.Checkpoint(ctx, r, nil), "Checkpoint")
	evs, err := s.Events(ctx, r.ID, 0, 0)
	mustOK(t, err, "Events")
	if len(evs) != 4 {
		t.Fatalf("%d events stored, want 4", len(evs))
	}
}

func TestCheckpointWithDoneContext(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	mustOK(t, s.CreateRun(testCtx(t), newRun("r"), nil, nil), "CreateRun")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := newRun("r")
	r.Status = engine.StatusFailed
	wantIs(t, s.Checkpoint(ctx, r, nil), context.Canceled, "Checkpoint with a cancelled context")
	got, err := s.GetRun(testCtx(t), "r")
	mustOK(t, err, "GetRun")
	if got.Status != engine.StatusRunning {
		t.Errorf("a cancelled checkpoint was written: status %s", got.Status)
	}
}

// limitPages makes the writer's connections unable to grow the database
// (SQLITE_FULL), the closest thing to a full disk that works as root and
// without mounting a small filesystem.
func limitPages(t *testing.T, s *Store, limit bool) {
	t.Helper()
	ctx := testCtx(t)
	n := int64(1 << 30)
	if limit {
		mustOK(t, s.wdb.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&n), "page_count")
	}
	var got int64
	mustOK(t, s.wdb.QueryRowContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, n)).Scan(&got), "max_page_count")
	// The write queue's connection, between its batches.
	s.wmu.Lock()
	defer s.wmu.Unlock()
	mustOK(t, s.wc.once(fmt.Sprintf(`PRAGMA max_page_count = %d`, n)), "max_page_count (writer)")
}

func integrityOK(t *testing.T, s *Store) {
	t.Helper()
	var res string
	mustOK(t, s.rdb.QueryRow(`PRAGMA integrity_check`).Scan(&res), "integrity_check")
	if res != "ok" {
		t.Fatalf("integrity_check: %s", res)
	}
}

func TestWriteErrorThenRecovery(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	// Events of failed batches are retried (nearly) forever here, so that
	// none is dropped before the "disk" is freed.
	s := openStore(t, withRetry(1<<30, time.Millisecond))
	r := newRun("run-full-disk")
	mustOK(t, s.CreateRun(ctx, r, []*engine.NodeState{{NodeID: "a"}}, nil), "CreateRun")

	limitPages(t, s, true)
	big := strings.Repeat("x", 2<<20)
	failing := newRun(r.ID)
	failing.Status = engine.StatusCompleted
	err := s.Checkpoint(ctx, failing, []*engine.NodeState{{NodeID: "a", Output: big}})
	if err == nil {
		t.Fatal("Checkpoint on a full database succeeded")
	}
	if !strings.Contains(err.Error(), "full") {
		t.Errorf("Checkpoint error %q does not mention the full database", err)
	}
	// Events that do not fit are kept and retried.
	for i := int64(1); i <= 3; i++ {
		s.Emit(ev(r.ID, i, strings.Repeat("y", 256<<10)))
	}
	waitFor(t, "failed retries", func() bool { return s.Stats().WriteErrors >= 3 })

	limitPages(t, s, false)
	mustOK(t, s.Checkpoint(ctx, r, []*engine.NodeState{{NodeID: "a", Status: engine.NodeCompleted}}),
		"Checkpoint after space was freed")
	evs, err := s.Events(ctx, r.ID, 0, 0)
	mustOK(t, err, "Events")
	if len(evs) != 3 {
		t.Fatalf("%d events stored after recovery, want the 3 retried ones", len(evs))
	}
	got, nodes, _, err := s.LoadRun(ctx, r.ID)
	mustOK(t, err, "LoadRun")
	if got.Status != engine.StatusRunning || nodes[0].Output != "" || nodes[0].Status != engine.NodeCompleted {
		t.Fatalf("state after recovery: run %s node %+v (the failed checkpoint must have left no trace)", got.Status, nodes[0])
	}
	st := s.Stats()
	if st.WriteErrors < 3 || st.EventsRetried < 3 || st.EventsDropped != 0 || st.LastWriteError == "" {
		t.Errorf("stats after recovery: %+v", st)
	}
	integrityOK(t, s)
}

func TestEventsDroppedAfterRetries(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t, withRetry(2, time.Millisecond))
	r := newRun("run-drop")
	mustOK(t, s.CreateRun(ctx, r, nil, nil), "CreateRun")
	limitPages(t, s, true)
	for i := int64(1); i <= 3; i++ {
		s.Emit(ev(r.ID, i, strings.Repeat("z", 256<<10)))
	}
	waitFor(t, "events to be dropped", func() bool { return s.Stats().EventsDropped == 3 })
	limitPages(t, s, false)
	s.Emit(ev(r.ID, 4, "after"))
	mustOK(t, s.Checkpoint(ctx, r, nil), "Checkpoint after space was freed")
	evs, err := s.Events(ctx, r.ID, 0, 0)
	mustOK(t, err, "Events")
	if len(evs) != 1 || evs[0].Seq != 4 {
		t.Fatalf("events after drop: %+v, want only seq 4", evs)
	}
	integrityOK(t, s)
}
