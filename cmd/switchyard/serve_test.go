package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/internal/loadgen"
)

// serveAddrRE finds the bound address in the start-up log line.
var serveAddrRE = regexp.MustCompile(`msg=listening addr=(\S+)`)

// serveOpenRE finds the address to open, the last line of start-up, with
// the token serve made (when it made one).
var serveOpenRE = regexp.MustCompile(`^Open (\S+?)(?:/\?token=(\S+))? in your browser$`)

// serverProc is a `switchyard serve` child process.
type serverProc struct {
	cmd    *exec.Cmd
	url    string
	token  string // the token serve made and printed ("" if given one, or --no-token)
	mu     sync.Mutex
	stderr bytes.Buffer
	exited chan struct{}
	code   int
}

func (p *serverProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// startServe runs serve with args and waits for its listening line.
func startServe(t *testing.T, env []string, args ...string) *serverProc {
	t.Helper()
	return startServeDir(t, "", env, args...)
}

// startServeDir is startServe with the process's working directory set
// ("" = this one).
func startServeDir(t *testing.T, dir string, env []string, args ...string) *serverProc {
	t.Helper()
	p := &serverProc{cmd: exec.Command(binary, append([]string{"serve"}, args...)...), exited: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), "OPENAI_API_KEY=", "OPENAI_BASE_URL=", "SWITCHYARD_TOKEN=")
	p.cmd.Env = append(p.cmd.Env, env...)
	out, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		addr := ""
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := serveAddrRE.FindStringSubmatch(sc.Text()); m != nil && addr == "" {
				addr = "http://" + m[1]
			}
			if m := serveOpenRE.FindStringSubmatch(sc.Text()); m != nil && addr != "" {
				select {
				case found <- [2]string{addr, m[2]}:
				default:
				}
			}
		}
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	select {
	case f := <-found:
		p.url, p.token = f[0], f[1]
	case <-p.exited:
		t.Fatalf("serve exited (%d) before listening:\n%s", p.code, p.log())
	case <-time.After(time.Minute):
		t.Fatalf("serve did not report its address:\n%s", p.log())
	}
	return p
}

// stop sends SIGINT and returns the exit code.
func (p *serverProc) stop(t *testing.T) int {
	t.Helper()
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		t.Fatalf("serve did not stop on SIGINT:\n%s", p.log())
	}
	return p.code
}

// get sends GET path with token as a bearer; "" sends the token serve
// printed, if it made one, and noAuth none at all.
func (p *serverProc) get(t *testing.T, path, token string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", p.url+path, nil)
	if token == "" {
		token = p.token
	}
	if token != "" && token != noAuth {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, body
}

// noAuth makes get send no token at all.
const noAuth = "\x00none"

// post sends POST path with the token serve printed, if it made one.
func (p *serverProc) post(t *testing.T, path string, body any) (int, []byte) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", p.url+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, out
}

