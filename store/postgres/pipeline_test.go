package postgres

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/switchyard/switchyard/engine"
)

// TestPipelinedBatchRefusesOpsAlone: run creations and checkpoints of many
// runs share a batch's round trip. A creation with a taken id or an
// unknown workflow, and a checkpoint by an owner that does not hold its
// run, are refused alone (ErrConflict, ErrNotFound, ErrConflict), writing
// nothing, while everything else of their batches commits; the runs whose
// ids were reused keep their own nodes and events.
func TestPipelinedBatchRefusesOpsAlone(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t)
	const n = 60
	// The originals whose ids are reused below, held by "a".
	for i := range n / 6 {
		r := newRun(fmt.Sprintf("orig-%02d", i))
		r.Owner, r.LeaseUntil = "a", t0.Add(1<<40)
		mustOK(t, s.CreateRun(ctx, r, []*engine.NodeState{{NodeID: "x", Status: engine.NodeCompleted, Output: "original"}},
			[]*engine.Event{ev(r.ID, 1, "original")}), "CreateRun original")
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			var r *engine.Run
			switch i % 6 {
			case 0: // a taken id
				r = newRun(fmt.Sprintf("orig-%02d", i/6))
			case 1: // an unknown workflow
				r = newRun(fmt.Sprintf("nowf-%02d", i))
				r.WorkflowID = "no-such-workflow"
			case 2: // a checkpoint of a run another owner holds
				r = newRun(fmt.Sprintf("orig-%02d", i/6))
				r.Owner = "b"
				errs[i] = s.Checkpoint(ctx, r, []*engine.NodeState{{NodeID: "x", Status: engine.NodeFailed, Output: "overwritten"}})
				return
			default:
				r = newRun(fmt.Sprintf("new-%02d", i))
			}
			errs[i] = s.CreateRun(ctx, r, []*engine.NodeState{{NodeID: "x", Status: engine.NodePending, Output: "new"}},
				[]*engine.Event{ev(r.ID, 1, "new")})
			if errs[i] == nil {
				// Then a checkpoint of its own, batched with the others'.
				r.Status = engine.StatusCompleted
				errs[i] = s.Checkpoint(ctx, r, []*engine.NodeState{{NodeID: "x", Status: engine.NodeCompleted, Output: "done"}})
			}
		})
	}
	wg.Wait()
	if st := s.Stats(); st.LargestBatch < 2 {
		t.Errorf("no batch held more than one op (%+v): nothing was pipelined", st)
	}
	for i, err := range errs {
		var want error
		switch i % 6 {
		case 0, 2:
			want = engine.ErrConflict
		case 1:
			want = engine.ErrNotFound
		}
		if (want == nil) != (err == nil) || (want != nil && !errors.Is(err, want)) {
			t.Errorf("op %d (kind %d): %v, want %v", i, i%6, err, want)
		}
	}
	for i := range n / 6 {
		id := fmt.Sprintf("orig-%02d", i)
		_, nodes, last, err := s.LoadRun(ctx, id)
		mustOK(t, err, "LoadRun "+id)
		if len(nodes) != 1 || nodes[0].Output != "original" || last != 1 {
			t.Errorf("%s was changed: nodes %+v, last seq %d", id, nodes, last)
		}
		evs, _ := s.Events(ctx, id, 0, 0)
		if len(evs) != 1 || evs[0].Content != "original" {
			t.Errorf("%s events: %+v", id, evs)
		}
	}
	for i := range n {
		if k := i % 6; k < 3 {
			continue
		}
		id := fmt.Sprintf("new-%02d", i)
		hdr, nodes, last, err := s.LoadRun(ctx, id)
		mustOK(t, err, "LoadRun "+id)
		if hdr.Status != engine.StatusCompleted || len(nodes) != 1 || nodes[0].Output != "done" || last != 1 {
			t.Errorf("%s: %s, nodes %+v, last seq %d", id, hdr.Status, nodes, last)
		}
	}
	if _, err := s.GetRun(ctx, "nowf-01"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("a refused creation was stored: %v", err)
	}
}
