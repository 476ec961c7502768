package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
)

var runsTests = []test{
	{"CreateGetLoadRoundTrip", runsOnly(testRoundTrip)},
	{"StoredCopiesAreIsolated", runsOnly(testIsolation)},
	{"CreateRunDuplicate", runsOnly(testCreateDuplicate)},
	{"CheckpointUpsertsNodeStates", runsOnly(testCheckpoint)},
	{"ConcurrentRuns", runsOnly(testConcurrentRuns)},
	{"ListRunsFilters", runsOnly(testListRuns)},
	{"ListRunsDefaultLimit", runsOnly(testListRunsDefaultLimit)},
	{"TerminalStatusIsWrittenOnce", runsOnly(testTerminalFinal)},
	{"CreateRunWithEvents", runsOnly(testCreateWithEvents)},
	{"UnknownIDsAreNotFound", runsOnly(testNotFound)},
	{"CloseStopsAcceptingWrites", testClose},
	{"YAMLRunsKnowTheirWorkflow", runsOnly(testYAMLWorkflowID)},
	{"NameRunsOnce", runsOnly(testNameRuns)},
}

func testRoundTrip(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r := fullRun("run-full")
	nodes := []*engine.NodeState{fullNode("a"), {NodeID: "b"}}
	create(t, s, r, nodes...)

	got, err := s.GetRun(ctx, r.ID)
	must(t, err, "GetRun")
	checkRun(t, "GetRun", r, got)

	hdr, gotNodes, maxSeq, err := s.LoadRun(ctx, r.ID)
	must(t, err, "LoadRun")
	checkRun(t, "LoadRun", r, hdr)
	checkNodes(t, "LoadRun", nodes, gotNodes)
	if maxSeq != 0 {
		t.Errorf("LoadRun maxSeq = %d for a run without events, want 0", maxSeq)
	}

	// The zero values round-trip too: no workflow, no approvals, not finished.
	minimal := newRun("run-minimal", engine.StatusPending, t0.Add(time.Hour))
	create(t, s, minimal)
	got, err = s.GetRun(ctx, minimal.ID)
	must(t, err, "GetRun minimal")
	checkRun(t, "GetRun minimal", minimal, got)
	_, gotNodes, _, err = s.LoadRun(ctx, minimal.ID)
	must(t, err, "LoadRun minimal")
	if len(gotNodes) != 0 {
		t.Errorf("LoadRun minimal: got %d node states, want 0", len(gotNodes))
	}
}

func testIsolation(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r := fullRun("run-iso")
	n := fullNode("a")
	want, wantNode := fullRun("run-iso"), fullNode("a")
	create(t, s, r, n)

	// The engine reuses its structs: changing them after the call must not
	// change what was stored.
	r.Status = engine.StatusFailed
	r.PendingApprovals[0].Prompt = "changed"
	n.Output = "changed"
	n.Fired[0] = "changed"
	n.Wait[2] = 'X'

	got, err := s.GetRun(ctx, r.ID)
	must(t, err, "GetRun")
	checkRun(t, "after mutating the created run", want, got)

	// Nor may changing what a read returned.
	got.Status = engine.StatusCancelled
	got.PendingApprovals[1].Input = "changed"
	again, err := s.GetRun(ctx, r.ID)
	must(t, err, "GetRun again")
	checkRun(t, "after mutating a returned run", want, again)

	_, nodes, _, err := s.LoadRun(ctx, r.ID)
	must(t, err, "LoadRun")
	checkNodes(t, "after mutating the created node", []*engine.NodeState{wantNode}, nodes)

	// Checkpoint copies as well (the caller may reuse the structs at once).
	cp := fullNode("a")
	cp.Output = "checkpointed"
	must(t, s.Checkpoint(ctx, want, []*engine.NodeState{cp}), "Checkpoint")
	cp.Output = "changed after checkpoint"
	_, nodes, _, err = s.LoadRun(ctx, r.ID)
	must(t, err, "LoadRun after checkpoint")
	wantCp := fullNode("a")
	wantCp.Output = "checkpointed"
	checkNodes(t, "after mutating the checkpointed node", []*engine.NodeState{wantCp}, nodes)
}

