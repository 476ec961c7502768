package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// helperEnv makes the test binary an MCP server (or a broken one) instead
// of running the tests: the stdio tests start it with this variable in
// the server entry's env.
const helperEnv = "MCPTEST_HELPER"

func TestMain(m *testing.M) {
	switch mode := os.Getenv(helperEnv); mode {
	case "":
		os.Exit(m.Run())
	case "serve":
		helperServe(false)
	case "stubborn": // ignores stdin's end and SIGTERM: only SIGKILL stops it
		helperServe(true)
	case "noinit": // never answers initialize
		fmt.Fprintln(os.Stderr, "helper: waiting for nothing")
		_, _ = io.Copy(io.Discard, os.Stdin)
		select {}
	case "exit": // dies before initializing
		fmt.Fprintln(os.Stderr, "helper: cannot read my config")
		os.Exit(7)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		os.Exit(2)
	}
}

type textIn struct {
	Text string `json:"text"`
}

type linesIn struct {
	N int `json:"n"`
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// helperServe is a stdio MCP server built with the Go SDK whose tools
// report its environment and misbehave on request.
func helperServe(stubborn bool) {
	if stubborn {
		signal.Ignore(syscall.SIGTERM)
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "helper", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "env", Description: "Lists the server's environment."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			env := os.Environ()
			sort.Strings(env)
			return text(strings.Join(env, "\n")), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "pwd", Description: "The working directory."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			wd, err := os.Getwd()
			return text(wd), nil, err
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Echoes text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in textIn) (*sdk.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "stderr", Description: "Writes n lines to stderr."},
		func(_ context.Context, _ *sdk.CallToolRequest, in linesIn) (*sdk.CallToolResult, any, error) {
			for i := 1; i <= in.N; i++ {
				fmt.Fprintf(os.Stderr, "helper line %d\n", i)
			}
			return text("written"), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "crash", Description: "Exits in the middle of the call."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "helper: crashing now")
			os.Exit(3)
			return nil, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "hang", Description: "Never answers (ignores cancellation)."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "helper: hanging")
			select {}
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "spawn", Description: "Starts a long sleep in its process group; returns its pid."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			cmd := exec.Command("sleep", "1000")
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			return text(strconv.Itoa(cmd.Process.Pid)), nil, nil
		})
	_ = srv.Run(context.Background(), &sdk.StdioTransport{})
	if stubborn {
		select {}
	}
	os.Exit(0)
}

// helperConfig is a server entry that runs this test binary as mode.
func helperConfig(t *testing.T, mode string, env map[string]string) ServerConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// GORACE: a race-enabled binary sleeps a second at exit otherwise.
	e := map[string]string{helperEnv: mode, "GORACE": "atexit_sleep_ms=0"}
	for k, v := range env {
		e[k] = v
	}
	return ServerConfig{Type: TypeStdio, Command: exe, Env: e}
}

// baseEnv is what tests pass as Options.BaseEnv: an allowlist, as the
// engine does.
func baseEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
}

// processGone reports whether pid no longer runs (a zombie counts as gone).
func processGone(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	k := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[k+1:]))
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// callAgain calls tool on s after a timeout test, until it is answered:
// the session's own CallTimeout is short there (300 ms), and on a loaded
// machine an echo can outlast it too. What the tests check is that the
// session answers again, so only ErrTimeout is tried again, and only for
// a while.
func callAgain(t *testing.T, s *Session, tool string, args json.RawMessage) (Result, error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := s.Call(context.Background(), tool, args)
		if !errors.Is(err, ErrTimeout) || time.Now().After(deadline) {
			return res, err
		}
	}
}
