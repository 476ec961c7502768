package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/llm"
	"github.com/switchyard/switchyard/store/sqlite"
)

// testAPIKey must never show up in responses, events or logs.
const testAPIKey = "sk-test-SECRET-4f9a2c"

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type envOpts struct {
	token      string
	addr       string
	noLLM      bool
	llmOpts    []fakeopenai.Option
	wsBuffer   int64
	ping       time.Duration
	pongWait   time.Duration
	writeLimit time.Duration
	maxBody    int64
	ui         fs.FS
	source     WorkflowSource
	noHTTP     bool // do not start an httptest server
	sinks      []engine.Sink
	storeOpts  []sqlite.Option
	prices     llm.Prices
	// YAML editing: serve --read-only-workflows.
	readOnlyWorkflows bool
	trustedProxies    []netip.Prefix
	maxConns          int
}

// env is a server on a real SQLite file, a real engine talking to the fake
// OpenAI server through openai-go, served on loopback by httptest.
type env struct {
	t       testing.TB
	st      *sqlite.Store
	e       *engine.Engine
	srv     *Server
	ts      *httptest.Server
	fake    *fakeopenai.Server
	metrics *Metrics
	logs    *syncBuffer
	url     string
	token   string
	dbPath  string
}

func newEnv(t *testing.T, opts ...func(*envOpts)) *env {
	t.Helper()
	return newEnvTB(t, opts...)
}

