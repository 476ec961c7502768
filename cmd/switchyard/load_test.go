package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestLoadRunsReportsCPUAndProfiles runs the real load command end to end:
// it starts its own server, completes runs, reports the CPU per run of both
// processes, and writes the two CPU profiles asked for.
func TestLoadRunsReportsCPUAndProfiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	driverProf, serverProf := filepath.Join(dir, "load.prof"), filepath.Join(dir, "serve.prof")
	cmd := exec.Command(binary, "load", "runs", "--duration", "1s", "--clients", "2", "--json", "--quiet",
		"--cpuprofile", driverProf)
	cmd.Env = append(os.Environ(), "SWITCHYARD_CPUPROFILE="+serverProf)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("load: %v\n%s", err, errb.String())
	}
	var got struct {
		Scenario string `json:"scenario"`
		Result   struct {
			Completed            int     `json:"completed"`
			Failed               int     `json:"failed"`
			ServerCPUPerRunUs    float64 `json:"serverCpuPerRunUs"`
			ServerSysCPUPerRunUs float64 `json:"serverSysCpuPerRunUs"`
			DriverCPUPerRunUs    float64 `json:"driverCpuPerRunUs"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	r := got.Result
	if got.Scenario != "runs" || r.Completed == 0 || r.Failed != 0 {
		t.Fatalf("result %+v", got)
	}
	if r.ServerCPUPerRunUs <= 0 || r.DriverCPUPerRunUs <= 0 {
		t.Errorf("CPU per run not measured: server %v µs, driver %v µs", r.ServerCPUPerRunUs, r.DriverCPUPerRunUs)
	}
	// The kernel's part is part of the server's CPU (it may round to zero
	// in so short a run: /proc counts in 10 ms ticks).
	if r.ServerSysCPUPerRunUs < 0 || r.ServerSysCPUPerRunUs > r.ServerCPUPerRunUs {
		t.Errorf("server CPU per run %v µs, of it in the kernel %v µs", r.ServerCPUPerRunUs, r.ServerSysCPUPerRunUs)
	}
	for _, p := range []string{driverProf, serverProf} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("profile %s: %v", p, err)
		}
	}
}

// TestLoadApprovalsReportsPausedMemory: with every run paused the load
// command reads the server's RSS and goroutines; each approval is won once.
func TestLoadApprovalsReportsPausedMemory(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary, "load", "approvals", "--runs", "30", "--json", "--quiet")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("load: %v\n%s", err, errb.String())
	}
	var got struct {
		Result struct {
			Runs       int     `json:"runs"`
			Wins       int     `json:"wins"`
			WonTwice   int     `json:"wonTwice"`
			Completed  int     `json:"completed"`
			RSS        float64 `json:"serverRssPausedMb"`
			Goroutines int     `json:"serverGoroutines"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	r := got.Result
	if r.Runs != 30 || r.Wins != 30 || r.WonTwice != 0 || r.Completed != 30 {
		t.Fatalf("result %+v; the whole summary: %s", r, out.String())
	}
	if r.RSS <= 0 || r.Goroutines <= 0 {
		t.Errorf("paused memory not measured: %+v", r)
	}
}

// ifAgentGraph is start → if (input contains "load") → agent: one LLM call
// per run, and an if node on the way.
const ifAgentGraph = `{"nodes":[
  {"id":"s","type":"start","position":{"x":0,"y":0},"data":{}},
  {"id":"c","type":"if","position":{"x":1,"y":0},"data":{"conditions":[{"operator":"contains","value":"load"}]}},
  {"id":"a","type":"agent","position":{"x":2,"y":0},"data":{"agentName":"A","userPrompt":"hi"}}],
 "edges":[{"id":"e1","source":"s","target":"c","sourceHandle":"output"},
  {"id":"e2","source":"c","target":"a","sourceHandle":"condition-0"}]}`

// TestLoadRunsRoutesAndGraphFile drives both routes with a --graph file
// and checks the summary: every run completed, one fake LLM call per run
// (the graph's one agent), and the CPU and memory fields measured.
func TestLoadRunsRoutesAndGraphFile(t *testing.T) {
	t.Parallel()
	gf := filepath.Join(t.TempDir(), "graph.json")
	if err := os.WriteFile(gf, []byte(ifAgentGraph), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, route := range []string{"runs", "compat"} {
		t.Run(route, func(t *testing.T) {
			t.Parallel()
			args := []string{"load", "runs", "--route", route, "--graph", gf, "--duration", "1s", "--clients", "2", "--json", "--quiet"}
			if runtime.GOOS == "linux" {
				args = append(args, "--cores", "1", "--fake-cpus", "0")
			}
			r := loadRunsJSON(t, args...)
			if r.Route != route || r.Completed == 0 || r.Failed != 0 || r.StartErrors != 0 || r.Started != r.Completed {
				t.Fatalf("result %+v", r)
			}
			if r.FakeCalls != int64(r.Completed) {
				t.Errorf("fake LLM calls %d, want one per completed run (%d)", r.FakeCalls, r.Completed)
			}
			// A run is created, its agent completes and it ends: at most
			// three commits of its own, fewer as runs share them.
			if r.CommitsPerRun <= 0 || r.CommitsPerRun > 3 {
				t.Errorf("commitsPerRun %v, want in (0, 3]", r.CommitsPerRun)
			}
			// Read from the server's own counters: a run allocates, on the
			// order of a thousand objects and a hundred KB (far from the
			// bounds, which only catch a field left unset or misread).
			if r.ServerAllocsPerRun < 50 || r.ServerAllocsPerRun > 1e6 || r.ServerAllocKBPerRun < 1 || r.ServerAllocKBPerRun > 1e5 {
				t.Errorf("serverAllocsPerRun %v, serverAllocKbPerRun %v: not measured", r.ServerAllocsPerRun, r.ServerAllocKBPerRun)
			}
			if r.ServerGCsPer1000Runs < 0 {
				t.Errorf("serverGcsPer1000Runs %v", r.ServerGCsPer1000Runs)
			}
			// The writer's busy time: some for every run's commits, and a
			// share of the time above 0 (and not far above 100 %: a batch
			// under way at the first read counts whole); the ceiling is its
			// inverse.
			if r.WriterBusyPerRunUs <= 0 || r.WriterBusyPct <= 0 || r.WriterBusyPct > 150 ||
				math.Abs(r.WriterCeilingRunsPerSec*r.WriterBusyPerRunUs-1e6) > 1 {
				t.Errorf("writerBusyPerRunUs %v, writerBusyPct %v, writerCeilingRunsPerSec %v",
					r.WriterBusyPerRunUs, r.WriterBusyPct, r.WriterCeilingRunsPerSec)
			}
			if runtime.GOOS != "linux" {
				return
			}
			if r.ServerCores != 1 {
				t.Errorf("serverCores %d, want 1", r.ServerCores)
			}
			if r.ServerCPUPerRunUs <= 0 || r.FakeCPUPerCallUs <= 0 || r.DriverCPUPerRunUs <= 0 || r.ServerPeakRSSMB <= 0 {
				t.Errorf("CPU or memory not measured: %+v", r)
			}
		})
	}
}

// loadRunsResult is the part of `load runs --json` the tests read.
type loadRunsResult struct {
	Route             string  `json:"route"`
	Started           int     `json:"started"`
	Completed         int     `json:"completed"`
	Failed            int     `json:"failed"`
	StartErrors       int     `json:"startErrors"`
	FakeCalls         int64   `json:"fakeCalls"`
	FakeCPUPerCallUs  float64 `json:"fakeCpuPerCallUs"`
	ServerCPUPerRunUs float64 `json:"serverCpuPerRunUs"`
	DriverCPUPerRunUs float64 `json:"driverCpuPerRunUs"`
	ServerCores       int     `json:"serverCores"`
	ServerPeakRSSMB   float64 `json:"serverPeakRssMb"`
	CommitsPerRun     float64 `json:"commitsPerRun"`
	// The server's allocations per run, from its /metrics.
	ServerAllocsPerRun   float64 `json:"serverAllocsPerRun"`
	ServerAllocKBPerRun  float64 `json:"serverAllocKbPerRun"`
	ServerGCsPer1000Runs float64 `json:"serverGcsPer1000Runs"`
	// The store writer's busy time, from the server's /metrics.
	WriterBusyPerRunUs      float64 `json:"writerBusyPerRunUs"`
	WriterBusyPct           float64 `json:"writerBusyPct"`
	WriterCeilingRunsPerSec float64 `json:"writerCeilingRunsPerSec"`
}

func loadRunsJSON(t *testing.T, args ...string) loadRunsResult {
	t.Helper()
	return loadJSON[loadRunsResult](t, "runs", args...)
}

// loadJSON runs the load command (args from "load" on, with --json) and
// returns the result of its scenario's summary.
func loadJSON[R any](t *testing.T, scenario string, args ...string) R {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("load %v: %v\n%s", args, err, errb.String())
	}
	var got struct {
		Scenario string `json:"scenario"`
		Result   R      `json:"result"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Scenario != scenario {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	return got.Result
}

// TestLoadUsesRunningFake points load at a fake-llm started apart (as
// scripts/scale.sh does with taskset): its calls and CPU come from the
// fake's GET /_stats.
func TestLoadUsesRunningFake(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t, "--whole", "--chunk-delay", "0s")
	r := loadRunsJSON(t, "load", "runs", "--fake-url", url, "--duration", "1s", "--clients", "2", "--json", "--quiet")
	if r.Completed == 0 || r.Failed != 0 || r.FakeCalls != 2*int64(r.Completed) {
		t.Fatalf("result %+v: want two fake calls per completed run", r)
	}
	if runtime.GOOS == "linux" && r.FakeCPUPerCallUs <= 0 {
		t.Errorf("fake CPU per call not measured: %+v", r)
	}
}

// loadFanoutResult is what the tests read of `load fanout --json`.
type loadFanoutResult struct {
	Status           string    `json:"status"`
	WallsMs          []float64 `json:"wallsMs"`
	ServerCPUMs      []float64 `json:"serverCpuMs"`
	FakeCPUPerCallUs float64   `json:"fakeCpuPerCallUs"`
	FakeConns        []int64   `json:"fakeConns"`
}

// loadFanoutJSON runs `load fanout ARGS --json --quiet`: two fan-outs of
// width branches at 20 ms.
func loadFanoutJSON(t *testing.T, width int, args ...string) loadFanoutResult {
	t.Helper()
	args = append([]string{"load", "fanout", "--width", strconv.Itoa(width), "--llm-latency", "20ms", "--repeat", "2", "--json", "--quiet"}, args...)
	r := loadJSON[loadFanoutResult](t, "fanout", args...)
	if r.Status != "completed" || len(r.WallsMs) != 2 {
		t.Fatalf("result %+v: want two completed fan-outs", r)
	}
	return r
}

// TestLoadFanoutReportsCPU: each fan-out of a repeated load fanout
// reports its server CPU and the connections it opened to the fake, and
// the fake's CPU per call stands beside the walls, so a slow fan-out can
// be told apart from a busy machine.
func TestLoadFanoutReportsCPU(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("CPU times are read from /proc")
	}
	r := loadFanoutJSON(t, 300)
	// /proc counts in 10 ms ticks, so the fan-outs are wide enough that
	// each process spends several: 301 LLM calls a fan-out, 602 in all.
	if len(r.ServerCPUMs) != 2 || r.ServerCPUMs[0] < 0 || r.ServerCPUMs[1] < 0 || r.ServerCPUMs[0]+r.ServerCPUMs[1] <= 0 || r.FakeCPUPerCallUs <= 0 {
		t.Errorf("result %+v: CPU not measured", r)
	}
	// Over HTTP/1.1 a call in flight needs a connection of its own.
	if len(r.FakeConns) != 2 || r.FakeConns[0] < 2 {
		t.Errorf("result %+v: connections to the fake not counted", r)
	}
}

// TestLoadFanoutOverTLS: with --llm-tls the fake speaks HTTPS and HTTP/2
// and the server load starts trusts it: a fan-out's calls share a few
// connections (each would need its own over HTTP/1.1), and the next
// fan-out reuses them.
//
// 200 branches: a fan-out's calls then fit in one connection's 250
// streams (the fake's limit, Go's default) however many of them overlap,
// so the second fan-out needs no connection beyond those the first kept.
// With 300 the check was a race: a first fan-out that a loaded machine
// started slowly overlapped under 250 calls and opened one connection,
// and a second that overlapped more had to open more.
func TestLoadFanoutOverTLS(t *testing.T) {
	t.Parallel()
	r := loadFanoutJSON(t, 200, "--llm-tls")
	if len(r.FakeConns) != 2 {
		t.Fatalf("result %+v: connections to the fake not counted", r)
	}
	// 201 calls a fan-out (200 branches and the join); a connection
	// carries 100 streams until the fake's settings say 250, and the LLM
	// client lets 4 calls at a time wait for a new one (a connection a
	// call without that).
	if r.FakeConns[0] < 1 || r.FakeConns[0] > 20 {
		t.Errorf("the first fan-out opened %d connections to the fake, want a few", r.FakeConns[0])
	}
	if r.FakeConns[1] != 0 {
		t.Errorf("the second fan-out opened %d connections, want none: the connections the first opened (%d) and kept have room for all its calls", r.FakeConns[1], r.FakeConns[0])
	}
}

// TestLoadRunsAgainst: --against starts a server of each binary and loads
// them in turn, round after round; each slice is measured on its own and
// the paired change is reported (here a binary against itself).
func TestLoadRunsAgainst(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("CPU times are read from /proc")
	}
	r := loadJSON[compareResult](t, "runs", "load", "runs", "--against", binary, "--rounds", "2", "--duration", "500ms", "--clients", "4", "--json", "--quiet")
	if r.Rounds != 2 || r.A.Binary == "" || r.B.Binary != binary || r.Summary == "" {
		t.Fatalf("result %+v", r)
	}
	for name, side := range map[string]compareSide{"A": r.A, "B": r.B} {
		if len(side.Completed) != 2 || len(side.Ratio) != 2 || len(side.AllocsPerRun) != 2 || len(side.WriterBusyPerRun) != 2 || len(side.CommitsPerRun) != 2 || side.Failed != 0 {
			t.Fatalf("%s: %+v: want two slices and no failed run", name, side)
		}
		for i := range 2 {
			if side.Completed[i] <= 0 || side.ServerCPUPerRunUs[i] < 0 || side.FakeCPUPerCallUs[i] <= 0 || side.AllocsPerRun[i] <= 0 || side.WriterBusyPerRun[i] <= 0 || side.CommitsPerRun[i] <= 0 {
				t.Errorf("%s slice %d not measured: %+v", name, i, side)
			}
		}
	}
	// The same binary on both sides allocates alike, whatever the machine's load.
	if math.Abs(r.AllocsDiffPct) > 10 {
		t.Errorf("allocations a run differ by %.1f %% between two servers of one binary", r.AllocsDiffPct)
	}
}

// TestLoadBadFlags: each bad flag is refused with exit 2, naming it.
func TestLoadBadFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "bad.json")
	noNodes := filepath.Join(dir, "empty.json")
	_ = os.WriteFile(notJSON, []byte("nodes: [1"), 0o644)
	_ = os.WriteFile(noNodes, []byte(`{"edges":[]}`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--route", "bogus"}, `--route "bogus"`},
		{[]string{"--graph", filepath.Join(dir, "missing.json")}, "--graph: open"},
		{[]string{"--graph", notJSON}, "bad.json: not a graph's JSON"},
		{[]string{"--graph", noNodes}, `empty.json: the graph has no "nodes"`},
		{[]string{"--cores", "-1"}, "--cores -1"},
		{[]string{"--server-cpus", "3-1"}, "--server-cpus"},
		{[]string{"--cores", "2", "--server-cpus", "0"}, "--cores 2 but --server-cpus"},
		{[]string{"--fake-cpus", "x"}, "--fake-cpus"},
		{[]string{"--cores", "1", "--server", "http://127.0.0.1:1"}, "not --server"},
		{[]string{"--against", filepath.Join(dir, "missing")}, "--against " + filepath.Join(dir, "missing")},
		{[]string{"--against", dir}, "--against " + dir},
		{[]string{"--against", binary, "--server", "http://127.0.0.1:1"}, "--against is for load runs"},
		{[]string{"--against", binary, "--rounds", "0"}, "--rounds 0"},
	} {
		cmd := exec.Command(binary, append([]string{"load", "runs", "--quiet"}, tc.args...)...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
			t.Errorf("%v: err %v, want exit %d\n%s", tc.args, err, exitUsage, errb.String())
			continue
		}
		if !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: stderr %q, want %q", tc.args, errb.String(), tc.want)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []int
		ok   bool
	}{
		{"", nil, true},
		{"0", []int{0}, true},
		{"0-3,8", []int{0, 1, 2, 3, 8}, true},
		{"2,2,1-2", []int{2, 1}, true},
		{"3-1", nil, false},
		{"-1", nil, false},
		{"a", nil, false},
		{"0-2000", nil, false},
	} {
		got, err := parseCPUList(tc.in)
		if (err == nil) != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestStartPinned: a child started on CPU 0 runs only there (Linux).
func TestStartPinned(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("pinning needs Linux")
	}
	cmd := exec.Command("grep", "Cpus_allowed_list", "/proc/self/status")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := startPinned(cmd, []int{0}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(out.String()); len(got) != 2 || got[1] != "0" {
		t.Fatalf("child's CPUs: %q, want 0", out.String())
	}
}

// TestAllocsScript: scripts/allocs.sh drives a server binary with the load
// tool and prints its allocations per run, a line per server and pass.
func TestAllocsScript(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH")
	}
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "allocs.sh"), binary, binary, "--", "1", "1s")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("allocs.sh: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "pass") {
		t.Fatalf("want a header and one line:\n%s", out)
	}
	f := strings.Fields(lines[1])
	if len(f) != 6 {
		t.Fatalf("line %q", lines[1])
	}
	runs, err1 := strconv.Atoi(f[2])
	allocs, err2 := strconv.ParseFloat(f[3], 64)
	if err1 != nil || err2 != nil || runs <= 0 || allocs < 50 || allocs > 1e6 {
		t.Errorf("runs %q allocs/run %q: not measured\n%s", f[2], f[3], out)
	}
}
