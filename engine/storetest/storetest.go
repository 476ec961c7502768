// Package storetest is the conformance suite every engine.Store must pass.
// It uses only the engine.Store interface, so it runs unchanged against the
// SQLite store and an in-memory one:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) engine.Store { return newStore(t) })
//	}
//
// Runs created by the suite reference the workflow ids WorkflowA and
// WorkflowB; a store that enforces referential integrity must have them
// exist in every store open returns. All times the suite stores are UTC at
// microsecond precision and compared with time.Equal.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
)

// Workflow ids the suite's runs reference.
const (
	WorkflowA = "wf-storetest-a"
	WorkflowB = "wf-storetest-b"
)

// t0 is the suite's reference time: UTC, microsecond precision.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 123456000, time.UTC)

// Run runs the conformance subtests. open must return a new, empty store
// for each subtest and arrange its cleanup (t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) engine.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s engine.Store)
	}{
		{"CreateGetLoadRoundTrip", testRoundTrip},
		{"StoredCopiesAreIsolated", testIsolation},
		{"CreateRunDuplicate", testCreateDuplicate},
		{"CheckpointUpsertsNodeStates", testCheckpoint},
		{"EventsInOrder", testEvents},
		{"ConcurrentRuns", testConcurrentRuns},
		{"ListRunsFilters", testListRuns},
		{"ListRunsDefaultLimit", testListRunsDefaultLimit},
		{"AcquireRun", testAcquire},
		{"ClaimWaitingNodeRace", testClaimRace},
		{"ClaimWaitingNodeRules", testClaimRules},
		{"ReleaseRun", testRelease},
		{"CreateRunHeldByOwner", testCreateHeld},
		{"TerminalCheckpointReleases", testTerminalReleases},
		{"TerminalStatusIsWrittenOnce", testTerminalFinal},
		{"CancelRequests", testCancelRequests},
		{"CreateRunWithEvents", testCreateWithEvents},
		{"RenewLeases", testRenew},
		{"ExpireLeases", testExpire},
		{"ListOrphaned", testOrphaned},
		{"WritesAreFencedByOwner", testFencing},
		{"ClaimStoresDecision", testClaimDecision},
		{"UnknownIDsAreNotFound", testNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

// --- fixtures ---

func fullRun(id string) *engine.Run {
	fin := t0.Add(90 * time.Second)
	return &engine.Run{
		ID:              id,
		WorkflowID:      WorkflowA,
		Kind:            engine.KindGraph,
		Definition:      json.RawMessage(`{"nodes":[{"id":"a","type":"agent"}],"edges":[]}`),
		Status:          engine.StatusPaused,
		Input:           "hello\nworld ✓",
		WaitingForInput: true,
		CurrentNodeID:   "a",
		PendingApprovals: []engine.PendingApproval{
			{NodeID: "a", Prompt: "Ship it?", Input: "draft 1", Since: t0.Add(time.Minute)},
			{NodeID: "b", Prompt: "Really?", Input: "", Since: t0.Add(61 * time.Second)},
		},
		Error:      "something went wrong",
		WorkDir:    "/tmp/work dir",
		Usage:      engine.Usage{PromptTokens: 1200, CompletionTokens: 345, TotalTokens: 1545, CostUSD: ptr(0.00123)},
		CreatedAt:  t0,
		UpdatedAt:  t0.Add(2 * time.Minute),
		FinishedAt: &fin,
	}
}

func ptr[T any](v T) *T { return &v }

func fullNode(id string) *engine.NodeState {
	start, fin := t0.Add(time.Second), t0.Add(2*time.Second+7*time.Microsecond)
	return &engine.NodeState{
		NodeID:     id,
		Status:     engine.NodeWaiting,
		Input:      "the input",
		Output:     "the output\nline 2",
		Handle:     "true",
		Error:      "retryable",
		Visits:     3,
		Attempts:   2,
		Fired:      []string{"e1", "e2"},
		Wait:       json.RawMessage(`{"question":"why?","n":1}`),
		StartedAt:  &start,
		FinishedAt: &fin,
	}
}

func newRun(id string, status engine.RunStatus, created time.Time) *engine.Run {
	return &engine.Run{
		ID:         id,
		Kind:       engine.KindGraph,
		Definition: json.RawMessage(`{"nodes":[]}`),
		Status:     status,
		CreatedAt:  created,
		UpdatedAt:  created,
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func mustIs(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

func create(t *testing.T, s engine.Store, r *engine.Run, nodes ...*engine.NodeState) {
	t.Helper()
	must(t, s.CreateRun(ctxT(t), r, nodes, nil), "CreateRun "+r.ID)
}

// --- comparison (nil and empty slices are equal; times by time.Equal) ---

func timeEq(a, b time.Time) bool { return a.Equal(b) }

func timePtrEq(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

func fmtTimePtr(p *time.Time) string {
	if p == nil {
		return "nil"
	}
	return p.Format(time.RFC3339Nano)
}

func diffRun(want, got *engine.Run) []string {
	var d []string
	add := func(field string, g, w any) { d = append(d, fmt.Sprintf("%s: got %v, want %v", field, g, w)) }
	if got == nil {
		return []string{"run is nil"}
	}
	if got.ID != want.ID {
		add("ID", got.ID, want.ID)
	}
	if got.WorkflowID != want.WorkflowID {
		add("WorkflowID", got.WorkflowID, want.WorkflowID)
	}
	if got.Kind != want.Kind {
		add("Kind", got.Kind, want.Kind)
	}
	if !bytes.Equal(got.Definition, want.Definition) {
		add("Definition", string(got.Definition), string(want.Definition))
	}
	if got.Status != want.Status {
		add("Status", got.Status, want.Status)
	}
	if got.Input != want.Input {
		add("Input", got.Input, want.Input)
	}
	if got.WaitingForInput != want.WaitingForInput {
		add("WaitingForInput", got.WaitingForInput, want.WaitingForInput)
	}
	if got.CurrentNodeID != want.CurrentNodeID {
		add("CurrentNodeID", got.CurrentNodeID, want.CurrentNodeID)
	}
	if len(got.PendingApprovals) != len(want.PendingApprovals) {
		add("len(PendingApprovals)", len(got.PendingApprovals), len(want.PendingApprovals))
	} else {
		for i, w := range want.PendingApprovals {
			g := got.PendingApprovals[i]
			if g.NodeID != w.NodeID || g.Prompt != w.Prompt || g.Input != w.Input || !timeEq(g.Since, w.Since) {
				add(fmt.Sprintf("PendingApprovals[%d]", i), g, w)
			}
		}
	}
	if got.Error != want.Error {
		add("Error", got.Error, want.Error)
	}
	if got.WorkDir != want.WorkDir {
		add("WorkDir", got.WorkDir, want.WorkDir)
	}
	gu, wu := got.Usage, want.Usage
	if gu.PromptTokens != wu.PromptTokens || gu.CompletionTokens != wu.CompletionTokens || gu.TotalTokens != wu.TotalTokens ||
		(gu.CostUSD == nil) != (wu.CostUSD == nil) || (gu.CostUSD != nil && *gu.CostUSD != *wu.CostUSD) {
		add("Usage", fmtUsage(gu), fmtUsage(wu))
	}
	if !timeEq(got.CreatedAt, want.CreatedAt) {
		add("CreatedAt", got.CreatedAt, want.CreatedAt)
	}
	if !timeEq(got.UpdatedAt, want.UpdatedAt) {
		add("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	}
	if !timePtrEq(got.FinishedAt, want.FinishedAt) {
		add("FinishedAt", fmtTimePtr(got.FinishedAt), fmtTimePtr(want.FinishedAt))
	}
	return d
}

func fmtUsage(u engine.Usage) string {
	c := "nil"
	if u.CostUSD != nil {
		c = fmt.Sprint(*u.CostUSD)
	}
	return fmt.Sprintf("{%d %d %d cost %s}", u.PromptTokens, u.CompletionTokens, u.TotalTokens, c)
}

func diffNode(want, got *engine.NodeState) []string {
	var d []string
	add := func(field string, g, w any) {
		d = append(d, fmt.Sprintf("node %s: %s: got %v, want %v", want.NodeID, field, g, w))
	}
	if got.NodeID != want.NodeID {
		add("NodeID", got.NodeID, want.NodeID)
	}
	if got.Status != want.Status {
		add("Status", got.Status, want.Status)
	}
	if got.Input != want.Input {
		add("Input", got.Input, want.Input)
	}
	if got.Output != want.Output {
		add("Output", got.Output, want.Output)
	}
	if got.Handle != want.Handle {
		add("Handle", got.Handle, want.Handle)
	}
	if got.Error != want.Error {
		add("Error", got.Error, want.Error)
	}
	if got.Visits != want.Visits {
		add("Visits", got.Visits, want.Visits)
	}
	if got.Attempts != want.Attempts {
		add("Attempts", got.Attempts, want.Attempts)
	}
	if !(len(got.Fired) == 0 && len(want.Fired) == 0) && !slices.Equal(got.Fired, want.Fired) {
		add("Fired", got.Fired, want.Fired)
	}
	if !bytes.Equal(got.Wait, want.Wait) {
		add("Wait", string(got.Wait), string(want.Wait))
	}
	if !timePtrEq(got.StartedAt, want.StartedAt) {
		add("StartedAt", fmtTimePtr(got.StartedAt), fmtTimePtr(want.StartedAt))
	}
	if !timePtrEq(got.FinishedAt, want.FinishedAt) {
		add("FinishedAt", fmtTimePtr(got.FinishedAt), fmtTimePtr(want.FinishedAt))
	}
	return d
}

func checkRun(t *testing.T, what string, want, got *engine.Run) {
	t.Helper()
	for _, d := range diffRun(want, got) {
		t.Errorf("%s: %s", what, d)
	}
}

// checkNodes compares node states by node id (order is not part of the
// contract).
func checkNodes(t *testing.T, what string, want, got []*engine.NodeState) {
	t.Helper()
	byID := map[string]*engine.NodeState{}
	for _, n := range got {
		if _, dup := byID[n.NodeID]; dup {
			t.Errorf("%s: node %s returned twice", what, n.NodeID)
		}
		byID[n.NodeID] = n
	}
	if len(got) != len(want) {
		t.Errorf("%s: got %d node states, want %d", what, len(got), len(want))
	}
	for _, w := range want {
		g, ok := byID[w.NodeID]
		if !ok {
			t.Errorf("%s: node %s missing", what, w.NodeID)
			continue
		}
		for _, d := range diffNode(w, g) {
			t.Errorf("%s: %s", what, d)
		}
	}
}

func runIDs(runs []*engine.Run) []string {
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	return ids
}

// --- tests ---

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

func event(runID string, seq int64) *engine.Event {
	ev := &engine.Event{
		Seq:       seq,
		RunID:     runID,
		NodeID:    fmt.Sprintf("node-%d", seq%3),
		Type:      engine.EvLLMDelta,
		Content:   fmt.Sprintf("chunk %d of %s", seq, runID),
		Timestamp: t0.Add(time.Duration(seq) * 1001 * time.Microsecond),
	}
	if seq%2 == 0 {
		ev.Data = json.RawMessage(fmt.Sprintf(`{"seq":%d,"tokens":[1,2,3]}`, seq))
	}
	return ev
}

func checkEvents(t *testing.T, what string, got []engine.Event, runID string, from, to int64) {
	t.Helper()
	if want := int(to - from + 1); len(got) != want {
		t.Fatalf("%s: got %d events, want %d (seq %d..%d)", what, len(got), want, from, to)
	}
	for i, g := range got {
		w := event(runID, from+int64(i))
		if g.Seq != w.Seq || g.RunID != w.RunID || g.NodeID != w.NodeID || g.Type != w.Type ||
			g.Content != w.Content || !g.Timestamp.Equal(w.Timestamp) || !bytes.Equal(g.Data, w.Data) {
			t.Fatalf("%s: event %d = %+v, want %+v", what, i, g, *w)
		}
	}
}

func testEvents(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r1 := newRun("run-ev-1", engine.StatusRunning, t0)
	r2 := newRun("run-ev-2", engine.StatusRunning, t0)
	r3 := newRun("run-ev-3", engine.StatusRunning, t0)
	create(t, s, r1)
	create(t, s, r2)
	create(t, s, r3)

	// One struct reused for every Emit, as a producer with a buffer might.
	var buf engine.Event
	for i := int64(1); i <= 100; i++ {
		buf = *event(r1.ID, i)
		s.Emit(&buf)
		if i <= 50 {
			buf = *event(r2.ID, i)
			s.Emit(&buf)
		}
	}
	// Data mutated after Emit must not reach the store.
	ev := event(r1.ID, 101)
	data := []byte(`{"seq":101,"tokens":[1,2,3]}`)
	ev.Data = data
	s.Emit(ev)
	copy(data, `{"XXX"`)

	// A checkpoint is ordered after the run's events: once it returns they
	// are all stored.
	must(t, s.Checkpoint(ctx, r1, nil), "Checkpoint r1")
	must(t, s.Checkpoint(ctx, r2, nil), "Checkpoint r2")

	all, err := s.Events(ctx, r1.ID, 0, 0)
	must(t, err, "Events r1")
	if len(all) != 101 {
		t.Fatalf("Events r1: got %d, want 101", len(all))
	}
	checkEvents(t, "Events r1", all[:100], r1.ID, 1, 100)
	if got := string(all[100].Data); got != `{"seq":101,"tokens":[1,2,3]}` {
		t.Errorf("event 101 data = %s: changed by the caller after Emit", got)
	}

	page, err := s.Events(ctx, r1.ID, 40, 10)
	must(t, err, "Events after 40 limit 10")
	checkEvents(t, "Events after 40 limit 10", page, r1.ID, 41, 50)

	page, err = s.Events(ctx, r1.ID, 95, 3)
	must(t, err, "Events after 95 limit 3")
	checkEvents(t, "Events after 95 limit 3", page, r1.ID, 96, 98)

	page, err = s.Events(ctx, r1.ID, 101, 0)
	must(t, err, "Events after the last")
	if len(page) != 0 {
		t.Errorf("Events after the last seq: got %d, want 0", len(page))
	}

	ev2, err := s.Events(ctx, r2.ID, 0, -1)
	must(t, err, "Events r2")
	checkEvents(t, "Events r2", ev2, r2.ID, 1, 50)

	none, err := s.Events(ctx, r3.ID, 0, 0)
	must(t, err, "Events of a run without events")
	if len(none) != 0 {
		t.Errorf("Events of a run without events: got %d", len(none))
	}

	_, _, maxSeq, err := s.LoadRun(ctx, r1.ID)
	must(t, err, "LoadRun")
	if maxSeq != 101 {
		t.Errorf("LoadRun maxSeq = %d, want 101", maxSeq)
	}
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

func testAcquire(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r := newRun("run-acq", engine.StatusRunning, t0)
	create(t, s, r)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }

	steps := []struct {
		name      string
		owner     string
		expect    engine.RunStatus
		now, till time.Time
		want      error
	}{
		{"free run", "A", "", sec(0), sec(30), nil},
		{"same owner renews", "A", "", sec(10), sec(40), nil},
		{"other owner, live lease", "B", "", sec(20), sec(50), engine.ErrConflict},
		{"other owner, lease just before expiry", "B", "", sec(39), sec(69), engine.ErrConflict},
		{"other owner, expired lease", "B", "", sec(41), sec(71), nil},
		{"previous owner lost it", "A", "", sec(42), sec(72), engine.ErrConflict},
		{"holder, expected status differs", "B", engine.StatusPaused, sec(43), sec(73), engine.ErrConflict},
		{"holder, expected status matches", "B", engine.StatusRunning, sec(44), sec(74), nil},
		{"expired, expected status differs", "C", engine.StatusPaused, sec(100), sec(130), engine.ErrConflict},
		{"expired, expected status matches", "C", engine.StatusRunning, sec(100), sec(130), nil},
	}
	for _, st := range steps {
		err := s.AcquireRun(ctx, r.ID, st.owner, st.expect, st.now, st.till)
		if st.want == nil {
			must(t, err, st.name)
		} else {
			mustIs(t, err, st.want, st.name)
		}
	}
	// Acquiring never changes the run's state.
	got, err := s.GetRun(ctx, r.ID)
	must(t, err, "GetRun")
	checkRun(t, "after acquiring", r, got)

	mustIs(t, s.AcquireRun(ctx, "no-such-run", "A", "", sec(0), sec(30)), engine.ErrNotFound, "unknown run")
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

func testRelease(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r := newRun("run-rel", engine.StatusRunning, t0)
	create(t, s, r)
	must(t, s.AcquireRun(ctx, r.ID, "A", "", t0, t0.Add(time.Hour)), "AcquireRun A")
	mustIs(t, s.ReleaseRun(ctx, r.ID, "B"), engine.ErrConflict, "release by a non-holder")
	mustIs(t, s.AcquireRun(ctx, r.ID, "B", "", t0.Add(time.Minute), t0.Add(time.Hour)), engine.ErrConflict,
		"the refused release kept A's lease")
	must(t, s.ReleaseRun(ctx, r.ID, "A"), "release by the holder")
	// A's lease would still be live: only the release lets B in now.
	must(t, s.AcquireRun(ctx, r.ID, "B", "", t0.Add(time.Minute), t0.Add(time.Hour)), "AcquireRun B after release")
	mustIs(t, s.ReleaseRun(ctx, "no-such-run", "A"), engine.ErrNotFound, "release of an unknown run")
	got, err := s.GetRun(ctx, r.ID)
	must(t, err, "GetRun")
	checkRun(t, "leases do not change the run", r, got)
}

// testCreateHeld: a run created with an owner is held by it, exactly as if
// acquired, and its header does not carry the lease.
func testCreateHeld(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r := newRun("run-held", engine.StatusPending, t0)
	r.Owner, r.LeaseUntil = "A", t0.Add(time.Minute)
	create(t, s, r)
	mustIs(t, s.AcquireRun(ctx, r.ID, "B", "", t0.Add(30*time.Second), t0.Add(time.Hour)), engine.ErrConflict,
		"acquire by another owner while the creator's lease is live")
	orphans, err := s.ListOrphaned(ctx, t0.Add(30*time.Second))
	must(t, err, "ListOrphaned")
	if slices.Contains(orphans, r.ID) {
		t.Errorf("ListOrphaned = %v: a live held run is not orphaned", orphans)
	}
	hdr := *r
	hdr.Status = engine.StatusRunning
	must(t, s.Checkpoint(ctx, &hdr, nil), "checkpoint by the creator")
	orphans, err = s.ListOrphaned(ctx, t0.Add(2*time.Minute))
	must(t, err, "ListOrphaned after expiry")
	if !slices.Contains(orphans, r.ID) {
		t.Errorf("ListOrphaned = %v: the expired lease of the creator makes the run orphaned", orphans)
	}
	must(t, s.AcquireRun(ctx, r.ID, "B", "", t0.Add(2*time.Minute), t0.Add(time.Hour)), "acquire after the lease expired")
	got, err := s.GetRun(ctx, r.ID)
	must(t, err, "GetRun")
	want := *r
	want.Owner, want.LeaseUntil = "", time.Time{}
	want.Status = engine.StatusRunning
	checkRun(t, "held run", &want, got)
}

// testTerminalReleases: the checkpoint that finishes a run releases it (no
// separate ReleaseRun), while other checkpoints keep the lease.
func testTerminalReleases(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	for _, st := range []engine.RunStatus{engine.StatusCompleted, engine.StatusFailed, engine.StatusCancelled} {
		r := newRun("run-term-"+string(st), engine.StatusRunning, t0)
		r.Owner, r.LeaseUntil = "A", t0.Add(time.Hour)
		create(t, s, r)
		hdr := *r
		hdr.Status = engine.StatusPaused
		must(t, s.Checkpoint(ctx, &hdr, nil), "pausing checkpoint")
		mustIs(t, s.AcquireRun(ctx, r.ID, "B", "", t0, t0.Add(time.Hour)), engine.ErrConflict,
			"a paused checkpoint keeps the lease")
		hdr.Status = st
		must(t, s.Checkpoint(ctx, &hdr, nil), "terminal checkpoint")
		must(t, s.AcquireRun(ctx, r.ID, "B", "", t0, t0.Add(time.Hour)), "acquire after a "+string(st)+" checkpoint")
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

// testCancelRequests: a cancel request waits for whoever holds the run
// (now or after a takeover) and is handed out once.
func testCancelRequests(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	held, free := newRun("run-creq-held", engine.StatusRunning, t0), newRun("run-creq-free", engine.StatusRunning, t0)
	held.Owner, held.LeaseUntil = "A", t0.Add(time.Hour)
	create(t, s, held)
	create(t, s, free)
	mustIs(t, s.RequestCancel(ctx, "no-such-run"), engine.ErrNotFound, "RequestCancel of an unknown run")
	must(t, s.RequestCancel(ctx, held.ID), "RequestCancel held")
	must(t, s.RequestCancel(ctx, free.ID), "RequestCancel free")
	take := func(owner string, want ...string) {
		t.Helper()
		got, err := s.TakeCancelRequests(ctx, owner)
		must(t, err, "TakeCancelRequests "+owner)
		if !slices.Equal(got, want) {
			t.Errorf("TakeCancelRequests(%q) = %v, want %v", owner, got, want)
		}
	}
	take("B")
	take("")
	take("A", held.ID)
	take("A") // handed out once
	must(t, s.AcquireRun(ctx, free.ID, "B", "", t0, t0.Add(time.Hour)), "AcquireRun free by B")
	take("B", free.ID) // the request waited for a holder
	take("B")
}

func testRenew(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	for i, owner := range []string{"A", "A", "B"} {
		r := newRun(fmt.Sprintf("run-renew-%d", i), engine.StatusRunning, t0)
		create(t, s, r)
		must(t, s.AcquireRun(ctx, r.ID, owner, "", t0, t0.Add(10*time.Second)), "AcquireRun "+r.ID)
	}
	must(t, s.RenewLeases(ctx, "A", t0.Add(time.Minute)), "RenewLeases A")
	must(t, s.RenewLeases(ctx, "nobody", t0.Add(time.Hour)), "RenewLeases of an owner without runs")
	later := t0.Add(30 * time.Second) // after the original leases, before A's renewed ones
	mustIs(t, s.AcquireRun(ctx, "run-renew-0", "C", "", later, later.Add(time.Minute)), engine.ErrConflict, "renewed lease run-renew-0")
	mustIs(t, s.AcquireRun(ctx, "run-renew-1", "C", "", later, later.Add(time.Minute)), engine.ErrConflict, "renewed lease run-renew-1")
	must(t, s.AcquireRun(ctx, "run-renew-2", "C", "", later, later.Add(time.Minute)), "B's lease was not renewed")
	orphans, err := s.ListOrphaned(ctx, later)
	must(t, err, "ListOrphaned")
	if len(orphans) != 0 {
		t.Errorf("ListOrphaned = %v, want none (all leases live)", orphans)
	}
}

// testExpire: a dead owner's leases end at once; other owners keep theirs,
// and unowned runs are untouched.
func testExpire(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	for i, owner := range []string{"A", "A", "B"} {
		r := newRun(fmt.Sprintf("run-expire-%d", i), engine.StatusRunning, t0)
		create(t, s, r)
		must(t, s.AcquireRun(ctx, r.ID, owner, "", t0, t0.Add(time.Hour)), "AcquireRun "+r.ID)
	}
	free := newRun("run-expire-free", engine.StatusPaused, t0)
	create(t, s, free)
	must(t, s.ExpireLeases(ctx, "A"), "ExpireLeases A")
	must(t, s.ExpireLeases(ctx, ""), "ExpireLeases of no owner")
	must(t, s.ExpireLeases(ctx, "nobody"), "ExpireLeases of an owner without runs")
	now := t0.Add(time.Second) // long before the leases would run out
	orphans, err := s.ListOrphaned(ctx, now)
	must(t, err, "ListOrphaned")
	if want := []string{"run-expire-0", "run-expire-1"}; !slices.Equal(orphans, want) {
		t.Errorf("ListOrphaned = %v, want %v (A's runs only)", orphans, want)
	}
	mustIs(t, s.AcquireRun(ctx, "run-expire-2", "C", "", now, now.Add(time.Minute)), engine.ErrConflict, "B's live lease")
	must(t, s.AcquireRun(ctx, "run-expire-0", "C", "", now, now.Add(time.Minute)), "A's expired lease")
	// The dead owner's writes stay fenced off.
	r0, _, _, err := s.LoadRun(ctx, "run-expire-0")
	must(t, err, "LoadRun")
	r0.Owner = "A"
	mustIs(t, s.Checkpoint(ctx, r0, nil), engine.ErrConflict, "checkpoint by the dead owner after a takeover")
	// A renewal by the owner would revive them: it is dead, so none comes.
	must(t, s.RenewLeases(ctx, "C", now.Add(time.Hour)), "RenewLeases C")
	mustIs(t, s.AcquireRun(ctx, "run-expire-0", "D", "", now, now.Add(time.Minute)), engine.ErrConflict, "C's lease after the takeover")
}

func testOrphaned(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	now := t0.Add(time.Hour)
	setup := []struct {
		id     string
		status engine.RunStatus
		owner  string
		lease  time.Time
	}{
		{"o-running-unowned", engine.StatusRunning, "", time.Time{}},
		{"o-running-expired", engine.StatusRunning, "dead", now.Add(-time.Second)},
		{"o-running-live", engine.StatusRunning, "alive", now.Add(time.Minute)},
		{"o-paused-unowned", engine.StatusPaused, "", time.Time{}},
		{"o-paused-expired", engine.StatusPaused, "dead", now.Add(-time.Second)},
		{"o-completed", engine.StatusCompleted, "", time.Time{}},
		{"o-interrupted", engine.StatusInterrupted, "", time.Time{}},
		{"o-running-released", engine.StatusRunning, "gone", now.Add(time.Minute)},
		{"o-pending-unowned", engine.StatusPending, "", time.Time{}},
		{"o-pending-live", engine.StatusPending, "alive", now.Add(time.Minute)},
	}
	for i, st := range setup {
		create(t, s, newRun(st.id, st.status, t0.Add(time.Duration(i)*time.Second)))
		if st.owner != "" {
			must(t, s.AcquireRun(ctx, st.id, st.owner, "", t0, st.lease), "AcquireRun "+st.id)
		}
	}
	must(t, s.ReleaseRun(ctx, "o-running-released", "gone"), "ReleaseRun")
	got, err := s.ListOrphaned(ctx, now)
	must(t, err, "ListOrphaned")
	sort.Strings(got)
	want := []string{"o-pending-unowned", "o-running-expired", "o-running-released", "o-running-unowned"}
	if !slices.Equal(got, want) {
		t.Fatalf("ListOrphaned = %v, want %v", got, want)
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

// testFencing: a header checkpoint or an event from an owner that no longer
// holds the run writes nothing.
func testFencing(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r := newRun("run-fence", engine.StatusRunning, t0)
	create(t, s, r)
	must(t, s.AcquireRun(ctx, r.ID, "A", "", t0, t0.Add(time.Second)), "AcquireRun A")
	s.Emit(&engine.Event{RunID: r.ID, Seq: 1, NodeID: "n", Type: "step_start", Timestamp: t0, Owner: "A"})
	// A stalls; its lease expires and B takes over.
	must(t, s.AcquireRun(ctx, r.ID, "B", "", t0.Add(time.Minute), t0.Add(time.Hour)), "AcquireRun B")
	s.Emit(&engine.Event{RunID: r.ID, Seq: 2, NodeID: "n", Type: "from-A", Timestamp: t0, Owner: "A"})
	s.Emit(&engine.Event{RunID: r.ID, Seq: 2, NodeID: "n", Type: "from-B", Timestamp: t0, Owner: "B"})
	hdrA := *r
	hdrA.Owner = "A"
	hdrA.Status = engine.StatusFailed
	mustIs(t, s.Checkpoint(ctx, &hdrA, []*engine.NodeState{{NodeID: "n", Status: engine.NodeFailed}}), engine.ErrConflict,
		"checkpoint by the owner that lost the run")
	hdrB := *r
	hdrB.Owner = "B"
	must(t, s.Checkpoint(ctx, &hdrB, []*engine.NodeState{{NodeID: "n", Status: engine.NodeCompleted}}), "checkpoint by the holder")
	got, nodes, last, err := s.LoadRun(ctx, r.ID)
	must(t, err, "LoadRun")
	if got.Status != engine.StatusRunning || len(nodes) != 1 || nodes[0].Status != engine.NodeCompleted || last != 2 {
		t.Fatalf("after fencing: status %s nodes %+v last %d", got.Status, nodes, last)
	}
	evs, err := s.Events(ctx, r.ID, 0, 0)
	must(t, err, "Events")
	if len(evs) != 2 || evs[1].Type != "from-B" {
		t.Fatalf("events %+v: the fenced owner's event was written", evs)
	}
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
