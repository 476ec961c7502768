package tools

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/internal/proc"
)

// alive reports whether pid is a live process (a zombie is not).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// readPid waits for a command to write its background child's pid.
func readPid(t *testing.T, p string) int {
	t.Helper()
	var pid int
	waitFor(t, "the pid file", func() bool {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.HasSuffix(b, []byte("\n")) {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	// Killed at the end in case the test did not see it die, and only if
	// the pid still names it (same start time): by then it may name
	// another process.
	start, _ := proc.StartTime(pid)
	t.Cleanup(func() {
		if now, err := proc.StartTime(pid); err == nil && start != 0 && now == start {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pid
}

func TestBash(t *testing.T) {
	// Not parallel: t.Setenv sets a variable of this process (which a
	// command must not see) for the test's length.
	te := newEnv(t)
	t.Setenv("SWITCHYARD_TOOLS_TEST_SECRET", "leaked") // not in ProcEnv
	te.ProcEnv = append(te.ProcEnv, "GREETING=hi")
	cases := []struct {
		name, cmd string
		want      string
		isErr     bool
	}{
		{"stdout", "echo hello", "hello", false},
		{"stdout then stderr", "echo err >&2; echo out", "out\nerr", false},
		{"runs in the workspace", "pwd", te.ws, false},
		{"no output", "true", "(no output)", false},
		{"environment is ProcEnv only", `echo "[$SWITCHYARD_TOOLS_TEST_SECRET][$GREETING]"`, "[][hi]", false},
		{"exit code", "echo partial; echo bad >&2; exit 3", "partial\nbad\nExit code 3", true},
		{"exit code alone", "exit 1", "Exit code 1", true},
		{"killed by a signal", "kill -KILL $$", "Command ended by signal: killed.", true},
		{"pipes and quotes", `printf 'a b\nc\n' | wc -l`, "2", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := call(t, te.Env, "Bash", map[string]any{"command": c.cmd, "description": c.name})
			if r.IsError != c.isErr || r.Output != c.want {
				t.Fatalf("got %q (error %v), want %q (error %v)", r.Output, r.IsError, c.want, c.isErr)
			}
		})
	}
	t.Run("nil ProcEnv is an empty environment", func(t *testing.T) {
		env := &Env{Roots: []string{te.ws}}
		out := mustOK(t, call(t, env, "Bash", map[string]any{"command": `echo "[$SWITCHYARD_TOOLS_TEST_SECRET][$HOME]"`}))
		if out != "[][]" {
			t.Fatalf("got %q", out)
		}
	})
	t.Run("output cut keeps the exit code", func(t *testing.T) {
		r := call(t, te.Env, "Bash", map[string]any{"command": "head -c 100000 /dev/zero | tr '\\0' x; exit 4"})
		if !r.IsError || !r.Cut || r.FullSize != 100000+len("\nExit code 4") ||
			!strings.HasSuffix(r.Output, "bytes shown]\nExit code 4") || !strings.HasPrefix(r.Output, "xxxx") {
			t.Fatalf("Cut=%v FullSize=%d tail %q", r.Cut, r.FullSize, r.Output[len(r.Output)-80:])
		}
	})
	t.Run("RunProc is used", func(t *testing.T) {
		var got proc.Spec
		env := &Env{Roots: []string{te.ws}, ProcEnv: []string{"A=1"}, BashTimeout: time.Minute, BashMaxTimeout: 2 * time.Minute,
			RunProc: func(ctx context.Context, ps proc.Spec) (string, string, error) {
				got = ps
				return "from hook", "", nil
			}}
		out := mustOK(t, call(t, env, "Bash", map[string]any{"command": "ls"}))
		if out != "from hook" || got.Name != "bash" || strings.Join(got.Args, " ") != "-c ls" || got.Dir != te.ws ||
			strings.Join(got.Env, ",") != "A=1" || got.Timeout != time.Minute {
			t.Fatalf("%q %+v", out, got)
		}
		call(t, env, "Bash", map[string]any{"command": "ls", "timeout": 5000})
		if got.Timeout != 5*time.Second {
			t.Fatalf("timeout %s", got.Timeout)
		}
		call(t, env, "Bash", map[string]any{"command": "ls", "timeout": 600000})
		if got.Timeout != 2*time.Minute {
			t.Fatalf("timeout not capped: %s", got.Timeout)
		}
		call(t, &Env{Roots: []string{te.ws}, RunProc: env.RunProc}, "Bash", map[string]any{"command": "ls"})
		if got.Timeout != DefaultBashTimeout || got.Env == nil {
			t.Fatalf("defaults: timeout %s env %v", got.Timeout, got.Env)
		}
		call(t, &Env{Roots: []string{te.ws}, RunProc: env.RunProc}, "Bash", map[string]any{"command": "ls", "timeout": 3600000})
		if got.Timeout != DefaultBashMaxTimeout {
			t.Fatalf("default cap: %s", got.Timeout)
		}
	})
}

// TestBashTimeoutKillsGroup: a command past its timeout is killed with
// everything it started: a background child is gone afterwards. The
// timeout (the call asks for more; BashMaxTimeout caps it) only needs to
// outlast bash's start and one fork.
func TestBashTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	te.BashMaxTimeout = 3 * time.Second
	pidfile := filepath.Join(t.TempDir(), "pid")
	te.ProcEnv = append(te.ProcEnv, "PIDFILE="+pidfile)
	r := call(t, te.Env, "Bash", map[string]any{"command": bgSleep, "timeout": 600000})
	mustErr(t, r, "Command timed out after 3s; its process group was killed.")
	pid := readPid(t, pidfile)
	waitFor(t, "the background child to be gone", func() bool { return !alive(pid) })
}

// bgSleep starts a background child, records its pid and waits for it.
const bgSleep = `sleep 1000 & echo $! > "$PIDFILE.tmp" && mv "$PIDFILE.tmp" "$PIDFILE"; wait`

// TestBashCancelKillsGroup: a ctx that ends mid-command kills the command
// and its background child, and the result says so.
func TestBashCancelKillsGroup(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	pidfile := filepath.Join(t.TempDir(), "pid")
	te.ProcEnv = append(te.ProcEnv, "PIDFILE="+pidfile)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	go func() {
		tool, _ := Lookup("Bash")
		done <- tool.Call(ctx, te.Env, []byte(`{"command":`+strconv.Quote(bgSleep)+`}`))
	}()
	pid := readPid(t, pidfile)
	if !alive(pid) {
		t.Fatal("the background child is not running")
	}
	cancel()
	r := <-done
	mustErr(t, r, "Command cancelled (context canceled); its process group was killed.")
	waitFor(t, "the background child to be gone", func() bool { return !alive(pid) })
}
