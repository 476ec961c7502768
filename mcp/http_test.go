package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// testHTTPServer is an MCP server built with the Go SDK, served over
// streamable HTTP (or SSE) on loopback, that wants two headers.
type testHTTPServer struct {
	url      string
	hanging  atomic.Int32 // calls of "hang" in progress
	rejected atomic.Int32 // requests refused for their headers
}

const hugeSize = 300 << 10

func newTestHTTPServer(t *testing.T, sse bool) *testHTTPServer {
	t.Helper()
	ts := &testHTTPServer{}
	release := make(chan struct{})
	srv := sdk.NewServer(&sdk.Implementation{Name: "test-http", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Echoes text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in textIn) (*sdk.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "hang", Description: "Answers only when cancelled."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			ts.hanging.Add(1)
			defer ts.hanging.Add(-1)
			select {
			case <-ctx.Done():
			case <-release:
			}
			return nil, nil, errors.New("cancelled")
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "huge", Description: "Returns 300 KiB of text."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return text("é" + strings.Repeat("x", hugeSize)), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "fail", Description: "A tool that fails."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, errors.New("the disk is full")
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "mixed", Description: "Text, an image, a link and a resource."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "before"},
				&sdk.ImageContent{MIMEType: "image/png", Data: make([]byte, 2048)},
				&sdk.ResourceLink{URI: "file:///a.txt", Name: "a", MIMEType: "text/plain"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://note", MIMEType: "text/markdown", Text: "# note"}},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://blob", Blob: []byte{1, 2, 3}}},
				&sdk.TextContent{Text: "after"},
			}}, nil, nil
		})
	// A raw handler: a panic becomes a protocol error (the SDK does not
	// recover handler panics; a real server's framework would).
	srv.AddTool(&sdk.Tool{Name: "panic", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (res *sdk.CallToolResult, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprint("internal error: ", r)}
				}
			}()
			panic("nil map write")
		})
	srv.AddTool(&sdk.Tool{Name: "odd.name/v2", InputSchema: map[string]any{"type": "object",
		"properties": map[string]any{"ids": map[string]any{"type": "array"}}}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("odd"), nil })
	var h http.Handler
	if sse {
		h = sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	} else {
		h = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("X-Team") != "core" {
			ts.rejected.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		close(release)
		hs.CloseClientConnections()
		hs.Close()
	})
	ts.url = hs.URL + "/mcp"
	return ts
}

func httpConfig(url string, typ string) ServerConfig {
	return ServerConfig{Type: typ, URL: url, Headers: map[string]string{"Authorization": "Bearer ${MCPTEST_TOKEN}", "X-Team": "core"}}
}

var tokenEnv = lookupIn(map[string]string{"MCPTEST_TOKEN": "s3cret"})

func TestHTTPSession(t *testing.T) {
	t.Parallel()
	ts := newTestHTTPServer(t, false)
	s, err := Connect(context.Background(), "remote", httpConfig(ts.url, TypeHTTP), Options{LookupEnv: tokenEnv, MaxResultBytes: 100 << 10})
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
		byName[tl.Name] = tl
	}
	if tl := byName["echo"]; tl.QualifiedName != "mcp__remote__echo" || tl.Description != "Echoes text." ||
		tl.InputSchema["type"] != "object" || tl.InputSchema["properties"].(map[string]any)["text"] == nil {
		t.Errorf("echo: %+v", tl)
	}
	odd := byName["odd.name/v2"]
	if odd.QualifiedName != "mcp__remote__odd_name_v2" ||
		odd.InputSchema["properties"].(map[string]any)["ids"].(map[string]any)["items"] == nil {
		t.Errorf("odd tool: %+v", odd)
	}
	if res, err := s.Call(context.Background(), "odd.name/v2", nil); err != nil || res.Text != "odd" {
		t.Errorf("odd tool call: %+v, %v", res, err)
	}

	res, err := s.Call(context.Background(), "echo", json.RawMessage(`{"text":"over http"}`))
	if err != nil || res != (Result{Text: "over http"}) {
		t.Fatalf("echo: %+v, %v", res, err)
	}

	// A tool's own failure is a result the model sees.
	res, err = s.Call(context.Background(), "fail", nil)
	if err != nil || !res.IsError || !strings.Contains(res.Text, "the disk is full") {
		t.Fatalf("fail: %+v, %v", res, err)
	}

	// A protocol error (the server's handler panicked) names server and tool.
	_, err = s.Call(context.Background(), "panic", nil)
	if err == nil || !strings.Contains(err.Error(), `mcp server "remote": tool "panic": the server answered with an error`) ||
		!strings.Contains(err.Error(), "nil map write") {
		t.Fatalf("panic: %v", err)
	}
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInternalError {
		t.Errorf("panic error does not wrap the JSON-RPC error: %v", err)
	}

	// A huge result is cut at MaxResultBytes, on a rune boundary, with a note.
	res, err = s.Call(context.Background(), "huge", nil)
	if err != nil || !res.Cut || !strings.HasPrefix(res.Text, "éxxx") {
		t.Fatalf("huge: cut=%v len=%d, %v", res.Cut, len(res.Text), err)
	}
	note := fmt.Sprintf("\n[output cut: %d of %d bytes shown]", 100<<10, hugeSize+2)
	if !strings.HasSuffix(res.Text, note) || len(res.Text) != 100<<10+len(note) {
		t.Errorf("huge: %d bytes, ends %q", len(res.Text), res.Text[len(res.Text)-60:])
	}

	// Content other than text is described briefly.
	res, err = s.Call(context.Background(), "mixed", nil)
	want := "before\n[image: image/png, 2.0 KiB]\n[resource link: file:///a.txt (a), text/plain]\n" +
		"[resource: mem://note, text/markdown]\n# note\n[resource: mem://blob, unknown type, 3 bytes]\nafter"
	if err != nil || res.Text != want {
		t.Fatalf("mixed:\n got %q\nwant %q (%v)", res.Text, want, err)
	}
}

