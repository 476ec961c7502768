package loadgen

import (
	"context"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
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

	c0, err := BaselineCounters(ctx, []*Client{c})
	if err != nil {
		t.Fatal(err)
	}
	if c0.ReadMallocs <= 0 {
		t.Errorf("a read of /metrics allocated nothing: %+v", c0)
	}
	runs, err := Runs(ctx, c, RunsConfig{Duration: time.Second, Clients: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if runs.Started == 0 || runs.Completed != runs.Started || runs.Failed != 0 || runs.StartErrors != 0 ||
		runs.EndToEnd.Count != runs.Completed || runs.EndToEnd.P50 < 100 { // two 50 ms LLM calls per run
		t.Errorf("runs %+v", runs)
	}
	// The server's counters moved with the runs (the server shares this
	// process, so its allocations include the clients': only plumbing is
	// checked here; the CLI's test reads a server of its own).
	c1, err := Counters(ctx, []*Client{c})
	if err != nil {
		t.Fatal(err)
	}
	runs.PerRun(c0, c1)
	if runs.CommitsPerRun <= 0 || runs.ServerAllocsPerRun <= 0 || runs.ServerAllocKBPerRun <= 0 || c1.GCs < c0.GCs {
		t.Errorf("per-run counters %+v from %+v to %+v", runs, c0, c1)
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
	// The server's CPU is read before and after each fan-out: here a
	// clock that adds 5 ms a read, so each fan-out's share is 5 ms.
	var reads time.Duration
	cpu := func() (time.Duration, bool) { reads += 5 * time.Millisecond; return reads, true }
	fan, err = Fanout(ctx, c, FanoutConfig{Width: 10, LLMLatency: 50 * time.Millisecond, Repeat: 3, ServerCPU: cpu})
	if err != nil {
		t.Fatal(err)
	}
	if fan.Status != "completed" || len(fan.WallsMs) != 3 || fan.WallsMs[0] != fan.WallMs || fan.Width != 10 {
		t.Errorf("repeated fanout %+v", fan)
	}
	if len(fan.StartsMs) != 3 || fan.StartsMs[0] != fan.StartLatentMs {
		t.Errorf("repeated fanout's start latencies %v, want 3, the first %v", fan.StartsMs, fan.StartLatentMs)
	}
	for i, s := range fan.StartsMs {
		if s <= 0 || s > fan.WallsMs[i] {
			t.Errorf("fan-out %d: start latency %v ms, wall %v ms", i, s, fan.WallsMs[i])
		}
	}
	if !slices.Equal(fan.ServerCPUMs, []float64{5, 5, 5}) || fan.FakeCPUPerCallUs != 0 {
		t.Errorf("repeated fanout's CPU %v, fake %v: want 5 ms each, no fake figure without its url", fan.ServerCPUMs, fan.FakeCPUPerCallUs)
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

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// TestCountersSumServersAndNameWhatIsMissing: counters are summed over the
// servers, and a server without one is an error naming it.
func TestCountersSumServersAndNameWhatIsMissing(t *testing.T) {
	t.Parallel()
	serve := func(text string) *Client {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, text)
		}))
		t.Cleanup(srv.Close)
		return NewClient(srv.URL, "")
	}
	full := "# HELP x\nswitchyard_store_commits_total 10\nswitchyard_store_writer_busy_seconds_total 0.5\ngo_memstats_mallocs_total 1000\n" +
		"go_memstats_alloc_bytes_total 2048\ngo_gc_duration_seconds{quantile=\"0.5\"} 0.001\ngo_gc_duration_seconds_count 3\n"
	got, err := Counters(context.Background(), []*Client{serve(full), serve(full)})
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(got.At) > time.Minute {
		t.Errorf("counters read at %v", got.At)
	}
	got.At = time.Time{}
	if want := (ServerCounters{Commits: 20, WriterBusy: 1, Mallocs: 2000, AllocBytes: 4096, GCs: 6, Servers: 2}); got != want {
		t.Errorf("counters %+v, want %+v", got, want)
	}
	got.At = t0.Add(2 * time.Second)
	r := RunsResult{Completed: 4}
	r.PerRun(ServerCounters{ReadMallocs: 400, ReadBytes: 1024, At: t0}, got)
	if r.CommitsPerRun != 5 || r.ServerAllocsPerRun != 400 || r.ServerAllocKBPerRun != 0.75 || r.ServerGCsPer1000Runs != 1500 {
		t.Errorf("per run %+v, want the read's cost taken out", r)
	}
	// 1 s of writer time over 4 runs; two servers busy 0.5 s each of 2 s.
	if r.WriterBusyPerRunUs != 250000 || r.WriterCeilingRunsPerSec != 4 || r.WriterBusyPct != 25 {
		t.Errorf("writer figures %v µs a run, ceiling %v runs/s, busy %v %%; want 250000, 4, 25",
			r.WriterBusyPerRunUs, r.WriterCeilingRunsPerSec, r.WriterBusyPct)
	}
	_, err = Counters(context.Background(), []*Client{serve(full), serve("go_memstats_mallocs_total 1\n")})
	if err == nil || !strings.Contains(err.Error(), "switchyard_store_commits_total") {
		t.Errorf("a server without the counters: %v", err)
	}
}

// TestPairedDiff: the mean change over pairs and its standard error,
// checked against values worked out by hand.
func TestPairedDiff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		a, b     []float64
		mean, se float64
	}{
		{"none", nil, nil, 0, 0},
		{"one pair", []float64{100}, []float64{90}, -10, 0},
		// Changes -10, -20, 0: mean -10, sample sd 10, se 10/√3.
		{"three pairs", []float64{100, 50, 10}, []float64{90, 40, 10}, -10, 10 / math.Sqrt(3)},
		// The same change whatever the level: no spread.
		{"drifting machine", []float64{100, 200, 400}, []float64{95, 190, 380}, -5, 0},
		// A pair without a first figure is left out; extra b values too.
		{"skipped", []float64{0, 100}, []float64{5, 110, 7}, 10, 0},
	} {
		mean, se := PairedDiff(tc.a, tc.b)
		if math.Abs(mean-tc.mean) > 1e-9 || math.Abs(se-tc.se) > 1e-9 {
			t.Errorf("%s: PairedDiff = %v ± %v, want %v ± %v", tc.name, mean, se, tc.mean, tc.se)
		}
	}
}
