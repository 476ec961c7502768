package copy

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/sqlite"
)

// TestCopyFromSQLite: everything a SQLite database holds reads back the
// same from PostgreSQL after the copy, through the same API.
func TestCopyFromSQLite(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "switchyard.db")
	src, err := sqlite.Open(ctx, path, sqlite.WithLogger(testLogger(t)))
	mustOK(t, err, "open SQLite")

	w, err := src.CreateWorkflow(ctx, store.Workflow{Name: "Review", Kind: engine.KindGraph, Definition: json.RawMessage(`{"nodes":[1]}`)})
	mustOK(t, err, "CreateWorkflow")
	w.Definition = json.RawMessage(`{"nodes":[1,2]}`)
	_, err = src.UpdateWorkflow(ctx, *w, 1)
	mustOK(t, err, "UpdateWorkflow")
	_, err = src.CreateWorkflow(ctx, store.Workflow{ID: "yaml-1", Name: "Y", Kind: engine.KindYAML, Definition: json.RawMessage(`"a: 1"`)})
	mustOK(t, err, "CreateWorkflow yaml")

	fin := t0.Add(time.Minute)
	done := newRun("run-done")
	done.WorkflowID, done.Status, done.FinishedAt = w.ID, engine.StatusCompleted, &fin
	done.PendingApprovals = []engine.PendingApproval{{NodeID: "b", Prompt: "ok?", Since: t0}}
	mustOK(t, src.CreateRun(ctx, done, []*engine.NodeState{
		{NodeID: "z", Status: engine.NodeCompleted, Output: "first stored", Fired: []string{"e1"}, StartedAt: &fin},
		{NodeID: "a", Status: engine.NodeWaiting, Wait: json.RawMessage(`{"ask": "x"}`), Decision: json.RawMessage(`{"d":1}`), Rejection: "no"},
	}, nil), "CreateRun done")
	for i := int64(1); i <= 300; i++ {
		e := ev(done.ID, i, "event")
		if i%3 == 0 {
			e.Data = json.RawMessage(`{"i": 1}`)
		}
		src.Emit(e)
	}
	held := newRun("run-held")
	held.CreatedAt = t0.Add(time.Second)
	held.Owner, held.LeaseUntil = "proc", time.Now().Add(time.Hour)
	mustOK(t, src.CreateRun(ctx, held, nil, nil), "CreateRun held")
	mustOK(t, src.RequestCancel(ctx, held.ID), "RequestCancel")
	orphan := newRun("run-orphan")
	orphan.CreatedAt = t0.Add(2 * time.Second)
	mustOK(t, src.CreateRun(ctx, orphan, nil, nil), "CreateRun orphan")
	expired := newRun("run-expired") // its owner died: lease ended at once
	expired.CreatedAt = t0.Add(3 * time.Second)
	expired.Owner, expired.LeaseUntil = "dead", time.Now().Add(time.Hour)
	mustOK(t, src.CreateRun(ctx, expired, nil, nil), "CreateRun expired")
	mustOK(t, src.ExpireLeases(ctx, "dead"), "ExpireLeases")
	mustOK(t, src.Checkpoint(ctx, orphan, nil), "barrier")
	signedOut := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	mustOK(t, src.RevokeSession(ctx, "signed-out", signedOut), "RevokeSession")
	mustOK(t, src.Close(), "close SQLite")

	dst := openStore(t)
	st, err := FromSQLite(ctx, path, dst, testLogger(t))
	mustOK(t, err, "FromSQLite")
	if want := (Stats{Workflows: 2, Versions: 3, Runs: 4, Nodes: 2, Events: 300}); st != want {
		t.Fatalf("copied %+v, want %+v", st, want)
	}
	src, err = sqlite.Open(ctx, path, sqlite.WithLogger(testLogger(t)))
	mustOK(t, err, "reopen SQLite")
	defer src.Close()

	same := func(what string, a, b any) {
		t.Helper()
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s differs:\nSQLite:     %+v\nPostgreSQL: %+v", what, a, b)
		}
	}
	wa, _ := src.ListWorkflows(ctx)
	wb, _ := dst.ListWorkflows(ctx)
	same("ListWorkflows", wa, wb)
	for _, wf := range wa {
		ga, _ := src.GetWorkflow(ctx, wf.ID)
		gb, _ := dst.GetWorkflow(ctx, wf.ID)
		same("GetWorkflow "+wf.ID, ga, gb)
		va, _ := src.ListVersions(ctx, wf.ID)
		vb, _ := dst.ListVersions(ctx, wf.ID)
		same("ListVersions "+wf.ID, va, vb)
		for _, v := range va {
			xa, _ := src.GetVersion(ctx, wf.ID, v.Version)
			xb, _ := dst.GetVersion(ctx, wf.ID, v.Version)
			same("GetVersion", xa, xb)
		}
	}
	ra, _ := src.ListRuns(ctx, engine.RunFilter{})
	rb, _ := dst.ListRuns(ctx, engine.RunFilter{})
	same("ListRuns", ra, rb)
	for _, r := range ra {
		ha, na, la, _ := src.LoadRun(ctx, r.ID)
		hb, nb, lb, err := dst.LoadRun(ctx, r.ID)
		mustOK(t, err, "LoadRun "+r.ID)
		same("LoadRun header "+r.ID, ha, hb)
		same("LoadRun nodes (in order) "+r.ID, na, nb)
		same("LoadRun last seq "+r.ID, la, lb)
		ea, _ := src.Events(ctx, r.ID, 0, 0)
		eb, _ := dst.Events(ctx, r.ID, 0, 0)
		same("Events "+r.ID, ea, eb)
	}
	// Leases and cancel requests came along.
	now := time.Now()
	oa, _ := src.ListOrphaned(ctx, now)
	ob, _ := dst.ListOrphaned(ctx, now)
	same("ListOrphaned", oa, ob)
	if !slices.Equal(ob, []string{orphan.ID, expired.ID}) {
		t.Errorf("orphaned after the copy: %v", ob)
	}
	ids, err := dst.TakeCancelRequests(ctx, "proc")
	mustOK(t, err, "TakeCancelRequests")
	if !slices.Equal(ids, []string{held.ID}) {
		t.Errorf("cancel requests after the copy: %v", ids)
	}

	revoked, err := dst.RevokedSessions(ctx)
	mustOK(t, err, "RevokedSessions")
	if len(revoked) != 1 || !revoked["signed-out"].Equal(signedOut) {
		t.Errorf("revoked sessions after the copy: %v", revoked)
	}

	// A second copy into the now non-empty database is refused whole.
	_, err = FromSQLite(ctx, path, dst, testLogger(t))
	wantIs(t, err, engine.ErrConflict, "copy into a non-empty database")
}