func TestHTTPCallTimeout(t *testing.T) {
	t.Parallel()
	ts := newTestHTTPServer(t, false)
	s, err := Connect(context.Background(), "remote", httpConfig(ts.url, TypeHTTP), Options{LookupEnv: tokenEnv, CallTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Call(context.Background(), "hang", nil)
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), `mcp server "remote": tool "hang": no answer within 300ms`) {
		t.Fatalf("hang: %v", err)
	}
	// The server heard the cancellation.
	waitFor(t, "the server to end the hanging call", func() bool { return ts.hanging.Load() == 0 })
	if res, err := callAgain(t, s, "echo", json.RawMessage(`{"text":"ok"}`)); err != nil || res.Text != "ok" {
		t.Fatalf("echo after the timeout: %+v, %v", res, err)
	}
}

// TestHTTPHeaders: without the right headers the server refuses, and the
// error names the server.
func TestHTTPHeaders(t *testing.T) {
	t.Parallel()
	ts := newTestHTTPServer(t, false)
	sc := httpConfig(ts.url, TypeHTTP)
	sc.Headers["Authorization"] = "Bearer wrong"
	_, err := Connect(context.Background(), "remote", sc, Options{})
	if err == nil || !strings.Contains(err.Error(), `mcp server "remote": initialize:`) || ts.rejected.Load() == 0 {
		t.Fatalf("wrong token: %v (rejected %d)", err, ts.rejected.Load())
	}
	// A header built from a secret never leaves.
	sc.Headers["Authorization"] = "Bearer ${ANTHROPIC_API_KEY}"
	before := ts.rejected.Load()
	_, err = Connect(context.Background(), "remote", sc, Options{LookupEnv: lookupIn(map[string]string{"ANTHROPIC_API_KEY": "sk-ant"})})
	if err == nil || !strings.Contains(err.Error(), "headers.Authorization: ${ANTHROPIC_API_KEY} is one of Switchyard's own secrets") {
		t.Fatalf("secret header: %v", err)
	}
	if ts.rejected.Load() != before {
		t.Error("a request was sent")
	}
}

func TestHTTPUnreachable(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.NotFoundHandler())
	url := hs.URL + "/mcp"
	hs.Close() // nothing listens there now
	_, err := Connect(context.Background(), "gone", ServerConfig{URL: url}, Options{StartTimeout: 20 * time.Second})
	if err == nil || !strings.Contains(err.Error(), `mcp server "gone"`) {
		t.Fatalf("error: %v", err)
	}
}

// TestSSESession: the older HTTP+SSE transport ("type": "sse").
func TestSSESession(t *testing.T) {
	t.Parallel()
	ts := newTestHTTPServer(t, true)
	s, err := Connect(context.Background(), "old", httpConfig(ts.url, TypeSSE), Options{LookupEnv: tokenEnv})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tools, err := s.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(tools, func(tl Tool) bool { return tl.QualifiedName == "mcp__old__echo" }) {
		t.Errorf("tools: %+v", tools)
	}
	res, err := s.Call(context.Background(), "echo", json.RawMessage(`{"text":"over sse"}`))
	if err != nil || res.Text != "over sse" {
		t.Fatalf("echo: %+v, %v", res, err)
	}
}
