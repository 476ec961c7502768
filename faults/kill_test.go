//go:build linux

package faults

// SIGKILL (issue 8): the server is killed at random moments while runs of
// every node type are in flight, restarted, and checked: nothing completed
// is rerun, nothing reported is lost, every run ends, logs are gapless.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
)

func faultSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SWITCHYARD_FAULT_SEED"); v != "" {
		fmt.Sscan(v, &seed)
	}
	t.Logf("seed %d (SWITCHYARD_FAULT_SEED reproduces the kill times)", seed)
	return seed
}

// killGraph has every drawn node type: start, two agents in parallel (one
// with a subagent), a join agent, an if, an approval whose approve and
// reject branches lead to agents, and a branch that is never taken.
func killGraph(key string) *graph.Graph {
	b := &gbuild{}
	a1 := agent(key, "a1")
	a1.Tools = &graph.Tools{Subagents: true}
	b.node("s", graph.TypeStart, graph.NodeData{InitialInput: "go " + key}).
		node("a1", graph.TypeAgent, a1).edge("s", graph.HandleOutput, "a1").
		node("sub", graph.TypeAgent, graph.NodeData{AgentName: "Helper", SystemPrompt: "Answer the question."}).
		edge("a1", graph.HandleSubagent, "sub").
		node("a2", graph.TypeAgent, agent(key, "a2")).edge("s", graph.HandleOutput, "a2").
		node("j", graph.TypeAgent, agent(key, "j")).edge("a1", graph.HandleOutput, "j").edge("a2", graph.HandleOutput, "j").
		node("gate", graph.TypeIf, graph.NodeData{Conditions: []graph.Condition{{Operator: graph.OpContains, Value: "out-"}}}).
		edge("j", graph.HandleOutput, "gate").
		node("ok", graph.TypeApproval, graph.NodeData{Prompt: "ship " + key + "?"}).edge("gate", "condition-0", "ok").
		node("f", graph.TypeAgent, agent(key, "f")).edge("ok", graph.HandleApprove, "f").
		node("r", graph.TypeAgent, agent(key, "r")).edge("ok", graph.HandleReject, "r").
		node("x", graph.TypeAgent, agent(key, "x")).edge("gate", graph.HandleFalse, "x")
	return &b.g
}

// violations collects broken promises by kind, so a many-round test says
// how often each broke.
type violations struct {
	mu   sync.Mutex
	list []struct{ kind, msg string }
}

func (vs *violations) add(kind, format string, args ...any) {
	vs.mu.Lock()
	vs.list = append(vs.list, struct{ kind, msg string }{kind, fmt.Sprintf(format, args...)})
	vs.mu.Unlock()
}

func (vs *violations) report(t *testing.T) {
	t.Helper()
	vs.mu.Lock()
	defer vs.mu.Unlock()
	by := map[string][]string{}
	var kinds []string
	for _, v := range vs.list {
		if by[v.kind] == nil {
			kinds = append(kinds, v.kind)
		}
		by[v.kind] = append(by[v.kind], v.msg)
	}
	for _, k := range kinds {
		m := by[k]
		t.Errorf("%s: %d times, e.g.\n  %s", k, len(m), strings.Join(m[:min(3, len(m))], "\n  "))
	}
}

// trackedRun is a run the suite drives and follows over its websocket.
type trackedRun struct {
	key, id   string
	want      engine.RunStatus
	mayReject bool

	mu       sync.Mutex
	received []engine.Event
	observed map[string]time.Time // node -> when its completed step_end reached the client
	terminal bool                 // the client got the terminal run_status
	ended    bool                 // GET showed a terminal status
	// set at a kill when the run was in flight: the first event after the
	// restart measures the recovery
	lastAtKill int64
	spawn      time.Time
	waiting    bool
}

func (r *trackedRun) lastSeq() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.received) == 0 {
		return 0
	}
	return r.received[len(r.received)-1].Seq
}

