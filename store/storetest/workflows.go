package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
)

var workflowsTests = []test{
	{"CRUD", testWorkflowsCRUD},
	{"Validation", testWorkflowValidation},
	{"ConcurrentUpdatesOneWins", testConcurrentWorkflowUpdates},
}

func testWorkflowsCRUD(t *testing.T, open Open) {
	ctx := ctxT(t)
	var clock atomic.Int64
	clock.Store(t0.UnixMicro())
	now := func() time.Time { return time.UnixMicro(clock.Add(int64(time.Second / time.Microsecond))) }
	s := open(t, Options{Now: now})
	clock.Store(t0.UnixMicro()) // Open may read the clock (PostgreSQL measures its offset)

	created, err := s.CreateWorkflow(ctx, store.Workflow{Name: "Review", Description: "d1", Kind: engine.KindGraph,
		Definition: json.RawMessage(`{"nodes":[1]}`)})
	must(t, err, "CreateWorkflow")
	if created.ID == "" || created.Version != 1 || !created.CreatedAt.Equal(t0.Add(time.Second)) ||
		!created.UpdatedAt.Equal(created.CreatedAt) {
		t.Fatalf("created %+v", created)
	}
	got, err := s.GetWorkflow(ctx, created.ID)
	must(t, err, "GetWorkflow")
	if got.Name != "Review" || got.Description != "d1" || string(got.Definition) != `{"nodes":[1]}` ||
		got.Version != 1 || !got.CreatedAt.Equal(created.CreatedAt) {
		t.Fatalf("GetWorkflow %+v", got)
	}

	upd := *got
	upd.Name, upd.Definition = "Review v2", json.RawMessage(`{"nodes":[1,2]}`)
	v2, err := s.UpdateWorkflow(ctx, upd, 1)
	must(t, err, "UpdateWorkflow")
	if v2.Version != 2 || !v2.CreatedAt.Equal(created.CreatedAt) || !v2.UpdatedAt.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("updated %+v", v2)
	}
	stale := *got
	stale.Name = "stale edit"
	_, err = s.UpdateWorkflow(ctx, stale, 1)
	mustIs(t, err, engine.ErrConflict, "UpdateWorkflow with a stale version")
	if cur, _ := s.GetWorkflow(ctx, created.ID); cur.Name != "Review v2" || cur.Version != 2 {
		t.Fatalf("a stale update changed the workflow: %+v", cur)
	}
	_, err = s.UpdateWorkflow(ctx, store.Workflow{ID: "nope", Name: "x", Kind: engine.KindGraph, Definition: json.RawMessage(`{}`)}, 1)
	mustIs(t, err, engine.ErrNotFound, "UpdateWorkflow of an unknown workflow")

	versions, err := s.ListVersions(ctx, created.ID)
	must(t, err, "ListVersions")
	if len(versions) != 2 || versions[0].Version != 2 || versions[1].Version != 1 || versions[1].Name != "Review" {
		t.Fatalf("ListVersions %+v", versions)
	}
	v1, err := s.GetVersion(ctx, created.ID, 1)
	must(t, err, "GetVersion 1")
	if string(v1.Definition) != `{"nodes":[1]}` || v1.Name != "Review" || v1.Kind != engine.KindGraph {
		t.Fatalf("version 1 %+v", v1)
	}
	_, err = s.GetVersion(ctx, created.ID, 3)
	mustIs(t, err, engine.ErrNotFound, "GetVersion 3")

	_, err = s.CreateWorkflow(ctx, store.Workflow{ID: created.ID, Name: "dup", Kind: engine.KindGraph, Definition: json.RawMessage(`{}`)})
	mustIs(t, err, engine.ErrConflict, "CreateWorkflow with a taken id")
	other, err := s.CreateWorkflow(ctx, store.Workflow{ID: "fixed-id", Name: "Other", Kind: engine.KindYAML, Definition: json.RawMessage(`"a: 1"`)})
	must(t, err, "CreateWorkflow with an id")
	list, err := s.ListWorkflows(ctx)
	must(t, err, "ListWorkflows")
	if len(list) != 2 || list[0].ID != other.ID || list[1].ID != created.ID || list[1].Version != 2 {
		t.Fatalf("ListWorkflows %+v", list)
	}

	// Runs outlive their workflow.
	r := newRun("run-of-wf", engine.StatusRunning, t0)
	r.WorkflowID = created.ID
	must(t, s.CreateRun(ctx, r, nil, nil), "CreateRun")
	bad := newRun("run-of-nothing", engine.StatusRunning, t0)
	bad.WorkflowID = "no-such-workflow"
	mustIs(t, s.CreateRun(ctx, bad, nil, nil), engine.ErrNotFound, "CreateRun for an unknown workflow")

	must(t, s.DeleteWorkflow(ctx, created.ID), "DeleteWorkflow")
	_, err = s.GetWorkflow(ctx, created.ID)
	mustIs(t, err, engine.ErrNotFound, "GetWorkflow after delete")
	_, err = s.ListVersions(ctx, created.ID)
	mustIs(t, err, engine.ErrNotFound, "ListVersions after delete")
	mustIs(t, s.DeleteWorkflow(ctx, created.ID), engine.ErrNotFound, "second DeleteWorkflow")
	kept, err := s.GetRun(ctx, r.ID)
	must(t, err, "GetRun after its workflow was deleted")
	if kept.WorkflowID != "" {
		t.Errorf("run's workflow id after delete = %q, want empty", kept.WorkflowID)
	}
}

