package sqlite_test

import (
	"context"
	"testing"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
)

// TestKeptLogIsTheStoredLog: the log WaitLog gives for a run started with
// KeepLog (AgentFlow's POST /api/run answers with it) is the one stored,
// event for event; a run that pauses, or logs more than the cap, is
// answered without one (read from the store).
func TestKeptLogIsTheStoredLog(t *testing.T) {
	st, e := benchEngine(t)
	ctx := context.Background()
	paused := &graph.Graph{Nodes: []graph.Node{{ID: "s", Type: graph.TypeStart},
		{ID: "ok", Type: graph.TypeApproval, Data: graph.NodeData{Prompt: "go?"}}},
		Edges: []graph.Edge{{ID: "e1", Source: "s", Target: "ok", SourceHandle: graph.HandleOutput}}}
	cases := []struct {
		name    string
		g       *graph.Graph
		wantLog bool
	}{
		{"agents", chain(3, graph.TypeAgent), true},
		{"branches", fanout(8, graph.TypeIf), true},
		{"paused", paused, false},
		{"over the cap", chain(2100, graph.TypeIf), false}, // 2 events a node: over keptEventsMax
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run, err := e.StartGraph(ctx, c.g, engine.StartOptions{Input: "x", KeepLog: true})
			if err != nil {
				t.Fatal(err)
			}
			r, _, log, err := e.WaitLog(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !c.wantLog {
				if log != nil {
					t.Fatalf("run %s: a kept log of %d events", r.Status, len(log))
				}
				return
			}
			if r.Status != engine.StatusCompleted {
				t.Fatalf("run %s: %s", r.Status, r.Error)
			}
			stored, err := st.Events(ctx, run.ID, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(log) != len(stored) {
				t.Fatalf("kept %d events, stored %d", len(log), len(stored))
			}
			for i := range log {
				k, s := log[i], stored[i]
				if k.Seq != s.Seq || k.RunID != s.RunID || k.NodeID != s.NodeID || k.Type != s.Type ||
					k.Content != s.Content || string(k.Data) != string(s.Data) || !k.Timestamp.Equal(s.Timestamp) ||
					k.Owner != s.Owner {
					t.Fatalf("event %d kept %+v, stored %+v", i, k, s)
				}
			}
		})
	}
}