// killSuite drives runs on whichever server process is current.
type killSuite struct {
	t   *testing.T
	h   *harness
	vs  *violations
	cur atomic.Pointer[proc]

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu          sync.Mutex
	runs        []*trackedRun
	frozen      map[string]map[string]int // key -> node -> LLM calls once its completion was durable
	parentOf    map[string]string         // subagent node -> its parent agent
	recoveries  []time.Duration           // restart spawn -> first new event of a run in flight
	readyAfter  []time.Duration           // restart spawn -> listening
	approvals   int
	rejections  int
	kills       int
	inFlightAtK int
	restarts    int // reruns marked retry=restart in the stored logs
}

func newKillSuite(t *testing.T, h *harness, vs *violations) *killSuite {
	ctx, cancel := context.WithCancel(context.Background())
	s := &killSuite{t: t, h: h, vs: vs, ctx: ctx, cancel: cancel,
		frozen: map[string]map[string]int{}, parentOf: map[string]string{"sub": "a1"}}
	t.Cleanup(func() { cancel(); s.wg.Wait() })
	s.wg.Add(1)
	go s.drive()
	return s
}

// add tracks a run; mayReject lets the driver reject some of its approvals
// (drawn graphs have a reject branch; a rejected YAML approval cancels).
func (s *killSuite) add(key, id string, want engine.RunStatus, mayReject bool) *trackedRun {
	r := &trackedRun{key: key, id: id, want: want, mayReject: mayReject, observed: map[string]time.Time{}}
	s.mu.Lock()
	s.runs = append(s.runs, r)
	s.mu.Unlock()
	s.wg.Add(1)
	go s.follow(r)
	return r
}

func (s *killSuite) tracked() []*trackedRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*trackedRun(nil), s.runs...)
}

// follow reads the run's websocket on the current server, reconnecting with
// after=<last seq> whenever the connection ends before the run did.
func (s *killSuite) follow(r *trackedRun) {
	defer s.wg.Done()
	for s.ctx.Err() == nil {
		r.mu.Lock()
		done := r.terminal
		r.mu.Unlock()
		if done {
			return
		}
		p := s.cur.Load()
		if p == nil || !p.alive() {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		dctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
		c, err := p.dial(dctx, fmt.Sprintf("/api/runs/%s/ws?after=%d", r.id, r.lastSeq()))
		cancel()
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		stop := context.AfterFunc(s.ctx, func() { c.Close() })
		for {
			_, raw, err := c.ReadMessage()
			if err != nil {
				break
			}
			var ev engine.Event
			if err := json.Unmarshal(raw, &ev); err != nil {
				s.vs.add("websocket message is not an event", "run %s: %v: %s", r.id, err, truncate(string(raw), 200))
				continue
			}
			now := time.Now()
			r.mu.Lock()
			want := int64(1)
			if n := len(r.received); n > 0 {
				want = r.received[n-1].Seq + 1
			}
			if ev.Seq != want {
				s.vs.add("websocket stream skipped or repeated events", "run %s: got seq %d, want %d", r.id, ev.Seq, want)
			}
			if ev.Seq >= want {
				r.received = append(r.received, ev)
			}
			if ev.Type == engine.EvStepEnd && stepOf(ev.Data).Status == string(engine.NodeCompleted) {
				if _, ok := r.observed[ev.NodeID]; !ok {
					r.observed[ev.NodeID] = now
				}
			}
			if r.waiting && ev.Seq > r.lastAtKill {
				r.waiting = false
				d := now.Sub(r.spawn)
				s.mu.Lock()
				s.recoveries = append(s.recoveries, d)
				s.mu.Unlock()
			}
			if ev.Type == engine.EvRunStatus && ev.NodeID == engine.SystemNodeID && engine.RunStatus(ev.Content).Terminal() {
				r.terminal = true
			}
			r.mu.Unlock()
		}
		stop()
		c.Close()
	}
}

// drive answers approvals of paused runs (mostly approve, sometimes reject)
// and notes which runs ended, on whichever server is current.
func (s *killSuite) drive() {
	defer s.wg.Done()
	for s.ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		p := s.cur.Load()
		if p == nil || !p.alive() {
			continue
		}
		for _, r := range s.tracked() {
			r.mu.Lock()
			ended := r.ended
			r.mu.Unlock()
			if ended {
				continue
			}
			code, body, err := p.do(http.MethodGet, "/api/runs/"+r.id, nil)
			if err != nil || code != http.StatusOK {
				continue
			}
			var rv runView
			if json.Unmarshal(body, &rv) != nil {
				continue
			}
			if rv.Status.Terminal() {
				r.mu.Lock()
				r.ended = true
				r.mu.Unlock()
				continue
			}
			if rv.Status != engine.StatusPaused {
				continue
			}
			for _, pa := range rv.PendingApprovals {
				dec := "approve"
				if r.mayReject && rand.IntN(4) == 0 {
					dec = "reject"
				}
				code, _, err := p.do(http.MethodPost, "/api/runs/"+r.id+"/approvals/"+pa.NodeID,
					map[string]string{"decision": dec, "note": "fault suite"})
				if err == nil && code == http.StatusOK {
					s.mu.Lock()
					if dec == "approve" {
						s.approvals++
					} else {
						s.rejections++
					}
					s.mu.Unlock()
				}
			}
		}
	}
}

