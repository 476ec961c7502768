package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/internal/loadgen"
)

func cmdLoad(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "", "URL of a running server (default: start one with a fresh database)")
	token := fs.String("token", os.Getenv("SWITCHYARD_TOKEN"), "API token of the --server (default $SWITCHYARD_TOKEN); the servers load starts make their own")
	llmLatency := fs.Duration("llm-latency", 0, "latency of the built-in fake OpenAI-compatible endpoint")
	fakeAddr := fs.String("fake-addr", "127.0.0.1:0", "where the built-in fake LLM listens (point --server's OPENAI_BASE_URL at http://ADDR/v1)")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	quiet := fs.Bool("quiet", false, "no progress line")
	duration := fs.Duration("duration", 10*time.Second, "runs: how long to start runs")
	clients := fs.Int("clients", 0, "runs, approvals: concurrent clients (default 32 for runs, 8 for approvals)")
	rate := fs.Float64("rate", 0, "runs: target runs started per second (0 = as fast as possible)")
	width := fs.Int("width", 1000, "fanout: branches")
	repeat := fs.Int("repeat", 1, "fanout: fan-outs run one after the other on the same server (the first opens the connections to the fake LLM, the next reuse them); wallsMs lists each one's time")
	watchers := fs.Int("watchers", 50, "watchers: websocket watchers")
	busyRuns := fs.Int("runs", 10, "watchers: busy runs watched; approvals: runs paused at an approval")
	steps := fs.Int("steps", 200, "watchers: steps per busy run (an agent step emits 5 events, an if step 2)")
	eventRate := fs.Float64("event-rate", 5000, "watchers: target events per second emitted by the runs")
	burst := fs.Bool("burst", false, "watchers: runs of if nodes that each emit 2×steps events at once, released at --event-rate, instead of steady agent chains")
	dups := fs.Int("duplicates", 2, "approvals: clients racing for each approval")
	servers := fs.Int("servers", 1, "runs, watchers: serve processes to start on the --db database (runs: started on each in turn; watchers: runs on the first, watchers on the second)")
	db := fs.String("db", os.Getenv("SWITCHYARD_DB"), "PostgreSQL URL for the servers started (default $SWITCHYARD_DB; needed for --servers > 1); the database should be empty")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the load process (the clients) to this file; profile the server with SWITCHYARD_CPUPROFILE")
	route := fs.String("route", loadgen.RouteRuns, "runs: where runs start: \"runs\" (POST /api/runs, completions watched on /api/ws) or \"compat\" (AgentFlow's POST /api/run, graph inline, answered when the run ends)")
	graphFile := fs.String("graph", "", "runs: a drawn graph's JSON `file` to run instead of start → agent → agent (either route)")
	llmTLS := fs.Bool("llm-tls", false, "the fake LLM started serves HTTPS and HTTP/2, as hosted providers do (the servers load starts trust its certificate)")
	fakeURL := fs.String("fake-url", "", "use this running `switchyard fake-llm` (its url line, e.g. http://127.0.0.1:9090/v1) instead of starting one; its CPU per call is read from its GET /_stats")
	cores := fs.Int("cores", 0, "pin the server started to N CPUs (--server-cpus, default the first N) with GOMAXPROCS=N (Linux)")
	serverCPUs := fs.String("server-cpus", "", "CPU `list` (e.g. 0-3,8) the server started is pinned to (Linux; default with --cores N: 0-(N-1))")
	fakeCPUs := fs.String("fake-cpus", "", "CPU `list` the fake LLM started is pinned to (Linux)")
	against := fs.String("against", "", "runs: compare with another switchyard `binary`: a server of each is started alike and loaded in turn, --rounds slices of --duration each (A B, B A, ...); prints each one's figures and B's change against A with its standard error (Linux)")
	rounds := fs.Int("rounds", 6, "runs with --against: paired rounds")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: switchyard load runs|fanout|watchers|approvals [flags]")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	scenario := pos[0]
	switch scenario {
	case "runs", "fanout", "watchers", "approvals":
	default:
		fmt.Fprintf(stderr, "switchyard load: unknown scenario %q\n", scenario)
		fs.Usage()
		return exitUsage
	}
	if *route != loadgen.RouteRuns && *route != loadgen.RouteCompat {
		fmt.Fprintf(stderr, "switchyard load: --route %q: want %q or %q\n", *route, loadgen.RouteRuns, loadgen.RouteCompat)
		return exitUsage
	}
	var workload json.RawMessage
	if *graphFile != "" {
		if workload, err = readLoadGraph(*graphFile); err != nil {
			fmt.Fprintf(stderr, "switchyard load: --graph: %v\n", err)
			return exitUsage
		}
	}
	srvPin, err := serverPinning(*cores, *serverCPUs)
	if err != nil {
		fmt.Fprintf(stderr, "switchyard load: %v\n", err)
		return exitUsage
	}
	fakePin, err := parseCPUList(*fakeCPUs)
	if err != nil {
		fmt.Fprintf(stderr, "switchyard load: --fake-cpus: %v\n", err)
		return exitUsage
	}
	if (len(srvPin) > 0 && *server != "") || (len(fakePin) > 0 && *fakeURL != "") {
		fmt.Fprintln(stderr, "switchyard load: --cores/--server-cpus pin the server load starts (not --server), --fake-cpus the fake it starts (not --fake-url)")
		return exitUsage
	}
	if *llmTLS && (*fakeURL != "" || *server != "") {
		fmt.Fprintln(stderr, "switchyard load: --llm-tls is for the fake and servers load starts (not --fake-url or --server: start the fake with fake-llm --tls --cert-out FILE and the server with SSL_CERT_FILE=FILE)")
		return exitUsage
	}
	if *servers < 1 || (*servers > 1 && (*db == "" || *server != "")) {
		fmt.Fprintln(stderr, "switchyard load: --servers N > 1 needs --db (and no --server)")
		return exitUsage
	}
	if *against != "" {
		switch {
		case scenario != "runs" || *server != "" || *servers > 1:
			fmt.Fprintln(stderr, "switchyard load: --against is for load runs with one server that load starts (not --server or --servers)")
			return exitUsage
		case *rounds < 1:
			fmt.Fprintf(stderr, "switchyard load: --rounds %d: want at least 1\n", *rounds)
			return exitUsage
		}
		if err := checkAgainst(*against); err != nil {
			fmt.Fprintf(stderr, "switchyard load: --against %s: %v\n", *against, err)
			return exitUsage
		}
	}
	tuneGC() // the load driver should take as little CPU from the server as it can
	if scenario == "watchers" && !*burst && !flagSet(fs, "llm-latency") {
		// Steady runs: the LLM latency paces the agent chains at --event-rate.
		*llmLatency = loadgen.SteadyLatency(*busyRuns, *eventRate)
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "switchyard load: --cpuprofile: %v\n", err)
			return exitUsage
		}
		defer stop()
	}
	if scenario == "fanout" && *llmLatency == 0 && !flagSet(fs, "llm-latency") {
		*llmLatency = 200 * time.Millisecond
	}
	llmURL := *fakeURL
	var fakeHTTP *http.Client // reads the fake's /_stats (nil: the default client)
	var srvEnv []string
	if llmURL == "" {
		// The fake runs in its own process, so its CPU is measured apart
		// from the clients'.
		fake, err := startFakeChild(ctx, *fakeAddr, *llmLatency, fakePin, *llmTLS)
		if err != nil {
			fmt.Fprintln(stderr, "switchyard load: fake LLM:", err)
			return exitFailed
		}
		defer fake.stop()
		llmURL, fakeHTTP = fake.url, fake.http
		if fake.certFile != "" {
			// Go reads the trusted roots from this file instead of the
			// system's: the servers trust the fake, and only it.
			srvEnv = append(srvEnv, "SSL_CERT_FILE="+fake.certFile)
		}
	}
	base := *server
	var srv *childServer
	var others []*loadgen.Client
	var serveExtra []string // the flags every server started gets
	if base == "" && os.Getenv("GOMAXPROCS") == "" {
		// The server runs on this machine: the driver (clients and fake
		// LLM) keeps to one P, so its idle threads do not spin for work
		// on the cores the server needs (measured: ~15% less driver CPU
		// per run, and more runs/s).
		runtime.GOMAXPROCS(1)
	}
	if base == "" {
		var extra []string
		if scenario == "fanout" {
			// One run's branches all at once: lift the per-run and LLM caps.
			n := strconv.Itoa(*width + 8)
			extra = []string{"--max-parallel", n, "--max-llm-calls", n}
		}
		if *db != "" {
			extra = append(extra, "--db", *db)
		}
		serveExtra = extra
		srv, err = startServer(ctx, llmURL, srvEnv, stderr, srvPin, extra...)
		if err != nil {
			fmt.Fprintln(stderr, "switchyard load: start server:", err)
			return exitFailed
		}
		defer srv.stop()
		base, *token = srv.url, srv.token
		for i := 1; i < *servers; i++ {
			o, err := startServer(ctx, llmURL, srvEnv, stderr, srvPin, extra...)
			if err != nil {
				fmt.Fprintln(stderr, "switchyard load: start server:", err)
				return exitFailed
			}
			defer o.stop()
			srv.peers = append(srv.peers, o)
			others = append(others, loadgen.NewClient(o.url, o.token))
		}
	}
	if !*quiet {
		fmt.Fprintf(stderr, "load %s against %s (fake LLM %s, latency %s)\n", scenario, base, llmURL, *llmLatency)
	}
	var prog io.Writer = stderr
	if *quiet {
		prog = nil
	}
	c := loadgen.NewClient(base, *token)
	via := append([]*loadgen.Client{c}, others...)
	var res any
	switch scenario {
	case "runs":
		n := *clients
		if n <= 0 {
			// Enough requests in flight that the server, not the round
			// trips of a few clients, sets the pace.
			n = 32
		}
		if *against != "" {
			var progFn func(string)
			if !*quiet {
				progFn = func(line string) { fmt.Fprintln(stderr, line) }
			}
			res, err = runCompare(ctx, srv, compareConfig{against: *against, rounds: *rounds, slice: *duration,
				runs:   loadgen.RunsConfig{Route: *route, Graph: workload, Clients: n, Rate: *rate},
				llmURL: llmURL, fakeHTTP: fakeHTTP, env: srvEnv, cpus: srvPin, extra: serveExtra}, progFn)
			break
		}
		var rr *loadgen.RunsResult
		var fakeOK bool
		rr, fakeOK, err = measuredRuns(ctx, srv, c, loadgen.RunsConfig{Route: *route, Graph: workload, Duration: *duration, Clients: n, Rate: *rate, Via: via}, fakeHTTP, llmURL, prog)
		if rr != nil {
			if !fakeOK && !*quiet {
				fmt.Fprintln(stderr, "switchyard load: the fake LLM's GET /_stats did not answer: no fake CPU per call")
			}
			rr.ServerCores = len(srvPin)
			if srv != nil {
				rr.ServerPeakRSSMB = srv.peakRSS()
			}
		}
		res = rr
	case "fanout":
		fcfg := loadgen.FanoutConfig{Width: *width, LLMLatency: *llmLatency, Repeat: *repeat, FakeURL: llmURL, FakeHTTP: fakeHTTP}
		if m := startCPUMeter(srv); m.srvOK {
			fcfg.ServerCPU = func() (time.Duration, bool) {
				t, ok := m.serversCPU()
				return t.total(), ok
			}
		}
		res, err = loadgen.Fanout(ctx, c, fcfg)
	case "watchers":
		wcfg := loadgen.WatchersConfig{Watchers: *watchers, Runs: *busyRuns, Steps: *steps, EventsRate: *eventRate, Burst: *burst}
		if len(others) > 0 {
			wcfg.WatchVia = others[0]
		}
		res, err = loadgen.Watchers(ctx, c, wcfg, prog)
	case "approvals":
		n := *busyRuns
		if !flagSet(fs, "runs") {
			n = 500
		}
		cfg := loadgen.ApprovalsConfig{Runs: n, Clients: max(*clients, 0), Duplicates: *dups}
		if srv != nil {
			cfg.OnPaused = func(r *loadgen.ApprovalsResult) {
				r.ServerRSSPausedMB, r.ServerGoroutines = srv.memory(base)
			}
		}
		res, err = loadgen.Approvals(ctx, c, cfg, prog)
	}
	if err != nil {
		fmt.Fprintln(stderr, "switchyard load:", err)
		return exitFailed
	}
	if *asJSON {
		printJSON(stdout, map[string]any{"scenario": scenario, "result": res})
	} else if cr, ok := res.(*compareResult); ok {
		fmt.Fprintf(stdout, "%s\n%s", scenario, cr.table())
	} else {
		fmt.Fprintf(stdout, "%s\n%s", scenario, loadgen.Table(res))
	}
	return exitOK
}

