package server

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
)

// The same graph posted again (inline on /api/runs and AgentFlow's
// /api/run, or a saved workflow started again) is prepared once; every
// run still gets its own state, a different graph is never mistaken for
// a cached one, and a graph with errors is refused every time.
func TestGraphCachePreparesAGraphOnce(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	start := func(g *graph.Graph, input string) runJSON {
		var r runJSON
		v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": g, "input": input}, &r)
		return r
	}
	var ids []string
	for i := range 3 {
		ids = append(ids, start(threeNodeGraph(), fmt.Sprintf("in %d", i)).RunID)
	}
	if n := v.srv.graphs.len(); n != 1 {
		t.Fatalf("%d graphs cached after three runs of one graph, want 1", n)
	}
	for i, id := range ids {
		r := v.wait(id)
		if r.Status != engine.StatusCompleted || r.Input != fmt.Sprintf("in %d", i) {
			t.Fatalf("run %d: %s, input %q", i, r.Status, r.Input)
		}
	}
	// AgentFlow's route checks graphs its own way: its own entry, used
	// again by the next compat run of the same graph.
	for range 2 {
		var res map[string]any
		v.must(http.StatusOK, "POST", "/api/run", map[string]any{"graph": threeNodeGraph(), "input": "compat"}, &res)
		if res["status"] != "completed" {
			t.Fatalf("compat run: %v", res["status"])
		}
		if n := v.srv.graphs.len(); n != 2 {
			t.Fatalf("%d graphs cached after the compat runs, want 2", n)
		}
	}

	// Another graph is another entry, and its runs store their own graph.
	other := newGraph().
		node("s", graph.TypeStart, graph.NodeData{InitialInput: "hello"}).
		node("solo", graph.TypeAgent, graph.NodeData{AgentName: "Solo"}).
		edge("s", "output", "solo").build()
	oid := start(other, "x").RunID
	v.wait(oid)
	if n := v.srv.graphs.len(); n != 3 {
		t.Fatalf("%d graphs cached after a second graph, want 3", n)
	}
	// AgentFlow's answers carry each run's own graph (made once per
	// definition and kept).
	for _, c := range []struct {
		g         *graph.Graph
		want, not string
	}{{threeNodeGraph(), `"a2"`, `"solo"`}, {other, `"solo"`, `"a2"`}, {threeNodeGraph(), `"a2"`, `"solo"`}} {
		r := v.request("POST", "/api/run", map[string]any{"graph": c.g})
		var ans struct {
			Workflow json.RawMessage `json:"workflow"`
		}
		r.decode(t, &ans)
		if !strings.Contains(string(ans.Workflow), c.want) || strings.Contains(string(ans.Workflow), c.not) {
			t.Fatalf("compat answer's workflow: %s, want %s and no %s", ans.Workflow, c.want, c.not)
		}
	}
	for id, want := range map[string]string{ids[0]: `"a2"`, oid: `"solo"`} {
		r, _, err := v.e.Snapshot(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(r.Definition), want) {
			t.Fatalf("run %s stored a definition without %s: %s", id, want, r.Definition)
		}
	}

	// A graph with errors: refused each time, never kept.
	for range 2 {
		r := v.request("POST", "/api/runs", map[string]any{"graph": invalidGraph()})
		if r.status != http.StatusBadRequest || r.errCode(t) != CodeInvalidGraph {
			t.Fatalf("invalid graph: %d %s", r.status, r.body)
		}
		r = v.request("POST", "/api/run", map[string]any{"graph": invalidGraph()})
		if r.status != http.StatusBadRequest || r.errCode(t) != CodeInvalidGraph {
			t.Fatalf("invalid graph (compat): %d %s", r.status, r.body)
		}
	}
	if n := v.srv.graphs.len(); n != 4 {
		t.Fatalf("%d graphs cached after invalid ones, want 4 (the compat answers above prepared the second graph too)", n)
	}

	// A saved workflow started twice: its stored bytes, one entry more.
	var wf wfJSON
	v.must(http.StatusCreated, "POST", "/api/workflows", map[string]any{"name": "W", "graph": other}, &wf)
	for range 2 {
		var r runJSON
		v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"workflowId": wf.ID}, &r)
		if got := v.wait(r.RunID); got.Status != engine.StatusCompleted || got.WorkflowID != wf.ID {
			t.Fatalf("workflow run: %s, workflow %q", got.Status, got.WorkflowID)
		}
	}
	if n := v.srv.graphs.len(); n != 5 {
		t.Fatalf("%d graphs cached after a saved workflow ran twice, want 5", n)
	}
}