// killRestart SIGKILLs the current server, notes what the dead process made
// durable, and starts a new one once the dead owner's leases ran out
// (restartAfter after the kill).
func (s *killSuite) killRestart(restartAfter time.Duration) *proc {
	t := s.t
	p := s.cur.Load()
	p.kill()
	killed := time.Now()
	// Requests the dead process wrote before dying may still be read by
	// the fake LLM: let them land before counting.
	time.Sleep(150 * time.Millisecond)
	s.freeze()
	status, last := runStates(t, s.h.data)
	var inFlight []*trackedRun
	for _, r := range s.tracked() {
		st := status[r.id]
		if st == engine.StatusRunning || st == engine.StatusPending {
			inFlight = append(inFlight, r)
		}
	}
	time.Sleep(time.Until(killed.Add(restartAfter)))
	np := s.h.start()
	for _, r := range inFlight {
		r.mu.Lock()
		r.waiting, r.lastAtKill, r.spawn = true, last[r.id], np.started
		r.mu.Unlock()
	}
	s.mu.Lock()
	s.kills++
	s.inFlightAtK += len(inFlight)
	s.readyAfter = append(s.readyAfter, np.ready.Sub(np.started))
	s.mu.Unlock()
	s.cur.Store(np)
	return np
}

// freeze records, for every node whose completion the dead process made
// durable, how many LLM calls it had made: it must never make another.
func (s *killSuite) freeze() {
	s.mu.Lock()
	defer s.mu.Unlock()
	freezeLLM(s.t, s.h, s.runs, s.parentOf, s.frozen)
}

func freezeLLM(t *testing.T, h *harness, runs []*trackedRun, parentOf map[string]string, frozen map[string]map[string]int) {
	t.Helper()
	counts := h.llm.count()
	done := completedInDB(t, h.data)
	for _, r := range runs {
		for node := range done[r.id] {
			if frozen[r.key] == nil {
				frozen[r.key] = map[string]int{}
			}
			nodes := []string{node}
			for child, parent := range parentOf {
				if parent == node {
					nodes = append(nodes, child)
				}
			}
			for _, n := range nodes {
				if _, ok := frozen[r.key][n]; !ok {
					frozen[r.key][n] = counts[r.key][n]
				}
			}
		}
	}
}

// checkFrozen reports nodes that called the LLM after their completion was
// durable.
func checkFrozen(h *harness, runs []*trackedRun, frozen map[string]map[string]int, vs *violations) {
	counts := h.llm.count()
	for _, r := range runs {
		for node, n := range frozen[r.key] {
			if counts[r.key][node] != n {
				vs.add("completed node called the LLM again after a restart", "run %s: %s had %d calls when its completion was durable, %d at the end",
					r.id, node, n, counts[r.key][node])
			}
		}
	}
}