func TestServeHealthUIAndSignal(t *testing.T) {
	t.Parallel()
	p := startServe(t, nil, "--addr", "127.0.0.1:0", "--data", t.TempDir())
	status, _, body := p.get(t, "/api/health", "")
	if status != http.StatusOK || !strings.Contains(string(body), `"status":"ok"`) {
		t.Fatalf("health: %d %s", status, body)
	}
	status, _, body = p.get(t, "/api/config", "")
	if status != http.StatusOK || !strings.Contains(string(body), `"llmConfigured":false`) {
		t.Fatalf("config: %d %s", status, body)
	}
	// The embedded UI, with single-page routing.
	for _, path := range []string{"/", "/runs/some-run"} {
		status, hdr, body := p.get(t, path, "")
		if status != http.StatusOK || !strings.Contains(hdr.Get("Content-Type"), "text/html") ||
			hdr.Get("Cache-Control") != "no-cache" || !strings.Contains(strings.ToLower(string(body)), "<!doctype html") {
			t.Fatalf("UI %s: %d %v %.200s", path, status, hdr, body)
		}
	}
	if !strings.Contains(p.log(), "no LLM configured") {
		t.Errorf("no warning about the missing LLM:\n%s", p.log())
	}
	// The address to open is the last line of start-up: right after the
	// listening line, and only request records after it. It carries the
	// token serve made.
	if p.token == "" {
		t.Fatalf("no token in the address to open:\n%s", p.log())
	}
	want := "Open " + p.url + "/?token=" + p.token + " in your browser"
	lines := strings.Split(strings.TrimRight(p.log(), "\n"), "\n")
	at := -1
	for i, l := range lines {
		if l == want {
			at = i
		}
	}
	if at < 1 || !strings.Contains(lines[at-1], "msg=listening") {
		t.Fatalf("no %q right after the listening line:\n%s", want, p.log())
	}
	for _, l := range lines[at+1:] {
		if !strings.Contains(l, "msg=request") {
			t.Errorf("start-up line %q printed after the address to open:\n%s", l, p.log())
		}
	}
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code %d after SIGINT:\n%s", code, p.log())
	}
	if !strings.Contains(p.log(), "msg=stopped") {
		t.Errorf("no clean stop logged:\n%s", p.log())
	}
}

func TestServeRefusesNonLoopbackWithoutToken(t *testing.T) {
	t.Parallel()
	cases := [][]string{
		{"--addr", "0.0.0.0:0"},
		{"--addr", ":0"},
	}
	for _, args := range cases {
		cmd := exec.Command(binary, append([]string{"serve", "--data", t.TempDir()}, args...)...)
		cmd.Env = append(os.Environ(), "SWITCHYARD_TOKEN=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
			t.Fatalf("%v: %v, want exit 2", args, err)
		}
		if !strings.Contains(stderr.String(), "refusing to listen") || !strings.Contains(stderr.String(), "SWITCHYARD_TOKEN") {
			t.Fatalf("%v: message %q does not say why", args, stderr.String())
		}
	}
	// Usage errors are exit 2 too.
	for _, args := range [][]string{{"--addr", "nonsense"}, {"--max-body", "lots"}, {"extra-arg"}, {"--log-format", "xml"}} {
		err := exec.Command(binary, append([]string{"serve"}, args...)...).Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
			t.Errorf("%v: %v, want exit 2", args, err)
		}
	}
}

func TestServeNonLoopbackWithToken(t *testing.T) {
	t.Parallel()
	p := startServe(t, []string{"SWITCHYARD_TOKEN=tk-1-0123456789abcdefghij"}, "--addr", "0.0.0.0:0", "--data", t.TempDir())
	p.url = strings.Replace(p.url, "0.0.0.0", "127.0.0.1", 1)
	p.url = strings.Replace(p.url, "[::]", "127.0.0.1", 1)
	if status, _, _ := p.get(t, "/api/config", ""); status != http.StatusUnauthorized {
		t.Fatalf("without token: %d", status)
	}
	if status, _, body := p.get(t, "/api/config", "tk-1-0123456789abcdefghij"); status != http.StatusOK {
		t.Fatalf("with token: %d %s", status, body)
	}
	if status, _, _ := p.get(t, "/", ""); status != http.StatusOK {
		t.Fatalf("UI shell: %d", status)
	}
	p.stop(t)
}

// runInfo is the part of a run's JSON these tests read.
type runInfo struct {
	RunID  string `json:"runId"`
	Status string `json:"status"`
}

