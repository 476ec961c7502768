package storetest

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
)

var claimsTests = []test{
	{"ClaimWaitingNodeRace", runsOnly(testClaimRace)},
	{"ClaimWaitingNodeRules", runsOnly(testClaimRules)},
	{"ClaimStoresDecision", runsOnly(testClaimDecision)},
}

// waitingRun creates a running run held by owner with a waiting node "gate"
// and a completed node "done".
func waitingRun(t *testing.T, s engine.Store, id, owner string) *engine.Run {
	t.Helper()
	r := newRun(id, engine.StatusRunning, t0)
	create(t, s, r,
		&engine.NodeState{NodeID: "gate", Status: engine.NodeWaiting, Visits: 1, Wait: json.RawMessage(`{"ask":"name?"}`)},
		&engine.NodeState{NodeID: "done", Status: engine.NodeCompleted, Output: "ok"})
	must(t, s.AcquireRun(ctxT(t), id, owner, "", t0, t0.Add(time.Hour)), "AcquireRun "+id)
	return r
}

func nodeByID(t *testing.T, s engine.Store, runID, nodeID string) *engine.NodeState {
	t.Helper()
	_, nodes, _, err := s.LoadRun(ctxT(t), runID)
	must(t, err, "LoadRun "+runID)
	for _, n := range nodes {
		if n.NodeID == nodeID {
			return n
		}
	}
	t.Fatalf("run %s has no node %s", runID, nodeID)
	return nil
}

func testClaimRace(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r := waitingRun(t, s, "run-claim", "proc-1")
	const n = 50
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = s.ClaimWaitingNode(ctx, r.ID, "gate", "proc-1", []byte(`{"decision":"approve"}`))
		})
	}
	close(start)
	wg.Wait()
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case errors.Is(err, engine.ErrConflict):
		default:
			t.Errorf("claim %d: got %v, want nil or ErrConflict", i, err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d of %d concurrent claims succeeded, want exactly 1", wins, n)
	}
	gate := nodeByID(t, s, r.ID, "gate")
	if gate.Status != engine.NodeRunning {
		t.Errorf("claimed node status = %q, want running", gate.Status)
	}
	if gate.Visits != 1 || string(gate.Wait) != `{"ask":"name?"}` {
		t.Errorf("claiming changed more than the status: %+v", gate)
	}
}

func testClaimRules(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r := waitingRun(t, s, "run-rules", "proc-1")
	mustIs(t, s.ClaimWaitingNode(ctx, r.ID, "gate", "proc-2", nil), engine.ErrConflict, "claim by a process not holding the run")
	if st := nodeByID(t, s, r.ID, "gate").Status; st != engine.NodeWaiting {
		t.Errorf("after a refused claim the node is %q, want waiting", st)
	}
	mustIs(t, s.ClaimWaitingNode(ctx, r.ID, "done", "proc-1", nil), engine.ErrConflict, "claim of a completed node")
	mustIs(t, s.ClaimWaitingNode(ctx, r.ID, "no-such-node", "proc-1", nil), engine.ErrNotFound, "claim of an unknown node")
	mustIs(t, s.ClaimWaitingNode(ctx, "no-such-run", "gate", "proc-1", nil), engine.ErrNotFound, "claim in an unknown run")
	must(t, s.ClaimWaitingNode(ctx, r.ID, "gate", "proc-1", []byte(`{"decision":"approve"}`)), "claim by the holder")
	mustIs(t, s.ClaimWaitingNode(ctx, r.ID, "gate", "proc-1", []byte(`{"decision":"approve"}`)), engine.ErrConflict, "second claim")
}

// testClaimDecision: the decision stored with a claim comes back on load.
func testClaimDecision(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r := waitingRun(t, s, "run-decision", "proc-1")
	dec := []byte(`{"decision":"reject","note":"again"}`)
	must(t, s.ClaimWaitingNode(ctx, r.ID, "gate", "proc-1", dec), "claim")
	n := nodeByID(t, s, r.ID, "gate")
	if n.Status != engine.NodeRunning || string(n.Decision) != string(dec) {
		t.Fatalf("claimed node %+v", n)
	}
}
