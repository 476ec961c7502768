package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/internal/pgtest"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/storetest"
)

// pg is this package's private PostgreSQL cluster; every test gets a
// database of its own on it.
var pg *pgtest.Cluster

func TestMain(m *testing.M) {
	if os.Getenv(childDSN) != "" {
		// A child process of a multi-process test: it uses the parent's
		// cluster.
		os.Exit(m.Run())
	}
	os.Exit(pgtest.Main(m, &pg))
}

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// openDSN opens a store on dsn, closed when t ends.
func openDSN(t testing.TB, dsn string, opts ...Option) *Store {
	t.Helper()
	opts = append([]Option{WithLogger(testLogger(t))}, opts...)
	s, err := Open(testCtx(t), dsn, opts...)
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

// openStore opens a store on a new, empty database.
func openStore(t testing.TB, opts ...Option) *Store {
	t.Helper()
	return openDSN(t, pg.NewDatabase(t), opts...)
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
	dsns := map[store.Store]string{}
	var mu sync.Mutex
	storetest.Run(t, func(t *testing.T, o storetest.Options) store.Store {
		var opts []Option
		if o.Now != nil {
			opts = append(opts, WithClock(o.Now))
		}
		mu.Lock()
		defer mu.Unlock()
		dsn, ok := dsns[o.Share]
		if !ok {
			dsn = pg.NewDatabase(t)
		}
		s := openDSN(t, dsn, opts...)
		dsns[s] = dsn
		return s
	})
}

// --- migrations ---

func TestMigrateEmptyDatabase(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t)
	var v int64
	mustOK(t, s.pool.QueryRow(ctx, `SELECT max(version_id) FROM goose_db_version`).Scan(&v), "schema version")
	if v != SchemaVersion() || v < 1 {
		t.Fatalf("schema version %d, want %d (>= 1)", v, SchemaVersion())
	}
	rows, err := s.pool.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`)
	mustOK(t, err, "list tables")
	var got []string
	for rows.Next() {
		var n string
		mustOK(t, rows.Scan(&n), "scan")
		got = append(got, n)
	}
	want := []string{"definitions", "goose_db_version", "node_states", "revoked_sessions", "run_events", "runs", "workflow_versions", "workflows", "yaml_positions"}
	if !slices.Equal(got, want) {
		t.Fatalf("tables %v, want %v", got, want)
	}
}

// TestDefinitionsStoredOnce: runs of one definition share its row (by
// content hash; the pipelined and the checking CreateRun alike) and read
// their definition back byte for byte.
func TestDefinitionsStoredOnce(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t)
	const a, b = `{"nodes":[{"id":"s","type":"start"}],"edges":[]}`, `{"nodes": []}`
	defs := []string{a, b, a, "", a}
	for i, def := range defs {
		r := newRun(fmt.Sprintf("run-%d", i))
		r.Definition = json.RawMessage(def)
		if i == 4 {
			r.WorkflowID = "no-such-workflow" // refused: the batch runs again op by op
		}
		err := s.CreateRun(ctx, r, nil, nil)
		if i == 4 {
			wantIs(t, err, engine.ErrNotFound, "CreateRun of an unknown workflow")
			continue
		}
		mustOK(t, err, "CreateRun")
	}
	for i, def := range defs[:4] {
		r, err := s.GetRun(ctx, fmt.Sprintf("run-%d", i))
		mustOK(t, err, "GetRun")
		if string(r.Definition) != def {
			t.Errorf("run-%d: definition %q, want %q", i, r.Definition, def)
		}
	}
	var rows int
	mustOK(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM definitions`).Scan(&rows), "count definitions")
	if rows != 2 {
		t.Fatalf("%d definition rows for 2 distinct definitions", rows)
	}
}