// cpuMeter measures the CPU time this process and the server it started
// spend during a scenario (Linux; zero elsewhere or for --server).
type cpuMeter struct {
	srvPIDs       []int // the server and its peers (--servers)
	srv0, self0   procTimes
	srvOK, selfOK bool
}

func startCPUMeter(srv *childServer) *cpuMeter {
	m := &cpuMeter{}
	if srv != nil && srv.cmd.Process != nil {
		m.srvPIDs = append(m.srvPIDs, srv.cmd.Process.Pid)
		for _, p := range srv.peers {
			m.srvPIDs = append(m.srvPIDs, p.cmd.Process.Pid)
		}
		m.srv0, m.srvOK = m.serversCPU()
	}
	m.self0, m.selfOK = procCPU(os.Getpid())
	return m
}

// serversCPU is the CPU time of every server process, summed.
func (m *cpuMeter) serversCPU() (procTimes, bool) {
	var sum procTimes
	for _, pid := range m.srvPIDs {
		t, ok := procCPU(pid)
		if !ok {
			return procTimes{}, false
		}
		sum.user += t.user
		sum.sys += t.sys
	}
	return sum, len(m.srvPIDs) > 0
}

// cpuPerRun is microseconds of CPU per run: the servers' (all of them),
// the part of it in the kernel, and the driver's.
type cpuPerRun struct{ server, serverSys, driver float64 }

