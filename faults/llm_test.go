//go:build linux

package faults

// The LLM endpoint fails in every way (issue 8): runs fail or retry as
// specified (transient failures — 429, 5xx, broken connections, cut
// streams — are retried up to 4 attempts; auth and request errors are
// not), the run's error names the node and the cause, and the server stays
// healthy and keeps completing new runs.

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
)

// maxAttempts is the engine's default number of tries of one LLM call.
const maxAttempts = 4

type llmCase struct {
	name string
	// fault answers the calls of node node ("a" unless set); attempt is
	// 1 for the node's first call.
	node  string
	fault func(attempt int) (fakeReply, bool)
	want  engine.RunStatus
	// calls is how many requests node must have made (0: between 1 and
	// maxAttempts).
	calls int
	// cause: the run's error must contain one of these (lower case).
	cause []string
	// subagent builds the graph with a subagent "sub" under "a".
	subagent bool
	// minGap is the least time between two calls (a honoured Retry-After).
	minGap time.Duration
	// detail must be in the run's error too: the provider's own message.
	detail string
}

func always(r fakeReply) func(int) (fakeReply, bool) {
	return func(int) (fakeReply, bool) { return r, true }
}

func firstN(n int, r fakeReply) func(int) (fakeReply, bool) {
	return func(attempt int) (fakeReply, bool) { return r, attempt <= n }
}

var llmCases = []llmCase{
	{name: "429 storm", fault: always(fakeReply{Status: 429, RetryAfter: time.Second}), want: engine.StatusFailed,
		calls: maxAttempts, cause: []string{"429"}, minGap: 900 * time.Millisecond},
	{name: "429 twice then ok", fault: firstN(2, fakeReply{Status: 429}), want: engine.StatusCompleted, calls: 3},
	{name: "500 storm", fault: always(fakeReply{Status: 500}), want: engine.StatusFailed, calls: maxAttempts, cause: []string{"500"}},
	{name: "503 once", fault: firstN(1, fakeReply{Status: 503}), want: engine.StatusCompleted, calls: 2},
	{name: "connection resets", fault: always(fakeReply{Reset: true}), want: engine.StatusFailed, calls: maxAttempts,
		cause: []string{"reset", "eof"}},
	{name: "connection reset once", fault: firstN(1, fakeReply{Reset: true}), want: engine.StatusCompleted, calls: 2},
	{name: "truncated streams", fault: always(fakeReply{Text: "a b c d e f g h", TruncateStream: true}), want: engine.StatusFailed,
		calls: maxAttempts, cause: []string{"ended early"}},
	{name: "truncated stream then reset", fault: always(fakeReply{Text: "a b c d e f g h", TruncateStream: true, Reset: true}),
		want: engine.StatusFailed, calls: maxAttempts, cause: []string{"reset", "eof", "ended early"}},
	{name: "truncated once", fault: firstN(1, fakeReply{Text: "a b c d", TruncateStream: true}), want: engine.StatusCompleted, calls: 2},
	{name: "malformed JSON", fault: always(fakeReply{Malformed: true}), want: engine.StatusFailed,
		cause: []string{"json", "invalid character", "unexpected"}},
	{name: "401 unauthorized", fault: always(fakeReply{Status: 401}), want: engine.StatusFailed, calls: 1, cause: []string{"401"}},
	// A request error is only clear with the provider's message (which
	// openai-go leaves out of its Error()).
	{name: "400 bad request", fault: always(fakeReply{Status: 400, ErrorMessage: "maximum context length exceeded"}), want: engine.StatusFailed,
		calls: 1, cause: []string{"400"}, detail: "maximum context length exceeded"},
	// A subagent whose LLM fails: its parent is told (the tool result is
	// the error) and the run still completes.
	{name: "subagent 500 storm", node: "sub", subagent: true, fault: always(fakeReply{Status: 500}),
		want: engine.StatusCompleted, calls: maxAttempts},
}

