//go:build linux

package faults

// Chaos (hardening issue): client goroutines run a mixed workload against
// real `switchyard serve` processes for a bounded time while the processes
// are SIGKILLed and restarted at random, reviewers race to answer every
// wait, and (PostgreSQL) the database cluster restarts once. Then every run
// is driven to its end and the promises are checked on what the database
// and the side-effect file hold:
//
//   - no run lost: every run a client created (and every run created by a
//     request whose answer was lost) exists and ended as its logged
//     decisions say (completed, or cancelled by a rejected YAML approval);
//   - no double decision: each wait has one answer in the log, every
//     racer that got 200 sent that answer, and without a fault in the
//     race's window exactly one racer got 200 (after a fault, a process
//     that re-applied a claimed answer acknowledges the same answer again:
//     counted as "re-acknowledged", see engine runner.applied);
//   - no duplicated finished effect: a bash step or tool call whose
//     completion (step_end, tool_result) was durable never appends its
//     line again; lines of calls and steps that were in flight at a kill
//     may repeat and are counted apart; a rejected tool call never ran;
//   - gapless event logs that are one driver's history (a completed bash
//     step shows its process, a tool result follows its call), and no
//     node completed twice or restarted after its completion was logged
//     (checkLog).
//
// Each run has exactly one wait (an approval node or a gated tool call),
// and racers name the node: a wait is keyed by node and call id.
//
// SWITCHYARD_CHAOS_SECONDS sets the chaos phase (default 25 s, 8 s under
// -short), SWITCHYARD_CHAOS_DB_RESTARTS the database restarts of the
// PostgreSQL test (default 1); SWITCHYARD_FAULT_SEED replays the random
// choices (kill times depend on the machine's speed too). A broken promise
// logs its diagnosis: the node's events with their times, the faults, and
// what the processes logged about the run. chaos_repro_test.go stages the
// interleavings behind the bugs this test found.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/internal/pgtest"
)

// Workload kinds; a run's key starts with its kind.
const (
	kindChain = "chain" // drawn: start -> agent -> approval -> agent (reject: another agent)
	kindFan   = "fan"   // drawn: start -> two agents and a tool agent -> join agent
	kindBash  = "ybash" // YAML: bash steps around an approval
	kindTools = "ytool" // YAML: an agent's Bash tool loop, one call gated
)

var chaosKinds = []string{kindChain, kindFan, kindBash, kindTools}

// Tool loops make chaosToolCalls Bash calls, one per model turn; call
// number chaosGatedCall waits for a reviewer (approve pattern below).
const (
	chaosToolCalls = 4
	chaosGatedCall = 1
	chaosApprove   = "Bash(echo GATED:*)"
)

// chaosBashNodes are the bash steps of the YAML bash workflow.
var chaosBashNodes = []string{"b1", "b2", "b3"}

// chaosSeconds is the length of the chaos phase.
func chaosSeconds(t *testing.T) time.Duration {
	d := 25 * time.Second
	if testing.Short() {
		d = 8 * time.Second
	}
	if v := os.Getenv("SWITCHYARD_CHAOS_SECONDS"); v != "" {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n <= 0 {
			t.Fatalf("SWITCHYARD_CHAOS_SECONDS=%q: want a positive number of seconds", v)
		}
		d = time.Duration(n * float64(time.Second))
	}
	return d
}

// chaosDBRestarts is how many times the PostgreSQL test restarts the
// database: SWITCHYARD_CHAOS_DB_RESTARTS, default 1.
func chaosDBRestarts(t *testing.T) int {
	v := os.Getenv("SWITCHYARD_CHAOS_DB_RESTARTS")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("SWITCHYARD_CHAOS_DB_RESTARTS=%q: want a whole number", v)
	}
	return n
}

// chaosRun is one run of the workload.
type chaosRun struct {
	key, kind, id string
	adopted       bool // created by a request whose answer was lost

	mu    sync.Mutex
	waits map[string]*chaosWait // by waitKey
}

func (r *chaosRun) wait(node, callID string) *chaosWait {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := waitKey(node, callID)
	w := r.waits[k]
	if w == nil {
		w = &chaosWait{node: node, callID: callID}
		r.waits[k] = w
	}
	return w
}

func waitKey(node, callID string) string {
	if callID == "" {
		return node
	}
	return node + "#" + callID
}

