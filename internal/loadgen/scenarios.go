package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Graphs the scenarios run. Agent prompts are fixed so every fake LLM
// reply has the same small size.
type gnode struct {
	ID       string         `json:"id"`
	Type     string         `json:"type"`
	Position map[string]int `json:"position"`
	Data     map[string]any `json:"data"`
}

type gedge struct {
	ID           string `json:"id"`
	Source       string `json:"source"`
	Target       string `json:"target"`
	SourceHandle string `json:"sourceHandle"`
}

type ggraph struct {
	Nodes []gnode `json:"nodes"`
	Edges []gedge `json:"edges"`
}

func (g *ggraph) node(id, typ string, data map[string]any) {
	if data == nil {
		data = map[string]any{}
	}
	g.Nodes = append(g.Nodes, gnode{ID: id, Type: typ, Position: map[string]int{"x": 0, "y": 0}, Data: data})
}

func (g *ggraph) edge(src, handle, dst string) {
	g.Edges = append(g.Edges, gedge{ID: fmt.Sprintf("e%d", len(g.Edges)+1), Source: src, Target: dst, SourceHandle: handle})
}

func (g *ggraph) json() json.RawMessage {
	b, _ := json.Marshal(g)
	return b
}

// ThreeNodeGraph is start → agent → agent.
func ThreeNodeGraph() json.RawMessage {
	g := &ggraph{}
	g.node("s", "start", nil)
	g.node("a", "agent", map[string]any{"agentName": "A", "userPrompt": "hi"})
	g.node("b", "agent", map[string]any{"agentName": "B", "userPrompt": "hi"})
	g.edge("s", "output", "a")
	g.edge("a", "output", "b")
	return g.json()
}

// FanoutGraph is start → width agents → one joining agent.
func FanoutGraph(width int) json.RawMessage {
	g := &ggraph{}
	g.node("s", "start", nil)
	g.node("join", "agent", map[string]any{"agentName": "Join", "userPrompt": "hi"})
	for i := 0; i < width; i++ {
		id := fmt.Sprintf("b%d", i)
		g.node(id, "agent", map[string]any{"agentName": id, "userPrompt": "hi"})
		g.edge("s", "output", id)
		g.edge(id, "output", "join")
	}
	return g.json()
}

// ApprovalGraph is start → approval → agent.
func ApprovalGraph() json.RawMessage {
	g := &ggraph{}
	g.node("s", "start", nil)
	g.node("gate", "approval", map[string]any{"prompt": "Go?"})
	g.node("after", "agent", map[string]any{"agentName": "After", "userPrompt": "hi"})
	g.edge("s", "output", "gate")
	g.edge("gate", "approve", "after")
	return g.json()
}

// AgentChainGraph is start → approval → a chain of steps agent nodes: it
// pauses at once, and once approved emits about AgentStepEvents events per
// LLM latency, a steady stream like a real workflow's.
func AgentChainGraph(steps int) json.RawMessage {
	g, _, _ := gatedChain(steps, "a", "agent", map[string]any{"agentName": "A", "userPrompt": "hi"}, "output")
	return g.json()
}

// gatedChain is start → approval → steps nodes of one type, each linked by
// handle; it returns the graph and the last node and handle.
func gatedChain(steps int, prefix, typ string, data map[string]any, handle string) (*ggraph, string, string) {
	g := &ggraph{}
	g.node("s", "start", nil)
	g.node("gate", "approval", nil)
	g.edge("s", "output", "gate")
	prev, out := "gate", "approve"
	for i := 0; i < steps; i++ {
		id := fmt.Sprintf("%s%d", prefix, i)
		g.node(id, typ, data)
		g.edge(prev, out, id)
		prev, out = id, handle
	}
	return g, prev, out
}

// AgentStepEvents is how many events one agent step of AgentChainGraph
// emits with the built-in fake's reply: step_start, start_prompt,
// llm_response, step_end (the reply arrives at once, so its text is logged
// once, as the llm_response, with no llm_delta).
const AgentStepEvents = 4

// BusyGraph is start → approval → a chain of steps if nodes → agent: it
// pauses at once, and once approved emits about 2×steps events in a few
// milliseconds (pure nodes run back to back).
func BusyGraph(steps int) json.RawMessage {
	g, prev, handle := gatedChain(steps, "c", "if", nil, "false")
	g.node("end", "agent", map[string]any{"userPrompt": "hi"})
	g.edge(prev, handle, "end")
	return g.json()
}

