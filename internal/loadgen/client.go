package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Client talks to a Switchyard server's API.
type Client struct {
	Base  string // http://127.0.0.1:8080
	Token string
	HTTP  *http.Client
}

// NewClient returns a client with connection reuse sized for load.
func NewClient(base, token string) *Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 1024
	tr.MaxIdleConnsPerHost = 1024
	return &Client{Base: strings.TrimRight(base, "/"), Token: token, HTTP: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

// APIError is a non-2xx answer.
type APIError struct {
	Status int
	Body   string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.Status, strings.TrimSpace(e.Body))
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var raw []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		raw = b
	}
	data, err := c.send(ctx, method, path, raw)
	if err != nil || out == nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// send makes a request (body, when not nil, is JSON) and returns the
// response body of a 2xx answer; any other is an *APIError.
func (c *Client) send(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, &APIError{Status: resp.StatusCode, Body: string(data)}
	}
	return data, nil
}

// RunView is the part of a run the load tool reads.
type RunView struct {
	RunID            string `json:"runId"`
	Status           string `json:"status"`
	PendingApprovals []struct {
		NodeID string `json:"nodeId"`
	} `json:"pendingApprovals"`
}

// StartRun posts a graph and returns the new run's id.
func (c *Client) StartRun(ctx context.Context, graph json.RawMessage, input string) (string, error) {
	var rv RunView
	err := c.do(ctx, http.MethodPost, "/api/runs", map[string]any{"graph": graph, "input": input}, &rv)
	return rv.RunID, err
}

// compatView is the part of POST /api/run's answer the load tool reads:
// the logs and state that follow are skipped by the decoder.
type compatView struct {
	RunID  string `json:"runId"`
	Status string `json:"status"`
	Error  string `json:"error"`
}

// CompatRun posts a graph to the AgentFlow-compatible POST /api/run, which
// answers once the run pauses or ends, and returns the run's status.
func (c *Client) CompatRun(ctx context.Context, graph json.RawMessage, input string) (runID, status string, err error) {
	var v compatView
	err = c.do(ctx, http.MethodPost, "/api/run", map[string]any{"graph": graph, "input": input}, &v)
	if err == nil && v.Status != "completed" && v.Error != "" {
		err = fmt.Errorf("run %s %s: %s", v.RunID, v.Status, v.Error)
	}
	return v.RunID, v.Status, err
}

// FakeStats is what a `switchyard fake-llm` reports on GET /_stats.
type FakeStats struct {
	Requests int64 `json:"requests"`
	CPUUs    int64 `json:"cpuUs"`
	Conns    int64 `json:"conns"` // connections accepted
}