func (m *cpuMeter) perRun(runs int) (c cpuPerRun) {
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(runs) }
	if m.srvOK {
		if t, ok := m.serversCPU(); ok {
			c.server = us(t.total() - m.srv0.total())
			c.serverSys = us(t.sys - m.srv0.sys)
		}
	}
	if m.selfOK {
		if t, ok := procCPU(os.Getpid()); ok {
			c.driver = us(t.total() - m.self0.total())
		}
	}
	return c
}

// memory reports the server's resident memory in MB (from /proc, after a
// moment to let the last requests' garbage be collected) and its
// goroutines (from /metrics).
func (s *childServer) memory(base string) (rssMB float64, goroutines int) {
	time.Sleep(2 * time.Second)
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				rssMB = kb / 1024
			}
		}
	}
	if v, err := loadgen.NewClient(base, s.token).Metric(context.Background(), "go_goroutines"); err == nil {
		goroutines = int(v)
	}
	return rssMB, goroutines
}

// peakRSS is the server's peak resident memory in MB (VmHWM; Linux).
func (s *childServer) peakRSS() float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// procTimes is a process's CPU time in user space and in the kernel.
type procTimes struct{ user, sys time.Duration }

func (t procTimes) total() time.Duration { return t.user + t.sys }

// procCPU reads a process's user and system time from /proc/PID/stat.
func procCPU(pid int) (procTimes, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procTimes{}, false
	}
	// The command name (field 2) may hold spaces: fields count from its ")".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procTimes{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return procTimes{}, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64) // utime, field 14
	st, err2 := strconv.ParseInt(f[12], 10, 64) // stime, field 15
	if err1 != nil || err2 != nil {
		return procTimes{}, false
	}
	const clockTicks = 100 // USER_HZ, 100 on every Linux build we run on
	return procTimes{user: time.Duration(ut) * time.Second / clockTicks, sys: time.Duration(st) * time.Second / clockTicks}, true
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// childServer is a `switchyard serve` this process started.
type childServer struct {
	url   string
	token string // the token it made and printed
	cmd   *exec.Cmd
	dir   string
	done  chan struct{}
	peers []*childServer // more servers on the same --db (--servers)
}

