package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/llm"
)

// recorder is a Sink that keeps every event, for assertions.
type recorder struct {
	mu  sync.Mutex
	evs map[string][]Event
}

func newRecorder() *recorder { return &recorder{evs: map[string][]Event{}} }

func (r *recorder) Emit(ev *Event) {
	r.mu.Lock()
	r.evs[ev.RunID] = append(r.evs[ev.RunID], *ev)
	r.mu.Unlock()
}

func (r *recorder) events(runID string) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.evs[runID]...)
}

func (r *recorder) ofType(runID, typ string) []Event {
	var out []Event
	for _, ev := range r.events(runID) {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// gb builds graphs tersely in tests.
type gb struct{ g graph.Graph }

func (b *gb) node(id, typ string, data graph.NodeData) *gb {
	b.g.Nodes = append(b.g.Nodes, graph.Node{ID: id, Type: typ, Data: data})
	return b
}

func (b *gb) edge(src, handle, dst string) *gb {
	b.g.Edges = append(b.g.Edges, graph.Edge{ID: fmt.Sprintf("e%d", len(b.g.Edges)+1), Source: src, Target: dst,
		SourceHandle: handle, TargetHandle: "input"})
	return b
}

func (b *gb) build() *graph.Graph {
	c := b.g
	c.Nodes = append([]graph.Node(nil), b.g.Nodes...)
	c.Edges = append([]graph.Edge(nil), b.g.Edges...)
	return &c
}

func newTestEngine(t *testing.T, cfg Config) (*Engine, *recorder) {
	t.Helper()
	rec := newRecorder()
	cfg.Sinks = append(cfg.Sinks, rec)
	if cfg.ArtifactsRoot == "" {
		cfg.ArtifactsRoot = t.TempDir()
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, rec
}

// newLLMEngine is newTestEngine with openai-go talking to a fake
// OpenAI-compatible server on loopback (default reply: "echo: <input>").
func newLLMEngine(t *testing.T, cfg Config, opts ...fakeopenai.Option) (*Engine, *recorder) {
	t.Helper()
	srv := fakeopenai.StartT(t, opts...)
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "test", RetryBase: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cfg.LLM = client
	testFake[t.Name()] = srv
	return newTestEngine(t, cfg)
}

// testFake lets a test reach the fake server newLLMEngine started.
var testFake = map[string]*fakeopenai.Server{}

func waitRun(t *testing.T, e *Engine, id string) *Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := e.Wait(ctx, id)
	if err != nil {
		t.Fatalf("wait run: %v", err)
	}
	return r
}

func nodeStates(t *testing.T, e *Engine, id string) map[string]*NodeState {
	t.Helper()
	_, nodes, err := e.Snapshot(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*NodeState{}
	for _, n := range nodes {
		m[n.NodeID] = n
	}
	return m
}

// checkSeq asserts a run's events are numbered 1..n without gaps.
func checkSeq(t *testing.T, evs []Event) {
	t.Helper()
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d (gap or reorder): %+v", i, ev.Seq, ev)
		}
	}
}

func stepEndStatus(ev Event) string {
	var d struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(ev.Data, &d)
	return d.Status
}