// GetFakeStats reads a fake LLM's counters; base is its URL (with or
// without the /v1 suffix), hc the client to read them with (nil: the
// default; a fake serving HTTPS needs one that trusts its certificate).
func GetFakeStats(ctx context.Context, hc *http.Client, base string) (FakeStats, error) {
	var st FakeStats
	if hc == nil {
		hc = http.DefaultClient
	}
	c := &Client{Base: strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1"), HTTP: hc}
	err := c.do(ctx, http.MethodGet, "/_stats", nil, &st)
	return st, err
}

// Metric reads an unlabelled sample, such as a counter, from the
// server's /metrics (Prometheus's text format).
func (c *Client) Metric(ctx context.Context, name string) (float64, error) {
	text, err := c.Metrics(ctx)
	if err != nil {
		return 0, err
	}
	if v, ok := PromValue(text, name); ok {
		return v, nil
	}
	return 0, fmt.Errorf("/metrics has no %s", name)
}

// Metrics returns the server's /metrics (Prometheus's text format).
func (c *Client) Metrics(ctx context.Context) (string, error) {
	data, err := c.send(ctx, http.MethodGet, "/metrics", nil)
	return string(data), err
}

// PromValue reads the unlabelled sample name from Prometheus's text
// format.
func PromValue(text, name string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// GetRun fetches a run.
func (c *Client) GetRun(ctx context.Context, id string) (*RunView, error) {
	var rv RunView
	err := c.do(ctx, http.MethodGet, "/api/runs/"+id, nil, &rv)
	return &rv, err
}

// Decide answers an approval; the error is an *APIError for non-2xx.
func (c *Client) Decide(ctx context.Context, runID, nodeID, decision string) error {
	return c.do(ctx, http.MethodPost, "/api/runs/"+runID+"/approvals/"+nodeID,
		map[string]string{"decision": decision, "note": "load"}, nil)
}

// Dial opens a websocket on path (e.g. /api/ws).
func (c *Client) Dial(ctx context.Context, path string) (*websocket.Conn, error) {
	u, err := url.Parse(c.Base + path)
	if err != nil {
		return nil, err
	}
	u.Scheme = strings.Replace(u.Scheme, "http", "ws", 1)
	h := http.Header{}
	if c.Token != "" {
		h.Set("Authorization", "Bearer "+c.Token)
	}
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 64 << 10}
	conn, resp, err := d.DialContext(ctx, u.String(), h)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	return conn, err
}

// statusMsg is one message of /api/ws.
type statusMsg struct {
	RunID           string `json:"runId"`
	Status          string `json:"status"`
	WaitingForInput bool   `json:"waitingForInput"`
}

// StatusWatch follows /api/ws and remembers when each run first reached
// each status, so a waiter can ask even after the fact (a run may finish
// before its POST even returns).
type StatusWatch struct {
	conn *websocket.Conn
	mu   sync.Mutex
	seen map[string]map[string]time.Time
	cond *sync.Cond
	err  error
}

// WatchStatuses connects to /api/ws.
func (c *Client) WatchStatuses(ctx context.Context) (*StatusWatch, error) {
	conn, err := c.Dial(ctx, "/api/ws")
	if err != nil {
		return nil, fmt.Errorf("status stream: %w", err)
	}
	w := &StatusWatch{conn: conn, seen: map[string]map[string]time.Time{}}
	w.cond = sync.NewCond(&w.mu)
	go w.read()
	return w, nil
}

func (w *StatusWatch) read() {
	for {
		var m statusMsg
		if err := w.conn.ReadJSON(&m); err != nil {
			w.mu.Lock()
			w.err = err
			w.cond.Broadcast()
			w.mu.Unlock()
			return
		}
		now := time.Now()
		w.mu.Lock()
		st := w.seen[m.RunID]
		if st == nil {
			st = map[string]time.Time{}
			w.seen[m.RunID] = st
		}
		if _, ok := st[m.Status]; !ok {
			st[m.Status] = now
		}
		w.cond.Broadcast()
		w.mu.Unlock()
	}
}

// Close stops watching.
func (w *StatusWatch) Close() { w.conn.Close() }

// terminal statuses of a run.
var terminal = []string{"completed", "failed", "cancelled"}

// Wait blocks until the run reaches one of statuses (or the deadline) and
// returns which one and when it was seen.
func (w *StatusWatch) Wait(runID string, deadline time.Time, statuses ...string) (string, time.Time, error) {
	timer := time.AfterFunc(time.Until(deadline), func() {
		w.mu.Lock()
		w.cond.Broadcast()
		w.mu.Unlock()
	})
	defer timer.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for _, s := range statuses {
			if t, ok := w.seen[runID][s]; ok {
				return s, t, nil
			}
		}
		if w.err != nil {
			return "", time.Time{}, w.err
		}
		if time.Now().After(deadline) {
			return "", time.Time{}, fmt.Errorf("run %s: no %v status before the deadline", runID, statuses)
		}
		w.cond.Wait()
	}
}

// Count returns how many of ids have reached any of statuses.
func (w *StatusWatch) Count(ids []string, statuses ...string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, id := range ids {
		for _, s := range statuses {
			if _, ok := w.seen[id][s]; ok {
				n++
				break
			}
		}
	}
	return n
}