// progress prints a status line every second until stopped.
func progress(w io.Writer, line func() string) (stop func()) {
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprintf(w, "\r%s\n", line())
				return
			case <-t.C:
				fmt.Fprintf(w, "\r%s", line())
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// Routes the runs scenario starts runs on.
const (
	// RouteRuns is POST /api/runs (answers at once) with completions
	// watched on /api/ws.
	RouteRuns = "runs"
	// RouteCompat is AgentFlow's POST /api/run, which answers with the
	// whole state once the run pauses or ends.
	RouteCompat = "compat"
)

// RunsConfig configures the runs scenario.
type RunsConfig struct {
	Route    string // RouteRuns (default) or RouteCompat
	Duration time.Duration
	Clients  int
	Rate     float64 // runs started per second in total; 0 = as fast as possible
	Graph    json.RawMessage
	Drain    time.Duration // how long to wait for started runs to finish
	// Via, when set, are the servers runs are started on, in turn (several
	// processes on one database); completions are still watched on c.
	Via []*Client
}

// RunsResult reports the runs scenario.
type RunsResult struct {
	Started         int     `json:"started"`
	Completed       int     `json:"completed"`
	Failed          int     `json:"failed"`
	StartErrors     int     `json:"startErrors"`
	Seconds         float64 `json:"seconds"`
	StartedPerSec   float64 `json:"startedPerSec"`
	CompletedPerSec float64 `json:"completedPerSec"`
	StartLatency    Summary `json:"startLatency"`
	EndToEnd        Summary `json:"endToEnd"`
	FirstError      string  `json:"firstError,omitempty"`
	Route           string  `json:"route"`
	// CPU time per completed run, filled in by a caller that can measure
	// it (the CLI, for the server it started, on Linux): throughput on a
	// shared machine varies, CPU per run much less.
	ServerCPUPerRunUs float64 `json:"serverCpuPerRunUs,omitempty"`
	// ServerSysCPUPerRunUs is the part of ServerCPUPerRunUs spent in the
	// kernel (system time): syscalls, and on loopback the delivery of what
	// the server sends to the fake and the driver.
	ServerSysCPUPerRunUs float64 `json:"serverSysCpuPerRunUs,omitempty"`
	DriverCPUPerRunUs    float64 `json:"driverCpuPerRunUs,omitempty"`
	// The fake LLM's requests during the scenario and its CPU time per
	// request (from its GET /_stats): the same work on every run, so the
	// ratio of the server's CPU per run to it is the figure to compare on
	// a noisy machine.
	FakeCalls        int64   `json:"fakeCalls,omitempty"`
	FakeCPUPerCallUs float64 `json:"fakeCpuPerCallUs,omitempty"`
	// ServerCores is the server's GOMAXPROCS and CPU count when the load
	// tool pinned it (--cores); ServerPeakRSSMB its peak resident memory.
	ServerCores     int     `json:"serverCores,omitempty"`
	ServerPeakRSSMB float64 `json:"serverPeakRssMb,omitempty"`
	// CommitsPerRun is the store transactions of the servers (their
	// switchyard_store_commits_total) per completed run: how well the
	// writer groups commits, the other figure besides CPU to watch.
	CommitsPerRun float64 `json:"commitsPerRun,omitempty"`
	// WriterBusyPerRunUs is the time the servers' store writer spent on
	// batches (switchyard_store_writer_busy_seconds_total) per completed
	// run, WriterBusyPct its share of the time between the two reads of
	// the counters around the scenario (ServerCounters.At; averaged over
	// the servers). The writer is one goroutine per process: 1e6 ÷
	// WriterBusyPerRunUs is about the most runs a second one process can
	// complete, whatever its cores (WriterCeilingRunsPerSec).
	WriterBusyPerRunUs      float64 `json:"writerBusyPerRunUs,omitempty"`
	WriterBusyPct           float64 `json:"writerBusyPct,omitempty"`
	WriterCeilingRunsPerSec float64 `json:"writerCeilingRunsPerSec,omitempty"`
	// ServerAllocsPerRun and ServerAllocKBPerRun are the servers' heap
	// allocations per completed run (go_memstats_mallocs_total and
	// go_memstats_alloc_bytes_total), ServerGCsPer1000Runs their garbage
	// collections per 1,000 runs. Unlike CPU time they do not move with
	// the machine's load, so they show what a change to the server's path
	// saves where CPU per run cannot (what a read of /metrics allocates is
	// taken out, see BaselineCounters).
	ServerAllocsPerRun   float64 `json:"serverAllocsPerRun,omitempty"`
	ServerAllocKBPerRun  float64 `json:"serverAllocKbPerRun,omitempty"`
	ServerGCsPer1000Runs float64 `json:"serverGcsPer1000Runs,omitempty"`
}

// ServerCounters are counters of the servers' /metrics, summed over them.
type ServerCounters struct {
	Commits    float64 // switchyard_store_commits_total
	WriterBusy float64 // switchyard_store_writer_busy_seconds_total
	Servers    int     // how many servers were read
	// At is when the read began: the writer's share of the time is taken
	// over the interval between two reads.
	At         time.Time
	Mallocs    float64 // go_memstats_mallocs_total
	AllocBytes float64 // go_memstats_alloc_bytes_total
	GCs        float64 // go_gc_duration_seconds_count
	// ReadMallocs and ReadBytes are what one read of the servers' /metrics
	// allocates (BaselineCounters; zero from Counters).
	ReadMallocs, ReadBytes float64
}

// Counters reads ServerCounters from the servers of via, one /metrics
// request each. A counter a server does not have is an error.
func Counters(ctx context.Context, via []*Client) (ServerCounters, error) {
	sum := ServerCounters{At: time.Now()}
	for _, c := range via {
		text, err := c.Metrics(ctx)
		if err != nil {
			return ServerCounters{}, err
		}
		for _, f := range []struct {
			name string
			to   *float64
		}{{"switchyard_store_commits_total", &sum.Commits}, {"switchyard_store_writer_busy_seconds_total", &sum.WriterBusy},
			{"go_memstats_mallocs_total", &sum.Mallocs},
			{"go_memstats_alloc_bytes_total", &sum.AllocBytes}, {"go_gc_duration_seconds_count", &sum.GCs}} {
			v, ok := PromValue(text, f.name)
			if !ok {
				return ServerCounters{}, fmt.Errorf("%s/metrics has no %s", c.Base, f.name)
			}
			*f.to += v
		}
		sum.Servers++
	}
	return sum, nil
}

// BaselineCounters reads Counters twice in a row: the second read is the
// baseline, and what the servers allocated between the two (one read of
// /metrics, thousands of allocations) is kept in its ReadCost, which
// PerRun takes out of the figures, so they do not move with how many runs
// the reads are spread over.
func BaselineCounters(ctx context.Context, via []*Client) (ServerCounters, error) {
	first, err := Counters(ctx, via)
	if err != nil {
		return ServerCounters{}, err
	}
	c, err := Counters(ctx, via)
	if err != nil {
		return ServerCounters{}, err
	}
	c.ReadMallocs, c.ReadBytes = max(c.Mallocs-first.Mallocs, 0), max(c.AllocBytes-first.AllocBytes, 0)
	return c, nil
}

// PerRun fills in r's per-run figures from the counters read before
// (c0) and after (c1) its runs.
func (r *RunsResult) PerRun(c0, c1 ServerCounters) {
	if r.Completed <= 0 {
		return
	}
	n := float64(r.Completed)
	r.CommitsPerRun = (c1.Commits - c0.Commits) / n
	if busy := c1.WriterBusy - c0.WriterBusy; busy > 0 {
		r.WriterBusyPerRunUs = busy * 1e6 / n
		r.WriterCeilingRunsPerSec = n / busy
		if d := c1.At.Sub(c0.At).Seconds(); d > 0 && c1.Servers > 0 {
			r.WriterBusyPct = busy * 100 / d / float64(c1.Servers)
		}
	}
	r.ServerAllocsPerRun = max(c1.Mallocs-c0.Mallocs-c0.ReadMallocs, 0) / n
	r.ServerAllocKBPerRun = max(c1.AllocBytes-c0.AllocBytes-c0.ReadBytes, 0) / 1024 / n
	r.ServerGCsPer1000Runs = (c1.GCs - c0.GCs) * 1000 / n
}

// Runs starts runs for cfg.Duration from cfg.Clients clients and measures
// start latency, end-to-end latency and throughput.
func Runs(ctx context.Context, c *Client, cfg RunsConfig, prog io.Writer) (*RunsResult, error) {
	if cfg.Clients <= 0 {
		cfg.Clients = 8
	}
	if cfg.Graph == nil {
		cfg.Graph = ThreeNodeGraph()
	}
	if cfg.Drain <= 0 {
		cfg.Drain = 60 * time.Second
	}
	switch cfg.Route {
	case "", RouteRuns:
	case RouteCompat:
		return runsCompat(ctx, c, cfg, prog)
	default:
		return nil, fmt.Errorf("unknown route %q: want %q or %q", cfg.Route, RouteRuns, RouteCompat)
	}
	sw, err := c.WatchStatuses(ctx)
	if err != nil {
		return nil, err
	}
	defer sw.Close()
	var (
		mu        sync.Mutex
		startedAt = map[string]time.Time{}
		ids       []string
		startLat  Latencies
		nStarted  atomic.Int64
		nErr      atomic.Int64
		firstErr  atomic.Value
	)
	begin := time.Now()
	deadline := begin.Add(cfg.Duration)
	stop := progress(prog, func() string {
		el := time.Since(begin).Seconds()
		done := sw.Count(snapshot(&mu, &ids), terminal...)
		return fmt.Sprintf("runs: %6.1fs  started %d (%.0f/s)  finished %d (%.0f/s)  errors %d",
			el, nStarted.Load(), float64(nStarted.Load())/el, done, float64(done)/el, nErr.Load())
	})
	drive(ctx, c, cfg, deadline, func(c *Client) {
		t0 := time.Now()
		id, err := c.StartRun(ctx, cfg.Graph, "load")
		if err != nil {
			nErr.Add(1)
			firstErr.CompareAndSwap(nil, err.Error())
			return
		}
		startLat.Add(time.Since(t0))
		nStarted.Add(1)
		mu.Lock()
		startedAt[id] = t0
		ids = append(ids, id)
		mu.Unlock()
	})
	window := time.Since(begin)
	res := &RunsResult{Route: RouteRuns, Started: int(nStarted.Load()), StartErrors: int(nErr.Load()), StartLatency: startLat.Summary()}
	var e2e Latencies
	var last time.Time
	drainBy := time.Now().Add(cfg.Drain)
	for _, id := range ids {
		st, at, err := sw.Wait(id, drainBy, terminal...)
		if err != nil {
			break
		}
		if st == "completed" {
			res.Completed++
		} else {
			res.Failed++
		}
		e2e.Add(at.Sub(startedAt[id]))
		if at.After(last) {
			last = at
		}
	}
	stop()
	total := window
	if last.Sub(begin) > total {
		total = last.Sub(begin)
	}
	res.Seconds = total.Seconds()
	res.StartedPerSec = float64(res.Started) / window.Seconds()
	res.CompletedPerSec = float64(res.Completed) / total.Seconds()
	res.EndToEnd = e2e.Summary()
	if v, ok := firstErr.Load().(string); ok {
		res.FirstError = v
	}
	return res, nil
}

// runsCompat is the runs scenario on POST /api/run: each request answers
// when its run ends, so the answer is the completion; start latency and
// end-to-end latency are the same figure.
func runsCompat(ctx context.Context, c *Client, cfg RunsConfig, prog io.Writer) (*RunsResult, error) {
	var (
		lat                          Latencies
		nStarted, nDone, nFail, nErr atomic.Int64
		firstErr                     atomic.Value
	)
	begin := time.Now()
	deadline := begin.Add(cfg.Duration)
	stop := progress(prog, func() string {
		el := time.Since(begin).Seconds()
		return fmt.Sprintf("runs (compat): %6.1fs  finished %d (%.0f/s)  failed %d  errors %d",
			el, nDone.Load(), float64(nDone.Load())/el, nFail.Load(), nErr.Load())
	})
	drive(ctx, c, cfg, deadline, func(c *Client) {
		t0 := time.Now()
		_, status, err := c.CompatRun(ctx, cfg.Graph, "load")
		var apiErr *APIError
		switch {
		case err != nil && (status == "" || errors.As(err, &apiErr)):
			// Not started (or no answer): a start error.
			nErr.Add(1)
			firstErr.CompareAndSwap(nil, err.Error())
			return
		case status == "completed":
			nDone.Add(1)
		default:
			nFail.Add(1)
			if err != nil {
				firstErr.CompareAndSwap(nil, err.Error())
			} else {
				firstErr.CompareAndSwap(nil, "run ended "+status)
			}
		}
		nStarted.Add(1)
		lat.Add(time.Since(t0))
	})
	stop()
	total := time.Since(begin)
	res := &RunsResult{Route: RouteCompat, Started: int(nStarted.Load()), Completed: int(nDone.Load()),
		Failed: int(nFail.Load()), StartErrors: int(nErr.Load()), Seconds: total.Seconds(),
		StartLatency: lat.Summary(), EndToEnd: lat.Summary()}
	res.StartedPerSec = float64(res.Started) / total.Seconds()
	res.CompletedPerSec = float64(res.Completed) / total.Seconds()
	if v, ok := firstErr.Load().(string); ok {
		res.FirstError = v
	}
	return res, nil
}

// drive calls call from cfg.Clients goroutines, each with its client of
// cfg.Via in turn (c when none), until deadline or ctx ends, at cfg.Rate
// calls per second in all when set; it returns once every one stopped.
// Both runs routes share it: only the call differs.
func drive(ctx context.Context, c *Client, cfg RunsConfig, deadline time.Time, call func(c *Client)) {
	var tick <-chan time.Time
	if cfg.Rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / cfg.Rate))
		defer t.Stop()
		tick = t.C
	}
	via := cfg.Via
	if len(via) == 0 {
		via = []*Client{c}
	}
	var wg sync.WaitGroup
	for i := range cfg.Clients {
		wg.Go(func() {
			c := via[i%len(via)]
			for time.Now().Before(deadline) && ctx.Err() == nil {
				if tick != nil {
					select {
					case <-tick:
					case <-ctx.Done():
						return
					}
				}
				call(c)
			}
		})
	}
	wg.Wait()
}