// TestDefinitionsMigrateToOneRowEach: migration 6 moves the definitions
// runs kept each into one row per distinct definition, with the same hash
// the store computes.
func TestDefinitionsMigrateToOneRowEach(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dsn := pg.NewDatabase(t)
	pool, err := pgxpool.New(ctx, dsn)
	mustOK(t, err, "connect")
	defer pool.Close()
	p, closeDB, err := newProvider(pool)
	mustOK(t, err, "newProvider")
	defer closeDB()
	_, err = p.UpTo(ctx, 5)
	mustOK(t, err, "up to 5")
	const a = `{"nodes":["ünïcode"]}`
	for i, def := range []string{a, a, ""} {
		id := fmt.Sprintf("old-%d", i)
		_, err := pool.Exec(ctx, `INSERT INTO runs (id, kind, status, created_at, updated_at) VALUES ($1, 'graph', 'completed', now(), now())`, id)
		mustOK(t, err, "insert a version-5 run")
		_, err = pool.Exec(ctx, `INSERT INTO run_definitions (run_id, definition) VALUES ($1, $2)`, id, def)
		mustOK(t, err, "insert its definition")
	}
	s := openDSN(t, dsn)
	r := newRun("new")
	r.Definition = json.RawMessage(a)
	mustOK(t, s.CreateRun(ctx, r, nil, nil), "CreateRun of the same definition")
	for id, want := range map[string]string{"old-0": a, "old-1": a, "old-2": "", "new": a} {
		got, err := s.GetRun(ctx, id)
		mustOK(t, err, "GetRun "+id)
		if string(got.Definition) != want {
			t.Errorf("%s: definition %q, want %q", id, got.Definition, want)
		}
	}
	var rows int
	mustOK(t, pool.QueryRow(ctx, `SELECT count(*) FROM definitions`).Scan(&rows), "count definitions")
	if rows != 1 {
		t.Fatalf("%d definition rows, want 1 (the migrated hash is the store's)", rows)
	}
}

// TestConcurrentOpensMigrateOnce: processes starting together on an empty
// database all open it (the advisory lock makes them migrate in turn).
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	t.Parallel()
	dsn := pg.NewDatabase(t)
	var wg sync.WaitGroup
	stores := make([]*Store, 4)
	errs := make([]error, len(stores))
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = Open(testCtx(t), dsn, WithLogger(testLogger(t))) })
	}
	wg.Wait()
	for i, err := range errs {
		mustOK(t, err, fmt.Sprintf("Open %d", i))
		defer stores[i].Close()
	}
	var n int
	mustOK(t, stores[0].pool.QueryRow(testCtx(t), `SELECT count(*) FROM goose_db_version WHERE version_id > 0`).Scan(&n), "count")
	if int64(n) != SchemaVersion() {
		t.Fatalf("%d migrations recorded, want %d", n, SchemaVersion())
	}
}

