//go:build linux

// Package faults is the fault suite (issue 8): a real `switchyard serve`
// process, talked to over HTTP and websockets like a real client, is
// SIGKILLed, starved of its LLM, of its disk and of its database lock, and
// fed bad input. The fake LLM runs in the test process. Every scenario ends
// by checking that the server is healthy and that its goroutines and open
// files went back to where they were.
//
// The package has test files only. It needs Linux (/proc) and, for the
// disk-full test, the right to mount a tmpfs (skipped otherwise).
package faults

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	_ "modernc.org/sqlite" // the test reads the server's database directly

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
	sqlitestore "github.com/switchyard/switchyard/store/sqlite"
)

// binary is the switchyard executable built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "switchyard-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "switchyard")
	// Built without -race even under `go test -race`: the memory and
	// timing figures are those of the binary people run.
	cmd := exec.Command("go", "build", "-o", binary, "./cmd/switchyard")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// leaseTTL is short so that a restarted server takes over the runs of a
// killed one quickly.
const leaseTTL = time.Second

// --- the fake LLM ---

// marker names the run and node an LLM request is for: agent prompts
// start with it, and a subagent's tool input carries it.
var markerRE = regexp.MustCompile(`run=(\S+) node=(\S+)`)

func marker(key, node string) string { return "run=" + key + " node=" + node }

// llmCall is one completion request the fake LLM received.
type llmCall struct {
	key, node string
	at        time.Time
	tools     bool // subagent tools were offered
	results   int  // tool results in the conversation
}

// fakeLLM answers agent prompts that carry a marker with an output unique
// to the call ("out-<key>-<node>-<n>"). A parent agent offered subagent
// tools first calls its first subagent, then answers. Per-run fault
// scripts (by key) can replace the answer.
type fakeLLM struct {
	srv *fakeopenai.Server

	mu      sync.Mutex
	n       int
	calls   []llmCall
	latency func(key, node string) time.Duration
	faults  map[string]func(c llmCall, attempt int) (fakeopenai.Reply, bool)
}

func newFakeLLM(t *testing.T) *fakeLLM {
	t.Helper()
	f := &fakeLLM{faults: map[string]func(llmCall, int) (fakeopenai.Reply, bool){}}
	// The idle timeout ends the server's keep-alive connections to the
	// LLM a few seconds after a scenario's last call, as a provider does,
	// so that settled compares the process with its baseline without
	// them: with eight busy loops on two cores, TestKillGraphRuns ended
	// with 5 idle ones (10 goroutines), over the slack.
	f.srv = fakeopenai.StartT(t, fakeopenai.WithRequestLogLimit(0), fakeopenai.WithHandler(f.reply),
		fakeopenai.WithIdleTimeout(3*time.Second))
	return f
}

func (f *fakeLLM) setLatency(fn func(key, node string) time.Duration) {
	f.mu.Lock()
	f.latency = fn
	f.mu.Unlock()
}

// setFault scripts the replies of the calls of run key: fn gets the call
// and how many calls that node made so far (1 for the first); false means
// answer normally.
func (f *fakeLLM) setFault(key string, fn func(c llmCall, attempt int) (fakeopenai.Reply, bool)) {
	f.mu.Lock()
	f.faults[key] = fn
	f.mu.Unlock()
}

func callOf(req *fakeopenai.Request) llmCall {
	c := llmCall{at: time.Now(), tools: len(req.Tools) > 0, results: len(req.ToolResults())}
	if m := markerRE.FindStringSubmatch(req.LastUserMessage()); m != nil {
		c.key, c.node = m[1], m[2]
	}
	return c
}

func (f *fakeLLM) reply(req *fakeopenai.Request) fakeopenai.Reply {
	c := callOf(req)
	f.mu.Lock()
	f.n++
	n := f.n
	f.calls = append(f.calls, c)
	attempt := 0
	for _, o := range f.calls {
		if o.key == c.key && o.node == c.node && o.results == c.results {
			attempt++
		}
	}
	lat := time.Duration(-1)
	if f.latency != nil {
		lat = f.latency(c.key, c.node)
	}
	fault := f.faults[c.key]
	f.mu.Unlock()
	if fault != nil {
		if r, ok := fault(c, attempt); ok {
			return r
		}
	}
	if c.tools && c.results == 0 && len(req.Tools) > 0 {
		// Call the first subagent once; its prompt carries its own marker.
		child := strings.TrimPrefix(req.Tools[0].Name, "subagent_")
		child = child[strings.LastIndexByte(child, '_')+1:]
		args, _ := json.Marshal(map[string]string{"input": marker(c.key, child) + "\nquestion from " + c.node})
		return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: req.Tools[0].Name, Arguments: string(args)}}, Latency: lat}
	}
	return fakeopenai.Reply{Text: fmt.Sprintf("out-%s-%s-%d", c.key, c.node, n), Latency: lat}
}