func snapshot(mu *sync.Mutex, ids *[]string) []string {
	mu.Lock()
	defer mu.Unlock()
	return append([]string(nil), (*ids)...)
}

// FanoutConfig configures the fanout scenario.
type FanoutConfig struct {
	Width      int
	LLMLatency time.Duration // the fake's latency, to compare against
	// Repeat runs this many fan-outs one after the other (at least one).
	// The first opens the server's connections to the fake; the next
	// reuse them, as a server that has been up a while would.
	Repeat int
	// ServerCPU, when set, reads the CPU time the server has used so far
	// (false when it cannot): each fan-out's share is reported, so a wall
	// time can be told apart from a busy machine's.
	ServerCPU func() (time.Duration, bool)
	// FakeURL, when set, is the fake LLM's url: its GET /_stats gives its
	// CPU per call over the fan-outs, the machine's speed beside the wall,
	// and the connections each fan-out opened to it. FakeHTTP reads it
	// (nil: the default client).
	FakeURL  string
	FakeHTTP *http.Client
}

// FanoutResult reports the fanout scenario.
type FanoutResult struct {
	Width         int     `json:"width"`
	Status        string  `json:"status"`
	WallMs        float64 `json:"wallMs"`
	LLMLatencyMs  float64 `json:"llmLatencyMs"`
	IdealMs       float64 `json:"idealMs"` // branches and join: two latencies
	OverheadMs    float64 `json:"overheadMs"`
	PerNodeUs     float64 `json:"perNodeOverheadUs"`
	StartLatentMs float64 `json:"startLatencyMs"`
	// WallsMs is each fan-out's wall time with Repeat > 1 (the fields
	// above are the first's).
	WallsMs []float64 `json:"wallsMs,omitempty"`
	// StartsMs is each fan-out's start latency with Repeat > 1: how long
	// POST /api/runs took to answer for the 1,000-node graph.
	StartsMs []float64 `json:"startsMs,omitempty"`
	// ServerCPUMs is each fan-out's server CPU time (with ServerCPU).
	ServerCPUMs []float64 `json:"serverCpuMs,omitempty"`
	// FakeCPUPerCallUs is the fake LLM's CPU per call over all the
	// fan-outs (with FakeURL): on a loaded machine it rises with the walls.
	FakeCPUPerCallUs float64 `json:"fakeCpuPerCallUs,omitempty"`
	// FakeConns is the connections each fan-out opened to the fake LLM
	// (with FakeURL): one per branch over HTTP/1.1, a few over HTTP/2.
	FakeConns []int64 `json:"fakeConns,omitempty"`
}