// runStates reads every run's status and last stored seq from the file.
func runStates(t *testing.T, data string) (map[string]engine.RunStatus, map[string]int64) {
	t.Helper()
	status := map[string]engine.RunStatus{}
	last := map[string]int64{}
	if !hasSchema(t, data) {
		return status, last
	}
	db := openDB(t, data, 5000)
	defer db.Close()
	rows, err := db.Query(`SELECT r.id, r.status, COALESCE((SELECT max(seq + n - 1) FROM run_events e WHERE e.run_id = r.id), 0) FROM runs r`)
	if err != nil {
		t.Fatalf("read runs: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, st string
		var seq int64
		if err := rows.Scan(&id, &st, &seq); err != nil {
			t.Fatal(err)
		}
		status[id], last[id] = engine.RunStatus(st), seq
	}
	return status, last
}

// waitAllEnded waits until every tracked run ended and its websocket
// delivered the end.
func (s *killSuite) waitAllEnded(d time.Duration) {
	deadline := time.Now().Add(d)
	for {
		pending := 0
		var example string
		for _, r := range s.tracked() {
			r.mu.Lock()
			if !r.ended || !r.terminal {
				pending++
				example = fmt.Sprintf("%s (ended %v, websocket saw the end %v)", r.id, r.ended, r.terminal)
			}
			r.mu.Unlock()
		}
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.vs.add("run never ended", "%d runs not over after %s, e.g. %s", pending, d, example)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// check asserts every promise on every tracked run.
func (s *killSuite) check(p *proc) {
	t := s.t
	for _, r := range s.tracked() {
		rv := p.getRun(t, r.id)
		if rv.Status != r.want {
			s.vs.add("run did not end as expected", "run %s (%s) is %s, want %s: %s", r.id, r.key, rv.Status, r.want, rv.Error)
		}
		evs := p.events(t, r.id)
		for i, ev := range evs {
			if ev.Seq != int64(i+1) {
				s.vs.add("gap in the stored event log", "run %s: event %d has seq %d", r.id, i+1, ev.Seq)
				break
			}
		}
		r.mu.Lock()
		received := append([]engine.Event(nil), r.received...)
		observed := map[string]time.Time{}
		for k, v := range r.observed {
			observed[k] = v
		}
		r.mu.Unlock()
		stored := map[int64]engine.Event{}
		for _, ev := range evs {
			stored[ev.Seq] = ev
		}
		for _, ev := range received {
			got, ok := stored[ev.Seq]
			if !ok || !sameEvent(ev, got) {
				b, _ := json.Marshal(ev)
				g, _ := json.Marshal(got)
				s.vs.add("event a client received is not in the stored log", "run %s: received %s\n    stored: %s", r.id, b, g)
			}
		}
		if len(received) != len(evs) {
			s.vs.add("websocket did not deliver the whole log", "run %s: received %d events, %d stored", r.id, len(received), len(evs))
		}
		s.restarts += checkLog(s.vs, r.id, evs)
		for node, at := range observed {
			nodes := []string{node}
			for child, parent := range s.parentOf {
				if parent == node {
					nodes = append(nodes, child)
				}
			}
			for _, n := range nodes {
				for _, c := range s.h.llm.callsOf(r.key, n) {
					if c.at.After(at) {
						s.vs.add("LLM called after the node's completion was reported", "run %s: %s called at %s, %s's completion reached the client at %s",
							r.id, n, c.at.Format("15:04:05.000"), node, at.Format("15:04:05.000"))
					}
				}
			}
		}
	}
	s.mu.Lock()
	checkFrozen(s.h, s.runs, s.frozen, s.vs)
	s.mu.Unlock()
}

// checkLog asserts no node completed twice in one visit or started again
// after its completion was logged, and that reruns are marked. It returns
// how many reruns the log shows.
func checkLog(vs *violations, runID string, evs []engine.Event) int {
	type nv struct {
		node  string
		visit int
	}
	visit := map[string]int{}
	started := map[nv]int{}
	completed := map[nv]int{}
	restarts := 0
	for _, ev := range evs {
		d := stepOf(ev.Data)
		switch ev.Type {
		case engine.EvStepStart:
			k := nv{ev.NodeID, d.Visit}
			visit[ev.NodeID] = d.Visit
			if completed[k] > 0 {
				vs.add("node started again after its completion was logged", "run %s: %s visit %d (seq %d)", runID, k.node, k.visit, ev.Seq)
			}
			if started[k] > 0 && d.Retry != "restart" {
				vs.add("rerun not marked retry=restart", "run %s: %s visit %d (seq %d)", runID, k.node, k.visit, ev.Seq)
			}
			if d.Retry == "restart" {
				restarts++
			}
			started[k]++
		case engine.EvStepEnd:
			if d.Status != string(engine.NodeCompleted) {
				continue
			}
			k := nv{ev.NodeID, visit[ev.NodeID]}
			if completed[k]++; completed[k] > 1 {
				vs.add("node completed twice in one visit", "run %s: %s visit %d (seq %d)", runID, k.node, k.visit, ev.Seq)
			}
		}
	}
	return restarts
}

func durations(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return fmt.Sprintf("median %s, max %s (n=%d)", s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond), len(s))
}

// TestKillGraphRuns SIGKILLs the server at random moments while drawn
// graphs with every node type run, and restarts it once the dead owner's
// leases ran out (an earlier restart is TestKillRestartWithinLeaseTTL).
func TestKillGraphRuns(t *testing.T) {
	t.Parallel()
	rounds, perRound := 4, 4
	if testing.Short() {
		rounds, perRound = 2, 3
	}
	rng := rand.New(rand.NewPCG(faultSeed(t), 8))
	h := newHarness(t)
	h.llm.setLatency(func(string, string) time.Duration { return time.Duration(40+rand.IntN(260)) * time.Millisecond })
	p := h.start()
	base := p.baseline(t)
	vs := &violations{}
	s := newKillSuite(t, h, vs)
	s.cur.Store(p)
	start := time.Now()
	// Restarts wait out the dead process's leases: taking over runs whose
	// lease has not expired yet is TestKillRestartWithinLeaseTTL's subject.
	restartAfter := leaseTTL + 300*time.Millisecond
	for round := 0; round < rounds; round++ {
		roundStart := time.Now()
		for i := 0; i < perRound; i++ {
			key := fmt.Sprintf("g%d.%d", round, i)
			cur := s.cur.Load()
			s.add(key, cur.startGraph(t, killGraph(key), ""), engine.StatusCompleted, true)
			time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		}
		kills := 1 + rng.IntN(2)
		for k := 0; k < kills; k++ {
			// The second kill often lands while the restarted server is
			// still recovering runs.
			time.Sleep(time.Duration(rng.IntN(1200)) * time.Millisecond)
			s.killRestart(restartAfter)
		}
		s.waitAllEnded(90 * time.Second)
		t.Logf("round %d: %d runs, %d kills, %s", round, perRound, kills, time.Since(roundStart).Round(time.Millisecond))
	}
	p = s.cur.Load()
	s.cancel()
	s.wg.Wait()
	s.check(p)
	vs.report(t)
	p.healthy(t)
	// A fresh process after the same warm-up: the last one must have given
	// back what recovering and finishing the runs took.
	p.settled(t, base, "after the kills")
	t.Logf("%d runs, %d SIGKILLs (%d runs in flight at a kill), %d node reruns (retry=restart), %d LLM calls, %d approvals, %d rejections in %s",
		len(s.tracked()), s.kills, s.inFlightAtK, s.restarts, h.llm.total(), s.approvals, s.rejections, time.Since(start).Round(time.Millisecond))
	t.Logf("restart to listening: %s; restart to first new event of a run in flight: %s (restarts wait %s after the kill for the lease TTL %s)",
		durations(s.readyAfter), durations(s.recoveries), restartAfter, leaseTTL)
}

// TestKillRestartWithinLeaseTTL restarts the server right after SIGKILL,
// as a supervisor does, before the dead process's leases (1s) ran out.
// The runs it was driving must still be taken over and finish: a server
// that only recovers at start-up leaves them stuck for good, so the
// deadline can be generous.
func TestKillRestartWithinLeaseTTL(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.llm.setLatency(func(string, string) time.Duration { return 600 * time.Millisecond })
	p := h.start()
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, p.startGraph(t, chainGraph(fmt.Sprintf("quick%d", i), "a", "b"), ""))
	}
	// Kill while every run has an LLM call in flight.
	deadline := time.Now().Add(time.Minute)
	for h.llm.srv.InFlight() < int64(len(ids)) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	p.kill()
	killed := time.Now()
	p = h.start()
	t.Logf("restarted %s after the kill", p.ready.Sub(killed).Round(time.Millisecond))
	const limit = time.Minute // sixty lease TTLs
	var stuck []string
	for _, id := range ids {
		end := killed.Add(limit)
		var rv runView
		for {
			rv = p.getRun(t, id)
			if rv.Status.Terminal() || time.Now().After(end) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if rv.Status != engine.StatusCompleted {
			stuck = append(stuck, id)
			t.Errorf("run %s is %s %s after the kill (lease TTL %s): the restarted server never took it over",
				id, rv.Status, limit, leaseTTL)
		}
	}
	p.healthy(t)
	if len(stuck) == 0 {
		return
	}
	// Diagnosis: a server started after the leases ran out does take them
	// over, so only the start-up scan (Engine.Recover) looks for orphans.
	p.kill()
	p = h.start()
	for _, id := range stuck {
		rv := p.waitRun(t, id, time.Minute)
		t.Logf("run %s after a second restart, past the lease TTL: %s", id, rv.Status)
	}
}

// yamlWorkflowID returns the id under which the server lists the YAML
// workflow named name, or "" if it does not list YAML workflows.
func yamlWorkflowID(t *testing.T, p *proc, name string) string {
	t.Helper()
	var list []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
		Kind string `json:"kind"`
	}
	p.must(t, http.MethodGet, "/api/workflows", nil, http.StatusOK, &list)
	for _, w := range list {
		if w.Kind == engine.KindYAML && w.Name == name {
			return w.ID
		}
	}
	return ""
}