// chaosWait is one node or tool call waiting for a reviewer, and the races
// the clients ran to answer it.
type chaosWait struct {
	node, callID string
	mu           sync.Mutex
	rounds       []*raceRound
}

// raceRound is one race: racers sent at once, each retrying until it got
// 200, or the wait was gone.
type raceRound struct {
	start, end time.Time
	racers     []*racer
}

type racer struct {
	decision, note string
	won            bool
	codes          []int    // every answer, 0 for a transport error
	sent           []string // every try: when, to which process, the answer
}

// chaosFault is a SIGKILL (at == until) or the database restart.
type chaosFault struct {
	at, until time.Time
	what      string
}

// chaos is one store's chaos run: its processes, workload and records.
type chaos struct {
	t     *testing.T
	name  string
	h     *harness
	vs    *violations
	seed  uint64
	side  string // the side-effect file
	db    chaosDB
	start func(slot int) *proc

	wfBash, wfTools string // YAML workflow ids
	racersMin       int
	racersMax       int

	mu         sync.Mutex
	slots      []*proc // nil while a slot's process is down
	runs       []*chaosRun
	maybe      map[string]string // key -> kind, of creates whose answer was lost
	faults     []chaosFault
	kills      int
	dbRestarts int
	selfExits  int // processes that died without being killed

	frozenSteps map[string]int // "key/node" -> its lines when its completion was durable
	frozenCalls map[string]int // call id -> its lines when its result was durable
}

// pick returns a random live process, or nil.
func (c *chaos) pick() *proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	var live []*proc
	for _, p := range c.slots {
		if p != nil && p.alive() {
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return live[rand.IntN(len(live))]
}

// slot returns slot i's process if it is up.
func (c *chaos) slot(i int) *proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.slots[i%len(c.slots)]
	if p == nil || !p.alive() {
		return nil
	}
	return p
}

func (c *chaos) addFault(f chaosFault) {
	c.mu.Lock()
	c.faults = append(c.faults, f)
	c.mu.Unlock()
}

// disturbed reports whether a fault fell within [from, to].
func (c *chaos) disturbed(from, to time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.faults {
		if !f.until.Before(from) && !f.at.After(to) {
			return true
		}
	}
	return false
}

// --- the workload ---

// chaosLLM scripts the fake LLM for a run: tool agents make their Bash
// calls, one per turn, with ids of our own so the side-effect lines name
// them; other agents answer as usual.
func (c *chaos) chaosLLM(key, toolNode string) {
	c.h.llm.setFault(key, func(call llmCall, _ int) (fakeReply, bool) {
		if call.node != toolNode {
			return fakeReply{}, false
		}
		lat := time.Duration(20+rand.IntN(200)) * time.Millisecond
		k := call.results
		if k >= chaosToolCalls {
			return fakeReply{Text: "done " + key, Latency: lat}, true
		}
		id := fmt.Sprintf("call_%s_%s_%d", key, toolNode, k)
		cmd := fmt.Sprintf("sleep 0.%d; echo CALL %s $$ >> %s", 1+rand.IntN(3), id, c.side)
		if k == chaosGatedCall {
			cmd = fmt.Sprintf("echo GATED %s $$ >> %s", id, c.side)
		}
		args, _ := json.Marshal(map[string]string{"command": cmd})
		return fakeReply{ToolCalls: []fakeopenai.ToolCall{{ID: id, Name: "Bash", Arguments: string(args)}}, Latency: lat}, true
	})
}

func chainChaosGraph(key string) *graph.Graph {
	b := &gbuild{}
	b.node("s", graph.TypeStart, graph.NodeData{InitialInput: "go " + key}).
		node("a1", graph.TypeAgent, agent(key, "a1")).edge("s", graph.HandleOutput, "a1").
		node("ok", graph.TypeApproval, graph.NodeData{Prompt: "ship " + key + "?"}).edge("a1", graph.HandleOutput, "ok").
		node("a2", graph.TypeAgent, agent(key, "a2")).edge("ok", graph.HandleApprove, "a2").
		node("r", graph.TypeAgent, agent(key, "r")).edge("ok", graph.HandleReject, "r")
	return &b.g
}