// Fanout runs one W-wide fan-out with a join and reports wall time against
// the ideal of one LLM latency for all branches plus one for the join.
func Fanout(ctx context.Context, c *Client, cfg FanoutConfig) (*FanoutResult, error) {
	sw, err := c.WatchStatuses(ctx)
	if err != nil {
		return nil, err
	}
	defer sw.Close()
	var (
		first        *FanoutResult
		walls        []float64
		starts       []float64
		cpus         []float64
		conns        []int64
		fake0, fakeI FakeStats
	)
	fakeOK := false
	if cfg.FakeURL != "" {
		var err error
		fake0, err = GetFakeStats(ctx, cfg.FakeHTTP, cfg.FakeURL)
		fakeOK, fakeI = err == nil, fake0
	}
	cpuOK := cfg.ServerCPU != nil
	for range max(cfg.Repeat, 1) {
		var cpu0 time.Duration
		if cpuOK {
			cpu0, cpuOK = cfg.ServerCPU()
		}
		res, err := fanoutOnce(ctx, c, sw, cfg)
		if err != nil {
			return nil, err
		}
		if cpuOK {
			var cpu1 time.Duration
			if cpu1, cpuOK = cfg.ServerCPU(); cpuOK {
				cpus = append(cpus, ms(cpu1-cpu0))
			}
		}
		if fakeOK {
			st, err := GetFakeStats(ctx, cfg.FakeHTTP, cfg.FakeURL)
			if fakeOK = err == nil; fakeOK {
				// The stats reads share one kept-alive connection, opened by the first.
				conns = append(conns, st.Conns-fakeI.Conns)
				fakeI = st
			}
		}
		if first == nil {
			first = res
		} else if res.Status != "completed" && first.Status == "completed" {
			first.Status = res.Status // a later fan-out that did not complete says so
		}
		walls = append(walls, res.WallMs)
		starts = append(starts, res.StartLatentMs)
	}
	if len(walls) > 1 {
		first.WallsMs, first.StartsMs = walls, starts
	}
	if cpuOK {
		first.ServerCPUMs = cpus
	}
	if fakeOK && fakeI.Requests > fake0.Requests {
		first.FakeCPUPerCallUs = float64(fakeI.CPUUs-fake0.CPUUs) / float64(fakeI.Requests-fake0.Requests)
		first.FakeConns = conns
	}
	return first, nil
}