// count returns how many calls each node of each run made: key -> node -> n.
func (f *fakeLLM) count() map[string]map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]map[string]int{}
	for _, c := range f.calls {
		if out[c.key] == nil {
			out[c.key] = map[string]int{}
		}
		out[c.key][c.node]++
	}
	return out
}

// callsOf returns the calls of one run's node.
func (f *fakeLLM) callsOf(key, node string) []llmCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []llmCall
	for _, c := range f.calls {
		if c.key == key && c.node == node {
			out = append(out, c)
		}
	}
	return out
}

// --- the server process ---

// harness is one data directory shared by the server processes of a test,
// and the fake LLM they all talk to.
type harness struct {
	t         *testing.T
	data      string
	workflows string
	work      string
	env       []string
	llm       *fakeLLM
	http      *http.Client
	token     string // sent on metrics scrapes, for a server started with one

	mu    sync.Mutex
	procs []*proc
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, data: t.TempDir(), workflows: t.TempDir(), work: t.TempDir()}
	h.llm = newFakeLLM(t)
	h.env = append(os.Environ(), "SWITCHYARD_DATA=", "SWITCHYARD_DB=", "SWITCHYARD_MODEL=", "SWITCHYARD_LLM_API=", "SWITCHYARD_TOKEN=",
		"SWITCHYARD_LOG_LEVEL=", "SWITCHYARD_MAX_PARALLEL=", "SWITCHYARD_MAX_LLM_CALLS=",
		"OPENAI_BASE_URL="+h.llm.srv.URL(), "OPENAI_API_KEY=test", "SWITCHYARD_LEASE_TTL="+leaseTTL.String(),
		// The tests count the processes' descriptors (/proc/PID/fd), which a
		// non-dumpable process refuses to other users than root.
		"SWITCHYARD_DUMPABLE=1")
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	h.http = &http.Client{Transport: tr, Timeout: 60 * time.Second}
	t.Cleanup(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, p := range h.procs {
			p.kill()
		}
		tr.CloseIdleConnections()
	})
	return h
}

// proc is one `switchyard serve` process.
type proc struct {
	h       *harness
	cmd     *exec.Cmd
	addr    string
	base    string
	started time.Time // when the process was spawned
	ready   time.Time // when it printed its address
	stderr  *tailBuffer
	exited  chan struct{}
	waitErr error
}

// tailBuffer keeps the last 64 KiB written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 64<<10 {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-64<<10:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

var listeningRE = regexp.MustCompile(`msg=listening addr=(\S+)`)

