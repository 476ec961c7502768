package sqlite

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchyard/switchyard/engine"
)

func benchStore(b *testing.B) *Store {
	b.Helper()
	// Warnings only: per-op logging would distort the figures.
	log := slog.New(slog.NewTextHandler(b.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	return openStore(b, WithLogger(log))
}

// BenchmarkEmitEvents measures events appended through the group-commit
// writer, end to end: the clock stops once the last one is committed.
func BenchmarkEmitEvents(b *testing.B) {
	ctx := testCtx(b)
	s := benchStore(b)
	const runs = 4
	rs := make([]*engine.Run, runs)
	for i := range rs {
		rs[i] = newRun(fmt.Sprintf("run-%d", i))
		mustOK(b, s.CreateRun(ctx, rs[i], nil, nil), "CreateRun")
	}
	content := strings.Repeat("t", 64) // a typical streamed LLM chunk
	ev := engine.Event{NodeID: "agent-1", Type: engine.EvLLMDelta, Content: content, Timestamp: t0}
	b.ResetTimer()
	for i := range b.N {
		ev.RunID = rs[i%runs].ID
		ev.Seq = int64(i/runs + 1)
		s.Emit(&ev)
	}
	for _, r := range rs { // barrier: returns once everything before it is committed
		mustOK(b, s.Checkpoint(ctx, r, nil), "Checkpoint")
	}
	b.StopTimer()
	st := s.Stats()
	if st.EventsWritten != uint64(b.N) {
		b.Fatalf("EventsWritten %d, want %d", st.EventsWritten, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.N)/float64(st.Batches), "events/commit")
}

func checkpointNode(i int) *engine.NodeState {
	return &engine.NodeState{NodeID: fmt.Sprintf("node-%d", i%20), Status: engine.NodeCompleted,
		Input: "the input", Output: strings.Repeat("o", 512), Handle: "default", Visits: 1, Attempts: 1}
}

// BenchmarkCheckpoint is one run persisting node completions one after the
// other: each checkpoint is its own commit.
func BenchmarkCheckpoint(b *testing.B) {
	ctx := testCtx(b)
	s := benchStore(b)
	r := newRun("run-cp")
	mustOK(b, s.CreateRun(ctx, r, nil, nil), "CreateRun")
	b.ResetTimer()
	for i := range b.N {
		if err := s.Checkpoint(ctx, r, []*engine.NodeState{checkpointNode(i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/float64(s.Stats().Batches), "ops/commit")
}

// BenchmarkCheckpointLargeGraph is BenchmarkCheckpoint for a run of a
// 1,000-node graph (a ~150 KB definition) whose status line changes with
// every step, as a long chain's does.
func BenchmarkCheckpointLargeGraph(b *testing.B) {
	ctx := testCtx(b)
	s := benchStore(b)
	r := newRun("run-large")
	var def strings.Builder
	def.WriteString(`{"nodes":[`)
	for i := range 1000 {
		if i > 0 {
			def.WriteString(",")
		}
		fmt.Fprintf(&def, `{"id":"n%d","type":"agent","position":{"x":%d,"y":0},"data":{"agentName":"Agent %d","userPrompt":"{{PREVIOUS_OUTPUT}} and more"}}`, i, i*10, i)
	}
	def.WriteString(`],"edges":[]}`)
	r.Definition = json.RawMessage(def.String())
	mustOK(b, s.CreateRun(ctx, r, nil, nil), "CreateRun")
	b.ResetTimer()
	for i := range b.N {
		r.CurrentNodeID = fmt.Sprintf("n%d", i%1000) // the row changes size now and then
		if err := s.Checkpoint(ctx, r, []*engine.NodeState{checkpointNode(i)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckpointParallel is many runs checkpointing at once (8
// goroutines per CPU, one run each): concurrent checkpoints share commits.
func BenchmarkCheckpointParallel(b *testing.B) {
	ctx := testCtx(b)
	s := benchStore(b)
	var next atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := newRun(fmt.Sprintf("run-par-%d", next.Add(1)))
		if err := s.CreateRun(ctx, r, nil, nil); err != nil {
			b.Error(err)
			return
		}
		i := 0
		for pb.Next() {
			if err := s.Checkpoint(ctx, r, []*engine.NodeState{checkpointNode(i)}); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	b.StopTimer()
	st := s.Stats()
	b.ReportMetric(float64(st.Ops)/float64(st.Batches), "ops/commit")
}