// fanoutOnce runs one fan-out, its end seen on sw.
func fanoutOnce(ctx context.Context, c *Client, sw *StatusWatch, cfg FanoutConfig) (*FanoutResult, error) {
	t0 := time.Now()
	id, err := c.StartRun(ctx, FanoutGraph(cfg.Width), "load")
	if err != nil {
		return nil, err
	}
	startLat := time.Since(t0)
	st, at, err := sw.Wait(id, time.Now().Add(5*time.Minute), terminal...)
	if err != nil {
		return nil, err
	}
	wall := at.Sub(t0)
	ideal := 2 * cfg.LLMLatency
	over := wall - ideal
	return &FanoutResult{Width: cfg.Width, Status: st, WallMs: ms(wall), LLMLatencyMs: ms(cfg.LLMLatency),
		IdealMs: ms(ideal), OverheadMs: ms(over), PerNodeUs: float64(over.Microseconds()) / float64(cfg.Width+2),
		StartLatentMs: ms(startLat)}, nil
}

// WatchersConfig configures the watchers scenario.
type WatchersConfig struct {
	Watchers int // websocket watchers in total
	Runs     int // busy runs they watch
	Steps    int // steps per run
	// Burst: each run is a chain of if nodes that emits about 2×Steps
	// events at once, and EventsRate paces when runs are released.
	// Otherwise (steady) each run is a chain of agent nodes released
	// together, and the LLM latency sets the rate (see SteadyLatency).
	Burst      bool
	EventsRate float64 // burst: target events per second across runs; 0 = all at once
	// WatchVia, when set, is the server the watchers connect to, while the
	// runs are started and driven on c: delivery across processes sharing
	// one database.
	WatchVia *Client
}