// startAgentRun starts start → agent through the API and returns once the
// agent's LLM call is in flight.
func startAgentRun(t *testing.T, p *serverProc, fake *fakeopenai.Server) runInfo {
	t.Helper()
	graph := map[string]any{"nodes": []map[string]any{
		{"id": "s", "type": "start", "position": map[string]any{"x": 0, "y": 0}, "data": map[string]any{"initialInput": "hi"}},
		{"id": "a", "type": "agent", "position": map[string]any{"x": 1, "y": 0}, "data": map[string]any{"agentName": "A"}},
	}, "edges": []map[string]any{{"id": "e1", "source": "s", "target": "a", "sourceHandle": "output"}}}
	status, body := p.post(t, "/api/runs", map[string]any{"graph": graph})
	if status != http.StatusCreated {
		t.Fatalf("start run: %d %s", status, body)
	}
	var run runInfo
	_ = json.Unmarshal(body, &run)
	deadline := time.Now().Add(time.Minute)
	for fake.InFlight() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the agent's LLM call never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return run
}

// TestCancelFromTheCLIWhileTheServerDrivesTheRun: `switchyard cancel` on
// the server's database leaves a request the server acts on: the run and
// its in-flight LLM call stop, and the CLI reports it cancelled (exit 4).
func TestCancelFromTheCLIWhileTheServerDrivesTheRun(t *testing.T) {
	t.Parallel()
	fake := fakeopenai.StartT(t, fakeopenai.WithLatency(time.Minute))
	data := t.TempDir()
	env := []string{"OPENAI_BASE_URL=" + fake.URL(), "OPENAI_API_KEY=k"}
	p := startServe(t, env, "--addr", "127.0.0.1:0", "--data", data)
	defer p.stop(t)
	run := startAgentRun(t, p, fake)
	deadline := time.Now().Add(time.Minute)
	cmd := exec.Command(binary, "cancel", run.RunID, "--data", data)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitCancelled {
		t.Fatalf("cancel: %v (want exit %d)\nstdout %s\nstderr %s", err, exitCancelled, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), `"status": "cancelled"`) {
		t.Errorf("cancel printed %s", out.String())
	}
	_, _, body := p.get(t, "/api/runs/"+run.RunID, "")
	_ = json.Unmarshal(body, &run)
	if run.Status != "cancelled" {
		t.Fatalf("the server reports the run %q: %s", run.Status, body)
	}
	for fake.InFlight() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := fake.InFlight(); n != 0 {
		t.Errorf("%d LLM calls still in flight after the cancel", n)
	}
	t.Logf("cancel through the database took %s", took.Round(time.Millisecond))
}

// TestServeRecovery: a server killed mid-run leaves the run to the next
// one: --no-recover marks it interrupted; a normal start continues it.
func TestServeRecovery(t *testing.T) {
	t.Parallel()
	fake := fakeopenai.StartT(t, fakeopenai.WithLatency(time.Minute))
	data := t.TempDir()
	env := []string{"OPENAI_BASE_URL=" + fake.URL(), "OPENAI_API_KEY=k", "SWITCHYARD_LEASE_TTL=1s"}

	p := startServe(t, env, "--addr", "127.0.0.1:0", "--data", data)
	run := startAgentRun(t, p, fake)
	deadline := time.Now().Add(time.Minute)
	killed := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGKILL) // a crash
	<-p.exited
	// The dead server renewed its lease at the latest when it died: the
	// lease has run out once its TTL (1s) passed since.
	time.Sleep(time.Until(killed.Add(1200 * time.Millisecond)))

	p2 := startServe(t, env, "--addr", "127.0.0.1:0", "--data", data, "--no-recover")
	_, _, body := p2.get(t, "/api/runs/"+run.RunID, "")
	_ = json.Unmarshal(body, &run)
	if run.Status != "interrupted" {
		t.Fatalf("with --no-recover the run is %q, want interrupted: %s", run.Status, body)
	}
	p2.stop(t)

	fake.SetHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
		r := fakeopenai.DefaultReply(req)
		r.Latency = -1
		return r
	})
	p3 := startServe(t, env, "--addr", "127.0.0.1:0", "--data", data)
	status, body := p3.post(t, "/api/runs/"+run.RunID+"/continue", map[string]any{})
	if status != http.StatusOK {
		t.Fatalf("continue: %d %s", status, body)
	}
	for time.Now().Before(deadline.Add(time.Minute)) {
		_, _, body = p3.get(t, "/api/runs/"+run.RunID, "")
		_ = json.Unmarshal(body, &run)
		if run.Status == "completed" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if run.Status != "completed" {
		t.Fatalf("continued run is %q: %s", run.Status, body)
	}
	p3.stop(t)
}

