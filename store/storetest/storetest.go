// Package storetest is the conformance suite every store.Store passes:
// SQLite (store/sqlite), PostgreSQL (store/postgres) and the in-memory
// store (store/memory). It uses only the store.Store interface, and is
// split by area: runs, events, leases, claims, cancel, orphans, workflows,
// sessions, positions and retention.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, o storetest.Options) store.Store { return open(t, o) })
//	}
//
// Runs created by the suite reference the workflow ids WorkflowA and
// WorkflowB, which the suite creates in every store it opens. All times the
// suite stores are UTC at microsecond precision and compared with
// time.Equal.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
)

// Workflow ids the suite's runs reference.
const (
	WorkflowA = "wf-storetest-a"
	WorkflowB = "wf-storetest-b"
)

// t0 is the suite's reference time: UTC, microsecond precision.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 123456000, time.UTC)

// Options say how the suite wants a store opened.
type Options struct {
	// Now is the store's clock for the times it sets itself (workflow
	// versions, session expiry); nil: time.Now.
	Now func() time.Time
	// Share, when not nil, asks for another store on Share's database (a
	// restart, or another process); nil asks for a new, empty database.
	// A store that cannot share its data (memory) returns Share itself.
	Share store.Store
}

// Open opens a store for one subtest and arranges its Close (t.Cleanup).
type Open func(t *testing.T, o Options) store.Store

// A test is one conformance subtest.
type test struct {
	name string
	fn   func(t *testing.T, open Open)
}

// areas are the suite's tests, by area (one file each).
var areas = []struct {
	name  string
	tests []test
}{
	{"runs", runsTests},
	{"events", eventsTests},
	{"leases", leasesTests},
	{"claims", claimsTests},
	{"cancel", cancelTests},
	{"orphans", orphansTests},
	{"workflows", workflowsTests},
	{"sessions", sessionsTests},
	{"positions", positionsTests},
	{"retention", retentionTests},
}

// Run runs the conformance subtests, area by area.
func Run(t *testing.T, open Open) {
	for _, a := range areas {
		t.Run(a.name, func(t *testing.T) {
			for _, tc := range a.tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
			}
		})
	}
}

// openWithWorkflows opens a new, empty store holding the workflows the
// suite's runs reference.
func openWithWorkflows(t *testing.T, open Open) store.Store {
	t.Helper()
	s := open(t, Options{})
	for _, id := range []string{WorkflowA, WorkflowB} {
		_, err := s.CreateWorkflow(ctxT(t), store.Workflow{ID: id, Name: id, Kind: engine.KindGraph,
			Definition: json.RawMessage(`{"nodes":[]}`)})
		must(t, err, "CreateWorkflow "+id)
	}
	return s
}

// runsOnly adapts a test of the engine's interface alone.
func runsOnly(fn func(t *testing.T, s engine.Store)) func(t *testing.T, open Open) {
	return func(t *testing.T, open Open) { fn(t, openWithWorkflows(t, open)) }
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