// yamlKillWorkflows are the YAML workflows of the kill tests: every YAML
// node type (bash, prompt, loop, approval, cancel). Bash nodes append their
// id to TRACE; agent prompts carry a marker.
func yamlKillWorkflows(key, trace string) (main, cancel string) {
	main = fmt.Sprintf(`name: kill-main-%[1]s
description: every YAML node type under SIGKILL
nodes:
  - id: b1
    bash: "echo %[1]s.b1 >> %[2]s; sleep 0.3; echo first"
  - id: ask
    depends_on: [b1]
    prompt: "run=%[1]s node=ask $b1.output"
  - id: refine
    depends_on: [ask]
    loop:
      prompt: "run=%[1]s node=refine [$LOOP_PREV_OUTPUT]"
      until: DONE
      max_iterations: 4
  - id: gate
    depends_on: [refine]
    approval:
      message: "ship %[1]s?"
  - id: b2
    depends_on: [gate]
    bash: "echo %[1]s.b2 >> %[2]s; sleep 0.2; echo second"
  - id: stop
    depends_on: [b2]
    when: "$b2.output == 'never'"
    cancel: "must not happen"
`, key, trace)
	cancel = fmt.Sprintf(`name: kill-cancel-%[1]s
description: a cancel node ends the run under SIGKILL
nodes:
  - id: c1
    bash: "echo %[1]s.c1 >> %[2]s; sleep 0.5; echo bad"
  - id: side
    bash: "echo %[1]s.side >> %[2]s; echo side"
  - id: stop
    depends_on: [c1, side]
    when: "$c1.output == 'bad'"
    cancel: "input was $c1.output"
  - id: never
    depends_on: [stop]
    bash: "echo %[1]s.never >> %[2]s"
`, key, trace)
	return main, cancel
}