// start runs `switchyard serve` on a free loopback port and waits until it
// listens.
func (h *harness) start(extra ...string) *proc {
	h.t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", h.data, "--workflows", h.workflows,
		"--log-level", "warn"}, extra...)
	if !slices.Contains(extra, "--token-file") && !slices.Contains(extra, "--token") {
		// These tests are about processes, not sign-in: the server is open
		// as before serve made a token by default.
		args = append(args, "--no-token")
	}
	p := &proc{h: h, stderr: &tailBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = h.env
	p.cmd.Dir = h.work
	pr, pw := io.Pipe()
	p.cmd.Stderr = io.MultiWriter(p.stderr, pw)
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
	go func() {
		p.waitErr = p.cmd.Wait()
		pw.Close()
		close(p.exited)
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		found := false
		for sc.Scan() {
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil && !found {
				found = true
				addr <- m[1]
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case a := <-addr:
		p.addr, p.base, p.ready = a, "http://"+a, time.Now()
	case <-p.exited:
		h.t.Fatalf("switchyard serve exited before listening: %v\n%s", p.waitErr, p.stderr)
	case <-time.After(60 * time.Second):
		p.kill()
		h.t.Fatalf("switchyard serve did not listen within a minute:\n%s", p.stderr)
	}
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// kill SIGKILLs the process and reaps it.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop asks the process to shut down gracefully and checks it did.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		p.kill()
		t.Fatalf("server still running a minute after SIGTERM:\n%s", p.stderr)
	}
	if p.waitErr != nil {
		t.Errorf("server exited with %v after SIGTERM:\n%s", p.waitErr, p.stderr)
	}
}

func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// --- HTTP ---

// do sends a request with a JSON body (a []byte is sent as is) and returns
// the status and body; transport errors are returned as err.
func (p *proc) do(method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, p.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.h.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// must sends a request that must get status want, and decodes the answer
// into out (if not nil).
func (p *proc) must(t *testing.T, method, path string, body any, want int, out any) {
	t.Helper()
	code, data, err := p.do(method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v\nserver log:\n%s", method, path, err, p.stderr)
	}
	if code != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, path, code, want, truncate(string(data), 600))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, truncate(string(data), 300))
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// apiErr is the API's error body.
type apiErr struct {
	Error struct {
		Code     string          `json:"code"`
		Message  string          `json:"message"`
		Problems []graph.Problem `json:"problems"`
	} `json:"error"`
}

// runView is what GET /api/runs/{id} answers.
type runView struct {
	RunID            string                   `json:"runId"`
	Kind             string                   `json:"kind"`
	Status           engine.RunStatus         `json:"status"`
	PendingApprovals []engine.PendingApproval `json:"pendingApprovals"`
	Error            string                   `json:"error"`
	Outputs          map[string]string        `json:"outputs"`
	Nodes            []struct {
		NodeID   string `json:"nodeId"`
		Status   string `json:"status"`
		Output   string `json:"output"`
		Error    string `json:"error"`
		Attempts int    `json:"attempts"`
	} `json:"nodes"`
}

func (p *proc) getRun(t *testing.T, id string) runView {
	t.Helper()
	var rv runView
	p.must(t, http.MethodGet, "/api/runs/"+id, nil, http.StatusOK, &rv)
	return rv
}

// events reads a run's whole log, page by page.
func (p *proc) events(t *testing.T, id string) []engine.Event {
	t.Helper()
	var all []engine.Event
	for {
		var page []engine.Event
		after := int64(0)
		if len(all) > 0 {
			after = all[len(all)-1].Seq
		}
		p.must(t, http.MethodGet, fmt.Sprintf("/api/runs/%s/events?after=%d&limit=1000", id, after), nil, http.StatusOK, &page)
		all = append(all, page...)
		if len(page) < 1000 {
			return all
		}
	}
}

// startGraph posts a graph and returns the new run's id.
func (p *proc) startGraph(t *testing.T, g *graph.Graph, input string) string {
	t.Helper()
	var rv runView
	p.must(t, http.MethodPost, "/api/runs", map[string]any{"graph": g, "input": input}, http.StatusCreated, &rv)
	return rv.RunID
}

// waitRun polls until the run is paused or over (or d passed) and returns it.
func (p *proc) waitRun(t *testing.T, id string, d time.Duration) runView {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		rv := p.getRun(t, id)
		if rv.Status.Terminal() || rv.Status == engine.StatusPaused {
			return rv
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still %s after %s", id, rv.Status, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitEnd waits up to d for run id to end. Unlike waitRun it does not
// stop at paused: an answer accepted a moment ago can still read paused.
func (p *proc) waitEnd(t *testing.T, id string, d time.Duration) runView {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		rv := p.getRun(t, id)
		if rv.Status.Terminal() {
			return rv
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still %s after %s", id, rv.Status, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *proc) healthy(t *testing.T) {
	t.Helper()
	code, body, err := p.do(http.MethodGet, "/api/health", nil)
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /api/health: %d %v %s\nserver log:\n%s", code, err, body, p.stderr)
	}
}

// --- websockets ---

func (p *proc) dial(ctx context.Context, path string) (*websocket.Conn, error) {
	u := "ws://" + p.addr + path
	d := websocket.Dialer{HandshakeTimeout: 20 * time.Second}
	c, resp, err := d.DialContext(ctx, u, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	return c, err
}

// --- resource use of the process ---

// usage is what a scenario must give back.
type usage struct {
	goroutines int // go_goroutines from /metrics
	fds        int // entries of /proc/<pid>/fd, but the database's
	dbFiles    int // descriptors of the database files (pools of bounded size)
	rssKB      int // VmRSS
	hwmKB      int // VmHWM: peak RSS
	threads    int
}

func (u usage) String() string {
	return fmt.Sprintf("%d goroutines, %d fds (+%d of the database), RSS %.1f MiB (peak %.1f MiB), %d threads",
		u.goroutines, u.fds, u.dbFiles, float64(u.rssKB)/1024, float64(u.hwmKB)/1024, u.threads)
}

var metricsClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}

// metrics scrapes /metrics into name{labels} -> value.
func (p *proc) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.h.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.h.token)
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: HTTP %d", resp.StatusCode)
	}
	return out
}