func TestBrowserURL(t *testing.T) {
	for _, c := range []struct{ bound, public, want string }{
		{"127.0.0.1:8080", "", "http://127.0.0.1:8080"},
		{"0.0.0.0:8080", "", "http://127.0.0.1:8080"},
		{"[::]:9000", "", "http://127.0.0.1:9000"},
		{"[::1]:9000", "", "http://[::1]:9000"},
		{"0.0.0.0:8080", "https://flows.example.com", "https://flows.example.com"},
	} {
		if got := browserURL(c.bound, c.public); got != c.want {
			t.Errorf("browserURL(%q, %q) = %q, want %q", c.bound, c.public, got, c.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1048576", 1 << 20, true},
		{"10MiB", 10 << 20, true},
		{"512KiB", 512 << 10, true},
		{"1GiB", 1 << 30, true},
		{"2mb", 2 << 20, true},
		{"0", 0, false},
		{"-5", 0, false},
		{"lots", 0, false},
		{"MiB", 0, false},
	}
	for _, c := range cases {
		got, err := parseSize(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseSize(%q) = %d, %v", c.in, got, err)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"10MiB", "1", "0", "-1", "1GiB", "9223372036854775807", "1e9", "MiB", " 5 KiB "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseSize(s)
		if err == nil && (n <= 0 || n > 1<<40) {
			t.Fatalf("parseSize(%q) = %d", s, n)
		}
	})
}

// TestServeStartsWithoutStartupGarbage: what starting up allocates and
// drops is collected before serving. goose's SQL parser keeps a 4 MiB scan
// buffer per migration parsed at once in a sync.Pool (16 MiB for ours):
// left there, it held the idle server's heap at about 20 MiB, and the
// first heap goal under load, three times that at GOGC=200, took peak RSS
// over 100 MB in the first second of `switchyard load runs` against about
// 80 MB steady.
func TestServeStartsWithoutStartupGarbage(t *testing.T) {
	t.Parallel()
	p := startServe(t, nil, "--addr", "127.0.0.1:0", "--data", t.TempDir())
	status, _, body := p.get(t, "/metrics", "")
	if status != http.StatusOK {
		t.Fatalf("metrics: %d %s", status, body)
	}
	const name, limit = "go_memstats_heap_inuse_bytes", 12 << 20 // an idle server's live heap is about 5 MiB
	v, ok := loadgen.PromValue(string(body), name)
	if !ok {
		t.Fatalf("no %s in /metrics", name)
	}
	if v > limit {
		t.Errorf("idle server right after start: %s = %.1f MiB, want at most %d MiB", name, v/(1<<20), limit>>20)
	}
}

// TestServeWritesProfiles: --cpuprofile, --mutexprofile and --memprofile
// (the load tool's way of showing where a run's CPU goes, what serializes
// and what allocates) are written, as gzipped pprof, when the server stops
// on a signal.
func TestServeWritesProfiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cpu, mutex, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mutex.pprof"), filepath.Join(dir, "mem.pprof")
	p := startServe(t, []string{"SWITCHYARD_MUTEXPROFILE=" + mutex}, "--addr", "127.0.0.1:0", "--data", dir, "--cpuprofile", cpu,
		"--memprofile", mem)
	if status, _, body := p.get(t, "/api/health", ""); status != http.StatusOK {
		t.Fatalf("health: %d %s", status, body)
	}
	if code := p.stop(t); code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, p.log())
	}
	for _, f := range []string{cpu, mutex, mem} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("profile not written: %v\n%s", err, p.log())
		}
		if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("%s: %d bytes, not a gzipped pprof profile", f, len(b))
		}
	}
}
