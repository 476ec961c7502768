package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// newEnv is a workspace in a temporary folder, with a second root (the
// artifacts folder) beside it and an outside folder beside both.
type testEnv struct {
	*Env
	ws, art, out string
}

func newEnv(t *testing.T) testEnv {
	t.Helper()
	base := t.TempDir()
	te := testEnv{ws: filepath.Join(base, "ws"), art: filepath.Join(base, "art"), out: filepath.Join(base, "outside")}
	for _, d := range []string{te.ws, te.art, te.out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	te.Env = &Env{Roots: []string{te.ws, te.art}, ProcEnv: []string{"PATH=" + os.Getenv("PATH")}}
	return te
}

// put writes a file (creating folders) and returns its path.
func put(t *testing.T, p, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// callTool calls the named tool; args is marshalled unless it is a string
// (taken as raw JSON).
func callTool(t *testing.T, ctx context.Context, env *Env, name string, args any) Result {
	t.Helper()
	tool, ok := Lookup(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	var raw json.RawMessage
	if s, ok := args.(string); ok {
		raw = json.RawMessage(s)
	} else {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		raw = b
	}
	r := tool.Call(ctx, env, raw)
	if len(r.Output) > MaxResult {
		t.Fatalf("%s output is %d bytes, over MaxResult", name, len(r.Output))
	}
	return r
}

func call(t *testing.T, env *Env, name string, args any) Result {
	t.Helper()
	return callTool(t, context.Background(), env, name, args)
}

// mustOK fails unless r is a success, and returns its output.
func mustOK(t *testing.T, r Result) string {
	t.Helper()
	if r.IsError {
		t.Fatalf("unexpected error result: %s", r.Output)
	}
	return r.Output
}

// mustErr fails unless r is an error holding every want.
func mustErr(t *testing.T, r Result, want ...string) {
	t.Helper()
	if !r.IsError {
		t.Fatalf("want an error result, got: %s", r.Output)
	}
	for _, w := range want {
		if !strings.Contains(r.Output, w) {
			t.Fatalf("error %q does not contain %q", r.Output, w)
		}
	}
}

// countdownCtx is a context whose Err turns to Canceled after n calls:
// a walk cancelled midway, without timing.
type countdownCtx struct {
	context.Context
	n     atomic.Int64
	after atomic.Int64 // Err calls after it turned
}

func newCountdown(n int64) *countdownCtx {
	c := &countdownCtx{Context: context.Background()}
	c.n.Store(n)
	return c
}

func (c *countdownCtx) Err() error {
	if c.n.Add(-1) < 0 {
		c.after.Add(1)
		return context.Canceled
	}
	return nil
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
