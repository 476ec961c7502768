package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/switchyard/switchyard/internal/loadgen"
)

// `switchyard load runs --against OTHER`: two servers, this binary's (A)
// and OTHER's (B), started alike (same fake LLM, same pinning, a fresh
// database each), loaded in turn in short slices, A B then B A, round
// after round. On a shared machine whose speed drifts by more than a
// change is worth (this project's 2-core VM: ±5 % between 8-second runs
// minutes apart), separate runs cannot show a change of a few percent;
// slices seconds apart see the same neighbours, and the mean of the
// paired changes with its standard error says whether a change is there.

// compareResult is what --against prints.
type compareResult struct {
	Rounds       int         `json:"rounds"`
	SliceSeconds float64     `json:"sliceSeconds"`
	Clients      int         `json:"clients"`
	Route        string      `json:"route"`
	A            compareSide `json:"a"`
	B            compareSide `json:"b"`
	// B against A, in percent: the mean over rounds of each round's
	// change, and its standard error. Ratio is the server's CPU per run
	// over the fake LLM's CPU per call in the same slice, the figure to
	// follow on a noisy machine; CPU the server's CPU per run alone.
	RatioDiffPct    float64 `json:"ratioDiffPct"`
	RatioDiffSEPct  float64 `json:"ratioDiffSePct"`
	CPUDiffPct      float64 `json:"cpuDiffPct"`
	CPUDiffSEPct    float64 `json:"cpuDiffSePct"`
	AllocsDiffPct   float64 `json:"allocsDiffPct"`
	AllocsDiffSEPct float64 `json:"allocsDiffSePct"`
	// The store writer's busy time a run: what bounds throughput on
	// many cores (loadgen.RunsResult.WriterBusyPerRunUs).
	WriterDiffPct   float64 `json:"writerBusyDiffPct"`
	WriterDiffSEPct float64 `json:"writerBusyDiffSePct"`
	Summary         string  `json:"summary"`
}

// compareSide is one server's slices, in round order.
type compareSide struct {
	Binary            string    `json:"binary"`
	Completed         []int     `json:"completed"`
	Failed            int       `json:"failed"`
	ServerCPUPerRunUs []float64 `json:"serverCpuPerRunUs"`
	FakeCPUPerCallUs  []float64 `json:"fakeCpuPerCallUs"`
	Ratio             []float64 `json:"ratio"`
	AllocsPerRun      []float64 `json:"allocsPerRun"`
	WriterBusyPerRun  []float64 `json:"writerBusyPerRunUs"`
	// CommitsPerRun is the store's transactions a run: fewer when the
	// writer's batches are larger (loadgen.RunsResult.CommitsPerRun).
	CommitsPerRun   []float64 `json:"commitsPerRun"`
	MeanRatio       float64   `json:"meanRatio"`
	MeanCPUPerRunUs float64   `json:"meanServerCpuPerRunUs"`
}

// compareConfig is what runCompare needs from cmdLoad.
type compareConfig struct {
	against  string // B's binary
	rounds   int
	slice    time.Duration
	runs     loadgen.RunsConfig // Duration and Via are set per slice
	llmURL   string
	fakeHTTP *http.Client
	env      []string
	cpus     []int
	extra    []string // serve flags
}