func llmCaseGraph(c llmCase, key string) *graph.Graph {
	if !c.subagent {
		return chainGraph(key, "a")
	}
	b := &gbuild{}
	a := agent(key, "a")
	a.Tools = &graph.Tools{Subagents: true}
	b.node("s", graph.TypeStart, graph.NodeData{InitialInput: "go"}).
		node("a", graph.TypeAgent, a).edge("s", graph.HandleOutput, "a").
		node("sub", graph.TypeAgent, graph.NodeData{AgentName: "Helper"}).edge("a", graph.HandleSubagent, "sub")
	return &b.g
}

// TestLLMFaults runs one run per failure mode, all at once on one server,
// plus a run whose LLM call hangs until it is cancelled.
func TestLLMFaults(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.start()
	base := p.baseline(t)

	// The server must answer health checks throughout.
	var healthFails, healthChecks atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			healthChecks.Add(1)
			if code, _, err := p.do(http.MethodGet, "/api/health", nil); err != nil || code != http.StatusOK {
				healthFails.Add(1)
			}
		}
	}()

	ids := make([]string, len(llmCases))
	for i, c := range llmCases {
		key := fmt.Sprintf("llm%d", i)
		node := c.node
		if node == "" {
			node = "a"
		}
		fault := c.fault
		h.llm.setFault(key, func(call llmCall, attempt int) (fakeReply, bool) {
			if call.node != node {
				return fakeReply{}, false
			}
			return fault(attempt)
		})
		ids[i] = p.startGraph(t, llmCaseGraph(c, key), "")
	}

	// A call that never answers: the request timeout is not configurable
	// from the environment (10 minutes), so the run is cancelled instead.
	hangKey := "hang"
	h.llm.setFault(hangKey, func(llmCall, int) (fakeReply, bool) { return fakeReply{Hang: true}, true })
	hangID := p.startGraph(t, chainGraph(hangKey, "a"), "")

	start := time.Now()
	for i, c := range llmCases {
		t.Run(c.name, func(t *testing.T) {
			key := fmt.Sprintf("llm%d", i)
			rv := p.waitRun(t, ids[i], time.Minute)
			if rv.Status != c.want {
				t.Fatalf("run %s, want %s (error %q)", rv.Status, c.want, rv.Error)
			}
			node := c.node
			if node == "" {
				node = "a"
			}
			calls := h.llm.callsOf(key, node)
			if c.calls > 0 && len(calls) != c.calls {
				t.Errorf("%s made %d LLM requests, want %d", node, len(calls), c.calls)
			}
			if c.calls == 0 && (len(calls) < 1 || len(calls) > maxAttempts) {
				t.Errorf("%s made %d LLM requests, want 1 to %d", node, len(calls), maxAttempts)
			}
			for k := 1; k < len(calls) && c.minGap > 0; k++ {
				if gap := calls[k].at.Sub(calls[k-1].at); gap < c.minGap {
					t.Errorf("retry %d came %s after the previous call: Retry-After (1s) not honoured", k, gap)
				}
			}
			evs := p.events(t, ids[i])
			checkGapless(t, ids[i], evs)
			var retries, finals int
			for _, ev := range evs {
				if ev.Type == engine.EvLLMError && ev.NodeID == "a" {
					if stepOf(ev.Data).Final {
						finals++
					} else {
						retries++
					}
				}
			}
			if c.want == engine.StatusFailed {
				// The run's error names the node and the cause.
				errContains(t, "run error", rv.Error, `"a"`)
				if !containsAny(rv.Error, c.cause) {
					t.Errorf("run error %q names none of the causes %q", rv.Error, c.cause)
				}
				if c.detail != "" && !strings.Contains(rv.Error, c.detail) {
					t.Errorf("run error %q leaves out the LLM provider's message %q", rv.Error, c.detail)
				}
				if finals != 1 || retries != len(calls)-1 {
					t.Errorf("%d retried and %d final llm_error events for %d requests, want %d and 1",
						retries, finals, len(calls), len(calls)-1)
				}
				t.Logf("%d requests; run error: %s", len(calls), rv.Error)
			}
			if c.want == engine.StatusCompleted && !c.subagent && retries != len(calls)-1 {
				t.Errorf("%d llm_error events for %d requests, want one per retried request", retries, len(calls))
			}
			if c.subagent {
				var subErr string
				for _, ev := range evs {
					if ev.Type == engine.EvSubagentCallError {
						subErr = ev.Content
					}
				}
				if !strings.Contains(subErr, `"sub"`) || !strings.Contains(subErr, "500") {
					t.Errorf("subagent_call_error event %q does not name the subagent and the cause", subErr)
				}
				if rv.Outputs["a"] == "" {
					t.Errorf("the parent agent has no output after its subagent failed")
				}
			}
		})
	}
	t.Logf("all failure modes settled %s after they started", time.Since(start).Round(time.Millisecond))

	t.Run("hang then cancel", func(t *testing.T) {
		deadline := time.Now().Add(time.Minute)
		for len(h.llm.callsOf(hangKey, "a")) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the hanging call never arrived")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if rv := p.getRun(t, hangID); rv.Status != engine.StatusRunning {
			t.Fatalf("run with a hanging LLM call is %s", rv.Status)
		}
		p.must(t, http.MethodPost, "/api/runs/"+hangID+"/cancel", nil, http.StatusOK, nil)
		rv := p.waitRun(t, hangID, time.Minute)
		if rv.Status != engine.StatusCancelled {
			t.Fatalf("cancelled run is %s (%s)", rv.Status, rv.Error)
		}
		// Cancel aborts the request itself.
		deadline = time.Now().Add(time.Minute)
		for h.llm.srv.InFlight() > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d LLM requests still open after the cancel", h.llm.srv.InFlight())
			}
			time.Sleep(10 * time.Millisecond)
		}
		checkGapless(t, hangID, p.events(t, hangID))
	})

	close(stop)
	wg.Wait()
	if n := healthFails.Load(); n > 0 {
		t.Errorf("%d of %d health checks failed during the LLM faults", n, healthChecks.Load())
	}
	// Still healthy, and new runs still complete.
	p.healthy(t)
	id := p.startGraph(t, chainGraph("after", "a", "b"), "")
	if rv := p.waitRun(t, id, time.Minute); rv.Status != engine.StatusCompleted {
		t.Errorf("a run after the faults: %s (%s)", rv.Status, rv.Error)
	}
	m := p.metrics(t)
	t.Logf("metrics: llm errors retried %v, final %v", m[`switchyard_llm_errors_total{kind="retry"}`], m[`switchyard_llm_errors_total{kind="final"}`])
	if m[`switchyard_llm_errors_total{kind="final"}`] < 1 {
		t.Errorf("/metrics does not count the failed LLM calls")
	}
	p.settled(t, base, "after the LLM faults")
}

