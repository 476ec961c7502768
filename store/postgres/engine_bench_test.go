package postgres

// Benchmarks of the engine persisting through the PostgreSQL store, the
// same workloads as the SQLite store's (store/engine_bench_test.go): what
// durability costs per node, and how many realistic events per second the
// writer takes. PGTEST_DURABLE=1 makes the test cluster fsync its commits.

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/store/storetest"
)

func benchLogger(b *testing.B) *slog.Logger {
	return slog.New(slog.NewTextHandler(b.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func openBenchStore(b *testing.B) *Store {
	b.Helper()
	st, err := Open(context.Background(), pg.NewDatabase(b), WithLogger(benchLogger(b)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

func benchPersistedRun(b *testing.B, g *graph.Graph, nodes int) {
	st := openBenchStore(b)
	e, err := engine.New(engine.Config{Store: st, LLM: storetest.InProcessLLM(b), ArtifactsRoot: b.TempDir(),
		Logger: benchLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		run, err := e.StartGraph(ctx, g, engine.StartOptions{Input: "x"})
		if err != nil {
			b.Fatal(err)
		}
		r, err := e.Wait(ctx, run.ID)
		if err != nil || r.Status != engine.StatusCompleted {
			b.Fatalf("run: %v %s %s", err, r.Status, r.Error)
		}
	}
	b.StopTimer()
	// Every node's final state is in the database, not just in memory.
	runs, err := st.ListRuns(ctx, engine.RunFilter{Limit: 1})
	if err != nil || len(runs) != 1 {
		b.Fatalf("list runs: %v %v", runs, err)
	}
	last, nodesState, _, err := st.LoadRun(ctx, runs[0].ID)
	if err != nil || last.Status != engine.StatusCompleted || len(nodesState) < nodes {
		b.Fatalf("last run persisted as %v with %d node states (%v)", last.Status, len(nodesState), err)
	}
	stats := st.Stats()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*nodes), "µs/node")
	b.ReportMetric(float64(stats.Batches)/float64(b.N), "commits/run")
	b.ReportMetric(float64(stats.EventsWritten)/float64(b.N), "events/run")
}

// BenchmarkEnginePersisted is the SQLite store's benchmark of the same
// name against PostgreSQL: every completion checkpointed, every event
// appended.
func BenchmarkEnginePersisted(b *testing.B) {
	pg.Require(b)
	const n = 1000
	b.Run("chain1000/if", func(b *testing.B) { benchPersistedRun(b, storetest.Chain(n, graph.TypeIf), n) })
	b.Run("fanout1000/if", func(b *testing.B) { benchPersistedRun(b, storetest.Fanout(n, graph.TypeIf), n) })
	b.Run("chain1000/agent", func(b *testing.B) { benchPersistedRun(b, storetest.Chain(n, graph.TypeAgent), n) })
	b.Run("fanout1000/agent", func(b *testing.B) { benchPersistedRun(b, storetest.Fanout(n, graph.TypeAgent), n) })
}

// agentEvents is the log of one agent node as the engine writes it (~4.5 KB
// in 16 events).
func agentEvents(node string) []engine.Event {
	prompt := strings.Repeat("Summarize the findings of the previous step. ", 9)
	system := strings.Repeat("You are a careful technical writer. ", 8)
	response := strings.Repeat("The results show steady progress on all fronts. ", 21)
	evs := []engine.Event{
		{NodeID: node, Type: engine.EvStepStart, Content: "Writer agent node", Data: []byte(`{"type":"agent","visit":1}`)},
		{NodeID: node, Type: engine.EvStartPrompt, Content: prompt,
			Data: []byte(fmt.Sprintf(`{"systemPrompt":%q,"model":"gpt-5-mini"}`, system))},
	}
	for i := range 12 {
		evs = append(evs, engine.Event{NodeID: node, Type: engine.EvLLMDelta, Content: response[i*80 : i*80+80]})
	}
	evs = append(evs,
		engine.Event{NodeID: node, Type: engine.EvLLMResponse, Content: response},
		engine.Event{NodeID: node, Type: engine.EvStepEnd, Content: "completed",
			Data: []byte(fmt.Sprintf(`{"status":"completed","output":%q,"durationMs":1234}`, response))})
	return evs
}

// BenchmarkEmitRealisticEvents appends agent-node logs of 8 concurrent
// runs through the writer; the clock stops once the last is committed.
func BenchmarkEmitRealisticEvents(b *testing.B) {
	pg.Require(b)
	ctx := context.Background()
	st := openBenchStore(b)
	const runs = 8
	headers := make([]*engine.Run, runs)
	for i := range headers {
		now := time.Now()
		headers[i] = &engine.Run{ID: fmt.Sprintf("run-%d", i), Kind: engine.KindGraph, Definition: []byte(`{}`),
			Status: engine.StatusRunning, PendingApprovals: []engine.PendingApproval{}, CreatedAt: now, UpdatedAt: now}
		if err := st.CreateRun(ctx, headers[i], nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	tmpl := agentEvents("writer")
	var bytesPerCycle int
	for _, ev := range tmpl {
		bytesPerCycle += len(ev.Content) + len(ev.Data) + len(ev.NodeID) + len(ev.Type)
	}
	seq := make([]int64, runs)
	base := st.Stats()
	b.ResetTimer()
	for i := range b.N {
		r := (i / len(tmpl)) % runs
		ev := tmpl[i%len(tmpl)]
		seq[r]++
		ev.RunID, ev.Seq, ev.Timestamp = headers[r].ID, seq[r], time.Now()
		st.Emit(&ev)
	}
	for _, h := range headers { // barrier: returns once everything before it is committed
		if err := st.Checkpoint(ctx, h, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	stats := st.Stats()
	if got := stats.EventsWritten - base.EventsWritten; got != uint64(b.N) {
		b.Fatalf("%d events written, want %d", got, b.N)
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/sec, "events/s")
	b.ReportMetric(float64(b.N)/float64(len(tmpl))*float64(bytesPerCycle)/sec/(1<<20), "MB/s")
	b.ReportMetric(float64(b.N)/float64(stats.Batches-base.Batches), "events/commit")
}
