package sqlite_test

// Benchmarks of the engine persisting through the SQLite store: what
// durability costs per node (goal: under 100 µs per node persisted), and
// how many realistic events per second the writer takes.

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/store/sqlite"
	"github.com/switchyard/switchyard/store/storetest"
)

func openBenchStore(b testing.TB) *sqlite.Store {
	b.Helper()
	log := slog.New(slog.NewTextHandler(b.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "switchyard.db"), sqlite.WithLogger(log))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// benchEngine is an engine on a fresh SQLite store with the instant LLM,
// logging warnings only; both close when tb ends.
func benchEngine(tb testing.TB) (*sqlite.Store, *engine.Engine) {
	st := openBenchStore(tb)
	e, err := engine.New(engine.Config{Store: st, LLM: storetest.InProcessLLM(tb), ArtifactsRoot: tb.TempDir(),
		Logger: slog.New(slog.NewTextHandler(tb.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)
	return st, e
}

func benchPersistedRun(b *testing.B, g *graph.Graph, nodes int) {
	st, e := benchEngine(b)
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
	// Every node's final state is in the file, not just in memory.
	last, nodesState, _, err := st.LoadRun(ctx, mustLastRun(b, st))
	if err != nil || last.Status != engine.StatusCompleted || len(nodesState) < nodes {
		b.Fatalf("last run persisted as %v with %d node states (%v)", last.Status, len(nodesState), err)
	}
	stats := st.Stats()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*nodes), "µs/node")
	b.ReportMetric(float64(stats.Batches)/float64(b.N), "commits/run")
	b.ReportMetric(float64(stats.EventsWritten)/float64(b.N), "events/run")
}

func mustLastRun(b *testing.B, st *sqlite.Store) string {
	runs, err := st.ListRuns(context.Background(), engine.RunFilter{Limit: 1})
	if err != nil || len(runs) != 1 {
		b.Fatalf("list runs: %v %v", runs, err)
	}
	return runs[0].ID
}

// BenchmarkEnginePersisted is BenchmarkEngine of the engine package with
// the SQLite store attached: every completion checkpointed, every event
// appended. Pass-through if nodes show the scheduler+store cost alone;
// agent nodes add a goroutine and an openai-go call to an instant fake.
func BenchmarkEnginePersisted(b *testing.B) {
	const n = 1000
	b.Run("chain1000/if", func(b *testing.B) { benchPersistedRun(b, storetest.Chain(n, graph.TypeIf), n) })
	b.Run("fanout1000/if", func(b *testing.B) { benchPersistedRun(b, storetest.Fanout(n, graph.TypeIf), n) })
	b.Run("chain1000/agent", func(b *testing.B) { benchPersistedRun(b, storetest.Chain(n, graph.TypeAgent), n) })
	b.Run("fanout1000/agent", func(b *testing.B) { benchPersistedRun(b, storetest.Fanout(n, graph.TypeAgent), n) })
}

// agentEvents is the log of one agent node as the engine writes it: a
// step_start, the prompt, a dozen coalesced stream deltas, the response and
// the step_end carrying the output (~4.5 KB in 16 events).
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
	ctx := context.Background()
	st := openBenchStore(b)
	const runs = 8
	ids := make([]string, runs)
	headers := make([]*engine.Run, runs)
	for i := range ids {
		now := time.Now()
		headers[i] = &engine.Run{ID: fmt.Sprintf("run-%d", i), Kind: engine.KindGraph, Definition: []byte(`{}`),
			Status: engine.StatusRunning, PendingApprovals: []engine.PendingApproval{}, CreatedAt: now, UpdatedAt: now}
		if err := st.CreateRun(ctx, headers[i], nil, nil); err != nil {
			b.Fatal(err)
		}
		ids[i] = headers[i].ID
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
		r := (i / len(tmpl)) % runs // one node's log after another, runs interleaved
		ev := tmpl[i%len(tmpl)]
		seq[r]++
		ev.RunID, ev.Seq, ev.Timestamp = ids[r], seq[r], time.Now()
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

// BenchmarkConcurrentShortRuns is `switchyard load runs` without HTTP: 32
// clients each start start → agent → agent runs and wait for them, the
// instant fake LLM in process. cpu-µs/run is the process's CPU time (user
// and system) per run: the store's and the engine's share of the server's
// CPU per run, plus the fake's handler and openai-go's client.
func BenchmarkConcurrentShortRuns(b *testing.B) {
	st, e := benchEngine(b)
	g := storetest.Chain(2, graph.TypeAgent)
	ctx := context.Background()
	base := st.Stats()
	cpu := clientsCPU(b, func(int) error {
		run, err := e.StartGraph(ctx, g, engine.StartOptions{Input: "x"})
		if err != nil {
			return err
		}
		if r, err := e.Wait(ctx, run.ID); err != nil || r.Status != engine.StatusCompleted {
			return fmt.Errorf("run: %v %v", err, r)
		}
		return nil
	})
	stats := st.Stats()
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/run")
	b.ReportMetric(float64(stats.Batches-base.Batches)/float64(b.N), "commits/run")
	b.ReportMetric(float64(stats.EventsWritten-base.EventsWritten)/float64(b.N), "events/run")
}

// clientsCPU calls one b.N times from 32 concurrent clients, as the load
// tool's clients, and returns the CPU time the process used meanwhile.
// The clock runs only while they do.
func clientsCPU(b *testing.B, one func(i int) error) time.Duration {
	const clients = 32
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if err := one(int(i)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	cpu := processCPU(b) - cpu0
	b.StopTimer()
	return cpu
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCreateRunParallel is the store's side of starting runs: 32
// clients create runs of one graph (a 1.2 KB definition, as the server's
// prepared graphs share one), each with the node states and events a
// start -> agent run is stored with.
func BenchmarkCreateRunParallel(b *testing.B) {
	st := openBenchStore(b)
	ctx := context.Background()
	def := []byte(`{"nodes":[` + strings.TrimSuffix(strings.Repeat(`{"id":"n","type":"agent","data":{"userPrompt":"summarize the input in one line"}},`, 16), ",") + `]}`)
	cpu := clientsCPU(b, func(i int) error {
		now := time.Now().UTC()
		id := fmt.Sprintf("run-%d", i)
		r := &engine.Run{ID: id, Kind: engine.KindGraph, Status: engine.StatusRunning, Input: "x",
			Definition: def, CreatedAt: now, UpdatedAt: now, Owner: "bench", LeaseUntil: now.Add(time.Minute)}
		nodes := []*engine.NodeState{
			{NodeID: "s", Status: engine.NodeCompleted, Input: "x", Output: "x", Visits: 1, Attempts: 1, StartedAt: &now, FinishedAt: &now},
			{NodeID: "n0", Status: engine.NodeQueued, Input: "x", Fired: []string{"e0"}},
		}
		evs := []*engine.Event{
			{Seq: 1, RunID: id, NodeID: engine.SystemNodeID, Type: engine.EvRunStatus, Content: "running", Timestamp: now},
			{Seq: 2, RunID: id, NodeID: "s", Type: engine.EvStepStart, Content: "Start node", Timestamp: now, Data: []byte(`{"type":"start","visit":1}`)},
			{Seq: 3, RunID: id, NodeID: "s", Type: engine.EvStepEnd, Content: "completed", Timestamp: now, Data: []byte(`{"durationMs":0,"output":"x","status":"completed","visit":1}`)},
		}
		return st.CreateRun(ctx, r, nodes, evs)
	})
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/run")
}