func TestMigrationsDownAndUpAgain(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t)
	mustOK(t, s.CreateRun(ctx, newRun("r"), []*engine.NodeState{{NodeID: "a"}}, nil), "CreateRun")
	p, closeDB, err := newProvider(s.pool)
	mustOK(t, err, "newProvider")
	defer closeDB()
	_, err = p.DownTo(ctx, 0)
	mustOK(t, err, "down to 0")
	var n int
	mustOK(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'
AND tablename <> 'goose_db_version'`).Scan(&n), "count tables")
	if n != 0 {
		t.Fatalf("%d tables left after migrating down", n)
	}
	_, err = p.Up(ctx)
	mustOK(t, err, "up again")
}

func TestRefuseNewerSchema(t *testing.T) {
	t.Parallel()
	dsn := pg.NewDatabase(t)
	s := openDSN(t, dsn)
	_, err := s.pool.Exec(testCtx(t), `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)`, SchemaVersion()+1)
	mustOK(t, err, "record a future migration")
	_, err = Open(testCtx(t), dsn, WithLogger(testLogger(t)))
	wantIs(t, err, store.ErrSchemaTooNew, "Open of a newer schema")
	var tooNew *store.SchemaTooNewError
	if !errors.As(err, &tooNew) || tooNew.DBVersion != SchemaVersion()+1 {
		t.Fatalf("error %v does not carry the versions", err)
	}
}

// --- several processes on one database ---

// twoStores opens two stores (two pools: two processes) on one new database.
func twoStores(t *testing.T, opts ...Option) (*Store, *Store) {
	dsn := pg.NewDatabase(t)
	return openDSN(t, dsn, opts...), openDSN(t, dsn, opts...)
}

// orphans creates n running runs whose owner "dead" let its lease expire.
func orphans(t *testing.T, s *Store, n int) []string {
	t.Helper()
	ctx := testCtx(t)
	past := time.Now().Add(-time.Hour)
	var ids []string
	for i := range n {
		r := newRun(fmt.Sprintf("orphan-%03d", i))
		r.CreatedAt = t0.Add(time.Duration(i) * time.Second)
		r.Owner, r.LeaseUntil = "dead", past
		mustOK(t, s.CreateRun(ctx, r, nil, nil), "CreateRun")
		ids = append(ids, r.ID)
	}
	return ids
}

// TestTwoProcessesRecoverDisjointRuns: two processes list the orphaned
// runs and acquire each, at the same time, as engine.Recover does; every
// run ends up with exactly one of them, and the loser of each race got
// ErrConflict.
func TestTwoProcessesRecoverDisjointRuns(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	a, b := twoStores(t)
	ids := orphans(t, a, 40)
	took := map[string][]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, p := range []struct {
		name string
		s    *Store
	}{{"A", a}, {"B", b}} {
		for w := range 3 { // a few recovering goroutines per process
			wg.Go(func() {
				<-start
				now := time.Now()
				list, err := p.s.ListOrphaned(ctx, now)
				if err != nil {
					t.Error(err)
					return
				}
				if w%2 == 1 {
					slices.Reverse(list) // collide from both ends
				}
				for _, id := range list {
					err := p.s.AcquireRun(ctx, id, p.name, "", now, now.Add(time.Minute))
					switch {
					case err == nil:
						mu.Lock()
						took[id] = append(took[id], p.name)
						mu.Unlock()
					case errors.Is(err, engine.ErrConflict):
					default:
						t.Errorf("AcquireRun %s by %s: %v", id, p.name, err)
					}
				}
			})
		}
	}
	close(start)
	wg.Wait()
	checkDisjoint(t, ids, took)
	left, err := b.ListOrphaned(ctx, time.Now())
	mustOK(t, err, "ListOrphaned after recovery")
	if len(left) != 0 {
		t.Errorf("still orphaned after recovery: %v", left)
	}
}

// checkDisjoint: each run was taken exactly once; a process taking one
// twice is fine (acquire is reentrant), two processes are not.
func checkDisjoint(t *testing.T, ids []string, took map[string][]string) {
	t.Helper()
	byProc := map[string]int{}
	for _, id := range ids {
		owners := slices.Compact(slices.Sorted(slices.Values(took[id])))
		if len(owners) != 1 {
			t.Errorf("run %s taken by %v, want exactly one process", id, owners)
			continue
		}
		byProc[owners[0]]++
	}
	t.Logf("runs taken per process: %v", byProc)
}

// TestClaimOrphanedSkipLocked: processes claiming orphaned runs in small
// sets at once get disjoint sets whose union is every orphan, and a run
// whose live owner renews is never claimed.
func TestClaimOrphanedSkipLocked(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	a, b := twoStores(t)
	ids := orphans(t, a, 60)
	live := newRun("live")
	live.Owner, live.LeaseUntil = "alive", time.Now().Add(time.Hour)
	mustOK(t, a.CreateRun(ctx, live, nil, nil), "CreateRun live")

	took := map[string][]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 6 {
		s, name := a, "A"
		if i%2 == 1 {
			s, name = b, "B"
		}
		wg.Go(func() {
			<-start
			for {
				now := time.Now()
				got, err := s.ClaimOrphaned(ctx, name, now, now.Add(time.Minute), 5)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, id := range got {
					took[id] = append(took[id], fmt.Sprintf("%s/%d", name, i))
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if _, ok := took["live"]; ok {
		t.Errorf("the live run was claimed")
	}
	delete(took, "live")
	// Here even two claimers of one process must not share a run.
	checkDisjoint(t, ids, took)
	if len(took) != len(ids) {
		t.Errorf("%d runs claimed, want %d", len(took), len(ids))
	}
}

// TestClaimWaitingNodeAcrossProcesses: ten approvers, five per process,
// answer one waiting node at once: exactly one wins.
func TestClaimWaitingNodeAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	a, b := twoStores(t)
	r := newRun("run-gate")
	r.Owner, r.LeaseUntil = "driver", time.Now().Add(time.Hour)
	mustOK(t, a.CreateRun(ctx, r, []*engine.NodeState{{NodeID: "gate", Status: engine.NodeWaiting, Visits: 1}}, nil), "CreateRun")
	const n = 10
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		s := []*Store{a, b}[i%2]
		wg.Go(func() {
			<-start
			errs[i] = s.ClaimWaitingNode(ctx, r.ID, "gate", "driver", fmt.Appendf(nil, `{"approver":%d}`, i))
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Errorf("claims %d and %d both won", winner, i)
			}
			winner = i
		case errors.Is(err, engine.ErrConflict):
		default:
			t.Errorf("claim %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no claim won")
	}
	_, nodes, _, err := b.LoadRun(ctx, r.ID)
	mustOK(t, err, "LoadRun")
	if nodes[0].Status != engine.NodeRunning || string(nodes[0].Decision) != fmt.Sprintf(`{"approver":%d}`, winner) {
		t.Fatalf("gate after the race: %+v (winner %d)", nodes[0], winner)
	}
}

// TestLeaseExpiryUsesDatabaseClock: a process whose clock runs an hour
// behind still holds its run for the lease it asked for, and one whose
// clock runs ahead cannot take a live run early: both translate their
// times to the database's clock.
func TestLeaseExpiryUsesDatabaseClock(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dsn := pg.NewDatabase(t)
	behind := openDSN(t, dsn, WithClock(func() time.Time { return time.Now().Add(-time.Hour) }))
	ahead := openDSN(t, dsn, WithClock(func() time.Time { return time.Now().Add(time.Hour) }))
	if off := behind.ClockOffset(); off < 59*time.Minute || off > 61*time.Minute {
		t.Fatalf("offset of a clock an hour behind = %v", off)
	}
	r := newRun("run-skew")
	mustOK(t, behind.CreateRun(ctx, r, nil, nil), "CreateRun")
	now := behind.now()
	mustOK(t, behind.AcquireRun(ctx, r.ID, "behind", "", now, now.Add(time.Minute)), "AcquireRun by the slow clock")

	aNow := ahead.now()
	list, err := ahead.ListOrphaned(ctx, aNow)
	mustOK(t, err, "ListOrphaned")
	if slices.Contains(list, r.ID) {
		t.Fatalf("a live lease looks expired to a clock an hour ahead: %v", list)
	}
	wantIs(t, ahead.AcquireRun(ctx, r.ID, "ahead", "", aNow, aNow.Add(time.Minute)), engine.ErrConflict,
		"takeover of a live lease by a clock an hour ahead")
	// Once the lease really expired (by the database clock), it can.
	later := aNow.Add(2 * time.Minute)
	mustOK(t, ahead.AcquireRun(ctx, r.ID, "ahead", "", later, later.Add(time.Minute)), "takeover after expiry")
}

// TestTakeoverFencesOldOwner: process A streams events while process B
// takes its run over. B's acquire waits for A's in-flight batch (A holds
// the run row share-locked), so the log B loads right after is final for
// A: B's events follow it without a gap or a collision, and nothing of A
// lands afterwards.
func TestTakeoverFencesOldOwner(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	a, b := twoStores(t)
	r := newRun("run-takeover")
	r.Owner, r.LeaseUntil = "A", time.Now().Add(time.Minute)
	mustOK(t, a.CreateRun(ctx, r, nil, nil), "CreateRun")
	const sent = 3000
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		for i := int64(1); i <= sent; i++ {
			e := ev(r.ID, i, "from A")
			e.Owner = "A"
			a.Emit(e)
		}
	}()
	waitFor(t, "A's first events", func() bool { return a.Stats().EventsWritten > 0 })
	// B takes over, as if A's lease had expired (B's clock says so).
	later := time.Now().Add(2 * time.Minute)
	mustOK(t, b.AcquireRun(ctx, r.ID, "B", "", later, later.Add(time.Hour)), "AcquireRun B")
	_, _, last, err := b.LoadRun(ctx, r.ID)
	mustOK(t, err, "LoadRun")
	for i := last + 1; i <= last+10; i++ {
		e := ev(r.ID, i, "from B")
		e.Owner = "B"
		b.Emit(e)
	}
	<-streamed
	hdr := *r
	hdr.Owner = "A"
	wantIs(t, a.Checkpoint(ctx, &hdr, nil), engine.ErrConflict, "checkpoint by A after the takeover")
	hdr.Owner = "B"
	mustOK(t, b.Checkpoint(ctx, &hdr, nil), "barrier B")
	evs, err := b.Events(ctx, r.ID, 0, 0)
	mustOK(t, err, "Events")
	if int64(len(evs)) != last+10 {
		t.Fatalf("%d events, want %d (A's %d, then B's 10)", len(evs), last+10, last)
	}
	for i, e := range evs {
		want := "from A"
		if e.Seq > last {
			want = "from B"
		}
		if e.Seq != int64(i+1) || e.Content != want {
			t.Fatalf("event %d: seq %d %q, want seq %d %q", i, e.Seq, e.Content, i+1, want)
		}
	}
	t.Logf("A's events committed before the takeover: %d of %d", last, sent)
}

// TestDeadlockWithAnotherProcessIsRetried: a batch that deadlocks with
// another process's transaction is the victim PostgreSQL aborts; the
// writer runs it again and its callers never see the deadlock.
func TestDeadlockWithAnotherProcessIsRetried(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dsn := pg.NewDatabase(t)
	s := openDSN(t, dsn)
	for _, id := range []string{"r1", "r2", "r3"} {
		mustOK(t, s.CreateRun(ctx, newRun(id), nil, nil), "CreateRun "+id)
	}
	other := func() pgx.Tx { // another process's transaction
		conn, err := pgx.Connect(ctx, dsn)
		mustOK(t, err, "connect")
		t.Cleanup(func() { conn.Close(context.Background()) })
		tx, err := conn.Begin(ctx)
		mustOK(t, err, "begin")
		return tx
	}
	lockWaits := func() int {
		var n int
		mustOK(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n), "pg_stat_activity")
		return n
	}
	x3, x2 := other(), other()
	_, err := x3.Exec(ctx, `UPDATE runs SET input = 'x3' WHERE id = 'r3'`)
	mustOK(t, err, "x3 locks r3")
	// x2 waits longer before checking for deadlocks: the store's batch
	// checks first and is the victim.
	_, err = x2.Exec(ctx, `SET LOCAL deadlock_timeout = '20s'`)
	mustOK(t, err, "x2 deadlock_timeout")
	_, err = x2.Exec(ctx, `UPDATE runs SET input = 'x2' WHERE id = 'r2'`)
	mustOK(t, err, "x2 locks r2")

	// The writer blocks on r3, so the next two ops queue up as one batch.
	acq3 := make(chan error, 1)
	go func() { acq3 <- s.AcquireRun(ctx, "r3", "A", "", time.Now(), time.Now().Add(time.Minute)) }()
	waitFor(t, "the writer to wait for r3", func() bool { return lockWaits() == 1 })
	s.Emit(ev("r1", 1, "share-locks r1"))
	acq2 := make(chan error, 1)
	go func() { acq2 <- s.AcquireRun(ctx, "r2", "A", "", time.Now(), time.Now().Add(time.Minute)) }()
	waitFor(t, "both ops to queue", func() bool { return s.Stats().QueueDepth == 2 })
	mustOK(t, x3.Commit(ctx), "x3 commit")
	mustOK(t, <-acq3, "AcquireRun r3")
	// Now the batch holds r1 and waits for r2; x2 wants r1: a deadlock.
	waitFor(t, "the batch to wait for r2", func() bool { return lockWaits() == 1 })
	x2r1 := make(chan error, 1)
	go func() {
		_, err := x2.Exec(ctx, `UPDATE runs SET input = 'x2' WHERE id = 'r1'`)
		if err == nil {
			err = x2.Commit(ctx)
		}
		x2r1 <- err
	}()
	mustOK(t, <-x2r1, "the other process's transaction")
	mustOK(t, <-acq2, "AcquireRun r2 after the deadlock")
	if st := s.Stats(); st.Retries < 1 || st.WriteErrors != 0 {
		t.Fatalf("stats %+v: want a retried batch and no write error", st)
	}
	evs, err := s.Events(ctx, "r1", 0, 0)
	mustOK(t, err, "Events")
	if len(evs) != 1 {
		t.Fatalf("events of r1: %+v, want the one of the retried batch", evs)
	}
}

// --- live events across processes ---

// collector gathers what OnCommit hooks receive, checking they are never
// called concurrently.
type collector struct {
	mu      sync.Mutex
	inCall  atomic.Bool
	events  map[string][]engine.Event
	headers map[string][]engine.RunStatus
	overlap atomic.Bool
}

func collect(s *Store) *collector {
	c := &collector{events: map[string][]engine.Event{}, headers: map[string][]engine.RunStatus{}}
	s.OnCommit(func(evs []engine.Event, runs []*engine.Run) {
		if !c.inCall.CompareAndSwap(false, true) {
			c.overlap.Store(true)
		}
		defer c.inCall.Store(false)
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, e := range evs {
			c.events[e.RunID] = append(c.events[e.RunID], e)
		}
		for _, r := range runs {
			c.headers[r.ID] = append(c.headers[r.ID], r.Status)
		}
	})
	return c
}

func (c *collector) seqs(run string) []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int64
	for _, e := range c.events[run] {
		out = append(out, e.Seq)
	}
	return out
}

func (c *collector) lastHeader(run string) engine.RunStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.headers[run]
	if len(h) == 0 {
		return ""
	}
	return h[len(h)-1]
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// TestRemoteCommitsReachHooks: a store opened WithRemoteCommits sees what
// another process commits (events in order, gapless, once; headers as
// they change), next to its own commits, its hooks never called at once.
func TestRemoteCommitsReachHooks(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dsn := pg.NewDatabase(t)
	server := openDSN(t, dsn, WithRemoteCommits())
	worker := openDSN(t, dsn)
	seen := collect(server)
	waitFor(t, "the server to listen", server.Listening)

	// The worker drives two runs; the server one of its own.
	const n = 1500
	var wg sync.WaitGroup
	for _, id := range []string{"remote-1", "remote-2"} {
		wg.Go(func() {
			r := newRun(id)
			first := []*engine.Event{ev(id, 1, "created")}
			mustOK(t, worker.CreateRun(ctx, r, nil, first), "CreateRun")
			for i := int64(2); i <= n; i++ {
				worker.Emit(ev(id, i, "x"))
				if i%500 == 0 {
					c := *r
					c.Status = engine.StatusPaused
					mustOK(t, worker.Checkpoint(ctx, &c, nil), "Checkpoint")
				}
			}
			c := *r
			c.Status = engine.StatusCompleted
			mustOK(t, worker.Checkpoint(ctx, &c, nil), "final Checkpoint")
		})
	}
	local := newRun("local")
	mustOK(t, server.CreateRun(ctx, local, nil, nil), "CreateRun local")
	for i := int64(1); i <= 300; i++ {
		server.Emit(ev(local.ID, i, "mine"))
	}
	mustOK(t, server.Checkpoint(ctx, local, nil), "Checkpoint local")
	wg.Wait()

	for _, id := range []string{"remote-1", "remote-2"} {
		waitFor(t, id+" completed on the server", func() bool { return seen.lastHeader(id) == engine.StatusCompleted })
		if got := seen.seqs(id); !slices.Equal(got, seqRange(1, n)) {
			t.Fatalf("%s: the server's hooks saw %d events (first %v): want 1..%d once, in order", id, len(got), got[:min(5, len(got))], n)
		}
	}
	if got := seen.seqs("local"); !slices.Equal(got, seqRange(1, 300)) {
		t.Fatalf("local run: hooks saw %d events, want 1..300 once", len(got))
	}
	if seen.overlap.Load() {
		t.Fatal("hooks were called concurrently")
	}
	// The worker does not listen: it sees only its own commits.
	if worker.Listening() {
		t.Fatal("a store without WithRemoteCommits listens")
	}
}

// TestRemoteCommitsCatchUpAfterReconnect: the listening connection dies;
// once it is back, a run it follows catches up on what was committed in
// between.
func TestRemoteCommitsCatchUpAfterReconnect(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dsn := pg.NewDatabase(t)
	// Reconnecting late, so that everything below commits while away.
	server := openDSN(t, dsn, WithRemoteCommits(), withListenRetry(5*time.Second))
	worker := openDSN(t, dsn)
	seen := collect(server)
	waitFor(t, "the server to listen", server.Listening)

	r := newRun("followed")
	mustOK(t, worker.CreateRun(ctx, r, nil, []*engine.Event{ev(r.ID, 1, "created")}), "CreateRun")
	waitFor(t, "the first event", func() bool { return len(seen.seqs(r.ID)) == 1 })

	// Kill the listening connection (as a network blip or a server restart would).
	_, err := worker.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE datname = current_database() AND query LIKE 'LISTEN%'`)
	mustOK(t, err, "terminate the listener")
	waitFor(t, "the listener to notice", func() bool { return !server.Listening() })
	for i := int64(2); i <= 50; i++ {
		worker.Emit(ev(r.ID, i, "while away"))
	}
	mustOK(t, worker.Checkpoint(ctx, r, nil), "barrier")
	if server.Listening() {
		t.Fatal("the listener reconnected before the events committed: the test proves nothing")
	}
	waitFor(t, "the events committed while away", func() bool { return len(seen.seqs(r.ID)) == 50 })
	if got := seen.seqs(r.ID); !slices.Equal(got, seqRange(1, 50)) {
		t.Fatalf("after reconnecting: %v", got)
	}
}