// SteadyLatency is the LLM latency at which runs agent chains emit about
// rate events per second in total (a step also costs about 3 ms
// of its own: commits, HTTP).
func SteadyLatency(runs int, rate float64) time.Duration {
	if runs <= 0 || rate <= 0 {
		return 0
	}
	d := time.Duration(float64(time.Second)*float64(runs*AgentStepEvents)/rate) - 3*time.Millisecond
	return max(d, 0)
}

// WatchersResult reports the watchers scenario.
type WatchersResult struct {
	Mode          string  `json:"mode"` // steady or burst
	Watchers      int     `json:"watchers"`
	Runs          int     `json:"runs"`
	EventsPerRun  int     `json:"eventsPerRun"`
	Delivered     int64   `json:"delivered"`
	Gaps          int64   `json:"gaps"`
	Duplicates    int64   `json:"duplicates"`
	Incomplete    int     `json:"incompleteWatchers"`
	EventsPerSec  float64 `json:"eventsPerSec"` // emitted by the runs
	Delivery      Summary `json:"deliveryLatency"`
	DeliveredRate float64 `json:"deliveredPerSec"`
}

// startPaused starts n runs of graph and waits until each is paused.
func startPaused(ctx context.Context, c *Client, sw *StatusWatch, graph json.RawMessage, n int) ([]string, error) {
	ids := make([]string, n)
	for i := range ids {
		var err error
		if ids[i], err = c.StartRun(ctx, graph, "load"); err != nil {
			return nil, err
		}
	}
	for _, id := range ids {
		if _, _, err := sw.Wait(id, time.Now().Add(2*time.Minute), "paused"); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// Watchers starts busy runs that pause first, attaches websocket watchers,
// then releases the runs at the target event rate and measures delivery
// latency, gaps and duplicates for every watcher.
func Watchers(ctx context.Context, c *Client, cfg WatchersConfig, prog io.Writer) (*WatchersResult, error) {
	if cfg.Runs <= 0 {
		cfg.Runs = 10
	}
	if cfg.Watchers <= 0 {
		cfg.Watchers = 50
	}
	if cfg.Steps <= 0 {
		cfg.Steps = 200
	}
	sw, err := c.WatchStatuses(ctx)
	if err != nil {
		return nil, err
	}
	defer sw.Close()
	graph, mode := AgentChainGraph(cfg.Steps), "steady"
	if cfg.Burst {
		graph, mode = BusyGraph(cfg.Steps), "burst"
	}
	ids, err := startPaused(ctx, c, sw, graph, cfg.Runs)
	if err != nil {
		return nil, err
	}
	res := &WatchersResult{Mode: mode, Watchers: cfg.Watchers, Runs: cfg.Runs}
	var (
		lat                  Latencies
		delivered, gaps, dup atomic.Int64
		incomplete           atomic.Int64
		ready                sync.WaitGroup
		done                 sync.WaitGroup
		lastMu               sync.Mutex
		lastSeq              = map[string]int64{} // per run, the highest seq any watcher saw
	)
	for w := 0; w < cfg.Watchers; w++ {
		id := ids[w%len(ids)]
		wc := c
		if cfg.WatchVia != nil {
			wc = cfg.WatchVia
		}
		conn, err := wc.Dial(ctx, "/api/runs/"+id+"/ws?after=0")
		if err != nil {
			return nil, fmt.Errorf("watcher %d: %w", w, err)
		}
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			defer conn.Close()
			var last int64
			defer func() {
				lastMu.Lock()
				lastSeq[id] = max(lastSeq[id], last)
				lastMu.Unlock()
			}()
			readyOnce := sync.OnceFunc(ready.Done)
			defer readyOnce()
			live := false
			for {
				_ = conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
				var ev struct {
					Seq       int64     `json:"seq"`
					Type      string    `json:"type"`
					Content   string    `json:"content"`
					Timestamp time.Time `json:"timestamp"`
				}
				if err := conn.ReadJSON(&ev); err != nil {
					var ce *websocketCloseError
					if !isNormalClose(err, &ce) {
						incomplete.Add(1)
					}
					return
				}
				now := time.Now()
				switch {
				case ev.Seq == last+1:
				case ev.Seq <= last:
					dup.Add(1)
				default:
					gaps.Add(1)
				}
				if ev.Seq > last {
					last = ev.Seq
				}
				if ev.Type == "wait_input" { // replay reached the pause: live from here
					live = true
					readyOnce()
					continue
				}
				if live {
					delivered.Add(1)
					lat.Add(now.Sub(ev.Timestamp))
				}
			}
		}()
	}
	ready.Wait()
	// Release the runs: bursts paced so the runs emit about EventsRate
	// events/s; steady runs all at once (their LLM latency paces them).
	gap := time.Duration(0)
	if cfg.Burst && cfg.EventsRate > 0 {
		gap = time.Duration(float64(time.Second) * float64(2*cfg.Steps+8) / cfg.EventsRate)
	}
	begin := time.Now()
	stop := progress(prog, func() string {
		return fmt.Sprintf("watchers: %6.1fs  delivered %d  gaps %d  duplicates %d",
			time.Since(begin).Seconds(), delivered.Load(), gaps.Load(), dup.Load())
	})
	for i, id := range ids {
		if err := c.Decide(ctx, id, "gate", "approve"); err != nil {
			stop()
			return nil, err
		}
		if gap > 0 && i < len(ids)-1 {
			time.Sleep(gap)
		}
	}
	var lastAt time.Time
	for _, id := range ids {
		_, at, err := sw.Wait(id, time.Now().Add(2*time.Minute), terminal...)
		if err != nil {
			stop()
			return nil, err
		}
		if at.After(lastAt) {
			lastAt = at
		}
	}
	done.Wait()
	stop()
	el := lastAt.Sub(begin).Seconds()
	res.Delivered, res.Gaps, res.Duplicates, res.Incomplete = delivered.Load(), gaps.Load(), dup.Load(), int(incomplete.Load())
	res.Delivery = lat.Summary()
	var total int64
	for _, n := range lastSeq {
		total += n
	}
	if len(lastSeq) > 0 {
		res.EventsPerRun = int(total / int64(len(lastSeq)))
	}
	if el > 0 {
		res.EventsPerSec = float64(total) / el
		res.DeliveredRate = float64(res.Delivered) / el
	}
	return res, nil
}

// ApprovalsConfig configures the approvals scenario.
type ApprovalsConfig struct {
	Runs       int // runs paused at an approval
	Clients    int // concurrent approving clients
	Duplicates int // how many clients try each approval (>=2 tests exactly-once)
	// OnPaused, if set, is called once every run is paused, before any is
	// approved (the CLI measures the server's memory then).
	OnPaused func(r *ApprovalsResult)
}

// ApprovalsResult reports the approvals scenario.
type ApprovalsResult struct {
	Runs         int     `json:"runs"`
	Attempts     int64   `json:"attempts"`
	Wins         int64   `json:"wins"`
	Conflicts    int64   `json:"conflicts"`
	Errors       int64   `json:"errors"`
	WonTwice     int     `json:"wonTwice"`
	NeverWon     int     `json:"neverWon"`
	Completed    int     `json:"completed"`
	DrainSeconds float64 `json:"drainSeconds"`
	Decide       Summary `json:"decideLatency"`
	FirstError   string  `json:"firstError,omitempty"`
	// Server memory with every run paused, when the caller can read it.
	ServerRSSPausedMB float64 `json:"serverRssPausedMb,omitempty"`
	ServerGoroutines  int     `json:"serverGoroutines,omitempty"`
}

// Approvals pauses many runs at an approval, then lets several clients
// approve all of them concurrently, each approval attempted Duplicates
// times: every approval must be won exactly once.
func Approvals(ctx context.Context, c *Client, cfg ApprovalsConfig, prog io.Writer) (*ApprovalsResult, error) {
	if cfg.Runs <= 0 {
		cfg.Runs = 500
	}
	if cfg.Clients <= 0 {
		cfg.Clients = 8
	}
	if cfg.Duplicates <= 0 {
		cfg.Duplicates = 2
	}
	sw, err := c.WatchStatuses(ctx)
	if err != nil {
		return nil, err
	}
	defer sw.Close()
	graph := ApprovalGraph()
	ids, err := startPaused(ctx, c, sw, graph, cfg.Runs)
	if err != nil {
		return nil, err
	}
	res := &ApprovalsResult{Runs: len(ids)}
	if cfg.OnPaused != nil {
		cfg.OnPaused(res)
	}
	work := make([]string, 0, len(ids)*cfg.Duplicates)
	for _, id := range ids {
		for k := 0; k < cfg.Duplicates; k++ {
			work = append(work, id)
		}
	}
	rand.Shuffle(len(work), func(i, j int) { work[i], work[j] = work[j], work[i] })
	var (
		next                  atomic.Int64
		wins, conflicts, errs atomic.Int64
		winsBy                sync.Map
		lat                   Latencies
		firstErr              atomic.Value
		wg                    sync.WaitGroup
	)
	begin := time.Now()
	stop := progress(prog, func() string {
		return fmt.Sprintf("approvals: %6.1fs  attempts %d  wins %d  conflicts %d  completed %d/%d",
			time.Since(begin).Seconds(), next.Load(), wins.Load(), conflicts.Load(), sw.Count(ids, "completed"), len(ids))
	})
	for i := 0; i < cfg.Clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := next.Add(1) - 1
				if int(k) >= len(work) {
					return
				}
				id := work[k]
				t0 := time.Now()
				err := c.Decide(ctx, id, "gate", "approve")
				lat.Add(time.Since(t0))
				var ae *APIError
				switch {
				case err == nil:
					wins.Add(1)
					n, _ := winsBy.LoadOrStore(id, new(atomic.Int64))
					n.(*atomic.Int64).Add(1)
				case errors.As(err, &ae) && ae.Status == 409:
					conflicts.Add(1)
				default:
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if _, _, err := sw.Wait(id, time.Now().Add(2*time.Minute), terminal...); err == nil {
			res.Completed++
		}
	}
	stop()
	res.DrainSeconds = time.Since(begin).Seconds()
	res.Attempts = int64(len(work))
	res.Wins, res.Conflicts, res.Errors = wins.Load(), conflicts.Load(), errs.Load()
	for _, id := range ids {
		v, ok := winsBy.Load(id)
		switch {
		case !ok:
			res.NeverWon++
		case v.(*atomic.Int64).Load() > 1:
			res.WonTwice++
		}
	}
	res.Decide = lat.Summary()
	if v, ok := firstErr.Load().(string); ok {
		res.FirstError = v
	}
	return res, nil
}

// Table renders a result as aligned "key  value" lines for humans.
func Table(v any) string {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		val := m[k]
		if sub, ok := val.(map[string]any); ok {
			if _, isSummary := sub["p50Ms"]; isSummary {
				val = fmt.Sprintf("p50 %.2fms  p90 %.2fms  p99 %.2fms  max %.2fms  (n=%v)",
					sub["p50Ms"], sub["p90Ms"], sub["p99Ms"], sub["maxMs"], sub["count"])
			}
		}
		if f, ok := val.(float64); ok {
			val = strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", f), "0"), ".")
		}
		fmt.Fprintf(&sb, "  %-20s %v\n", k, val)
	}
	return sb.String()
}