// checkAgainst says why path cannot be the binary to compare with.
func checkAgainst(path string) error {
	if runtime.GOOS != "linux" {
		return errors.New("needs /proc to measure the servers' CPU (Linux)")
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// runCompare starts B beside a (A, already started), warms both with a
// slice each, then runs the rounds.
func runCompare(ctx context.Context, a *childServer, cfg compareConfig, prog func(string)) (*compareResult, error) {
	exeA, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b, err := startServerFrom(ctx, cfg.against, cfg.llmURL, cfg.env, nil, cfg.cpus, cfg.extra...)
	if err != nil {
		return nil, fmt.Errorf("start the --against server: %w", err)
	}
	defer b.stop()
	sides := [2]*childServer{a, b}
	clients := [2]*loadgen.Client{loadgen.NewClient(a.url, a.token), loadgen.NewClient(b.url, b.token)}
	res := &compareResult{Rounds: cfg.rounds, SliceSeconds: cfg.slice.Seconds(), Clients: cfg.runs.Clients, Route: cfg.runs.Route,
		A: compareSide{Binary: exeA}, B: compareSide{Binary: cfg.against}}
	out := [2]*compareSide{&res.A, &res.B}
	// Warm-up, not counted: connections to the fake, pools, the page cache.
	for k := range sides {
		if _, err := compareSlice(ctx, sides[k], clients[k], cfg, cfg.slice/2); err != nil {
			return nil, fmt.Errorf("warm-up of %s: %w", "AB"[k:k+1], err)
		}
	}
	for r := range cfg.rounds {
		order := [2]int{0, 1}
		if r%2 == 1 {
			order = [2]int{1, 0} // A B, B A, A B: a drift within a round cancels over two
		}
		for _, k := range order {
			s, err := compareSlice(ctx, sides[k], clients[k], cfg, cfg.slice)
			if err != nil {
				return nil, fmt.Errorf("round %d, server %s: %w", r+1, "AB"[k:k+1], err)
			}
			o := out[k]
			o.Completed = append(o.Completed, s.Completed)
			o.Failed += s.Failed
			o.ServerCPUPerRunUs = append(o.ServerCPUPerRunUs, s.ServerCPUPerRunUs)
			o.FakeCPUPerCallUs = append(o.FakeCPUPerCallUs, s.FakeCPUPerCallUs)
			ratio := 0.0
			if s.FakeCPUPerCallUs > 0 {
				ratio = s.ServerCPUPerRunUs / s.FakeCPUPerCallUs
			}
			o.Ratio = append(o.Ratio, ratio)
			o.AllocsPerRun = append(o.AllocsPerRun, s.ServerAllocsPerRun)
			o.WriterBusyPerRun = append(o.WriterBusyPerRun, s.WriterBusyPerRunUs)
			o.CommitsPerRun = append(o.CommitsPerRun, s.CommitsPerRun)
		}
		if prog != nil {
			prog(fmt.Sprintf("round %d/%d: A %.0f µs a run (%.2f), B %.0f µs (%.2f)", r+1, cfg.rounds,
				res.A.ServerCPUPerRunUs[r], res.A.Ratio[r], res.B.ServerCPUPerRunUs[r], res.B.Ratio[r]))
		}
	}
	for _, o := range out {
		o.MeanRatio, o.MeanCPUPerRunUs = mean(o.Ratio), mean(o.ServerCPUPerRunUs)
	}
	res.RatioDiffPct, res.RatioDiffSEPct = loadgen.PairedDiff(res.A.Ratio, res.B.Ratio)
	res.CPUDiffPct, res.CPUDiffSEPct = loadgen.PairedDiff(res.A.ServerCPUPerRunUs, res.B.ServerCPUPerRunUs)
	res.AllocsDiffPct, res.AllocsDiffSEPct = loadgen.PairedDiff(res.A.AllocsPerRun, res.B.AllocsPerRun)
	res.WriterDiffPct, res.WriterDiffSEPct = loadgen.PairedDiff(res.A.WriterBusyPerRun, res.B.WriterBusyPerRun)
	res.Summary = fmt.Sprintf("B against A: server CPU a run ÷ the fake's a call %+.1f %% ± %.1f %%, server CPU a run %+.1f %% ± %.1f %% (mean ± standard error over %d paired rounds)",
		res.RatioDiffPct, res.RatioDiffSEPct, res.CPUDiffPct, res.CPUDiffSEPct, cfg.rounds)
	return res, nil
}

// compareSlice runs one slice of d against srv and measures it.
func compareSlice(ctx context.Context, srv *childServer, c *loadgen.Client, cfg compareConfig, d time.Duration) (*loadgen.RunsResult, error) {
	rc := cfg.runs
	rc.Duration, rc.Via = d, []*loadgen.Client{c}
	rr, _, err := measuredRuns(ctx, srv, c, rc, cfg.fakeHTTP, cfg.llmURL, nil)
	if err != nil {
		return nil, err
	}
	if rr.Completed == 0 {
		return nil, fmt.Errorf("no run completed (%d failed; first error: %s)", rr.Failed, rr.FirstError)
	}
	return rr, nil
}

// measuredRuns runs the runs scenario against srv (nil: a server load did
// not start) and fills in what is measured around it: the servers' and
// the driver's CPU a run, the fake's CPU a call (fakeOK: its GET /_stats
// answered), commits and allocations a run.
func measuredRuns(ctx context.Context, srv *childServer, c *loadgen.Client, rc loadgen.RunsConfig, fakeHTTP *http.Client, llmURL string, prog io.Writer) (rr *loadgen.RunsResult, fakeOK bool, err error) {
	cpu := startCPUMeter(srv)
	fake0, fakeErr := loadgen.GetFakeStats(ctx, fakeHTTP, llmURL)
	counters0, countersErr := loadgen.BaselineCounters(ctx, rc.Via)
	rr, err = loadgen.Runs(ctx, c, rc, prog)
	if rr == nil {
		return nil, false, err
	}
	if rr.Completed > 0 {
		c := cpu.perRun(rr.Completed)
		rr.ServerCPUPerRunUs, rr.ServerSysCPUPerRunUs, rr.DriverCPUPerRunUs = c.server, c.serverSys, c.driver
		if countersErr == nil {
			if counters1, err := loadgen.Counters(ctx, rc.Via); err == nil {
				rr.PerRun(counters0, counters1)
			}
		}
	}
	if fake1, ferr := loadgen.GetFakeStats(ctx, fakeHTTP, llmURL); ferr == nil && fakeErr == nil {
		fakeOK = true
		rr.FakeCalls = fake1.Requests - fake0.Requests
		if rr.FakeCalls > 0 {
			rr.FakeCPUPerCallUs = float64(fake1.CPUUs-fake0.CPUUs) / float64(rr.FakeCalls)
		}
	}
	return rr, fakeOK, err
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// table is the text form of the result.
func (r *compareResult) table() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "A %s\nB %s\n%d rounds of %gs slices, %d clients, route %s\n\n", r.A.Binary, r.B.Binary, r.Rounds, r.SliceSeconds, r.Clients, r.Route)
	fmt.Fprintf(&sb, "%-10s %28s %28s\n", "", "A: server µs a run (÷ fake)", "B: server µs a run (÷ fake)")
	for i := range r.A.Ratio {
		fmt.Fprintf(&sb, "round %-4d %21.0f (%4.2f) %21.0f (%4.2f)\n", i+1, r.A.ServerCPUPerRunUs[i], r.A.Ratio[i], r.B.ServerCPUPerRunUs[i], r.B.Ratio[i])
	}
	fmt.Fprintf(&sb, "%-10s %21.0f (%4.2f) %21.0f (%4.2f)\n", "mean", r.A.MeanCPUPerRunUs, r.A.MeanRatio, r.B.MeanCPUPerRunUs, r.B.MeanRatio)
	fmt.Fprintf(&sb, "%-10s %28.1f %28.1f\n", "allocs", mean(r.A.AllocsPerRun), mean(r.B.AllocsPerRun))
	fmt.Fprintf(&sb, "%-10s %28.0f %28.0f\n", "writer µs", mean(r.A.WriterBusyPerRun), mean(r.B.WriterBusyPerRun))
	fmt.Fprintf(&sb, "%-10s %28.3f %28.3f\n", "commits", mean(r.A.CommitsPerRun), mean(r.B.CommitsPerRun))
	if r.A.Failed+r.B.Failed > 0 {
		fmt.Fprintf(&sb, "failed runs: A %d, B %d\n", r.A.Failed, r.B.Failed)
	}
	fmt.Fprintf(&sb, "\n%s; allocations a run %+.1f %% ± %.1f %%; the store writer's busy time a run %+.1f %% ± %.1f %%\n",
		r.Summary, r.AllocsDiffPct, r.AllocsDiffSEPct, r.WriterDiffPct, r.WriterDiffSEPct)
	return sb.String()
}