// TestCopyVerificationCatchesAMismatch: the check that ends every copy
// refuses a destination whose counts or last seqs differ from the source.
func TestCopyVerificationCatchesAMismatch(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "switchyard.db")
	src, err := sqlite.Open(ctx, path, sqlite.WithLogger(testLogger(t)))
	mustOK(t, err, "open SQLite")
	r := newRun("run-v")
	mustOK(t, src.CreateRun(ctx, r, nil, nil), "CreateRun")
	src.Emit(ev(r.ID, 1, "one"))
	mustOK(t, src.Checkpoint(ctx, r, nil), "barrier")
	mustOK(t, src.Close(), "close SQLite")

	dst := openDSN(t, pg.NewDatabase(t))
	db, err := sql.Open("sqlite", path)
	mustOK(t, err, "open SQLite for reading")
	defer db.Close()
	rtx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	mustOK(t, err, "read tx")
	defer func() { _ = rtx.Rollback() }()
	tx, err := dst.Pool().Begin(ctx)
	mustOK(t, err, "begin")
	defer func() { _ = tx.Rollback(ctx) }()
	if err := verifyCopy(ctx, rtx, tx, []string{"runs"}); err == nil || !strings.Contains(err.Error(), "1 rows in SQLite, 0 copied") {
		t.Fatalf("an empty destination passed verification: %v", err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO runs (id, kind, status, input, created_at, updated_at) VALUES ('run-v', 'graph', 'running', '', now(), now())`)
	mustOK(t, err, "insert run")
	if err := verifyCopy(ctx, rtx, tx, []string{"runs"}); err == nil || !strings.Contains(err.Error(), "1 runs with events in SQLite, 0 copied") {
		t.Fatalf("missing events passed verification: %v", err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO run_events (run_id, seq, node_id, type, content, ts) VALUES ('run-v', 1, 'n', 't', 'one', now())`)
	mustOK(t, err, "insert event")
	mustOK(t, verifyCopy(ctx, rtx, tx, []string{"runs", "run_events"}), "a faithful copy")
}