// listenRE finds the address in the server's start-up log line, and
// openRE the token in the address to open that follows it.
var (
	listenRE = regexp.MustCompile(`listening.*?(127\.0\.0\.1:\d+)`)
	openRE   = regexp.MustCompile(`^Open \S*[?&]token=([^&\s]+)\S* in your browser$`)
)

// startServer runs this binary's serve command on a free loopback port with
// a fresh database, its LLM pointed at the fake.
func startServer(ctx context.Context, llmURL string, env []string, stderr io.Writer, cpus []int, extra ...string) (*childServer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return startServerFrom(ctx, exe, llmURL, env, stderr, cpus, extra...)
}

// startServerFrom is startServer with the binary exe (load runs --against).
func startServerFrom(ctx context.Context, exe, llmURL string, env []string, stderr io.Writer, cpus []int, extra ...string) (*childServer, error) {
	dir, err := os.MkdirTemp("", "switchyard-load-")
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", dir, "--workflows", dir + "/workflows"}, extra...)
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+llmURL, "OPENAI_API_KEY=load", "SWITCHYARD_TOKEN=", "SWITCHYARD_LOG_LEVEL=warn")
	cmd.Env = append(cmd.Env, env...)
	if len(cpus) > 0 {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(len(cpus)))
	}
	out, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = cmd.Stderr
	if err := startPinned(cmd, cpus); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &childServer{cmd: cmd, dir: dir, done: make(chan struct{})}
	found := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		addr := ""
		for sc.Scan() {
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil && addr == "" {
				addr = "http://" + m[1]
			}
			if m := openRE.FindStringSubmatch(sc.Text()); m != nil && addr != "" {
				select {
				case found <- [2]string{addr, m[1]}:
				default:
				}
			}
		}
		close(s.done)
	}()
	select {
	case f := <-found:
		s.url, s.token = f[0], f[1]
		return s, nil
	case <-s.done:
		err = errors.New("server exited before listening")
	case <-time.After(30 * time.Second):
		err = errors.New("server did not report its address within 30s")
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.stop()
	return nil, err
}

func (s *childServer) stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
		}
		_ = s.cmd.Wait()
	}
	os.RemoveAll(s.dir)
}
