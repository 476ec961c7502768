package storetest

import (
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// testKeptLog: the log the engine keeps for a run started with KeepLog
// (AgentFlow's POST /api/run answers with it instead of reading the log
// back) is the one the store holds, event for event and field for field;
// a run that pauses, or logs more than the cap, is answered without one
// (and read from the store). Times are kept at the durable stores'
// microsecond precision (the memory store keeps nanoseconds).
func testKeptLog(t *testing.T, open Open) {
	ctx := ctxT(t)
	s := open(t, Options{})
	// Answers take a while, so that a run is still live when WaitLog asks
	// for it: a run that ended before is answered from the store (no kept
	// log), which is right but checks nothing here.
	e, err := engine.New(engine.Config{Store: s, LLM: InProcessLLM(t, fakeopenai.WithLatency(300*time.Millisecond)), ArtifactsRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	cases := []struct {
		name    string
		g       *graph.Graph
		wantLog bool
	}{
		{"agents", Chain(3, graph.TypeAgent), true},
		{"branches", Fanout(8, graph.TypeIf), true},
		{"chain", Chain(40, graph.TypeIf), true},
		{"paused", approvalGraph(), false},
		{"over the cap", Chain(2100, graph.TypeIf), false}, // 2 events a node: over the engine's 4,096
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var (
				run, r *engine.Run
				log    []engine.Event
			)
			// A run that ends before WaitLog looks for it (a machine busy
			// enough to stall this goroutine for the LLM's latency) has no
			// kept log; another run of the graph is tried then.
			for try := 0; try < 10; try++ {
				run, err = e.StartGraph(ctx, c.g, engine.StartOptions{Input: "x", KeepLog: true})
				if err != nil {
					t.Fatal(err)
				}
				if r, _, log, err = e.WaitLog(ctx, run.ID); err != nil {
					t.Fatal(err)
				}
				if log != nil || !c.wantLog {
					break
				}
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
			stored, err := s.Events(ctx, run.ID, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if log == nil || len(log) != len(stored) {
				t.Fatalf("kept %d events, stored %d", len(log), len(stored))
			}
			for i := range log {
				k, st := log[i], stored[i]
				if k.Seq != st.Seq || k.RunID != st.RunID || k.NodeID != st.NodeID || k.Type != st.Type ||
					k.Content != st.Content || string(k.Data) != string(st.Data) || !k.Timestamp.Equal(st.Timestamp.Truncate(time.Microsecond)) ||
					k.Owner != st.Owner {
					t.Fatalf("event %d kept %+v, stored %+v", i, k, st)
				}
			}
		})
	}
}