func fanChaosGraph(key string) *graph.Graph {
	t := agent(key, "t")
	t.Tools = &graph.Tools{Builtin: []string{"Bash"}, Approve: []string{chaosApprove}}
	b := &gbuild{}
	b.node("s", graph.TypeStart, graph.NodeData{InitialInput: "go " + key}).
		node("f1", graph.TypeAgent, agent(key, "f1")).edge("s", graph.HandleOutput, "f1").
		node("f2", graph.TypeAgent, agent(key, "f2")).edge("s", graph.HandleOutput, "f2").
		node("t", graph.TypeAgent, t).edge("s", graph.HandleOutput, "t").
		node("j", graph.TypeAgent, agent(key, "j")).
		edge("f1", graph.HandleOutput, "j").edge("f2", graph.HandleOutput, "j").edge("t", graph.HandleOutput, "j")
	return &b.g
}

// writeChaosWorkflows puts the two YAML workflows in the workflows folder.
// The run's input is its key ($ARGUMENTS): bash steps append
// "B <key>/<node>" at their end, the agent's prompt carries the marker.
func writeChaosWorkflows(t *testing.T, dir, side string) {
	t.Helper()
	var bash strings.Builder
	bash.WriteString("name: chaos-bash\ndescription: bash steps around an approval, under chaos\nnodes:\n")
	for _, n := range []struct{ id, deps, sleep string }{{"b1", "", "0.2"}, {"b2", "", "0.5"}, {"b3", "[gate, b2]", "0.1"}} {
		fmt.Fprintf(&bash, "  - id: %s\n", n.id)
		if n.deps != "" {
			fmt.Fprintf(&bash, "    depends_on: %s\n", n.deps)
		}
		fmt.Fprintf(&bash, "    bash: \"sleep %s; echo B $ARGUMENTS/%s $$ >> %s; echo %s\"\n", n.sleep, n.id, side, n.id)
		if n.id == "b2" {
			bash.WriteString("  - id: gate\n    depends_on: [b1]\n    approval:\n      message: \"ship $ARGUMENTS?\"\n")
		}
	}
	tools := fmt.Sprintf(`name: chaos-tools
description: a Bash tool loop with a gated call, under chaos
nodes:
  - id: agent
    prompt: "run=$ARGUMENTS node=agent call the tools"
    allowed_tools: [Bash]
    approve_tools: ["%s"]
`, chaosApprove)
	for name, src := range map[string]string{"chaos-bash": bash.String(), "chaos-tools": tools} {
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// createBody returns the POST /api/runs body of a new run of kind.
func (c *chaos) createBody(kind, key string) map[string]any {
	switch kind {
	case kindChain:
		return map[string]any{"graph": chainChaosGraph(key), "input": key}
	case kindFan:
		c.chaosLLM(key, "t")
		return map[string]any{"graph": fanChaosGraph(key), "input": key}
	case kindBash:
		return map[string]any{"workflowId": c.wfBash, "input": key}
	default:
		c.chaosLLM(key, "agent")
		return map[string]any{"workflowId": c.wfTools, "input": key}
	}
}

// --- clients ---

// client creates runs one after the other until stop is closed, driving
// each to its end (until ctx ends).
func (c *chaos) client(ctx context.Context, stop <-chan struct{}, n int) {
	rng := rand.New(rand.NewPCG(c.seed, uint64(100+n)))
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		if ctx.Err() != nil {
			return
		}
		kind := chaosKinds[rng.IntN(len(chaosKinds))]
		r := c.create(ctx, kind, fmt.Sprintf("%s-%d-%d", kind, n, i))
		if r == nil {
			continue
		}
		c.drive(ctx, r)
	}
}

// create starts a run, trying again under a new key when an answer is
// lost (that run may exist: the key is kept for adoption at the end).
func (c *chaos) create(ctx context.Context, kind, key string) *chaosRun {
	for try := 0; ctx.Err() == nil; try++ {
		k := key
		if try > 0 {
			k = fmt.Sprintf("%s-r%d", key, try)
		}
		p := c.pick()
		if p == nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		code, body, err := p.do(http.MethodPost, "/api/runs", c.createBody(kind, k))
		if err == nil && code == http.StatusCreated {
			var rv runView
			if err := json.Unmarshal(body, &rv); err != nil || rv.RunID == "" {
				c.vs.add("create answered 201 without a run", "%s: %v %s", k, err, truncate(string(body), 200))
				return nil
			}
			r := &chaosRun{key: k, kind: kind, id: rv.RunID, waits: map[string]*chaosWait{}}
			c.mu.Lock()
			c.runs = append(c.runs, r)
			c.mu.Unlock()
			return r
		}
		if err == nil && code < 500 {
			c.vs.add("create refused", "%s on %s: HTTP %d: %s", k, p.addr, code, truncate(string(body), 300))
			return nil
		}
		// Lost or failed on the server's side: the run may exist.
		c.mu.Lock()
		c.maybe[k] = kind
		c.mu.Unlock()
		time.Sleep(time.Duration(50+rand.IntN(200)) * time.Millisecond)
	}
	return nil
}

// drive polls the run on random live processes, races reviewers on every
// wait it shows, and returns once the run ended (or ctx did).
func (c *chaos) drive(ctx context.Context, r *chaosRun) {
	for ctx.Err() == nil {
		rv, ok := c.getRun(r.id)
		if !ok {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if rv.Status.Terminal() {
			return
		}
		for _, pa := range rv.PendingApprovals {
			callID := ""
			if pa.Tool != nil {
				callID = pa.Tool.CallID
			}
			c.race(ctx, r, r.wait(pa.NodeID, callID))
		}
		time.Sleep(time.Duration(60+rand.IntN(140)) * time.Millisecond)
	}
}

// getRun reads a run on a random live process.
func (c *chaos) getRun(id string) (runView, bool) {
	var rv runView
	p := c.pick()
	if p == nil {
		return rv, false
	}
	code, body, err := p.do(http.MethodGet, "/api/runs/"+id, nil)
	if err != nil || code != http.StatusOK || json.Unmarshal(body, &rv) != nil {
		return rv, false
	}
	return rv, true
}

// pending reports whether the wait still shows in the run (true when the
// run cannot be read: the racer tries again).
func (c *chaos) pending(r *chaosRun, w *chaosWait) bool {
	rv, ok := c.getRun(r.id)
	if !ok {
		return true
	}
	if rv.Status.Terminal() {
		return false
	}
	for _, pa := range rv.PendingApprovals {
		callID := ""
		if pa.Tool != nil {
			callID = pa.Tool.CallID
		}
		if pa.NodeID == w.node && callID == w.callID {
			return true
		}
	}
	return false
}

// race sends several decisions for one wait at once, to different
// processes where there are several; most approve. Each racer retries
// (on any process) until it gets 200 or the wait is gone.
func (c *chaos) race(ctx context.Context, r *chaosRun, w *chaosWait) {
	n := c.racersMin + rand.IntN(c.racersMax-c.racersMin+1)
	w.mu.Lock()
	round := &raceRound{}
	w.rounds = append(w.rounds, round)
	no := len(w.rounds)
	w.mu.Unlock()
	first := rand.IntN(1000)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		rc := &racer{decision: "approve", note: fmt.Sprintf("%s %s round %d racer %d", r.key, waitKey(w.node, w.callID), no, i)}
		if rand.IntN(4) == 0 {
			rc.decision = "reject"
		}
		round.racers = append(round.racers, rc)
		wg.Go(func() {
			<-gate
			for try := 0; ctx.Err() == nil; try++ {
				p := c.slot(first + i) // racers start on different processes
				if try > 0 || p == nil {
					p = c.pick()
				}
				if p == nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				at := time.Now()
				code, body, err := p.do(http.MethodPost, "/api/runs/"+r.id+"/approvals/"+w.node,
					map[string]string{"decision": rc.decision, "note": rc.note})
				if err != nil {
					code = 0
				}
				rc.codes = append(rc.codes, code)
				rc.sent = append(rc.sent, fmt.Sprintf("%s..%s pid %d: %d %s", at.Format("15:04:05.000"), time.Now().Format("15:04:05.000"),
					p.pid(), code, truncate(strings.TrimSpace(string(body)), 120)))
				switch {
				case code == http.StatusOK:
					rc.won = true
					return
				case code == http.StatusBadRequest || code == http.StatusNotFound:
					c.vs.add("decision refused as invalid", "run %s wait %s: HTTP %d: %s", r.id, waitKey(w.node, w.callID), code, truncate(string(body), 300))
					return
				}
				// 409 (answered, or not answerable here now), 5xx, or no
				// answer: go on while the wait shows.
				if !c.pending(r, w) {
					return
				}
				time.Sleep(time.Duration(30+rand.IntN(200)) * time.Millisecond)
			}
		})
	}
	round.start = time.Now()
	close(gate)
	wg.Wait()
	round.end = time.Now()
}

// --- the monkey ---

// kill SIGKILLs slot i's process and starts it again after a pause.
func (c *chaos) killRestart(i int, pause time.Duration) {
	c.mu.Lock()
	p := c.slots[i]
	c.slots[i] = nil
	c.mu.Unlock()
	if p != nil {
		p.kill()
		now := time.Now()
		c.addFault(chaosFault{at: now, until: now, what: fmt.Sprintf("SIGKILL of pid %d (slot %d)", p.pid(), i)})
		c.mu.Lock()
		c.kills++
		c.mu.Unlock()
	}
	_ = c.freeze() // the database may be down: the next one will do
	time.Sleep(pause)
	np := c.start(i)
	c.mu.Lock()
	c.slots[i] = np
	c.mu.Unlock()
}

// reviveDead restarts processes that died without being killed.
func (c *chaos) reviveDead() {
	for i := range c.slots {
		c.mu.Lock()
		p := c.slots[i]
		c.mu.Unlock()
		if p == nil || p.alive() {
			continue
		}
		c.vs.add("serve exited by itself", "%s (pid %d): %v\n%s", p.addr, p.pid(), p.waitErr, lastLines(p.stderr.String(), 15))
		c.mu.Lock()
		c.selfExits++
		c.slots[i] = nil
		c.mu.Unlock()
		np := c.start(i)
		c.mu.Lock()
		c.slots[i] = np
		c.mu.Unlock()
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// monkey SIGKILLs a random process every 1.5-4 s until the deadline,
// restarting it after up to restartMax; it calls middle (the database
// restart) at evenly spaced times, restarts times in all. It freezes the
// durable effects twice a second.
func (c *chaos) monkey(rng *rand.Rand, deadline time.Time, restartMax time.Duration, middle func(), restarts int) {
	began := time.Now()
	var at []time.Time
	if middle != nil {
		for k := 1; k <= restarts; k++ {
			at = append(at, began.Add(time.Until(deadline)*time.Duration(k)/time.Duration(restarts+1)))
		}
	}
	for time.Now().Before(deadline) {
		next := time.Now().Add(time.Duration(1500+rng.IntN(2500)) * time.Millisecond)
		for time.Now().Before(next) && time.Now().Before(deadline) {
			time.Sleep(500 * time.Millisecond)
			c.reviveDead()
			_ = c.freeze()
			if len(at) > 0 && time.Now().After(at[0]) {
				middle()
				at = at[1:]
			}
		}
		if time.Now().After(deadline) {
			break
		}
		c.killRestart(rng.IntN(len(c.slots)), time.Duration(rng.Int64N(int64(restartMax))))
	}
	for range at {
		middle()
	}
}

// --- the tests ---

// runChaos runs the clients and the monkey, drains, and checks.
func (c *chaos) runChaos(clients int, restartMax time.Duration, middle func()) {
	t := c.t
	c.wfBash = yamlWorkflowID(t, c.pick(), "chaos-bash")
	c.wfTools = yamlWorkflowID(t, c.pick(), "chaos-tools")
	if c.wfBash == "" || c.wfTools == "" {
		t.Fatal("the server does not list the YAML workflows of --workflows")
	}
	dur := chaosSeconds(t)
	// ctx bounds everything the clients do: far beyond what a loaded
	// machine needs, so a stuck run shows as a violation, not a hang.
	ctx, cancel := context.WithTimeout(context.Background(), dur+5*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for n := range clients {
		wg.Go(func() { c.client(ctx, stop, n) })
	}
	// A failure below (t.Fatal) still stops the clients before the
	// harness goes.
	defer func() { cancel(); wg.Wait() }()
	began := time.Now()
	c.monkey(rand.New(rand.NewPCG(c.seed, 1)), began.Add(dur), restartMax, middle, chaosDBRestarts(t))
	close(stop)
	chaosEnd := time.Now()
	// Drain: every client finishes its run; the processes stay up. A
	// process that dies by itself meanwhile is reported and restarted.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-time.After(500 * time.Millisecond):
			c.reviveDead()
		}
	}
	drained := time.Now()
	// Its own deadline: ctx may be spent by a client that waited it out
	// (a stuck run), and that must show as the violation the checks
	// report, not as a failed read of the runs.
	actx, acancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer acancel()
	adopted := c.adopt(actx)
	if err := c.freeze(); err != nil {
		t.Fatalf("read what is durable: %v", err)
	}
	fig := c.check()
	c.vs.report(t)
	fig.adopted = adopted
	t.Logf("chaos %s: %s", c.name, fig)
	t.Logf("chaos %s: %s of chaos with %d clients, drained in %s; seed %d", c.name, chaosEnd.Sub(began).Round(time.Millisecond),
		clients, drained.Sub(chaosEnd).Round(time.Millisecond), c.seed)
	for i := range c.slots {
		if p := c.slot(i); p != nil {
			p.healthy(t)
			p.stop(t)
		}
	}
}

// adopt drives the runs created by requests whose answer was lost, and
// reports runs nobody asked for.
func (c *chaos) adopt(ctx context.Context) int {
	t := c.t
	stored, err := c.db.runs(ctx)
	if err != nil {
		t.Fatalf("read runs: %v", err)
	}
	known := map[string]bool{}
	c.mu.Lock()
	for _, r := range c.runs {
		known[r.id] = true
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	n := 0
	for id, sr := range stored {
		if known[id] {
			continue
		}
		c.mu.Lock()
		kind, ok := c.maybe[sr.input]
		c.mu.Unlock()
		if !ok {
			c.vs.add("a run nobody created", "run %s, input %q, %s", id, sr.input, sr.status)
			continue
		}
		r := &chaosRun{key: sr.input, kind: kind, id: id, adopted: true, waits: map[string]*chaosWait{}}
		c.mu.Lock()
		c.runs = append(c.runs, r)
		c.mu.Unlock()
		n++
		wg.Go(func() { c.drive(ctx, r) })
	}
	wg.Wait()
	return n
}

func newChaos(t *testing.T, name string, h *harness, db chaosDB, slots int, start func(int) *proc) *chaos {
	c := &chaos{t: t, name: name, h: h, vs: &violations{}, seed: faultSeed(t), side: filepath.Join(h.work, "side-effects"),
		db: db, start: start, slots: make([]*proc, slots), maybe: map[string]string{},
		frozenSteps: map[string]int{}, frozenCalls: map[string]int{}}
	// Agents answer after 30-300 ms, so kills land in the middle of steps.
	h.llm.setLatency(func(string, string) time.Duration { return time.Duration(30+rand.IntN(270)) * time.Millisecond })
	writeChaosWorkflows(t, h.workflows, c.side)
	for i := range slots {
		c.slots[i] = start(i)
	}
	return c
}

// TestChaosSQLite: one serve at a time on one data folder, SIGKILLed and
// restarted at random while six clients run the workload; three racers
// (on the one process) answer each wait.
func TestChaosSQLite(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := newChaos(t, "sqlite", h, sqliteChaosDB{data: h.data}, 1, func(int) *proc { return h.start() })
	c.racersMin, c.racersMax = 3, 3
	c.runChaos(6, time.Second, nil)
	integrityCheck(t, h.data)
}

// TestChaosPostgres: three serve processes on one PostgreSQL database (a
// data folder each, as on three machines), one of them SIGKILLed and
// restarted at random while nine clients run the workload; three to five
// racers per wait start on different processes; midway the database
// cluster restarts (a fast shutdown, down for a second or two; see
// SWITCHYARD_CHAOS_DB_RESTARTS).
func TestChaosPostgres(t *testing.T) {
	t.Parallel()
	cl := pgtest.StartT(t)
	dsn := cl.NewDatabase(t)
	h := newHarness(t)
	h.env = append(h.env, "SWITCHYARD_LEASE_TTL="+pgLeaseTTL.String())
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	c := newChaos(t, "postgres", h, &pgChaosDB{dsn: dsn}, len(dirs), func(i int) *proc {
		return h.start("--db", dsn, "--data", dirs[i])
	})
	c.racersMin, c.racersMax = 3, 5
	c.runChaos(9, 1500*time.Millisecond, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		began := time.Now()
		down := time.Duration(1000+rand.IntN(1000)) * time.Millisecond
		if err := cl.Restart(ctx, func() { time.Sleep(down) }); err != nil {
			t.Fatalf("restart the database: %v", err)
		}
		c.addFault(chaosFault{at: began, until: time.Now(), what: "database restart"})
		c.mu.Lock()
		c.dbRestarts++
		c.mu.Unlock()
		t.Logf("database restarted (down %s, %s in all)", down.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	})
}