func containsAny(s string, parts []string) bool {
	s = strings.ToLower(s)
	for _, p := range parts {
		if strings.Contains(s, strings.ToLower(p)) {
			return true
		}
	}
	return false
}

// TestStopWithHungLLM stops the server (SIGTERM) while a run waits on an
// LLM call that never answers: shutdown must not wait for the call, the
// run stays resumable, and the next server finishes it once the LLM
// answers again.
func TestStopWithHungLLM(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var hang atomic.Bool
	hang.Store(true)
	h.llm.setFault("stuck", func(c llmCall, _ int) (fakeReply, bool) {
		return fakeReply{Hang: true}, c.node == "a" && hang.Load()
	})
	p := h.start()
	id := p.startGraph(t, chainGraph("stuck", "a", "b"), "")
	waitCalled(t, h, "stuck", "a")
	start := time.Now()
	p.stop(t)
	took := time.Since(start)
	t.Logf("SIGTERM with a hung LLM call: stopped in %s", took.Round(time.Millisecond))
	if took > 20*time.Second {
		t.Errorf("shutdown took %s with a hung LLM call", took)
	}
	if status, _ := runStates(t, h.data); status[id] != engine.StatusRunning {
		t.Errorf("after a graceful stop the run is %s, want running (resumable)", status[id])
	}
	hang.Store(false)
	p = h.start()
	rv := p.waitRun(t, id, time.Minute)
	if rv.Status != engine.StatusCompleted {
		t.Fatalf("resumed run: %s (%s)", rv.Status, rv.Error)
	}
	checkGapless(t, id, p.events(t, id))
}