func (p *proc) usage(t *testing.T) usage {
	t.Helper()
	u := usage{goroutines: -1}
	if g, ok := p.metrics(t)["go_goroutines"]; ok {
		u.goroutines = int(g)
	}
	dir := fmt.Sprintf("/proc/%d/fd", p.pid())
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			target, _ := os.Readlink(filepath.Join(dir, e.Name()))
			if strings.Contains(filepath.Base(target), "switchyard.db") {
				u.dbFiles++
			} else {
				u.fds++
			}
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid())); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			switch k {
			case "VmRSS":
				u.rssKB = n
			case "VmHWM":
				u.hwmKB = n
			case "Threads":
				u.threads = n
			}
		}
	}
	return u
}

// Slack over the baseline (the fake LLM ends idle keep-alive connections
// after a few seconds: newFakeLLM). The database's descriptors are bounded separately:
// the store keeps two writer connections (the write queue's and the pool
// for migrations, workflows and prunes) and at most max(4, NumCPU) idle
// readers, each with the database and its WAL open, plus the shared
// memory file.
const (
	goroutineSlack = 8
	fdSlack        = 4
)

var maxDBFiles = 2*(2+max(4, runtime.NumCPU())) + 1

// baseline warms the server up (one completed agent run, concurrent reads,
// so that connection pools have their usual size) and measures it.
func (p *proc) baseline(t *testing.T) usage {
	t.Helper()
	g := chainGraph("warm", "a")
	id := p.startGraph(t, g, "")
	if rv := p.waitRun(t, id, time.Minute); rv.Status != engine.StatusCompleted {
		t.Fatalf("warm-up run %s: %s", rv.Status, rv.Error)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, _ = p.do(http.MethodGet, "/api/runs/"+id+"/events", nil)
		}()
	}
	wg.Wait()
	p.h.http.CloseIdleConnections()
	time.Sleep(200 * time.Millisecond)
	u := p.usage(t)
	t.Logf("baseline: %s; open files: %s", u, p.openFiles())
	return u
}

// settled waits (up to a minute) until goroutines and open files are
// back within slack of base, and fails the test if they never are.
func (p *proc) settled(t *testing.T, base usage, what string) usage {
	t.Helper()
	p.h.http.CloseIdleConnections()
	deadline := time.Now().Add(time.Minute)
	for {
		u := p.usage(t)
		okG := base.goroutines < 0 || u.goroutines <= base.goroutines+goroutineSlack
		okF := u.fds <= base.fds+fdSlack && u.dbFiles <= maxDBFiles
		if okG && okF {
			t.Logf("%s: back to baseline: %s (baseline %s); open files: %s", what, u, base, p.openFiles())
			return u
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: resources not given back after a minute: %s, baseline %s (slack %d goroutines, %d fds, at most %d database fds); open files: %s",
				what, u, base, goroutineSlack, fdSlack, maxDBFiles, p.openFiles())
			return u
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// openFiles summarizes what the process's descriptors point at.
func (p *proc) openFiles() string {
	dir := fmt.Sprintf("/proc/%d/fd", p.pid())
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err.Error()
	}
	kinds := map[string]int{}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if i := strings.IndexByte(target, ':'); i > 0 && !strings.HasPrefix(target, "/") {
			target = target[:i] // socket:[123] -> socket
		} else if strings.Contains(target, "switchyard.db") {
			target = filepath.Base(target)
		}
		kinds[target]++
	}
	return fmt.Sprint(kinds)
}

// --- the database, read directly ---

// openDB opens the server's database file from the test process.
func openDB(t *testing.T, data string, busyMS int) *sql.DB {
	t.Helper()
	u := url.URL{Scheme: "file", Path: filepath.Join(data, "switchyard.db"),
		RawQuery: fmt.Sprintf("_pragma=busy_timeout(%d)", busyMS)}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	return db
}

func integrityCheck(t *testing.T, data string) {
	t.Helper()
	db := openDB(t, data, 5000)
	defer db.Close()
	rows, err := db.Query("PRAGMA integrity_check")
	if err != nil {
		t.Fatalf("integrity_check: %v", err)
	}
	defer rows.Close()
	var res []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		res = append(res, s)
	}
	if len(res) != 1 || res[0] != "ok" {
		t.Errorf("PRAGMA integrity_check: %v", res)
	}
}

