package mcp

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the module root (where go.mod is).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// everythingServer is the entry of @modelcontextprotocol/server-everything,
// the reference test server of the MCP project, installed from npm as a
// root devDependency (npm ci at the repository root). Missing, the test
// skips, except in CI.
func everythingServer(t *testing.T) ServerConfig {
	t.Helper()
	missing := func(what string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing: run npm ci at the repository root", what)
		}
		t.Skipf("%s is missing: run npm ci at the repository root", what)
	}
	bin := filepath.Join(repoRoot(t), "node_modules", ".bin", "mcp-server-everything")
	if _, err := os.Stat(bin); err != nil {
		missing(bin)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node")
	}
	return ServerConfig{Type: TypeStdio, Command: "node", Args: []string{bin, "stdio"},
		Env: map[string]string{"MCPTEST_GREETING": "${MCPTEST_GREETING}"}}
}

// TestNPMEverythingServer runs a third-party server (Node, the
// TypeScript SDK) over stdio. Not parallel: it sets process variables.
func TestNPMEverythingServer(t *testing.T) {
	sc := everythingServer(t)
	t.Setenv("SWITCHYARD_MCPTEST_SECRET", "do-not-leak")
	t.Setenv("MCPTEST_GREETING", "hi from the test")
	var log stderrLog
	var pgid int
	s, err := Connect(context.Background(), "everything", sc, Options{
		BaseEnv: baseEnv(), Stderr: log.add,
		OnStart: func(_ string, pid int, _ uint64) { pgid = pid },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	tools, err := s.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Tool{}
	for _, tl := range tools {
		byName[tl.QualifiedName] = tl
	}
	sum, ok := byName["mcp__everything__get-sum"]
	if !ok || sum.Name != "get-sum" || sum.InputSchema["type"] != "object" ||
		!slices.Equal(toStrings(sum.InputSchema["required"]), []string{"a", "b"}) {
		t.Fatalf("get-sum: %+v (tools %v)", sum, keys(byName))
	}
	if _, ok := byName["mcp__everything__echo"]; !ok {
		t.Fatalf("no echo tool: %v", keys(byName))
	}

	call := func(tool, args string) Result {
		t.Helper()
		res, err := s.Call(context.Background(), tool, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res
	}
	if res := call("echo", `{"message": "hello, world"}`); res != (Result{Text: "Echo: hello, world"}) {
		t.Errorf("echo: %+v", res)
	}
	if res := call("get-sum", `{"a": 2, "b": 3}`); res != (Result{Text: "The sum of 2 and 3 is 5."}) {
		t.Errorf("get-sum: %+v", res)
	}
	// Arguments the tool's schema refuses: an error result, for the model.
	if res := call("get-sum", `{"a": "two"}`); !res.IsError || !strings.Contains(res.Text, "get-sum") {
		t.Errorf("get-sum with bad arguments: %+v", res)
	}
	if res := call("get-tiny-image", ``); res.IsError || !strings.Contains(res.Text, "[image: image/png, ") {
		t.Errorf("get-tiny-image: %+v", res)
	}

	// The server's environment: BaseEnv and its entry's env, expanded.
	res := call("get-env", `{}`)
	var env map[string]string
	if err := json.Unmarshal([]byte(res.Text), &env); err != nil {
		t.Fatalf("get-env: %v: %q", err, res.Text)
	}
	if env["MCPTEST_GREETING"] != "hi from the test" || env["PATH"] != os.Getenv("PATH") {
		t.Errorf("environment: %v", env)
	}
	if _, leaked := env["SWITCHYARD_MCPTEST_SECRET"]; leaked {
		t.Error("the server saw a SWITCHYARD_ variable")
	}

	// Its stderr reached the run's log.
	waitFor(t, "the server's start-up line on stderr", func() bool {
		return log.has("everything: Starting default (STDIO) server...")
	})

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node to be gone", func() bool { return processGone(pgid) })
}

func toStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, e := range list {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