// A graph one source prepared does not skip another source's checks: the
// compatibility route vets a graph before normalization, and a graph that
// the runs route accepted (and cached) is still vetted there.
func TestGraphCacheKeepsEachSourcesChecks(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	raw, err := json.Marshal(threeNodeGraph())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.srv.prepareGraph(fromRequest, raw, decodeRequestGraph, nil); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused by the compat check")
	checks := 0
	for range 2 {
		_, err := v.srv.prepareGraph(fromCompat, raw, decodeRequestGraph, func(*graph.Graph) error { checks++; return refused })
		if !errors.Is(err, refused) {
			t.Fatalf("a graph cached by the runs route skipped the compat check: %v", err)
		}
	}
	if checks != 2 {
		t.Fatalf("the compat check ran %d times for two requests, want 2", checks)
	}
	if _, err := v.srv.prepareGraph(fromRequest, raw, decodeRequestGraph, func(*graph.Graph) error { t.Fatal("a cached graph was checked again"); return nil }); err != nil {
		t.Fatal(err)
	}
}

// The cache keeps the most recently used graphs within its bounds.
func TestGraphCacheBounds(t *testing.T) {
	t.Parallel()
	e, err := engine.New(engine.Config{Store: engine.NewMemStore(), ArtifactsRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	prep := func(name string) ([32]byte, *engine.PreparedGraph) {
		g := newGraph().node("s", graph.TypeStart, graph.NodeData{InitialInput: name}).
			node("a", graph.TypeAgent, graph.NodeData{AgentName: "A"}).edge("s", "output", "a").build()
		pg, err := e.PrepareGraph(g)
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256([]byte(name)), pg
	}
	c := newGraphCache(2, 1<<20)
	ka, a := prep("a")
	kb, b := prep("b")
	kc, cc := prep("c")
	c.put(ka, a)
	c.put(kb, b)
	if c.get(ka) != a { // a is now the most recent: b goes next
		t.Fatal("a not cached")
	}
	c.put(kc, cc)
	if c.len() != 2 || c.get(kb) != nil || c.get(ka) != a || c.get(kc) != cc {
		t.Fatalf("after a third graph: %d kept, b kept %v", c.len(), c.get(kb) != nil)
	}
	// Bytes: a cache that holds four definitions' worth keeps the last four.
	size := len(a.Definition())
	c = newGraphCache(10, 4*size+4)
	keys := [][32]byte{}
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		k, pg := prep(name)
		if len(pg.Definition()) != size {
			t.Fatalf("definition of %s: %d bytes, want %d", name, len(pg.Definition()), size)
		}
		c.put(k, pg)
		keys = append(keys, k)
	}
	if c.len() != 4 || c.get(keys[0]) != nil || c.get(keys[4]) == nil || c.bytes != 4*size {
		t.Fatalf("byte bound: %d kept (%d bytes of %d)", c.len(), c.bytes, c.maxBytes)
	}
	// A graph over a quarter of the bound is not kept at all.
	c = newGraphCache(10, 2*size)
	c.put(ka, a)
	if c.len() != 0 {
		t.Fatal("a graph over a quarter of the byte bound was kept")
	}
}
