package loadgen

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/llm"
	"github.com/switchyard/switchyard/server"
	"github.com/switchyard/switchyard/store/sqlite"
)

// startStack runs a real server (SQLite file, engine, fake LLM) on loopback.
func startStack(t *testing.T, latency time.Duration) (*Client, *fakeopenai.Server) {
	t.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	fake := fakeopenai.StartT(t, fakeopenai.WithLatency(latency))
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sy.db"), sqlite.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	llm, err := llm.New(llm.Config{BaseURL: fake.URL(), APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Config{Store: st, LLM: llm, ArtifactsRoot: t.TempDir(), Logger: quiet,
		MaxParallel: 64, MaxLLMCalls: 256})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Engine: e, Store: st, Addr: ln.Addr().String(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		e.Close()
		st.Close()
	})
	return NewClient("http://"+ln.Addr().String(), ""), fake
}

func TestScenariosAgainstARealServer(t *testing.T) {
	t.Parallel()
	c, fake := startStack(t, 50*time.Millisecond)
	ctx := context.Background()

	runs, err := Runs(ctx, c, RunsConfig{Duration: time.Second, Clients: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if runs.Started == 0 || runs.Completed != runs.Started || runs.Failed != 0 || runs.StartErrors != 0 ||
		runs.EndToEnd.Count != runs.Completed || runs.EndToEnd.P50 < 100 { // two 50 ms LLM calls per run
		t.Errorf("runs %+v", runs)
	}

	fake.Reset()
	fan, err := Fanout(ctx, c, FanoutConfig{Width: 40, LLMLatency: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The branches overlap: their LLM calls were in flight together (how
	// many depends on how busy the machine is, not the wall time).
	if fan.Status != "completed" || fan.WallMs < fan.IdealMs || fake.MaxConcurrent() < 2 || fan.WallsMs != nil {
		t.Errorf("fanout %+v, %d LLM calls at most in flight together: branches did not overlap", fan, fake.MaxConcurrent())
	}
	// Repeated: each fan-out is timed, the first is the one reported, and
	// each one ran (its branches and the join called the fake).
	fake.Reset()
	fan, err = Fanout(ctx, c, FanoutConfig{Width: 10, LLMLatency: 50 * time.Millisecond, Repeat: 3})
	if err != nil {
		t.Fatal(err)
	}
	if fan.Status != "completed" || len(fan.WallsMs) != 3 || fan.WallsMs[0] != fan.WallMs || fan.Width != 10 {
		t.Errorf("repeated fanout %+v", fan)
	}
	for _, w := range fan.WallsMs {
		if w < fan.IdealMs {
			t.Errorf("a repeated fan-out took %v ms, under its ideal %v ms: %+v", w, fan.IdealMs, fan)
		}
	}
	if n := len(fake.Requests()); n != 3*11 {
		t.Errorf("repeated fanout: %d LLM calls, want 3 × (10 branches + a join)", n)
	}

	for _, burst := range []bool{false, true} {
		w, err := Watchers(ctx, c, WatchersConfig{Watchers: 6, Runs: 3, Steps: 20, EventsRate: 2000, Burst: burst}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("watchers (burst %v): %d events per run, %d delivered", burst, w.EventsPerRun, w.Delivered)
		// Steady runs: 20 agent steps of AgentStepEvents; bursts: 20 if steps of 2.
		perRun := 20*AgentStepEvents + 5
		if burst {
			perRun = 2*20 + 8
		}
		if w.Gaps != 0 || w.Duplicates != 0 || w.Incomplete != 0 || w.EventsPerRun < perRun-3 ||
			w.Delivered < int64(6*(w.EventsPerRun-5)) {
			t.Errorf("watchers (burst %v) %+v", burst, w)
		}
	}

	a, err := Approvals(ctx, c, ApprovalsConfig{Runs: 20, Clients: 4, Duplicates: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Wins != 20 || a.Conflicts != 40 || a.Errors != 0 || a.WonTwice != 0 || a.NeverWon != 0 || a.Completed != 20 {
		t.Errorf("approvals %+v", a)
	}
}

func TestSummaryPercentiles(t *testing.T) {
	t.Parallel()
	var l Latencies
	for i := 1; i <= 100; i++ {
		l.Add(time.Duration(i) * time.Millisecond)
	}
	s := l.Summary()
	if s.Count != 100 || s.P50 != 50 || s.P90 != 90 || s.P99 != 99 || s.Max != 100 {
		t.Fatalf("%+v", s)
	}
	if (&Latencies{}).Summary().Count != 0 {
		t.Fatal("empty summary")
	}
}