func testCreateDuplicate(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r := newRun("run-dup", engine.StatusPending, t0)
	create(t, s, r, &engine.NodeState{NodeID: "a"})
	other := newRun("run-dup", engine.StatusRunning, t0.Add(time.Hour))
	err := s.CreateRun(ctx, other, []*engine.NodeState{{NodeID: "b"}}, nil)
	mustIs(t, err, engine.ErrConflict, "CreateRun with an existing id")
	got, nodes, _, err := s.LoadRun(ctx, r.ID)
	must(t, err, "LoadRun")
	checkRun(t, "the first run is intact", r, got)
	checkNodes(t, "the first run's nodes are intact", []*engine.NodeState{{NodeID: "a"}}, nodes)
}

func testCheckpoint(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r := newRun("run-cp", engine.StatusPending, t0)
	r.WorkflowID = WorkflowB
	a, b := &engine.NodeState{NodeID: "a"}, &engine.NodeState{NodeID: "b", Status: engine.NodePending}
	create(t, s, r, a, b)

	// Every mutable header field changes, node a is updated, c is new.
	fin := t0.Add(time.Hour)
	r.Status = engine.StatusPaused
	r.Input = "more input"
	r.WaitingForInput = true
	r.CurrentNodeID = "c"
	r.PendingApprovals = []engine.PendingApproval{{NodeID: "c", Prompt: "ok?", Input: "x", Since: t0.Add(time.Minute)}}
	r.Error = "an error"
	r.WorkDir = "/work"
	r.Usage = engine.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, CostUSD: ptr(0.5)}
	r.UpdatedAt = t0.Add(30 * time.Minute)
	r.FinishedAt = &fin
	start := t0.Add(time.Second)
	a2 := &engine.NodeState{NodeID: "a", Status: engine.NodeCompleted, Input: "in", Output: "out",
		Handle: "default", Visits: 1, Attempts: 1, StartedAt: &start, FinishedAt: &fin}
	c := fullNode("c")
	must(t, s.Checkpoint(ctx, r, []*engine.NodeState{a2, c}), "Checkpoint")

	got, nodes, _, err := s.LoadRun(ctx, r.ID)
	must(t, err, "LoadRun")
	checkRun(t, "header after checkpoint", r, got)
	checkNodes(t, "nodes after checkpoint", []*engine.NodeState{a2, b, c}, nodes)

	// Upsert again: a's second visit; fields cleared back to zero values.
	a3 := &engine.NodeState{NodeID: "a", Status: engine.NodeRunning, Visits: 2, Attempts: 1, StartedAt: &fin}
	c2 := &engine.NodeState{NodeID: "c", Status: engine.NodeCompleted, Output: "done"}
	r.Status, r.WaitingForInput, r.PendingApprovals, r.Error, r.FinishedAt = engine.StatusRunning, false, nil, "", nil
	r.Usage = engine.Usage{PromptTokens: 30, CompletionTokens: 7, TotalTokens: 37} // tokens without a price
	r.UpdatedAt = t0.Add(31 * time.Minute)
	must(t, s.Checkpoint(ctx, r, []*engine.NodeState{a3, c2}), "second Checkpoint")
	got, nodes, _, err = s.LoadRun(ctx, r.ID)
	must(t, err, "LoadRun after second checkpoint")
	checkRun(t, "header after second checkpoint", r, got)
	checkNodes(t, "nodes after second checkpoint", []*engine.NodeState{a3, b, c2}, nodes)

	// A header-only checkpoint leaves the nodes alone.
	r.Status = engine.StatusCompleted
	r.FinishedAt = &fin
	must(t, s.Checkpoint(ctx, r, nil), "header-only Checkpoint")
	got, nodes, _, err = s.LoadRun(ctx, r.ID)
	must(t, err, "LoadRun after header-only checkpoint")
	checkRun(t, "header after header-only checkpoint", r, got)
	checkNodes(t, "nodes after header-only checkpoint", []*engine.NodeState{a3, b, c2}, nodes)

	unknown := newRun("no-such-run", engine.StatusRunning, t0)
	mustIs(t, s.Checkpoint(ctx, unknown, []*engine.NodeState{{NodeID: "x"}}), engine.ErrNotFound,
		"Checkpoint of an unknown run")
}