// TestCancelRequestNotifies: a cancel requested through any store reaches
// the listeners of the others at once (NOTIFY), not at their next poll.
func TestCancelRequestNotifies(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dsn := pg.NewDatabase(t)
	owner := openDSN(t, dsn, WithRemoteCommits())
	other := openDSN(t, dsn)
	var pokes atomic.Int32
	owner.OnCancelRequest(func() { pokes.Add(1) })
	waitFor(t, "the owner to listen", owner.Listening)
	base := pokes.Load() // one poke after each (re)connect
	r := newRun("cancel-me")
	r.Owner, r.LeaseUntil = "A", time.Now().Add(time.Hour)
	mustOK(t, owner.CreateRun(ctx, r, nil, nil), "CreateRun")
	mustOK(t, other.RequestCancel(ctx, r.ID), "RequestCancel")
	waitFor(t, "the cancel notice", func() bool { return pokes.Load() > base })
	ids, err := owner.TakeCancelRequests(ctx, "A")
	if err != nil || len(ids) != 1 || ids[0] != r.ID {
		t.Fatalf("TakeCancelRequests: %v, %v", ids, err)
	}
	// A refused request (no such run) commits nothing, so notifies nobody.
	before := pokes.Load()
	if err := other.RequestCancel(ctx, "no-such-run"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("cancel of an unknown run: %v", err)
	}
	mustOK(t, other.RequestCancel(ctx, r.ID), "second RequestCancel")
	waitFor(t, "the second notice", func() bool { return pokes.Load() > before })
	if got := pokes.Load(); got != before+1 {
		t.Errorf("%d notices for one committed request", got-before)
	}
}

// TestLeaseIgnoresAClockJump: a process whose clock jumps an hour after it
// opened the store still sets leases in the database's clock: a 10 s lease
// expires about 10 s later, not an hour later.
func TestLeaseIgnoresAClockJump(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dsn := pg.NewDatabase(t)
	var jump atomic.Int64
	jumpy := openDSN(t, dsn, WithClock(func() time.Time { return time.Now().Add(time.Duration(jump.Load())) }))
	other := openDSN(t, dsn)
	r := newRun("run-jump")
	mustOK(t, jumpy.CreateRun(ctx, r, nil, nil), "CreateRun")
	jump.Store(int64(time.Hour)) // NTP steps the clock after Open
	now := jumpy.now()
	mustOK(t, jumpy.AcquireRun(ctx, r.ID, "jumpy", "", now, now.Add(10*time.Second)), "AcquireRun")
	if list, err := other.ListOrphaned(ctx, time.Now()); err != nil || slices.Contains(list, r.ID) {
		t.Fatalf("a fresh lease looks expired: %v, %v", list, err)
	}
	waitFor(t, "the 10 s lease to expire", func() bool {
		list, err := other.ListOrphaned(ctx, time.Now())
		return err == nil && slices.Contains(list, r.ID)
	})
}