// newEnvTB is newEnv for tests and benchmarks alike.
func newEnvTB(t testing.TB, opts ...func(*envOpts)) *env {
	t.Helper()
	o := envOpts{addr: "127.0.0.1:0"}
	for _, f := range opts {
		f(&o)
	}
	ctx := context.Background()
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dbPath := t.TempDir() + "/switchyard.db"
	st, err := sqlite.Open(ctx, dbPath, append([]sqlite.Option{sqlite.WithLogger(logger)}, o.storeOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m := NewMetrics()
	cfg := engine.Config{Store: st, ArtifactsRoot: t.TempDir(), Logger: logger, Sinks: append([]engine.Sink{m}, o.sinks...),
		Prices: o.prices}
	var fake *fakeopenai.Server
	if !o.noLLM {
		fake = fakeopenai.StartT(t, o.llmOpts...)
		client, err := llm.New(llm.Config{BaseURL: fake.URL(), APIKey: testAPIKey, RetryBase: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		cfg.LLM = client
	}
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	srv, err := New(Config{Engine: e, Store: st, Addr: o.addr, Token: o.token, Logger: logger, Metrics: m,
		UI: o.ui, WSBuffer: o.wsBuffer, PingInterval: o.ping, PongWait: o.pongWait, WSWriteTimeout: o.writeLimit, MaxBody: o.maxBody,
		Workflows: o.source, ReadOnlyWorkflows: o.readOnlyWorkflows, TrustedProxies: o.trustedProxies, MaxConns: o.maxConns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	v := &env{t: t, st: st, e: e, srv: srv, fake: fake, metrics: m, logs: logs, token: o.token, dbPath: dbPath}
	if !o.noHTTP {
		v.ts = httptest.NewServer(srv.Handler())
		t.Cleanup(v.ts.Close)
		v.url = v.ts.URL
	}
	return v
}

// with returns v reporting failures to t (for subtests).
func (v *env) with(t *testing.T) *env {
	c := *v
	c.t = t
	return &c
}

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// errCode returns the error code of an error response: Switchyard's
// {"error": {code, message}} or, on the compatibility routes, AgentFlow's
// {"error": message, "code"}.
func (r *response) errCode(t testing.TB) string {
	t.Helper()
	var probe struct {
		Error json.RawMessage `json:"error"`
	}
	r.decode(t, &probe)
	if bytes.HasPrefix(bytes.TrimSpace(probe.Error), []byte(`"`)) {
		var cb compatErrorBody
		r.decode(t, &cb)
		if cb.Code == "" || cb.Error == "" {
			t.Fatalf("compat error response without code or message: %s", r.body)
		}
		return cb.Code
	}
	var b errorBody
	r.decode(t, &b)
	if b.Error.Code == "" || b.Error.Message == "" {
		t.Fatalf("error response without code or message: %s", r.body)
	}
	return b.Error.Code
}

// request makes a request; body may be nil, a string, []byte or a value
// to encode. Every JSON answer is checked against the OpenAPI document.
func (v *env) request(method, path string, body any, hdr ...string) *response {
	v.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			v.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, v.url+path, rd)
	if err != nil {
		v.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if v.token != "" {
		req.Header.Set("Authorization", "Bearer "+v.token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		v.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		v.t.Fatal(err)
	}
	r := &response{status: res.StatusCode, header: res.Header, body: raw}
	checkAgainstSpec(v.t, method, req.URL.Path, r)
	return r
}

// must makes a request and fails unless it gets status; the JSON answer is
// decoded into out (if not nil).
func (v *env) must(status int, method, path string, body, out any) *response {
	v.t.Helper()
	r := v.request(method, path, body)
	if r.status != status {
		v.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, status, r.body)
	}
	if out != nil {
		r.decode(v.t, out)
	}
	return r
}

// wait waits for a run to leave its loop and returns its header.
func (v *env) wait(runID string) *engine.Run {
	v.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := v.e.Wait(ctx, runID)
	if err != nil {
		v.t.Fatalf("wait %s: %v", runID, err)
	}
	return r
}

// waitFor polls cond until it holds (or fails after 30s).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// dial opens a websocket to path.
func (v *env) dial(path string, hdr http.Header) (*websocket.Conn, *http.Response, error) {
	u := "ws" + strings.TrimPrefix(v.url, "http") + path
	if hdr == nil {
		hdr = http.Header{}
	}
	if v.token != "" && hdr.Get("Authorization") == "" && hdr.Get("Cookie") == "" {
		hdr.Set("Authorization", "Bearer "+v.token)
	}
	c, res, err := websocket.DefaultDialer.Dial(u, hdr)
	if res != nil {
		p, _, _ := strings.Cut(path, "?")
		var body []byte
		if err != nil && res.Body != nil {
			body, _ = io.ReadAll(res.Body)
		}
		if verr := specViolation(http.MethodGet, p, res.StatusCode, body); verr != nil {
			v.t.Errorf("websocket handshake: %v", verr)
		}
	}
	return c, res, err
}

func (v *env) mustDial(path string) *websocket.Conn {
	v.t.Helper()
	c, res, err := v.dial(path, nil)
	if err != nil {
		status := 0
		if res != nil {
			status = res.StatusCode
		}
		v.t.Fatalf("dial %s: %v (status %d)", path, err, status)
	}
	v.t.Cleanup(func() { c.Close() })
	return c
}

// readEvents reads events until the server closes the connection; it
// returns them and the close error.
func readEvents(c *websocket.Conn, timeout time.Duration) ([]engine.Event, error) {
	var out []engine.Event
	for {
		_ = c.SetReadDeadline(time.Now().Add(timeout))
		_, raw, err := c.ReadMessage()
		if err != nil {
			return out, err
		}
		var ev engine.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			return out, fmt.Errorf("bad message %q: %w", raw, err)
		}
		out = append(out, ev)
	}
}

// checkSeqs asserts events are numbered from+1, from+2, ... without gaps.
func checkSeqs(t testing.TB, evs []engine.Event, from int64) {
	t.Helper()
	for i, ev := range evs {
		if want := from + int64(i) + 1; ev.Seq != want {
			t.Fatalf("event %d has seq %d, want %d (gap or duplicate)", i, ev.Seq, want)
		}
	}
}

// closeCode is the close code of a websocket read error (-1 if none).
func closeCode(err error) int {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return -1
}

// Graphs used by the tests.

type gb struct{ g graph.Graph }

func newGraph() *gb { return &gb{} }

func (b *gb) node(id, typ string, data graph.NodeData) *gb {
	b.g.Nodes = append(b.g.Nodes, graph.Node{ID: id, Type: typ, Position: graph.Position{X: float64(len(b.g.Nodes)) * 100}, Data: data})
	return b
}

func (b *gb) edge(src, handle, dst string) *gb {
	b.g.Edges = append(b.g.Edges, graph.Edge{ID: fmt.Sprintf("e%d", len(b.g.Edges)+1), Source: src, Target: dst,
		SourceHandle: handle, TargetHandle: graph.HandleInput})
	return b
}

func (b *gb) build() *graph.Graph { c := b.g; return &c }

// threeNodeGraph is start → a1 → a2.
func threeNodeGraph() *graph.Graph {
	return newGraph().
		node("s", graph.TypeStart, graph.NodeData{InitialInput: "hello"}).
		node("a1", graph.TypeAgent, graph.NodeData{AgentName: "One"}).
		node("a2", graph.TypeAgent, graph.NodeData{AgentName: "Two"}).
		edge("s", "output", "a1").edge("a1", "output", "a2").build()
}

// approvalGraph is start → writer → approval → publish | revise.
func approvalGraph() *graph.Graph {
	return newGraph().
		node("s", graph.TypeStart, graph.NodeData{InitialInput: "draft"}).
		node("w", graph.TypeAgent, graph.NodeData{AgentName: "Writer"}).
		node("ok", graph.TypeApproval, graph.NodeData{Prompt: "Ship it?"}).
		node("pub", graph.TypeAgent, graph.NodeData{AgentName: "Publisher"}).
		node("rev", graph.TypeAgent, graph.NodeData{AgentName: "Reviser"}).
		edge("s", "output", "w").edge("w", "output", "ok").
		edge("ok", "approve", "pub").edge("ok", "reject", "rev").build()
}

// noAgentGraph is start → approval → (approve) if → (condition-0) back to
// the approval: it runs without an LLM and pauses at every visit.
func noAgentGraph() *graph.Graph {
	return newGraph().
		node("s", graph.TypeStart, graph.NodeData{InitialInput: "x"}).
		node("ok", graph.TypeApproval, graph.NodeData{Prompt: "Go?"}).
		node("cond", graph.TypeIf, graph.NodeData{Conditions: []graph.Condition{{Operator: "contains", Value: "x"}}}).
		edge("s", "output", "ok").edge("ok", "approve", "cond").edge("cond", "condition-0", "ok").build()
}

// invalidGraph has no start node.
func invalidGraph() *graph.Graph {
	return newGraph().node("a", graph.TypeAgent, graph.NodeData{AgentName: "Alone"}).build()
}

// --- OpenAPI conformance of real responses ---

var (
	specOnce     sync.Once
	specDoc      map[string]any
	specCompiler *jsonschema.Compiler
	specErr      error
	specPaths    []specPath
	schemaMu     sync.Mutex
	schemaCache  = map[string]*jsonschema.Schema{}
)

type specPath struct {
	template string
	re       *regexp.Regexp
	static   bool
}

const specURL = "http://switchyard.test/openapi.json"

func loadSpec() {
	raw, err := buildOpenAPI()
	if err != nil {
		specErr = err
		return
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		specErr = err
		return
	}
	specDoc = doc.(map[string]any)
	specCompiler = jsonschema.NewCompiler()
	if err := specCompiler.AddResource(specURL, doc); err != nil {
		specErr = err
		return
	}
	for p := range specDoc["paths"].(map[string]any) {
		pat := "^" + regexp.MustCompile(`\\\{[^}]+\\\}`).ReplaceAllString(regexp.QuoteMeta(p), `[^/]+`) + "$"
		specPaths = append(specPaths, specPath{template: p, re: regexp.MustCompile(pat), static: !strings.Contains(p, "{")})
	}
	sort.Slice(specPaths, func(i, j int) bool {
		if specPaths[i].static != specPaths[j].static {
			return specPaths[i].static
		}
		return specPaths[i].template < specPaths[j].template
	})
}

func matchSpecPath(path string) (string, bool) {
	for _, p := range specPaths {
		if p.re.MatchString(path) {
			return p.template, true
		}
	}
	return "", false
}

func jsonPointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// specCovered records the operations (method and path template) and
// statuses whose real answers were checked against the document; TestMain
// reports the operations no test exercised.
var (
	specCoveredMu sync.Mutex
	specCovered   = map[string]map[string]bool{} // "get /api/runs/{id}" -> statuses
)

// checkAgainstSpec fails the test if an API answer's status is not
// documented for its operation or its JSON body does not match the
// documented schema.
func checkAgainstSpec(t testing.TB, method, path string, r *response) {
	t.Helper()
	if err := specViolation(method, path, r.status, r.body); err != nil {
		t.Fatal(err)
	}
}

// specViolation checks one answer against the OpenAPI document: nil when
// it conforms (or is not an API answer).
func specViolation(method, path string, status int, body []byte) error {
	specOnce.Do(loadSpec)
	if specErr != nil {
		return fmt.Errorf("openapi: %v", specErr)
	}
	if !strings.HasPrefix(path, "/api/") && path != "/metrics" && path != "/login" && path != "/logout" {
		return nil // the UI
	}
	tmpl, ok := matchSpecPath(path)
	if !ok {
		if status == http.StatusNotFound || status == http.StatusUnauthorized || status == http.StatusForbidden {
			return nil // unknown API path
		}
		return fmt.Errorf("%s %s answered %d but is not in the OpenAPI document", method, path, status)
	}
	op, ok := specDoc["paths"].(map[string]any)[tmpl].(map[string]any)[strings.ToLower(method)].(map[string]any)
	if !ok {
		if status == http.StatusMethodNotAllowed {
			return nil
		}
		return fmt.Errorf("%s %s (%s) answered %d but the method is not documented", method, path, tmpl, status)
	}
	code := fmt.Sprint(status)
	resp, ok := op["responses"].(map[string]any)[code].(map[string]any)
	if !ok {
		return fmt.Errorf("%s %s answered %d, which the OpenAPI document does not list for %s: %s", method, path, status, tmpl, body)
	}
	specCoveredMu.Lock()
	key := strings.ToLower(method) + " " + tmpl
	if specCovered[key] == nil {
		specCovered[key] = map[string]bool{}
	}
	specCovered[key][code] = true
	specCoveredMu.Unlock()
	content, _ := resp["content"].(map[string]any)
	if _, isJSON := content["application/json"]; !isJSON || len(body) == 0 {
		return nil
	}
	loc := fmt.Sprintf("%s#/paths/%s/%s/responses/%s/content/application~1json/schema",
		specURL, jsonPointerEscape(tmpl), strings.ToLower(method), code)
	schemaMu.Lock()
	sch, ok := schemaCache[loc]
	if !ok {
		var err error
		sch, err = specCompiler.Compile(loc)
		if err != nil {
			schemaMu.Unlock()
			return fmt.Errorf("compile %s: %v", loc, err)
		}
		schemaCache[loc] = sch
	}
	schemaMu.Unlock()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %s: body is not JSON: %v: %s", method, path, err, body)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("%s %s %d does not match the OpenAPI schema: %v\nbody: %s", method, path, status, err, truncate(string(body), 2000))
	}
	return nil
}

// uncoveredOperations lists the documented operations whose success
// answer no test checked against the document.
func uncoveredOperations() []string {
	specOnce.Do(loadSpec)
	var out []string
	for tmpl, ops := range specDoc["paths"].(map[string]any) {
		for m, op := range ops.(map[string]any) {
			if m == "parameters" {
				continue
			}
			covered := false
			specCoveredMu.Lock()
			for code := range specCovered[m+" "+tmpl] {
				if strings.HasPrefix(code, "2") || code == "101" {
					covered = true
				}
			}
			specCoveredMu.Unlock()
			_ = op
			if !covered {
				out = append(out, m+" "+tmpl)
			}
		}
	}
	sort.Strings(out)
	return out
}

// emitEvents writes n events for a run straight into the store, as the
// engine would (seq from+1 ... from+n).
func emitEvents(st *sqlite.Store, runID string, from int64, n int, content string) {
	for i := 1; i <= n; i++ {
		st.Emit(&engine.Event{Seq: from + int64(i), RunID: runID, NodeID: "n", Type: engine.EvOutput,
			Content: content, Timestamp: time.Now().UTC()})
	}
}

// createRawRun stores a bare run that tests feed with emitEvents.
func createRawRun(t testing.TB, st *sqlite.Store, status engine.RunStatus) string {
	t.Helper()
	id := newID()
	now := time.Now().UTC()
	r := &engine.Run{ID: id, Kind: engine.KindGraph, Definition: json.RawMessage(`{"nodes":[],"edges":[]}`),
		Status: status, PendingApprovals: []engine.PendingApproval{}, CreatedAt: now, UpdatedAt: now}
	if err := st.CreateRun(context.Background(), r, nil, nil); err != nil {
		t.Fatal(err)
	}
	return id
}

// finishRawRun ends a bare run as the engine does: a terminal run_status
// event, then the header.
func finishRawRun(t testing.TB, st *sqlite.Store, runID string, lastSeq int64) {
	t.Helper()
	now := time.Now().UTC()
	st.Emit(&engine.Event{Seq: lastSeq + 1, RunID: runID, NodeID: engine.SystemNodeID, Type: engine.EvRunStatus,
		Content: string(engine.StatusCompleted), Timestamp: now})
	r := &engine.Run{ID: runID, Kind: engine.KindGraph, Status: engine.StatusCompleted,
		PendingApprovals: []engine.PendingApproval{}, CreatedAt: now, UpdatedAt: now, FinishedAt: &now}
	if err := st.Checkpoint(context.Background(), r, nil); err != nil {
		t.Fatal(err)
	}
}

// newID returns a fresh run id.
func newID() string { return uuid.NewString() }

func queryEscape(s string) string { return url.QueryEscape(s) }

// mustLLM is an openai-go provider talking to fake.
func mustLLM(t testing.TB, fake *fakeopenai.Server) *llm.Client {
	t.Helper()
	client, err := llm.New(llm.Config{BaseURL: fake.URL(), APIKey: testAPIKey, RetryBase: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// newTestHTTP serves s on loopback until the test ends; it returns the URL.
func newTestHTTP(t testing.TB, s *Server) string {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// grepLines returns the lines of s containing sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
