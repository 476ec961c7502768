//go:build linux

package faults

// Issue 15: several `switchyard serve --db postgres://…` processes on one
// PostgreSQL database, as behind a load balancer without sticky sessions:
// a websocket on one process follows, live and gapless, a run another
// drives; a process killed mid-run has its run finished by another once
// the lease runs out, without rerunning completed nodes; an approval sent
// to several processes at once is taken exactly once, and the run goes on
// in the process that took it.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/pgtest"
)

// pgLeaseTTL is short so that the takeover is quick; the engine looks for
// orphaned runs five times per lease period.
const pgLeaseTTL = 3 * time.Second

// pgServers starts a private PostgreSQL cluster and n serve processes on
// one database of it, each with a data directory of its own (as on
// separate machines: no owner lock files are shared). It skips without
// PostgreSQL, and fails under CI=true.
func pgServers(t *testing.T, n int) (*harness, string, []*proc) {
	t.Helper()
	dsn := pgtest.StartT(t).NewDatabase(t)
	h := newHarness(t)
	h.env = append(h.env, "SWITCHYARD_LEASE_TTL="+pgLeaseTTL.String())
	var ps []*proc
	for range n {
		ps = append(ps, h.start("--db", dsn, "--data", t.TempDir()))
	}
	return h, dsn, ps
}

// runOwner reads the lease owner of a run from the database.
func runOwner(t *testing.T, dsn, runID string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var owner string
	if err := conn.QueryRow(ctx, `SELECT owner FROM runs WHERE id = $1`, runID).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	return owner
}

// ownedBy reports whether a lease owner name ("host/pid/…") is process p's.
func ownedBy(owner string, p *proc) bool {
	return strings.Contains(owner, fmt.Sprintf("/%d/", p.pid()))
}

// watcher follows a run's websocket and keeps what it received.
type watcher struct {
	mu       sync.Mutex
	received []engine.Event
	at       []time.Time // when each event arrived
	closed   chan struct{}
	err      error
}

func watch(t *testing.T, p *proc, runID string) *watcher {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := p.dial(ctx, "/api/runs/"+runID+"/ws")
	if err != nil {
		t.Fatalf("websocket on %s: %v", p.addr, err)
	}
	w := &watcher{closed: make(chan struct{})}
	t.Cleanup(func() { c.Close() })
	go func() {
		defer close(w.closed)
		for {
			_, raw, err := c.ReadMessage()
			if err != nil {
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
				return
			}
			var ev engine.Event
			if err := json.Unmarshal(raw, &ev); err != nil {
				w.mu.Lock()
				w.err = fmt.Errorf("not an event: %w: %s", err, truncate(string(raw), 200))
				w.mu.Unlock()
				return
			}
			w.mu.Lock()
			w.received = append(w.received, ev)
			w.at = append(w.at, time.Now())
			w.mu.Unlock()
		}
	}()
	return w
}