// hasSchema reports whether the database file exists, migrated to this
// binary's schema: a process killed early may not have made or finished
// it yet.
func hasSchema(t *testing.T, data string) bool {
	t.Helper()
	if _, err := os.Stat(filepath.Join(data, "switchyard.db")); err != nil {
		return false
	}
	db := openDB(t, data, 5000)
	defer db.Close()
	// A process killed while it migrated a new file leaves it at an
	// earlier version (each migration commits on its own); the next one
	// finishes it. Until then it holds no runs, and the queries below are
	// written for the latest schema.
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'goose_db_version'`).Scan(&n); err != nil {
		t.Fatalf("read schema: %v", err)
	}
	if n == 0 {
		return false
	}
	var v int64
	if err := db.QueryRow(`SELECT COALESCE(max(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&v); err != nil {
		t.Fatalf("read schema version: %v", err)
	}
	return v == sqlitestore.SchemaVersion()
}

// completedInDB returns, per run, the nodes whose completed step_end is in
// the database file: what a dead process made durable.
func completedInDB(t *testing.T, data string) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	if !hasSchema(t, data) {
		return out
	}
	db := openDB(t, data, 5000)
	defer db.Close()
	logs, err := sqliteEvents(context.Background(), db, "step_end")
	if err != nil {
		t.Fatalf("read step_end events: %v", err)
	}
	for run, evs := range logs {
		for _, ev := range evs {
			if stepOf(ev.Data).Status != string(engine.NodeCompleted) {
				continue
			}
			if out[run] == nil {
				out[run] = map[string]bool{}
			}
			out[run][ev.NodeID] = true
		}
	}
	return out
}

// --- events ---

type stepData struct {
	Type   string `json:"type"`
	Visit  int    `json:"visit"`
	Retry  string `json:"retry"`
	Status string `json:"status"`
	Output string `json:"output"`
	Error  string `json:"error"`
	Final  bool   `json:"final"`
}

func stepOf(raw json.RawMessage) stepData {
	var d stepData
	_ = json.Unmarshal(raw, &d)
	return d
}

func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}

// sameEvent compares an event a client received with the stored one; the
// store keeps timestamps to the microsecond.
func sameEvent(a, b engine.Event) bool {
	return a.Seq == b.Seq && a.RunID == b.RunID && a.NodeID == b.NodeID && a.Type == b.Type &&
		a.Content == b.Content && jsonEqual(a.Data, b.Data) &&
		a.Timestamp.Truncate(time.Microsecond).Equal(b.Timestamp.Truncate(time.Microsecond))
}

// checkGapless reports a log whose seqs are not 1..n.
func checkGapless(t *testing.T, runID string, evs []engine.Event) {
	t.Helper()
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Errorf("run %s: stored event %d has seq %d: the log has a gap or a duplicate", runID, i+1, ev.Seq)
			return
		}
	}
}

// --- graphs ---

type gbuild struct{ g graph.Graph }

func (b *gbuild) node(id, typ string, d graph.NodeData) *gbuild {
	b.g.Nodes = append(b.g.Nodes, graph.Node{ID: id, Type: typ, Data: d,
		Position: graph.Position{X: float64(len(b.g.Nodes) * 150)}})
	return b
}

func (b *gbuild) edge(src, handle, dst string) *gbuild {
	b.g.Edges = append(b.g.Edges, graph.Edge{ID: fmt.Sprintf("e%d", len(b.g.Edges)+1), Source: src,
		Target: dst, SourceHandle: handle, TargetHandle: graph.HandleInput})
	return b
}

func agent(key, id string) graph.NodeData {
	return graph.NodeData{AgentName: "Agent " + id, UserPrompt: marker(key, id) + "\n{{PREVIOUS_OUTPUT}}"}
}

// chainGraph: start -> agents in a row.
func chainGraph(key string, agents ...string) *graph.Graph {
	b := &gbuild{}
	b.node("s", graph.TypeStart, graph.NodeData{InitialInput: "go " + key})
	prev := "s"
	for _, a := range agents {
		b.node(a, graph.TypeAgent, agent(key, a)).edge(prev, graph.HandleOutput, a)
		prev = a
	}
	return &b.g
}

// errContains asserts err text names every part.
func errContains(t *testing.T, what, text string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(strings.ToLower(text), strings.ToLower(p)) {
			t.Errorf("%s: %q does not mention %q", what, text, p)
		}
	}
}

// fakeReply is a scripted answer of the fake LLM.
type fakeReply = fakeopenai.Reply

// total is the number of completion requests received.
func (f *fakeLLM) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}