// testConcurrentRuns drives several runs at once, each emitting and
// checkpointing from its own goroutine, as the engine does.
func testConcurrentRuns(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	const runs, perRun = 8, 120
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for i := range runs {
		r := newRun(fmt.Sprintf("run-conc-%d", i), engine.StatusRunning, t0.Add(time.Duration(i)*time.Second))
		create(t, s, r)
		wg.Go(func() {
			node := &engine.NodeState{NodeID: "step"}
			for seq := int64(1); seq <= perRun; seq++ {
				s.Emit(event(r.ID, seq))
				if seq%20 == 0 {
					node.Visits = int(seq / 20)
					node.Status = engine.NodeCompleted
					if err := s.Checkpoint(ctx, r, []*engine.NodeState{node}); err != nil {
						errs <- fmt.Errorf("checkpoint %s at %d: %w", r.ID, seq, err)
						return
					}
					// The events before the checkpoint are stored, gapless.
					evs, err := s.Events(ctx, r.ID, 0, 0)
					if err != nil {
						errs <- err
						return
					}
					if int64(len(evs)) < seq {
						errs <- fmt.Errorf("run %s: %d events visible after checkpoint at seq %d", r.ID, len(evs), seq)
						return
					}
					for j, ev := range evs {
						if ev.Seq != int64(j+1) {
							errs <- fmt.Errorf("run %s: event %d has seq %d", r.ID, j, ev.Seq)
							return
						}
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range runs {
		id := fmt.Sprintf("run-conc-%d", i)
		evs, err := s.Events(ctx, id, 0, 0)
		must(t, err, "Events "+id)
		checkEvents(t, "Events "+id, evs, id, 1, perRun)
		_, nodes, maxSeq, err := s.LoadRun(ctx, id)
		must(t, err, "LoadRun "+id)
		if maxSeq != perRun || len(nodes) != 1 || nodes[0].Visits != perRun/20 {
			t.Errorf("LoadRun %s: maxSeq %d, nodes %d, want %d and 1 node with %d visits",
				id, maxSeq, len(nodes), perRun, perRun/20)
		}
	}
}

func testListRuns(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	specs := []struct {
		wf     string
		status engine.RunStatus
	}{
		{WorkflowA, engine.StatusRunning},   // run-0
		{WorkflowB, engine.StatusCompleted}, // run-1
		{WorkflowA, engine.StatusCompleted}, // run-2
		{WorkflowB, engine.StatusRunning},   // run-3
		{WorkflowA, engine.StatusRunning},   // run-4
		{"", engine.StatusCompleted},        // run-5
	}
	created := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	stored := map[string]*engine.Run{}
	// Created out of order: the listing orders by creation time.
	for _, i := range []int{3, 0, 5, 1, 4, 2} {
		r := fullRun(fmt.Sprintf("run-%d", i))
		r.WorkflowID, r.Status, r.CreatedAt = specs[i].wf, specs[i].status, created(i)
		create(t, s, r)
		stored[r.ID] = r
	}
	tests := []struct {
		name string
		f    engine.RunFilter
		want []string
	}{
		{"all", engine.RunFilter{}, []string{"run-5", "run-4", "run-3", "run-2", "run-1", "run-0"}},
		{"workflow", engine.RunFilter{WorkflowID: WorkflowA}, []string{"run-4", "run-2", "run-0"}},
		{"status", engine.RunFilter{Status: engine.StatusRunning}, []string{"run-4", "run-3", "run-0"}},
		{"workflow and status", engine.RunFilter{WorkflowID: WorkflowA, Status: engine.StatusRunning}, []string{"run-4", "run-0"}},
		{"limit", engine.RunFilter{Limit: 2}, []string{"run-5", "run-4"}},
		{"before is strict", engine.RunFilter{Before: created(3)}, []string{"run-2", "run-1", "run-0"}},
		{"before, status and limit", engine.RunFilter{Before: created(5), Status: engine.StatusCompleted, Limit: 1}, []string{"run-2"}},
		{"unknown workflow", engine.RunFilter{WorkflowID: "nope"}, nil},
		{"no match", engine.RunFilter{Status: engine.StatusCancelled}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ListRuns(ctx, tc.f)
			must(t, err, "ListRuns")
			if ids := runIDs(got); !slices.Equal(ids, tc.want) {
				t.Fatalf("ListRuns(%+v) = %v, want %v", tc.f, ids, tc.want)
			}
			for _, r := range got {
				checkRun(t, "listed "+r.ID, stored[r.ID], r)
			}
		})
	}
}

func testListRunsDefaultLimit(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	for i := range 55 {
		create(t, s, newRun(fmt.Sprintf("run-%02d", i), engine.StatusCompleted, t0.Add(time.Duration(i)*time.Second)))
	}
	got, err := s.ListRuns(ctx, engine.RunFilter{})
	must(t, err, "ListRuns")
	if len(got) != 50 {
		t.Fatalf("ListRuns with Limit 0 returned %d runs, want the default 50", len(got))
	}
	if got[0].ID != "run-54" || got[49].ID != "run-05" {
		t.Errorf("ListRuns: first %s last %s, want run-54 .. run-05", got[0].ID, got[49].ID)
	}
}

// testTerminalFinal: a run's terminal status is written once; no later
// checkpoint (by its owner, unfenced, or by a process that acquired it
// afterwards) changes it or its error.
func testTerminalFinal(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	for _, st := range []engine.RunStatus{engine.StatusCompleted, engine.StatusFailed, engine.StatusCancelled} {
		r := newRun("run-final-"+string(st), engine.StatusRunning, t0)
		r.Owner, r.LeaseUntil = "A", t0.Add(time.Hour)
		create(t, s, r)
		end := *r
		end.Status, end.Error = st, "the end"
		must(t, s.Checkpoint(ctx, &end, nil), "terminal checkpoint")
		for _, owner := range []string{"A", ""} {
			again := end
			again.Owner, again.Status, again.Error = owner, engine.StatusFailed, "cannot persist run state"
			if st == engine.StatusFailed {
				again.Status = engine.StatusCompleted
			}
			mustIs(t, s.Checkpoint(ctx, &again, nil), engine.ErrTerminal, "a second terminal checkpoint by owner "+owner)
		}
		must(t, s.AcquireRun(ctx, r.ID, "B", "", t0, t0.Add(time.Hour)), "acquire after the end")
		later := end
		later.Owner, later.Status = "B", engine.StatusRunning
		mustIs(t, s.Checkpoint(ctx, &later, nil), engine.ErrTerminal, "a running checkpoint after the end")
		got, err := s.GetRun(ctx, r.ID)
		must(t, err, "GetRun")
		if got.Status != st || got.Error != "the end" {
			t.Errorf("%s run became %s (%q)", st, got.Status, got.Error)
		}
	}
}

// testCreateWithEvents: a run's first events are stored with it, and the
// log continues after them.
func testCreateWithEvents(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r := newRun("run-first-events", engine.StatusRunning, t0)
	r.Owner, r.LeaseUntil = "A", t0.Add(time.Hour)
	first := []*engine.Event{
		{Seq: 1, NodeID: engine.SystemNodeID, Type: engine.EvRunStatus, Content: "running", Timestamp: t0, Owner: "A"},
		{Seq: 2, NodeID: "s", Type: engine.EvStepStart, Content: "Start node", Timestamp: t0,
			Data: json.RawMessage(`{"type":"start","visit":1}`), Owner: "A"},
	}
	must(t, s.CreateRun(ctx, r, []*engine.NodeState{{NodeID: "s", Status: engine.NodeCompleted}}, first), "CreateRun")
	s.Emit(&engine.Event{RunID: r.ID, Seq: 3, NodeID: "s", Type: engine.EvStepEnd, Content: "completed", Timestamp: t0, Owner: "A"})
	must(t, s.Checkpoint(ctx, r, nil), "barrier")
	evs, err := s.Events(ctx, r.ID, 0, 0)
	must(t, err, "Events")
	if len(evs) != 3 || evs[0].Seq != 1 || evs[1].Seq != 2 || evs[2].Seq != 3 {
		t.Fatalf("events after create: %+v", evs)
	}
	if evs[0].Type != engine.EvRunStatus || evs[0].RunID != r.ID || string(evs[1].Data) != `{"type":"start","visit":1}` {
		t.Errorf("first events %+v", evs[:2])
	}
}

func testNotFound(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	const id = "no-such-run"
	_, err := s.GetRun(ctx, id)
	mustIs(t, err, engine.ErrNotFound, "GetRun")
	_, _, _, err = s.LoadRun(ctx, id)
	mustIs(t, err, engine.ErrNotFound, "LoadRun")
	_, err = s.Events(ctx, id, 0, 0)
	mustIs(t, err, engine.ErrNotFound, "Events")
	mustIs(t, s.Checkpoint(ctx, newRun(id, engine.StatusRunning, t0), nil), engine.ErrNotFound, "Checkpoint")
	mustIs(t, s.AcquireRun(ctx, id, "A", "", t0, t0.Add(time.Minute)), engine.ErrNotFound, "AcquireRun")
	mustIs(t, s.ClaimWaitingNode(ctx, id, "n", "A", nil), engine.ErrNotFound, "ClaimWaitingNode")
	mustIs(t, s.ReleaseRun(ctx, id, "A"), engine.ErrNotFound, "ReleaseRun")
	runs, err := s.ListRuns(ctx, engine.RunFilter{})
	must(t, err, "ListRuns on an empty store")
	if len(runs) != 0 {
		t.Errorf("ListRuns on an empty store: %d runs", len(runs))
	}
	orphans, err := s.ListOrphaned(ctx, t0)
	must(t, err, "ListOrphaned on an empty store")
	if len(orphans) != 0 {
		t.Errorf("ListOrphaned on an empty store: %v", orphans)
	}
}

func testClose(t *testing.T, open Open) {
	ctx := ctxT(t)
	s := open(t, Options{})
	r := newRun("r", engine.StatusRunning, t0)
	must(t, s.CreateRun(ctx, r, nil, nil), "CreateRun")
	s.Emit(event(r.ID, 1)) // queued before Close: written by Close
	must(t, s.Close(), "Close")
	must(t, s.Close(), "Close again")
	before := s.Stats().EventsDropped
	s.Emit(event(r.ID, 2)) // must not panic
	if st := s.Stats(); st.EventsDropped != before+1 {
		t.Errorf("EventsDropped = %d after an Emit on a closed store, want %d", st.EventsDropped, before+1)
	}
	mustIs(t, s.Checkpoint(ctx, r, nil), store.ErrClosed, "Checkpoint after Close")
	mustIs(t, s.AcquireRun(ctx, r.ID, "p", "", t0, t0), store.ErrClosed, "AcquireRun after Close")
	_, err := s.CreateWorkflow(ctx, store.Workflow{Name: "w", Kind: engine.KindGraph, Definition: json.RawMessage(`{}`)})
	mustIs(t, err, store.ErrClosed, "CreateWorkflow after Close")
	if _, err := s.RevokedSessions(context.Background()); err == nil {
		t.Error("RevokedSessions on a closed store: no error")
	}
}

// testYAMLWorkflowID: a YAML run's workflow id names a file, not a saved
// workflow; it is stored and listed like a drawn run's.
func testYAMLWorkflowID(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	for i := range 3 {
		r := newRun(fmt.Sprintf("run-yaml-%d", i), engine.StatusCompleted, t0.Add(time.Duration(i)*time.Second))
		r.Kind, r.WorkflowID = engine.KindYAML, "yaml.a.yaml"
		create(t, s, r)
	}
	other := newRun("run-yaml-other", engine.StatusCompleted, t0)
	other.Kind, other.WorkflowID = engine.KindYAML, "yaml.b.yaml"
	create(t, s, other)
	got, err := s.GetRun(ctx, "run-yaml-1")
	must(t, err, "GetRun")
	if got.WorkflowID != "yaml.a.yaml" {
		t.Fatalf("workflow id %q", got.WorkflowID)
	}
	list, err := s.ListRuns(ctx, engine.RunFilter{WorkflowID: "yaml.a.yaml"})
	must(t, err, "ListRuns")
	if ids := runIDs(list); !slices.Equal(ids, []string{"run-yaml-2", "run-yaml-1", "run-yaml-0"}) {
		t.Fatalf("runs of yaml.a.yaml: %v", ids)
	}
	list, err = s.ListRuns(ctx, engine.RunFilter{WorkflowID: "yaml.a.yaml", Before: t0.Add(2 * time.Second), Limit: 1})
	must(t, err, "ListRuns page")
	if ids := runIDs(list); !slices.Equal(ids, []string{"run-yaml-1"}) {
		t.Fatalf("second page of yaml.a.yaml: %v", ids)
	}
}

// testNameRuns: YAML runs stored without a workflow id get the one the
// namer gives them; a run it cannot name keeps none; each run is looked
// at once; drawn runs are left alone.
func testNameRuns(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	st := s.(store.Store)
	def := func(file string) json.RawMessage { return json.RawMessage(`{"file":"` + file + `","source":"x"}`) }
	for i := range 5 {
		r := newRun(fmt.Sprintf("run-old-%d", i), engine.StatusCompleted, t0.Add(time.Duration(i)*time.Second))
		r.Kind, r.Definition = engine.KindYAML, def("/wf/a.yaml")
		if i == 3 {
			r.Definition = def("/elsewhere/a.yaml")
		}
		create(t, s, r)
	}
	drawn := newRun("run-drawn", engine.StatusCompleted, t0)
	create(t, s, drawn)
	named := newRun("run-named", engine.StatusCompleted, t0)
	named.Kind, named.WorkflowID, named.Definition = engine.KindYAML, "yaml.kept.yaml", def("/wf/a.yaml")
	create(t, s, named)

	var asked []string
	namer := func(r *engine.Run) string {
		asked = append(asked, r.ID)
		if bytes.Contains(r.Definition, []byte(`"/wf/a.yaml"`)) {
			return "yaml.a.yaml"
		}
		return ""
	}
	n, err := st.NameRuns(ctx, namer, 2)
	must(t, err, "NameRuns with a limit")
	if n != 2 || !slices.Equal(asked, []string{"run-old-0", "run-old-1"}) {
		t.Fatalf("NameRuns(limit 2) looked at %d: %v, want the two oldest", n, asked)
	}
	n, err = st.NameRuns(ctx, namer, 0)
	must(t, err, "NameRuns")
	if n != 3 || len(asked) != 5 {
		t.Fatalf("NameRuns looked at %d more (%v), want the 3 left", n, asked)
	}
	n, err = st.NameRuns(ctx, namer, 0)
	must(t, err, "NameRuns again")
	if n != 0 || len(asked) != 5 {
		t.Fatalf("a second NameRuns looked at %d runs (%v): each run is looked at once", n, asked)
	}
	list, err := s.ListRuns(ctx, engine.RunFilter{WorkflowID: "yaml.a.yaml"})
	must(t, err, "ListRuns")
	if ids := runIDs(list); !slices.Equal(ids, []string{"run-old-4", "run-old-2", "run-old-1", "run-old-0"}) {
		t.Fatalf("named runs of yaml.a.yaml: %v", ids)
	}
	for id, want := range map[string]string{"run-old-3": "", "run-drawn": "", "run-named": "yaml.kept.yaml"} {
		r, err := s.GetRun(ctx, id)
		must(t, err, "GetRun "+id)
		if r.WorkflowID != want {
			t.Errorf("%s: workflow id %q, want %q", id, r.WorkflowID, want)
		}
	}
}