func testWorkflowValidation(t *testing.T, open Open) {
	s := open(t, Options{})
	tests := []struct {
		name string
		w    store.Workflow
		msg  string
	}{
		{"no name", store.Workflow{Kind: engine.KindGraph, Definition: json.RawMessage(`{}`)}, "name is required"},
		{"bad kind", store.Workflow{Name: "x", Kind: "bpmn", Definition: json.RawMessage(`{}`)}, `kind "bpmn"`},
		{"no definition", store.Workflow{Name: "x", Kind: engine.KindGraph}, "definition is required"},
		{"invalid JSON", store.Workflow{Name: "x", Kind: engine.KindGraph, Definition: json.RawMessage(`{nodes`)}, "not valid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.CreateWorkflow(ctxT(t), tc.w)
			mustIs(t, err, engine.ErrInvalidWorkflow, "CreateWorkflow")
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
			tc.w.ID = "any"
			_, err = s.UpdateWorkflow(ctxT(t), tc.w, 1)
			mustIs(t, err, engine.ErrInvalidWorkflow, "UpdateWorkflow")
		})
	}
}

// testConcurrentWorkflowUpdates: 20 saves of version 1, split over two
// stores on one database (two processes, where the store can share its
// database): exactly one wins.
func testConcurrentWorkflowUpdates(t *testing.T, open Open) {
	ctx := ctxT(t)
	a := open(t, Options{})
	b := open(t, Options{Share: a})
	w, err := a.CreateWorkflow(ctx, store.Workflow{Name: "w", Kind: engine.KindGraph, Definition: json.RawMessage(`{}`)})
	must(t, err, "CreateWorkflow")
	const n = 20
	var wins, conflicts atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		s := []store.Store{a, b}[i%2]
		wg.Go(func() {
			u := *w
			u.Name = fmt.Sprintf("edit %d", i)
			_, err := s.UpdateWorkflow(ctx, u, 1)
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, engine.ErrConflict):
				conflicts.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || conflicts.Load() != n-1 {
		t.Fatalf("%d wins, %d conflicts; want 1 and %d", wins.Load(), conflicts.Load(), n-1)
	}
	versions, err := b.ListVersions(ctx, w.ID)
	must(t, err, "ListVersions")
	if len(versions) != 2 {
		t.Fatalf("%d versions, want 2", len(versions))
	}
}