// traceCounts counts the lines each bash node appended to the trace file.
func traceCounts(t *testing.T, trace string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(trace)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Fields(string(b)) {
		out[line]++
	}
	return out
}

// loopDone makes the loop node of key answer DONE from its second call on.
func loopDone(h *harness, key string) {
	h.llm.setFault(key, func(c llmCall, attempt int) (reply fakeReply, ok bool) {
		if c.node == "refine" && attempt >= 2 {
			return fakeReply{Text: fmt.Sprintf("out-%s-refine DONE", key), Latency: time.Duration(50+rand.IntN(200)) * time.Millisecond}, true
		}
		return fakeReply{}, false
	})
}

// TestKillYAMLRunsServer runs YAML workflows (bash, prompt, loop, approval,
// cancel) on the server through SIGKILLs, if the server lists the YAML
// workflows of its --workflows folder; TestKillYAMLRunsCLI covers the same
// workflows through `switchyard run`/`resume` processes either way.
func TestKillYAMLRunsServer(t *testing.T) {
	t.Parallel()
	rounds := 3
	if testing.Short() {
		rounds = 2
	}
	rng := rand.New(rand.NewPCG(faultSeed(t), 9))
	h := newHarness(t)
	h.llm.setLatency(func(string, string) time.Duration { return time.Duration(40+rand.IntN(200)) * time.Millisecond })
	trace := filepath.Join(h.work, "trace")
	type wf struct{ key, file, want string }
	var wfs []wf
	for round := 0; round < rounds; round++ {
		key := fmt.Sprintf("y%d", round)
		main, cancel := yamlKillWorkflows(key, trace)
		for _, w := range []struct{ name, src, want string }{{"kill-main-" + key, main, "completed"}, {"kill-cancel-" + key, cancel, "cancelled"}} {
			if err := os.WriteFile(filepath.Join(h.workflows, w.name+".yaml"), []byte(w.src), 0o644); err != nil {
				t.Fatal(err)
			}
			wfs = append(wfs, wf{key, w.name, w.want})
		}
		loopDone(h, key)
	}
	p := h.start()
	if yamlWorkflowID(t, p, wfs[0].file) == "" {
		t.Skip("the server does not list the YAML workflows of --workflows (GET /api/workflows has no kind \"yaml\"): " +
			"YAML under SIGKILL is covered by TestKillYAMLRunsCLI")
	}
	base := p.baseline(t)
	vs := &violations{}
	s := newKillSuite(t, h, vs)
	s.cur.Store(p)
	frozenTrace := map[string]int{}
	for i := 0; i < len(wfs); i += 2 {
		for _, w := range wfs[i : i+2] {
			id := yamlWorkflowID(t, s.cur.Load(), w.file)
			var rv runView
			s.cur.Load().must(t, http.MethodPost, "/api/runs", map[string]any{"workflowId": id}, http.StatusCreated, &rv)
			s.add(w.key, rv.RunID, engine.RunStatus(w.want), false)
		}
		time.Sleep(time.Duration(rng.IntN(800)) * time.Millisecond)
		s.killRestart(leaseTTL + 300*time.Millisecond)
		freezeTrace(t, h.data, trace, s.tracked(), frozenTrace)
		s.waitAllEnded(90 * time.Second)
	}
	p = s.cur.Load()
	s.cancel()
	s.wg.Wait()
	s.check(p)
	checkTrace(t, trace, frozenTrace, vs)
	vs.report(t)
	p.healthy(t)
	p.settled(t, base, "after the YAML kills")
	t.Logf("%d YAML runs, %d SIGKILLs; restart to first new event: %s", len(s.tracked()), s.kills, durations(s.recoveries))
}

// freezeTrace notes the trace lines of every bash node whose completion is
// durable: it must never append another.
func freezeTrace(t *testing.T, data, trace string, runs []*trackedRun, frozen map[string]int) {
	t.Helper()
	done := completedInDB(t, data)
	counts := traceCounts(t, trace)
	for _, r := range runs {
		for node := range done[r.id] {
			switch node {
			case "b1", "b2", "c1", "side", "never":
				// The two workflows of a key use distinct bash node ids.
				name := r.key + "." + node
				if _, ok := frozen[name]; !ok {
					frozen[name] = counts[name]
				}
			}
		}
	}
}

func checkTrace(t *testing.T, trace string, frozen map[string]int, vs *violations) {
	t.Helper()
	counts := traceCounts(t, trace)
	for node, n := range frozen {
		if counts[node] != n {
			vs.add("completed bash node ran again after a restart", "%s had appended %d trace lines when its completion was durable, %d at the end", node, n, counts[node])
		}
	}
	for name, n := range counts {
		if strings.HasSuffix(name, ".never") {
			vs.add("node after a cancel ran", "%s appended %d lines", name, n)
		}
	}
}