// waitFor waits until the watcher received an event matching pred.
func (w *watcher) waitFor(t *testing.T, d time.Duration, what string, pred func(engine.Event) bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		w.mu.Lock()
		found := slices.ContainsFunc(w.received, pred)
		w.mu.Unlock()
		if found {
			return
		}
		select {
		case <-w.closed:
			t.Fatalf("websocket closed before %s: %v", what, w.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s on the websocket within %s", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func completedStep(node string) func(engine.Event) bool {
	return func(ev engine.Event) bool {
		return ev.NodeID == node && ev.Type == engine.EvStepEnd && stepOf(ev.Data).Status == string(engine.NodeCompleted)
	}
}

// TestPostgresTwoServers runs two serve processes on one database.
//
// Approvals: a run started on A pauses at an approval; ten decisions sent
// at once, five to A and five to B, get exactly one 200 (the others 409),
// and the run continues in the process that answered 200 (it holds the
// run's lease while the next node runs).
//
// Cancel: a run A drives is cancelled by a request to B (A polls for
// cancel requests left in the database).
//
// Takeover: a run started on A is watched by a websocket on B, which sees
// A's events live. A is SIGKILLed while a node is in flight; B finishes
// the run (how long after the kill is logged: about the lease TTL, more on
// a loaded machine; a test asserts behaviour, not speed); nodes that completed
// before the kill are not called again; the log is gapless and the
// websocket on B delivered exactly the stored log, across the takeover.
func TestPostgresTwoServers(t *testing.T) {
	t.Parallel()
	h, dsn, ps := pgServers(t, 2)
	a, b := ps[0], ps[1]

	t.Run("approval race", func(t *testing.T) {
		const key = "race"
		// f answers only once the test saw who drives the run: a fixed
		// latency could end f before a loaded machine looks.
		fGate := make(chan struct{})
		var openF sync.Once
		release := func() { openF.Do(func() { close(fGate) }) }
		t.Cleanup(release)
		h.llm.setFault(key, func(c llmCall, _ int) (fakeReply, bool) {
			if c.node == "f" {
				<-fGate
				return fakeReply{Text: "out-race-f"}, true
			}
			return fakeReply{}, false
		})
		g := &gbuild{}
		g.node("s", graph.TypeStart, graph.NodeData{InitialInput: "go " + key}).
			node("a", graph.TypeAgent, agent(key, "a")).edge("s", graph.HandleOutput, "a").
			node("ok", graph.TypeApproval, graph.NodeData{Prompt: "ship?"}).edge("a", graph.HandleOutput, "ok").
			node("f", graph.TypeAgent, agent(key, "f")).edge("ok", graph.HandleApprove, "f")
		id := a.startGraph(t, &g.g, "")
		if rv := b.waitRun(t, id, 2*time.Minute); rv.Status != engine.StatusPaused {
			t.Fatalf("run %s is %s (%s), want paused", id, rv.Status, rv.Error)
		}

		const racers = 10
		codes := make([]int, racers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range racers {
			wg.Go(func() {
				p := ps[i%2]
				<-start
				code, body, err := p.do(http.MethodPost, "/api/runs/"+id+"/approvals/ok",
					map[string]string{"decision": "approve", "note": fmt.Sprintf("racer %d", i)})
				if err != nil {
					t.Errorf("racer %d: %v", i, err)
				} else if code != http.StatusOK && code != http.StatusConflict {
					t.Errorf("racer %d: HTTP %d: %s", i, code, truncate(string(body), 300))
				}
				codes[i] = code
			})
		}
		close(start)
		wg.Wait()
		winners := 0
		var winner *proc
		for i, c := range codes {
			if c == http.StatusOK {
				winners++
				winner = ps[i%2]
			}
		}
		if winners != 1 {
			t.Fatalf("%d decisions won (codes %v), want exactly 1", winners, codes)
		}
		// The run goes on where the decision was taken: that process
		// holds the run while f runs (f waits for the test to look).
		deadline := time.Now().Add(2 * time.Minute)
		for {
			owner := runOwner(t, dsn, id)
			if owner != "" {
				if !ownedBy(owner, winner) {
					t.Errorf("after the decision taken by pid %d, the run is driven by %q", winner.pid(), owner)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the run was never seen driven after the decision (now %s)", a.getRun(t, id).Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
		release()
		rv := b.waitRun(t, id, 2*time.Minute)
		if rv.Status != engine.StatusCompleted {
			t.Fatalf("run %s ended %s (%s), want completed", id, rv.Status, rv.Error)
		}
		for _, n := range []string{"a", "f"} {
			if c := len(h.llm.callsOf(key, n)); c != 1 {
				t.Errorf("node %s called %d times, want 1", n, c)
			}
		}
		evs := a.events(t, id)
		checkGapless(t, id, evs)
		decided := 0
		for _, ev := range evs {
			if ev.NodeID == "ok" && ev.Type == engine.EvStepEnd && stepOf(ev.Data).Status == string(engine.NodeCompleted) {
				decided++
			}
		}
		if decided != 1 {
			t.Errorf("the approval completed %d times in the log, want 1", decided)
		}
	})

	t.Run("cancel through the other process", func(t *testing.T) {
		const key = "cancel"
		h.llm.setLatency(func(k, node string) time.Duration {
			if k == key {
				return time.Minute // cancel must not wait for it
			}
			return 0
		})
		id := a.startGraph(t, chainGraph(key, "a1", "a2"), "")
		deadline := time.Now().Add(2 * time.Minute)
		for len(h.llm.callsOf(key, "a1")) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("a1 never called")
			}
			time.Sleep(10 * time.Millisecond)
		}
		// B does not drive the run: it leaves the request in the database,
		// A takes it within its cancel poll, and B answers once it ended.
		began := time.Now()
		var rv runView
		b.must(t, http.MethodPost, "/api/runs/"+id+"/cancel", nil, http.StatusOK, &rv)
		took := time.Since(began)
		t.Logf("cancel sent to B ended the run A drove in %s", took.Round(time.Millisecond))
		if rv.Status != engine.StatusCancelled {
			t.Fatalf("after the cancel through B: %s (%s)", rv.Status, rv.Error)
		}
		if got := a.getRun(t, id); got.Status != engine.StatusCancelled {
			t.Errorf("A sees the run %s", got.Status)
		}
	})

	t.Run("takeover", func(t *testing.T) {
		const key = "kill"
		const step = 250 * time.Millisecond
		h.llm.setLatency(func(k, node string) time.Duration {
			if k == key {
				return step
			}
			return 0
		})
		// a3 answers only after A is killed: it is in flight at the kill
		// however slowly the test reacts.
		killGate := make(chan struct{})
		var opened sync.Once
		openKill := func() { opened.Do(func() { close(killGate) }) }
		t.Cleanup(openKill)
		h.llm.setFault(key, func(c llmCall, _ int) (fakeReply, bool) {
			if c.node == "a3" {
				<-killGate
			}
			return fakeReply{}, false
		})
		id := a.startGraph(t, chainGraph(key, "a1", "a2", "a3", "a4"), "")
		w := watch(t, b, id)
		// B sees A's events live: a2's completion arrives on B's websocket
		// while A still drives the run.
		w.waitFor(t, 2*time.Minute, "a2 completed (live from A)", completedStep("a2"))
		if owner := runOwner(t, dsn, id); !ownedBy(owner, a) {
			t.Fatalf("before the kill the run is driven by %q, not A (pid %d)", owner, a.pid())
		}
		// a3 is in flight (held by the fake) when A dies.
		for deadline := time.Now().Add(2 * time.Minute); len(h.llm.callsOf(key, "a3")) == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("a3 was never called")
			}
		}
		a.kill()
		killed := time.Now()
		openKill()
		var rv runView
		for {
			rv = b.getRun(t, id)
			if rv.Status.Terminal() {
				break
			}
			if time.Since(killed) > 3*time.Minute {
				t.Fatalf("run %s still %s three minutes after its driver was killed", id, rv.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
		took := time.Since(killed)
		t.Logf("B finished the run %s after A was killed (lease TTL %s)", took.Round(time.Millisecond), pgLeaseTTL)
		if rv.Status != engine.StatusCompleted {
			t.Fatalf("run %s ended %s (%s), want completed", id, rv.Status, rv.Error)
		}
		for _, n := range []string{"a1", "a2", "a4"} {
			if c := len(h.llm.callsOf(key, n)); c != 1 {
				t.Errorf("node %s called %d times, want 1 (completed nodes are not rerun)", n, c)
			}
		}
		if c := len(h.llm.callsOf(key, "a3")); c < 1 || c > 2 {
			t.Errorf("node a3 (in flight at the kill) called %d times, want 1 or 2", c)
		}

		select {
		case <-w.closed:
		case <-time.After(2 * time.Minute):
			t.Fatal("the websocket on B stayed open after the run ended")
		}
		stored := b.events(t, id)
		checkGapless(t, id, stored)
		w.mu.Lock()
		got := slices.Clone(w.received)
		at := slices.Clone(w.at)
		w.mu.Unlock()
		if len(got) != len(stored) {
			t.Fatalf("the websocket on B delivered %d events, the log has %d", len(got), len(stored))
		}
		var worst time.Duration
		for i := range got {
			if !sameEvent(got[i], stored[i]) {
				t.Fatalf("websocket event %d differs from the stored one:\n got %+v\nwant %+v", i+1, got[i], stored[i])
			}
			// Events are timestamped by the process that emitted them (A
			// or B, one machine here): how late each reached B's client.
			if d := at[i].Sub(got[i].Timestamp); d > worst && at[i].Before(killed) {
				worst = d
			}
		}
		t.Logf("%d events delivered on B in order; slowest of A's (live) %s after it was emitted", len(got), worst.Round(time.Millisecond))
		// A's events reached B while A was alive: live, not from the log
		// after the takeover.
		if i := slices.IndexFunc(got, completedStep("a2")); i < 0 || !at[i].Before(killed) {
			t.Error("a2's completion did not reach B before A was killed")
		}
	})
}
