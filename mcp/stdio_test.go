package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// stderrLog collects the lines Options.Stderr hears.
type stderrLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *stderrLog) add(server, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, server+": "+line)
}

func (l *stderrLog) has(line string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.lines, line)
}

func connectHelper(t *testing.T, name, mode string, env map[string]string, opts Options) *Session {
	t.Helper()
	if opts.BaseEnv == nil {
		opts.BaseEnv = baseEnv()
	}
	s, err := Connect(context.Background(), name, helperConfig(t, mode, env), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStdioToolsAndCall(t *testing.T) {
	t.Parallel()
	var log stderrLog
	dir := t.TempDir()
	s := connectHelper(t, "helper", "serve", nil, Options{Stderr: log.add, Dir: dir})
	tools, err := s.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.QualifiedName)
		if tl.Server != "helper" || tl.InputSchema["type"] != "object" {
			t.Errorf("tool %+v", tl)
		}
	}
	for _, want := range []string{"mcp__helper__echo", "mcp__helper__env", "mcp__helper__crash", "mcp__helper__stderr"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	res, err := s.Call(context.Background(), "echo", json.RawMessage(`{"text": "héllo"}`))
	if err != nil || res != (Result{Text: "héllo"}) {
		t.Fatalf("echo: %+v, %v", res, err)
	}
	res, err = s.Call(context.Background(), "pwd", nil)
	if err != nil || res.Text != dir {
		t.Fatalf("pwd: %+v, %v (want %s)", res, err, dir)
	}
	// Arguments that are not an object are the model's to fix.
	res, err = s.Call(context.Background(), "echo", json.RawMessage(`["x"]`))
	if err != nil || !res.IsError || !strings.Contains(res.Text, "JSON object") {
		t.Fatalf("array arguments: %+v, %v", res, err)
	}
	// An unknown tool is a protocol error, naming the server and the tool.
	_, err = s.Call(context.Background(), "nope", nil)
	if err == nil || !strings.Contains(err.Error(), `mcp server "helper": tool "nope"`) {
		t.Fatalf("unknown tool: %v", err)
	}
	// Stderr lines reach the callback in order.
	if _, err := s.Call(context.Background(), "stderr", json.RawMessage(`{"n": 3}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "stderr lines", func() bool { return log.has("helper: helper line 3") })
	log.mu.Lock()
	i := slices.Index(log.lines, "helper: helper line 1")
	ok := i >= 0 && i+2 < len(log.lines) && log.lines[i+1] == "helper: helper line 2"
	log.mu.Unlock()
	if !ok {
		t.Errorf("stderr lines out of order: %q", log.lines)
	}
}

// TestStdioEnvironment: a stdio server gets BaseEnv and its entry's env,
// never the Switchyard process's own environment.
func TestStdioEnvironment(t *testing.T) {
	t.Setenv("SWITCHYARD_MCPTEST_SECRET", "do-not-leak")
	t.Setenv("OPENAI_API_KEY", "sk-do-not-leak")
	t.Setenv("MCPTEST_GREETING", "hello from the parent")
	s := connectHelper(t, "envsrv", "serve", map[string]string{
		"GREETING": "${MCPTEST_GREETING}", "LITERAL": "as written", "PATH": "/custom/bin:" + os.Getenv("PATH"),
	}, Options{BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}})
	res, err := s.Call(context.Background(), "env", nil)
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(res.Text, "\n")
	for _, want := range []string{"GREETING=hello from the parent", "LITERAL=as written", "LANG=C.UTF-8",
		"PATH=/custom/bin:" + os.Getenv("PATH"), helperEnv + "=serve"} {
		if !slices.Contains(env, want) {
			t.Errorf("server environment lacks %q", want)
		}
	}
	if strings.Contains(res.Text, "do-not-leak") || strings.Contains(res.Text, "OPENAI_API_KEY") ||
		strings.Contains(res.Text, "MCPTEST_GREETING") {
		t.Errorf("the server saw the parent's environment:\n%s", res.Text)
	}
	// Only two BaseEnv entries, three of the entry's (PATH replaced one),
	// the helper switch, and what the runtime adds for itself.
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "LANG", "GREETING", "LITERAL", helperEnv:
		default:
			if !strings.HasPrefix(k, "GO") { // the race runtime's own
				t.Errorf("unexpected variable %s", kv)
			}
		}
	}
	// A secret named in the entry stops the start.
	_, err = Connect(context.Background(), "envsrv", helperConfig(t, "serve", map[string]string{"K": "${SWITCHYARD_MCPTEST_SECRET}"}),
		Options{BaseEnv: baseEnv()})
	if err == nil || !strings.Contains(err.Error(), "${SWITCHYARD_MCPTEST_SECRET} is one of Switchyard's own secrets") {
		t.Fatalf("secret reference: %v", err)
	}
}

// TestStdioCrashMidCall: a server that dies during a call is an error
// naming the server, the tool, its exit status and its last stderr.
func TestStdioCrashMidCall(t *testing.T) {
	t.Parallel()
	s := connectHelper(t, "crashy", "serve", nil, Options{})
	_, err := s.Call(context.Background(), "crash", nil)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`mcp server "crashy": tool "crash"`, "the server exited (exit status 3)", "helper: crashing now"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !errors.Is(err, ErrServerExited) {
		t.Errorf("error is not ErrServerExited: %v", err)
	}
	// Later calls fail fast the same way.
	_, err = s.Call(context.Background(), "echo", json.RawMessage(`{"text":"x"}`))
	if err == nil || !strings.Contains(err.Error(), `mcp server "crashy": tool "echo"`) {
		t.Fatalf("call after the crash: %v", err)
	}
}

func TestStdioStartTimeout(t *testing.T) {
	t.Parallel()
	var pgid int
	sc := helperConfig(t, "noinit", nil)
	start := time.Now()
	_, err := Connect(context.Background(), "silent", sc, Options{BaseEnv: baseEnv(), StartTimeout: 500 * time.Millisecond,
		OnStart: func(_ string, pid int, _ uint64) { pgid = pid }})
	if err == nil {
		t.Fatal("no error")
	}
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), `mcp server "silent": did not initialize within 500ms`) {
		t.Fatalf("error: %v", err)
	}
	if pgid == 0 || !processGone(pgid) {
		t.Errorf("the server (pid %d) still runs after the failed start", pgid)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Connect took %s", d)
	}
}

func TestStdioExitBeforeInit(t *testing.T) {
	t.Parallel()
	_, err := Connect(context.Background(), "dead", helperConfig(t, "exit", nil), Options{BaseEnv: baseEnv()})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`mcp server "dead": exited before it initialized (exit status 7)`, "helper: cannot read my config"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestStdioCommandNotFound(t *testing.T) {
	t.Parallel()
	// The server's PATH is searched, not the process's.
	_, err := Connect(context.Background(), "missing", ServerConfig{Command: "sleep", Args: []string{"1"}},
		Options{BaseEnv: []string{"PATH=" + t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), `mcp server "missing": command "sleep" not found in PATH`) {
		t.Fatalf("error: %v", err)
	}
	_, err = Connect(context.Background(), "missing", ServerConfig{Command: "./nope.sh"}, Options{Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `mcp server "missing": command "./nope.sh"`) {
		t.Fatalf("relative path: %v", err)
	}
}

// TestStdioCloseKillsGroup: Close stops the server and whatever it
// started in its process group.
func TestStdioCloseKillsGroup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	t.Parallel()
	var pgid int
	s := connectHelper(t, "spawner", "serve", nil, Options{OnStart: func(_ string, pid int, start uint64) {
		if start == 0 {
			t.Error("no start time")
		}
		pgid = pid
	}})
	res, err := s.Call(context.Background(), "spawn", nil)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(res.Text)
	if err != nil || processGone(child) || processGone(pgid) {
		t.Fatalf("spawn: %q, %v (leader %d)", res.Text, err, pgid)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the server and its child to be gone", func() bool { return processGone(pgid) && processGone(child) })
	if _, err := s.Call(context.Background(), "echo", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("call after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestStdioCloseStubborn: a server that ignores stdin's end and SIGTERM is
// SIGKILLed.
func TestStdioCloseStubborn(t *testing.T) {
	t.Parallel()
	var pgid int
	s := connectHelper(t, "stubborn", "stubborn", nil, Options{OnStart: func(_ string, pid int, _ uint64) { pgid = pid }})
	if _, err := s.Call(context.Background(), "echo", json.RawMessage(`{"text":"x"}`)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !processGone(pgid) {
		t.Fatalf("server %d still runs after Close", pgid)
	}
}

// TestStdioCloseEndsCallsInFlight: Close ends a call that would wait
// for its CallTimeout (2 minutes) otherwise.
func TestStdioCloseEndsCallsInFlight(t *testing.T) {
	t.Parallel()
	var log stderrLog
	s := connectHelper(t, "busy", "serve", nil, Options{Stderr: log.add})
	errc := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), "hang", nil)
		errc <- err
	}()
	waitFor(t, "the call to hang", func() bool { return log.has("busy: helper: hanging") })
	s.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), `mcp server "busy": tool "hang": the session was closed`) {
			t.Errorf("error: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the call did not end after Close")
	}
}

func TestStdioCallTimeout(t *testing.T) {
	t.Parallel()
	s := connectHelper(t, "slow", "serve", nil, Options{CallTimeout: 300 * time.Millisecond})
	_, err := s.Call(context.Background(), "hang", nil)
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), `mcp server "slow": tool "hang": no answer within 300ms`) {
		t.Fatalf("error: %v", err)
	}
	// The session still works: the server got a cancellation, not a kill.
	res, err := callAgain(t, s, "echo", json.RawMessage(`{"text":"still here"}`))
	if err != nil || res.Text != "still here" {
		t.Fatalf("echo after a timeout: %+v, %v", res, err)
	}
	// A deadline of the caller's own is reported as the context's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Call(ctx, "echo", nil); !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Fatalf("cancelled call: %v", err)
	}
}
