package engine

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/llm"
)

func wideGraph(n int) *graph.Graph {
	b := (&gb{}).node("s", "start", graph.NodeData{})
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("a%d", i)
		b.node(id, "agent", agent(id)).edge("s", "output", id)
	}
	return b.build()
}

func TestCaps(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		runs int
		want int64
	}{
		{"per-run node cap", Config{MaxParallel: 4}, 1, 4},
		{"process-wide LLM cap across runs", Config{MaxParallel: 16, MaxLLMCalls: 3}, 2, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Count concurrency where the cap applies: in the client, from
			// request start until the response body is closed. (The fake's
			// own counter also includes its handlers' tails.)
			srv := fakeopenai.StartT(t, fakeopenai.WithLatency(50*time.Millisecond))
			ct := &countingTransport{base: http.DefaultTransport}
			client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "k", HTTPClient: &http.Client{Transport: ct}})
			if err != nil {
				t.Fatal(err)
			}
			tc.cfg.LLM = client
			e, _ := newTestEngine(t, tc.cfg)
			var ids []string
			for i := 0; i < tc.runs; i++ {
				run, err := e.StartGraph(context.Background(), wideGraph(12), StartOptions{})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, run.ID)
			}
			for _, id := range ids {
				if r := waitRun(t, e, id); r.Status != StatusCompleted {
					t.Fatalf("%s %s", r.Status, r.Error)
				}
			}
			if mc := ct.max.Load(); mc != tc.want {
				t.Errorf("max concurrent LLM requests %d, want exactly %d", mc, tc.want)
			}
		})
	}
}

type countingTransport struct {
	base     http.RoundTripper
	cur, max atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	n := c.cur.Add(1)
	for m := c.max.Load(); n > m && !c.max.CompareAndSwap(m, n); m = c.max.Load() {
	}
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		c.cur.Add(-1)
		return nil, err
	}
	resp.Body = &countedBody{ReadCloser: resp.Body, c: c}
	return resp, nil
}

type countedBody struct {
	io.ReadCloser
	c    *countingTransport
	once atomic.Bool
}

func (b *countedBody) Close() error {
	if b.once.CompareAndSwap(false, true) {
		b.c.cur.Add(-1)
	}
	return b.ReadCloser.Close()
}
