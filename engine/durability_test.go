package engine_test

// Durability of runs (issue 4), proven against the real SQLite store: node
// completions are persisted before anything downstream starts; a restarted
// process resumes running runs from their last persisted state and finds
// paused runs paused; leases keep a run with one driver; concurrent answers
// to one approval have one winner; paused runs cost no goroutine.
//
// A "process" here is an engine with its own sqlite.Open of the shared
// database file. crashStore emulates the moment a process dies: from then on
// nothing it does reaches the file, exactly as after SIGKILL, but at a point
// the test chooses. The real-process version is cmd/switchyard/crash_test.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/llm"
	"github.com/switchyard/switchyard/store/sqlite"
)

// --- the fake LLM: knows which node (and which process) called ---

// llmScript answers agent nodes whose user prompt starts with "node=<id>".
// Every reply is unique ("out-<id>-<n>"), so an output names the call that
// produced it. Calls can be made to hang or to block until released.
type llmScript struct {
	mu    sync.Mutex
	n     int
	calls map[string][]string      // node -> process tag of each call, in order
	hang  map[string]int           // node -> calls left to answer with Reply.Hang
	block map[string]chan struct{} // node -> its next call waits until closed
	fail  map[string]bool          // node -> every call answered with HTTP 400
	// arrived: node -> closed at its next call; holdFor: node -> its calls
	// are answered (a failure too) once this is closed.
	arrived map[string]chan struct{}
	holdFor map[string]<-chan struct{}
}

func newLLMScript() *llmScript {
	return &llmScript{calls: map[string][]string{}, hang: map[string]int{}, block: map[string]chan struct{}{}, fail: map[string]bool{},
		arrived: map[string]chan struct{}{}, holdFor: map[string]<-chan struct{}{}}
}

func promptNode(msg string) string {
	first, _, _ := strings.Cut(msg, "\n")
	return strings.TrimPrefix(first, "node=")
}

func (s *llmScript) handle(req *fakeopenai.Request) fakeopenai.Reply {
	node := promptNode(req.LastUserMessage())
	s.mu.Lock()
	s.n++
	n := s.n
	s.calls[node] = append(s.calls[node], req.Header.Get(procHeader))
	hang := s.hang[node] > 0
	if hang {
		s.hang[node]--
	}
	block := s.block[node]
	delete(s.block, node)
	fail := s.fail[node]
	if ch := s.arrived[node]; ch != nil {
		close(ch)
		delete(s.arrived, node)
	}
	hold := s.holdFor[node]
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-time.After(time.Minute): // never called: the test's checks say so
		}
	}
	if fail {
		return fakeopenai.Reply{Status: http.StatusBadRequest, ErrorMessage: "node " + node + " is refused"}
	}
	if hang {
		return fakeopenai.Reply{Hang: true}
	}
	if block != nil {
		<-block
	}
	return fakeopenai.Reply{Text: fmt.Sprintf("out-%s-%d", node, n)}
}

func (s *llmScript) setHang(node string, n int) {
	s.mu.Lock()
	s.hang[node] = n
	s.mu.Unlock()
}

// blockNext makes node's next call wait until the returned func is called.
func (s *llmScript) blockNext(t *testing.T, node string) (release func()) {
	ch := make(chan struct{})
	s.mu.Lock()
	s.block[node] = ch
	s.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(release)
	return release
}

// answerAfterCall makes node's calls wait for other's next call before
// they are answered: other is in flight when node's answer comes.
func (s *llmScript) answerAfterCall(node, other string) {
	ch := make(chan struct{})
	s.mu.Lock()
	s.arrived[other] = ch
	s.holdFor[node] = ch
	s.mu.Unlock()
}

func (s *llmScript) callsOf(node string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls[node])
}

const procHeader = "X-Durability-Process"

// tagTransport marks every LLM request with the emulated process's name.
type tagTransport struct{ tag string }

func (t tagTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(procHeader, t.tag)
	return http.DefaultTransport.RoundTrip(req)
}

// --- emulated processes on one database file ---

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

type durHarness struct {
	t      *testing.T
	path   string
	fake   *fakeopenai.Server
	script *llmScript
}

func newDurHarness(t *testing.T) *durHarness {
	t.Helper()
	script := newLLMScript()
	fake := fakeopenai.StartT(t, fakeopenai.WithHandler(script.handle))
	return &durHarness{t: t, path: filepath.Join(t.TempDir(), "switchyard.db"), fake: fake, script: script}
}

func (h *durHarness) openStore() *sqlite.Store {
	h.t.Helper()
	st, err := sqlite.Open(context.Background(), h.path, sqlite.WithLogger(quietLog))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { st.Close() })
	return st
}

// process starts an engine named tag on its own connection to the file.
// Engines close before their stores (cleanups run last-in first-out).
func (h *durHarness) process(tag string, ttl time.Duration, st engine.Store, sinks ...engine.Sink) *engine.Engine {
	h.t.Helper()
	client, err := llm.New(llm.Config{BaseURL: h.fake.URL(), APIKey: "test",
		RetryBase: 10 * time.Millisecond, HTTPClient: &http.Client{Transport: tagTransport{tag}}})
	if err != nil {
		h.t.Fatal(err)
	}
	e, err := engine.New(engine.Config{Store: st, LLM: client, Owner: tag, LeaseTTL: ttl,
		ArtifactsRoot: h.t.TempDir(), Logger: quietLog, Sinks: sinks})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(e.Close)
	return e
}

// takeOver starts process tag once a dead owner's lease (ttl) has run out
// and has it recover the runs it left. It returns the process, its store
// and the runs it took.
func (h *durHarness) takeOver(tag string, ttl time.Duration) (*engine.Engine, *sqlite.Store, []string) {
	h.t.Helper()
	st := h.openStore()
	e := h.process(tag, ttl, st)
	time.Sleep(2 * ttl) // the dead owner's lease runs out
	took, err := e.Recover(context.Background(), true)
	if err != nil {
		h.t.Fatal(err)
	}
	return e, st, took
}

var errDead = errors.New("emulated process death: write not applied")

// crashStore is one emulated process's view of the real SQLite store. Once
// dead, none of its writes reach the file (events vanish, other writes
// fail), so its runs keep the state and lease they had at that instant, as
// after SIGKILL. Its hooks choose the instant; reads pass through.
type crashStore struct {
	*sqlite.Store
	dead atomic.Bool
	// stall drops lease renewals only, as when the process is suspended
	// (laptop sleep, SIGSTOP, a long stop-the-world pause) while it drives runs.
	stall atomic.Bool
	// dieAfterEvent, if set, is asked about every event; true kills the
	// process once that event is committed.
	dieAfterEvent func(ev *engine.Event) bool
	// dieAfterOp, if set, is asked after every successful write call ("create",
	// "acquire", "claim", "checkpoint"); true kills the process right then.
	dieAfterOp func(op string) bool
	// hooksMu guards the two hooks: a test arms them while the runs'
	// goroutines call the store.
	hooksMu sync.Mutex
}

func (c *crashStore) setDieAfterOp(f func(op string) bool) {
	c.hooksMu.Lock()
	c.dieAfterOp = f
	c.hooksMu.Unlock()
}

func (c *crashStore) setDieAfterEvent(f func(ev *engine.Event) bool) {
	c.hooksMu.Lock()
	c.dieAfterEvent = f
	c.hooksMu.Unlock()
}

func (c *crashStore) hooks() (func(op string) bool, func(ev *engine.Event) bool) {
	c.hooksMu.Lock()
	defer c.hooksMu.Unlock()
	return c.dieAfterOp, c.dieAfterEvent
}

func (c *crashStore) kill() { c.dead.Store(true) }

func (c *crashStore) after(op string, err error) error {
	if dieAfterOp, _ := c.hooks(); err == nil && dieAfterOp != nil && dieAfterOp(op) {
		c.kill()
	}
	return err
}

func (c *crashStore) Emit(ev *engine.Event) {
	if c.dead.Load() {
		return
	}
	c.Store.Emit(ev)
	if _, dieAfterEvent := c.hooks(); dieAfterEvent != nil && dieAfterEvent(ev) {
		// The runner is blocked here, so nothing it does next is queued
		// before the process "dies".
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for ctx.Err() == nil {
			evs, err := c.Store.Events(ctx, ev.RunID, ev.Seq-1, 1)
			if err == nil && len(evs) == 1 && evs[0].Seq == ev.Seq {
				break
			}
			time.Sleep(time.Millisecond)
		}
		c.kill()
	}
}

func (c *crashStore) CreateRun(ctx context.Context, r *engine.Run, nodes []*engine.NodeState, events []*engine.Event) error {
	if c.dead.Load() {
		return errDead
	}
	return c.after("create", c.Store.CreateRun(ctx, r, nodes, events))
}

func (c *crashStore) Checkpoint(ctx context.Context, r *engine.Run, nodes []*engine.NodeState) error {
	if c.dead.Load() {
		return errDead
	}
	return c.after("checkpoint", c.Store.Checkpoint(ctx, r, nodes))
}

func (c *crashStore) AcquireRun(ctx context.Context, runID, owner string, expect engine.RunStatus, now, until time.Time) error {
	if c.dead.Load() {
		return errDead
	}
	return c.after("acquire", c.Store.AcquireRun(ctx, runID, owner, expect, now, until))
}

func (c *crashStore) ClaimWaitingNode(ctx context.Context, runID, nodeID, owner string, decision []byte) error {
	if c.dead.Load() {
		return errDead
	}
	return c.after("claim", c.Store.ClaimWaitingNode(ctx, runID, nodeID, owner, decision))
}

func (c *crashStore) RenewLeases(ctx context.Context, owner string, until time.Time) error {
	if c.dead.Load() || c.stall.Load() {
		return errDead
	}
	return c.Store.RenewLeases(ctx, owner, until)
}

func (c *crashStore) ReleaseRun(ctx context.Context, runID, owner string) error {
	if c.dead.Load() {
		return errDead
	}
	return c.Store.ReleaseRun(ctx, runID, owner)
}

// --- graphs ---

func agentData(id string) graph.NodeData {
	return graph.NodeData{AgentName: id, UserPrompt: "node=" + id + "\n{{PREVIOUS_OUTPUT}}"}
}

type gbuild struct{ g graph.Graph }

func (b *gbuild) node(id, typ string, d graph.NodeData) *gbuild {
	b.g.Nodes = append(b.g.Nodes, graph.Node{ID: id, Type: typ, Data: d})
	return b
}

func (b *gbuild) edge(src, handle, dst string) *gbuild {
	b.g.Edges = append(b.g.Edges, graph.Edge{ID: fmt.Sprintf("e%d", len(b.g.Edges)+1), Source: src,
		Target: dst, SourceHandle: handle, TargetHandle: "input"})
	return b
}

// chain3: start -> a -> b -> c, all agents.
func chain3() *graph.Graph {
	b := &gbuild{}
	b.node("s", "start", graph.NodeData{InitialInput: "go"}).
		node("a", "agent", agentData("a")).node("b", "agent", agentData("b")).node("c", "agent", agentData("c")).
		edge("s", "output", "a").edge("a", "output", "b").edge("b", "output", "c")
	return &b.g
}

// fanGraph: start -> a1,a2,a3 -> j -> if -> approval -> f.
func fanGraph() *graph.Graph {
	b := &gbuild{}
	b.node("s", "start", graph.NodeData{InitialInput: "go"})
	for _, id := range []string{"a1", "a2", "a3"} {
		b.node(id, "agent", agentData(id)).edge("s", "output", id)
	}
	b.node("j", "agent", agentData("j")).edge("a1", "output", "j").edge("a2", "output", "j").edge("a3", "output", "j").
		node("gate", "if", graph.NodeData{Conditions: []graph.Condition{{Operator: "contains", Value: "out-j"}}}).
		edge("j", "output", "gate").
		node("ok", "approval", graph.NodeData{Prompt: "ship?"}).edge("gate", "condition-0", "ok").
		node("f", "agent", agentData("f")).edge("ok", "approve", "f")
	return &b.g
}

// pauseGraph: start -> approval -> agent; pauses without calling the LLM.
func pauseGraph() *graph.Graph {
	b := &gbuild{}
	b.node("s", "start", graph.NodeData{InitialInput: "draft"}).
		node("ok", "approval", graph.NodeData{Prompt: "publish?"}).
		node("f", "agent", agentData("f")).
		edge("s", "output", "ok").edge("ok", "approve", "f")
	return &b.g
}

// --- assertions on what the store holds ---

func waitDone(t *testing.T, e *engine.Engine, runID string) *engine.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := e.Wait(ctx, runID)
	if err != nil {
		t.Fatalf("wait run %s: %v", runID, err)
	}
	return r
}

// eventually polls cond (every 5ms, up to 20s): waiting on a condition,
// never on a duration, keeps the tests stable on a busy machine.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second) // generous: a 300 ms lease on a hogged machine
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type storedRun struct {
	run    *engine.Run
	nodes  map[string]*engine.NodeState
	events []engine.Event
}

func loadStored(t *testing.T, st engine.Store, runID string) storedRun {
	t.Helper()
	ctx := context.Background()
	run, nodes, _, err := st.LoadRun(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(ctx, runID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*engine.NodeState{}
	for _, n := range nodes {
		m[n.NodeID] = n
	}
	return storedRun{run: run, nodes: m, events: evs}
}

// checkLog asserts the invariants every stored log keeps: seq 1..n without
// gaps, and per node and visit at most one completed step_end.
func (s storedRun) checkLog(t *testing.T) {
	t.Helper()
	for i, ev := range s.events {
		if ev.Seq != int64(i+1) {
			t.Fatalf("run %s: event %d has seq %d: the log has a gap", s.run.ID, i, ev.Seq)
		}
	}
	for node, n := range s.completions() {
		if n > 1 {
			t.Errorf("run %s: node %s has %d completed step_end events for one visit", s.run.ID, node, n)
		}
	}
}

type stepData struct {
	Visit  int    `json:"visit"`
	Retry  string `json:"retry"`
	Status string `json:"status"`
	Output string `json:"output"`
}

func dataOf(ev engine.Event) stepData {
	var d stepData
	_ = json.Unmarshal(ev.Data, &d)
	return d
}

// completions counts completed step_end events per "node#visit".
func (s storedRun) completions() map[string]int {
	visit := map[string]int{}
	out := map[string]int{}
	for _, ev := range s.events {
		switch ev.Type {
		case engine.EvStepStart:
			visit[ev.NodeID] = dataOf(ev).Visit
		case engine.EvStepEnd:
			if dataOf(ev).Status == string(engine.NodeCompleted) {
				out[fmt.Sprintf("%s#%d", ev.NodeID, visit[ev.NodeID])]++
			}
		}
	}
	return out
}

func (s storedRun) starts(node string) []stepData {
	var out []stepData
	for _, ev := range s.events {
		if ev.Type == engine.EvStepStart && ev.NodeID == node {
			out = append(out, dataOf(ev))
		}
	}
	return out
}

// --- the tests ---

// upstreamCheck is a Sink that, whenever a node starts, reads the store
// (a separate read transaction) and requires every upstream node to be
// persisted as completed with the output its step_end reported.
type upstreamCheck struct {
	st  *sqlite.Store
	ups map[string][]string

	mu      sync.Mutex
	outputs map[string]string // run/node -> output of its last completed step_end
	checked int
	errs    []string
}

func (c *upstreamCheck) Emit(ev *engine.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch ev.Type {
	case engine.EvStepEnd:
		if d := dataOf(*ev); d.Status == string(engine.NodeCompleted) {
			c.outputs[ev.RunID+"/"+ev.NodeID] = d.Output
		}
	case engine.EvStepStart:
		ups := c.ups[ev.NodeID]
		if len(ups) == 0 {
			return
		}
		_, nodes, _, err := c.st.LoadRun(context.Background(), ev.RunID)
		if err != nil {
			c.errs = append(c.errs, err.Error())
			return
		}
		c.checked++
		for _, up := range ups {
			var st *engine.NodeState
			for _, n := range nodes {
				if n.NodeID == up {
					st = n
				}
			}
			want, seen := c.outputs[ev.RunID+"/"+up]
			switch {
			case !seen:
				c.errs = append(c.errs, fmt.Sprintf("%s started before upstream %s reported completion", ev.NodeID, up))
			case st == nil || st.Status != engine.NodeCompleted || st.Output != want:
				c.errs = append(c.errs, fmt.Sprintf("%s started while upstream %s is persisted as %+v (reported output %q)",
					ev.NodeID, up, st, want))
			}
		}
	}
}

func TestDurableCompletionBeforeDownstreamStarts(t *testing.T) {
	ctx := context.Background()
	h := newDurHarness(t)
	st := h.openStore()
	g := fanGraph()
	check := &upstreamCheck{st: st, ups: map[string][]string{}, outputs: map[string]string{}}
	for _, ed := range g.Edges {
		check.ups[ed.Target] = append(check.ups[ed.Target], ed.Source)
	}
	e := h.process("A", 0, st, check)
	const runs = 4 // concurrent runs share the writer's group commits
	var ids []string
	for range runs {
		r, err := e.StartGraph(ctx, fanGraph(), engine.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	for _, id := range ids {
		if r := waitDone(t, e, id); r.Status != engine.StatusPaused {
			t.Fatalf("run %s: %s %s", id, r.Status, r.Error)
		}
		if _, err := e.Resume(ctx, id, "ok", engine.Decision{Decision: "approve"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		if r := waitDone(t, e, id); r.Status != engine.StatusCompleted {
			t.Fatalf("run %s: %s %s", id, r.Status, r.Error)
		}
		s := loadStored(t, st, id)
		s.checkLog(t)
		for _, n := range g.Nodes {
			if s.nodes[n.ID] == nil || s.nodes[n.ID].Status != engine.NodeCompleted {
				t.Errorf("run %s: node %s persisted as %+v", id, n.ID, s.nodes[n.ID])
			}
		}
	}
	check.mu.Lock()
	defer check.mu.Unlock()
	// Every node but the start has upstream nodes: 7 checks per run.
	if want := runs * (len(g.Nodes) - 1); check.checked != want {
		t.Errorf("checked %d node starts, want %d", check.checked, want)
	}
	for _, e := range check.errs {
		t.Error(e)
	}
}

// startHanging starts chain3 on e with b's first call hanging and returns
// once a is persisted as completed and b's call is in flight.
func (h *durHarness) startHanging(e *engine.Engine, st engine.Store) string {
	h.t.Helper()
	h.script.setHang("b", 1)
	r, err := e.StartGraph(context.Background(), chain3(), engine.StartOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	eventually(h.t, "b in flight with a persisted", func() bool {
		_, nodes, _, err := st.LoadRun(context.Background(), r.ID)
		if err != nil {
			return false
		}
		var aDone, bRunning bool
		for _, n := range nodes {
			aDone = aDone || (n.NodeID == "a" && n.Status == engine.NodeCompleted)
			bRunning = bRunning || (n.NodeID == "b" && n.Status == engine.NodeRunning)
		}
		return aDone && bRunning && len(h.script.callsOf("b")) == 1
	})
	return r.ID
}

// checkResumedChain asserts a chain3 run that process A left with b in
// flight was finished by process B without rerunning a.
func (h *durHarness) checkResumedChain(st engine.Store, runID string) {
	t := h.t
	t.Helper()
	s := loadStored(t, st, runID)
	if s.run.Status != engine.StatusCompleted {
		t.Fatalf("run %s: %s %s", runID, s.run.Status, s.run.Error)
	}
	s.checkLog(t)
	if got := h.script.callsOf("a"); !slices.Equal(got, []string{"A"}) {
		t.Errorf("a called by %v: a completed node was rerun", got)
	}
	if got := h.script.callsOf("b"); !slices.Equal(got, []string{"A", "B"}) {
		t.Errorf("b called by %v, want A (in flight at the stop) then B", got)
	}
	if got := h.script.callsOf("c"); !slices.Equal(got, []string{"B"}) {
		t.Errorf("c called by %v", got)
	}
	if st := s.starts("a"); len(st) != 1 || st[0].Retry != "" {
		t.Errorf("a step_starts %+v", st)
	}
	if st := s.starts("b"); len(st) != 2 || st[0].Retry != "" || st[1].Retry != "restart" || st[1].Visit != 1 {
		t.Errorf("b step_starts %+v: want a first start and a retry=restart start of visit 1", st)
	}
	if st := s.starts("c"); len(st) != 1 || st[0].Retry != "" {
		t.Errorf("c step_starts %+v", st)
	}
	// a's output is reused: b's rerun got it as input, c got b's new output.
	a, b, c := s.nodes["a"], s.nodes["b"], s.nodes["c"]
	if !strings.HasPrefix(a.Output, "out-a-") || b.Input != a.Output || c.Input != b.Output || !strings.HasPrefix(c.Output, "out-c-") {
		t.Errorf("outputs not chained: a=%+v b=%+v c=%+v", a, b, c)
	}
}

func TestRecoverResumesRunningRun(t *testing.T) {
	ctx := context.Background()
	h := newDurHarness(t)
	stA := h.openStore()
	a := h.process("A", 0, stA)
	id := h.startHanging(a, stA)
	// A shuts down with b in flight: the run stays running, unowned.
	a.Close()
	stA.Close()

	stB := h.openStore()
	b := h.process("B", 0, stB)
	took, err := b.Recover(ctx, true)
	if err != nil || !slices.Equal(took, []string{id}) {
		t.Fatalf("Recover took %v, %v; want [%s]", took, err, id)
	}
	waitDone(t, b, id)
	h.checkResumedChain(stB, id)
}

func TestRecoverWithoutResumeMarksInterrupted(t *testing.T) {
	ctx := context.Background()
	h := newDurHarness(t)
	stA := h.openStore()
	a := h.process("A", 0, stA)
	id := h.startHanging(a, stA)
	a.Close()

	stB := h.openStore()
	b := h.process("B", 0, stB)
	took, err := b.Recover(ctx, false)
	if err != nil || !slices.Equal(took, []string{id}) {
		t.Fatalf("Recover took %v, %v", took, err)
	}
	r, err := stB.GetRun(ctx, id)
	if err != nil || r.Status != engine.StatusInterrupted {
		t.Fatalf("after Recover(false): %+v %v", r, err)
	}
	listed, err := stB.ListRuns(ctx, engine.RunFilter{Status: engine.StatusInterrupted})
	if err != nil || len(listed) != 1 || listed[0].ID != id {
		t.Fatalf("interrupted runs listed: %v %v", listed, err)
	}
	if orphans, _ := stB.ListOrphaned(ctx, time.Now()); len(orphans) != 0 {
		t.Fatalf("an interrupted run is still an orphan: %v", orphans)
	}
	if len(h.script.callsOf("b")) != 1 {
		t.Fatalf("Recover(false) ran b: %v", h.script.callsOf("b"))
	}
	if _, err := b.Continue(ctx, id); err != nil {
		t.Fatal(err)
	}
	waitDone(t, b, id)
	h.checkResumedChain(stB, id)
	s := loadStored(t, stB, id)
	var statuses []string
	for _, ev := range s.events {
		if ev.Type == engine.EvRunStatus {
			statuses = append(statuses, ev.Content)
		}
	}
	if !slices.Equal(statuses, []string{"running", "interrupted", "running", "completed"}) {
		t.Errorf("run_status events %v", statuses)
	}
}

func TestPausedRunSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	h := newDurHarness(t)
	stA := h.openStore()
	a := h.process("A", 0, stA)
	r, err := a.StartGraph(ctx, fanGraph(), engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := waitDone(t, a, r.ID); r.Status != engine.StatusPaused {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	a.Close()
	stA.Close()

	stB := h.openStore()
	b := h.process("B", 0, stB)
	paused, err := stB.ListRuns(ctx, engine.RunFilter{Status: engine.StatusPaused})
	if err != nil || len(paused) != 1 || paused[0].ID != r.ID {
		t.Fatalf("paused runs after restart: %v %v", paused, err)
	}
	if pa := paused[0].PendingApprovals; len(pa) != 1 || pa[0].NodeID != "ok" || pa[0].Prompt != "ship?" ||
		!strings.HasPrefix(pa[0].Input, "out-j-") {
		t.Fatalf("pending approvals %+v", pa)
	}
	if took, err := b.Recover(ctx, true); err != nil || len(took) != 0 {
		t.Fatalf("Recover took a paused run: %v %v", took, err)
	}
	if _, err := b.Resume(ctx, r.ID, "ok", engine.Decision{Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	if r := waitDone(t, b, r.ID); r.Status != engine.StatusCompleted {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	s := loadStored(t, stB, r.ID)
	s.checkLog(t)
	for _, n := range []string{"a1", "a2", "a3", "j"} {
		if got := h.script.callsOf(n); !slices.Equal(got, []string{"A"}) {
			t.Errorf("%s called by %v: completed before the pause, it must not run again", n, got)
		}
	}
	if got := h.script.callsOf("f"); !slices.Equal(got, []string{"B"}) {
		t.Errorf("f called by %v", got)
	}
	if f, ok := s.nodes["ok"]; !ok || s.nodes["f"].Input != f.Output || f.Output != s.nodes["j"].Output {
		t.Errorf("approval did not pass j's output on: ok=%+v f=%+v", s.nodes["ok"], s.nodes["f"])
	}
}

// A live owner renews its lease: another process cannot take the run, for
// as long as that lasts. Once the owner dies, the lease runs out and the
// other process takes over.
func TestLeaseKeepsRunWithLiveOwner(t *testing.T) {
	ctx := context.Background()
	const ttl = 400 * time.Millisecond
	h := newDurHarness(t)
	stA := &crashStore{Store: h.openStore()}
	a := h.process("A", ttl, stA)
	id := h.startHanging(a, stA)

	stB := h.openStore()
	b := h.process("B", ttl, stB)
	for end := time.Now().Add(3 * ttl); time.Now().Before(end); time.Sleep(ttl / 8) {
		if took, err := b.Recover(ctx, true); err != nil || len(took) != 0 {
			t.Fatalf("Recover took %v (%v) from a live owner", took, err)
		}
		if _, err := b.Continue(ctx, id); !errors.Is(err, engine.ErrConflict) {
			t.Fatalf("Continue of a run with a live owner: %v, want ErrConflict", err)
		}
		now := time.Now()
		if err := stB.AcquireRun(ctx, id, "B", "", now, now.Add(ttl)); !errors.Is(err, engine.ErrConflict) {
			t.Fatalf("AcquireRun against a live lease: %v", err)
		}
	}
	if got := h.script.callsOf("b"); !slices.Equal(got, []string{"A"}) {
		t.Fatalf("b called by %v while A held the run", got)
	}

	stA.kill() // A dies with b in flight; its lease is left to expire
	eventually(t, "B to take over the run", func() bool {
		took, err := b.Recover(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		return len(took) == 1 && took[0] == id
	})
	waitDone(t, b, id)
	h.checkResumedChain(stB, id)
}

// startBlocked is startHanging with b's first call blocked until release
// rather than hanging.
func (h *durHarness) startBlocked(e *engine.Engine, st engine.Store) (string, func()) {
	h.t.Helper()
	release := h.script.blockNext(h.t, "b")
	r, err := e.StartGraph(context.Background(), chain3(), engine.StartOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	eventually(h.t, "b in flight", func() bool {
		s := loadStored(h.t, st, r.ID)
		return s.nodes["b"] != nil && s.nodes["b"].Status == engine.NodeRunning && len(h.script.callsOf("b")) == 1
	})
	return r.ID, release
}

// An owner that stops renewing (suspended: laptop sleep, SIGSTOP) loses its
// runs to another process once the lease expires. When it wakes up it must
// not go on driving them: no run is ever driven by two processes.
func TestStalledOwnerDoesNotDriveATakenRun(t *testing.T) {
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	h := newDurHarness(t)
	stA := &crashStore{Store: h.openStore()}
	a := h.process("A", ttl, stA)
	id, release := h.startBlocked(a, stA)

	stA.stall.Store(true) // A's renewals no longer get through
	stB := h.openStore()
	b := h.process("B", ttl, stB)
	eventually(t, "B to take over the stalled run", func() bool {
		took, err := b.Recover(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		return len(took) == 1
	})
	if r := waitDone(t, b, id); r.Status != engine.StatusCompleted {
		t.Fatalf("B: %s %s", r.Status, r.Error)
	}
	before := loadStored(t, stB, id)

	// A wakes up: its LLM call returns.
	release()
	stA.stall.Store(false)
	waitDone(t, a, id)
	after := loadStored(t, stB, id)
	if got := h.script.callsOf("c"); !slices.Equal(got, []string{"B"}) {
		t.Errorf("c called by %v: the run was driven by two processes", got)
	}
	if after.run.Status != engine.StatusCompleted || len(after.events) != len(before.events) {
		t.Errorf("the old owner kept writing after losing its lease: status %s -> %s, %d -> %d events",
			before.run.Status, after.run.Status, len(before.events), len(after.events))
	}
	for id, n := range before.nodes {
		if m := after.nodes[id]; m == nil || m.Output != n.Output || m.Status != n.Status {
			t.Errorf("node %s changed after the takeover: %+v -> %+v", id, n, m)
		}
	}
}

// A process dies after its step_end "completed" event is committed but
// before the checkpoint recording that completion. That event may already
// have reached every reader (CLI --events, the UI through OnCommit), so the
// next owner must not run the node again.
func TestReportedCompletionIsNotRerun(t *testing.T) {
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	h := newDurHarness(t)
	stA := &crashStore{Store: h.openStore()}
	stA.setDieAfterEvent(func(ev *engine.Event) bool {
		return ev.NodeID == "b" && ev.Type == engine.EvStepEnd
	})
	a := h.process("A", ttl, stA)
	r, err := a.StartGraph(ctx, chain3(), engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "A to die", stA.dead.Load)
	var reported string
	for _, ev := range loadStored(t, stA.Store, r.ID).events {
		if ev.NodeID == "b" && ev.Type == engine.EvStepEnd {
			reported = dataOf(ev).Output
		}
	}
	if reported == "" {
		t.Fatal("b's step_end is not in the log")
	}

	stB := h.openStore()
	b := h.process("B", ttl, stB)
	eventually(t, "B to take over", func() bool {
		took, _ := b.Recover(ctx, true)
		return len(took) == 1
	})
	waitDone(t, b, r.ID)
	s := loadStored(t, stB, r.ID)
	if s.run.Status != engine.StatusCompleted {
		t.Fatalf("%s %s", s.run.Status, s.run.Error)
	}
	s.checkLog(t)
	if got := h.script.callsOf("b"); len(got) != 1 {
		t.Errorf("b called by %v after its completion was committed to the log", got)
	}
	if s.nodes["b"].Output != reported {
		t.Errorf("b's reported output %q was replaced by %q", reported, s.nodes["b"].Output)
	}
}

// A process dies while a node it just dispatched is calling the LLM. The
// node's step_start is in the log, so its rerun by the next owner must be
// marked as a retry after restart. a follows the start node, which
// completes inline: the case where the dispatch of a is not checkpointed
// before the loop waits.
func TestInFlightNodeRerunIsMarkedRetry(t *testing.T) {
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	h := newDurHarness(t)
	stA := &crashStore{Store: h.openStore()}
	a := h.process("A", ttl, stA)
	h.script.setHang("a", 1)
	r, err := a.StartGraph(ctx, chain3(), engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "a's call in flight with its step_start committed", func() bool {
		if len(h.script.callsOf("a")) != 1 {
			return false
		}
		return len(loadStored(t, stA.Store, r.ID).starts("a")) == 1
	})
	stA.kill()
	if n := loadStored(t, stA.Store, r.ID).nodes["a"]; n != nil {
		t.Logf("a is persisted as %q (attempts %d) while its LLM call is in flight", n.Status, n.Attempts)
	}

	stB := h.openStore()
	b := h.process("B", ttl, stB)
	eventually(t, "B to take over", func() bool {
		took, _ := b.Recover(ctx, true)
		return len(took) == 1
	})
	if got := waitDone(t, b, r.ID); got.Status != engine.StatusCompleted {
		t.Fatalf("%s %s", got.Status, got.Error)
	}
	s := loadStored(t, stB, r.ID)
	s.checkLog(t)
	if got := h.script.callsOf("a"); !slices.Equal(got, []string{"A", "B"}) {
		t.Errorf("a called by %v", got)
	}
	if st := s.starts("a"); len(st) != 2 || st[1].Retry != "restart" {
		t.Errorf("a's step_starts %+v: the rerun of a node that was in flight is not marked retry=restart", st)
	}
}

// A join whose inputs arrive one at a time must keep every one of them
// across a restart: a1 and a2 complete in separate steps, a3 is in flight
// when the process dies, and j must still run on all three outputs.
func TestJoinKeepsEveryInputAcrossRestart(t *testing.T) {
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	h := newDurHarness(t)
	stA := &crashStore{Store: h.openStore()}
	a := h.process("A", ttl, stA)
	releaseA2 := h.script.blockNext(t, "a2")
	h.script.setHang("a3", 1)
	g := fanGraph()
	r, err := a.StartGraph(ctx, g, engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "a1 persisted as completed", func() bool {
		n := loadStored(t, stA.Store, r.ID).nodes["a1"]
		return n != nil && n.Status == engine.NodeCompleted
	})
	releaseA2()
	eventually(t, "a2 persisted as completed", func() bool {
		n := loadStored(t, stA.Store, r.ID).nodes["a2"]
		return n != nil && n.Status == engine.NodeCompleted && len(h.script.callsOf("a3")) == 1
	})
	stA.kill()
	t.Logf("j persisted with fired inputs %v", loadStored(t, stA.Store, r.ID).nodes["j"].Fired)

	stB := h.openStore()
	b := h.process("B", ttl, stB)
	eventually(t, "B to take over", func() bool {
		took, _ := b.Recover(ctx, true)
		return len(took) == 1
	})
	if got := waitDone(t, b, r.ID); got.Status != engine.StatusPaused {
		t.Fatalf("%s %s", got.Status, got.Error)
	}
	s := loadStored(t, stB, r.ID)
	s.checkLog(t)
	for _, n := range []string{"a1", "a2", "a3"} {
		if out := s.nodes[n].Output; out == "" || !strings.Contains(s.nodes["j"].Input, out) {
			t.Errorf("j ran on %q: %s's output %q is missing", s.nodes["j"].Input, n, out)
		}
	}
}

// A process dies right after creating a run (which takes its lease), before
// the first checkpoint. The run must not be lost: recovery runs it from the
// start.
func TestRunCreatedButNeverCheckpointedIsRecovered(t *testing.T) {
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	h := newDurHarness(t)
	stA := &crashStore{Store: h.openStore()}
	stA.setDieAfterOp(func(op string) bool { return op == "create" })
	a := h.process("A", ttl, stA)
	r, err := a.StartGraph(ctx, chain3(), engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, a, r.ID)

	b, stB, took := h.takeOver("B", ttl)
	if !slices.Equal(took, []string{r.ID}) {
		got, _ := stB.GetRun(ctx, r.ID)
		t.Errorf("Recover took %v: a run whose owner died before its first checkpoint is left %q forever",
			took, got.Status)
		// What a user can do by hand: continue it.
		if _, err := b.Continue(ctx, r.ID); err != nil {
			t.Fatalf("Continue: %v", err)
		}
	}
	waitDone(t, b, r.ID)
	s := loadStored(t, stB, r.ID)
	s.checkLog(t)
	for _, n := range []string{"s", "a", "b", "c"} {
		if s.nodes[n] == nil || s.nodes[n].Status != engine.NodeCompleted {
			t.Errorf("run %s ended %s with node %s %+v: it never ran", r.ID, s.run.Status, n, s.nodes[n])
		}
	}
}

// A process dies after claiming an approval (node waiting -> running in
// the database) but before the decision's effects are checkpointed, while
// its Resume already told the caller the decision was taken. After a
// restart (with recovery), an acknowledged decision must not be lost, and a
// run listed as paused with a pending approval must accept an answer.
func TestApprovalClaimedThenCrash(t *testing.T) {
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	h := newDurHarness(t)
	stA := &crashStore{Store: h.openStore()}
	a := h.process("A", ttl, stA)
	r, err := a.StartGraph(ctx, pauseGraph(), engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, a, r.ID)
	stA.setDieAfterOp(func(op string) bool { return op == "claim" })
	_, err = a.Resume(ctx, r.ID, "ok", engine.Decision{Decision: "approve"})
	acknowledged := err == nil
	t.Logf("A's Resume returned %v", err)
	eventually(t, "A to die", stA.dead.Load)

	b, stB, _ := h.takeOver("B", ttl)
	waitDone(t, b, r.ID)
	answers := 0
	for range 3 {
		got, err := stB.GetRun(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != engine.StatusPaused {
			break
		}
		if _, err := b.Resume(ctx, r.ID, "ok", engine.Decision{Decision: "approve"}); err != nil {
			t.Errorf("the run is listed as paused with pending approvals %+v, but answering fails: %v",
				got.PendingApprovals, err)
		} else {
			answers++
		}
		waitDone(t, b, r.ID)
	}
	if got := waitDone(t, b, r.ID); got.Status != engine.StatusCompleted {
		t.Fatalf("%s %s", got.Status, got.Error)
	}
	if acknowledged && answers > 0 {
		t.Errorf("A's Resume succeeded, yet the run needed %d more answer(s): the acknowledged decision was lost", answers)
	}
	s := loadStored(t, stB, r.ID)
	s.checkLog(t)
	if got := h.script.callsOf("f"); len(got) != 1 {
		t.Errorf("f called %v", got)
	}
}

// A rejected YAML approval cancels the run even when its driver dies after
// logging the rejection and before saving the cancelled end: the process
// that takes the run over cancels it too, instead of running what came
// after the approval. A chaos run found it: the end was decided in memory
// only, so with the driver killed (or its database restarted) while a
// parallel step was being stopped, the next driver found the approval
// completed and ran the run to "completed".
func TestRejectionSurvivesCrash(t *testing.T) {
	// gate: an approval (rejected) or a cancel node, beside a long b2.
	const approval = "    approval:\n      message: \"ship?\"\n"
	const cancelNode = "    cancel: \"enough\"\n"
	dieOnLog := func(st *crashStore) {
		st.setDieAfterEvent(func(ev *engine.Event) bool { return ev.Type == engine.EvStepEnd && ev.NodeID == "gate" })
	}
	dieOnSave := func(st *crashStore) {
		var logged atomic.Bool
		st.setDieAfterEvent(func(ev *engine.Event) bool {
			if ev.Type == engine.EvStepEnd && ev.NodeID == "gate" {
				logged.Store(true)
			}
			return false
		})
		st.setDieAfterOp(func(op string) bool { return op == "checkpoint" && logged.Load() })
	}
	for _, c := range []struct {
		name, gate, why string
		arm             func(st *crashStore)
	}{
		{"rejection, dies once it is logged", approval, `approval "gate" rejected: not this one`, dieOnLog},
		{"rejection, dies once the approval's completion is saved", approval, `approval "gate" rejected: not this one`, dieOnSave},
		{"cancel node, dies once it is logged", cancelNode, "enough", dieOnLog},
		{"cancel node, dies once its completion is saved", cancelNode, "enough", dieOnSave},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			const ttl = 300 * time.Millisecond
			h := newDurHarness(t)
			dir := t.TempDir()
			side := filepath.Join(dir, "side")
			src := fmt.Sprintf(`name: rejected
description: a run cancelled beside a long step
nodes:
  - id: b1
    bash: "echo b1 >> %[1]s"
  - id: b2
    bash: "sleep 30; echo b2"
  - id: gate
    depends_on: [b1]
%[2]s  - id: b3
    depends_on: [gate, b2]
    bash: "echo b3 >> %[1]s"
`, side, c.gate)
			stA := &crashStore{Store: h.openStore()}
			a := h.process("A", ttl, stA)
			if c.gate == cancelNode {
				// Armed before the start: the cancel node runs at once.
				c.arm(stA)
			}
			r, err := a.StartYAML(ctx, filepath.Join(dir, "wf.yaml"), []byte(src), engine.StartOptions{WorkDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if c.gate == approval {
				eventually(t, "the approval to wait", func() bool {
					got, err := stA.GetRun(ctx, r.ID)
					return err == nil && got.Status == engine.StatusPaused
				})
				c.arm(stA)
				// b2 still runs (it sleeps 30 s): the run ends once it is stopped.
				if _, err := a.Resume(ctx, r.ID, "gate", engine.Decision{Decision: "reject", Note: "not this one"}); err != nil {
					t.Fatal(err)
				}
			}
			eventually(t, "A to die", stA.dead.Load)

			b, stB, _ := h.takeOver("B", ttl)
			got := waitDone(t, b, r.ID)
			if got.Status != engine.StatusCancelled || !strings.Contains(got.Error, c.why) {
				t.Errorf("the run ended %s (%q), want cancelled: %s", got.Status, got.Error, c.why)
			}
			if b, err := os.ReadFile(side); err != nil || string(b) != "b1\n" {
				t.Errorf("the side effects are %q (%v), want b1's alone: nothing runs after the cancel", b, err)
			}
			s := loadStored(t, stB, r.ID)
			s.checkLog(t)
			if n := len(s.starts("b2")); n != 1 {
				t.Errorf("b2 started %d times, want once (a cancelled run does not run it again)", n)
			}
			if n := len(s.starts("b3")); n != 0 {
				t.Errorf("b3 started %d times", n)
			}
			var ends, warnings []string
			for _, ev := range s.events {
				switch ev.Type {
				case engine.EvRunStatus:
					ends = append(ends, ev.Content)
				case engine.EvWarning:
					warnings = append(warnings, ev.Content)
				}
			}
			if len(ends) == 0 || ends[len(ends)-1] != string(engine.StatusCancelled) {
				t.Errorf("run_status events %v, want the last to be cancelled", ends)
			}
			if n := strings.Count(strings.Join(warnings, "\n"), "run cancelled: "); n != 1 {
				t.Errorf("warnings %q: want one \"run cancelled\"", warnings)
			}
			if ns := s.nodes["b2"]; ns == nil || ns.Status != engine.NodeFailed {
				t.Errorf("b2 ended %+v, want failed (stopped by the cancel)", ns)
			}
		})
	}
}

// A step that failed just before its driver died is not run again: the
// failure was logged, so the next driver keeps it, as it keeps a logged
// completion. Run again, the step could repeat its side effects (and
// succeed, turning a logged failure into a completion of the same visit).
// In a drawn graph, which fails fast, the failure had ended the run: the
// step still in flight is not run again either, and the run fails with the
// first failure's reason.
func TestLoggedFailureSurvivesCrash(t *testing.T) {
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	dieOnFailure := func(st *crashStore, node string) {
		st.setDieAfterEvent(func(ev *engine.Event) bool {
			return ev.Type == engine.EvStepEnd && ev.NodeID == node && ev.Content == "failed"
		})
	}
	t.Run("YAML: its dependants are skipped", func(t *testing.T) {
		h := newDurHarness(t)
		dir := t.TempDir()
		side := filepath.Join(dir, "side")
		src := fmt.Sprintf(`name: fails
description: a failing step and its dependant
nodes:
  - id: b1
    bash: "echo b1 >> %[1]s; exit 3"
  - id: b2
    depends_on: [b1]
    bash: "echo b2 >> %[1]s"
`, side)
		stA := &crashStore{Store: h.openStore()}
		a := h.process("A", ttl, stA)
		dieOnFailure(stA, "b1")
		r, err := a.StartYAML(ctx, filepath.Join(dir, "wf.yaml"), []byte(src), engine.StartOptions{WorkDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "A to die", stA.dead.Load)
		b, stB, _ := h.takeOver("B", ttl)
		got := waitDone(t, b, r.ID)
		if got.Status != engine.StatusFailed || !strings.Contains(got.Error, "exit") {
			t.Errorf("the run ended %s (%q), want failed by b1", got.Status, got.Error)
		}
		if out, err := os.ReadFile(side); err != nil || string(out) != "b1\n" {
			t.Errorf("the side effects are %q (%v), want b1's once", out, err)
		}
		s := loadStored(t, stB, r.ID)
		s.checkLog(t)
		if n := len(s.starts("b1")); n != 1 {
			t.Errorf("b1 started %d times, want once", n)
		}
		if ns := s.nodes["b2"]; ns == nil || ns.Status != engine.NodeSkipped {
			t.Errorf("b2 ended %+v, want skipped", ns)
		}
	})
	t.Run("graph: the run that failed fast stays failed", func(t *testing.T) {
		h := newDurHarness(t)
		h.script.mu.Lock()
		h.script.fail["a"] = true
		h.script.mu.Unlock()
		h.script.blockNext(t, "b") // in flight when a fails
		h.script.answerAfterCall("a", "b")
		g := &gbuild{}
		g.node("s", "start", graph.NodeData{InitialInput: "go"}).
			node("a", "agent", agentData("a")).node("b", "agent", agentData("b")).
			edge("s", "output", "a").edge("s", "output", "b")
		stA := &crashStore{Store: h.openStore()}
		a := h.process("A", ttl, stA)
		dieOnFailure(stA, "a")
		r, err := a.StartGraph(ctx, &g.g, engine.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "A to die", stA.dead.Load)
		b, stB, _ := h.takeOver("B", ttl)
		got := waitDone(t, b, r.ID)
		if got.Status != engine.StatusFailed || !strings.Contains(got.Error, "failed: ") || !strings.Contains(got.Error, "refused") {
			t.Errorf("the run ended %s (%q), want failed by a", got.Status, got.Error)
		}
		if calls := h.script.callsOf("a"); len(calls) != 1 {
			t.Errorf("a was called %v, want once (by A)", calls)
		}
		if calls := h.script.callsOf("b"); len(calls) != 1 {
			t.Errorf("b was called %v, want once (by A): the run was ending", calls)
		}
		s := loadStored(t, stB, r.ID)
		s.checkLog(t)
		if ns := s.nodes["b"]; ns == nil || ns.Status != engine.NodeFailed {
			t.Errorf("b ended %+v, want failed with the run", ns)
		}
	})
}

// Fifty answers to one approval, from two processes sharing the database:
// exactly one wins; every loser is told why.
func TestConcurrentResumesAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	h := newDurHarness(t)
	stA, stB := h.openStore(), h.openStore()
	a := h.process("A", 0, stA)
	b := h.process("B", 0, stB)
	const rounds, racers = 10, 50
	reasons, outcomes := map[string]int{}, map[string]int{}
	for round := range rounds {
		r, err := a.StartGraph(ctx, pauseGraph(), engine.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitDone(t, a, r.ID) // paused: the run is in no process's memory
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins []string
			errs []error
		)
		start := make(chan struct{})
		for i := range racers {
			e, tag := a, "A"
			if i%2 == 1 {
				e, tag = b, "B"
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := e.Resume(ctx, r.ID, "ok", engine.Decision{Decision: "approve"})
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					wins = append(wins, tag)
				} else {
					errs = append(errs, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		// Judge the round by what the database holds once the run settled:
		// completed, or still paused if nobody won.
		waitDone(t, a, r.ID)
		waitDone(t, b, r.ID)
		s := loadStored(t, stA, r.ID)
		for end := time.Now().Add(60 * time.Second); s.run.Status != engine.StatusCompleted && time.Now().Before(end); {
			time.Sleep(10 * time.Millisecond)
			s = loadStored(t, stA, r.ID)
		}
		s.checkLog(t)
		var received int
		for _, ev := range s.events {
			if ev.Type == engine.EvInputReceived {
				received++
			}
		}
		outcome := fmt.Sprintf("%d won, run %s, %d input_received, f started %d times",
			len(wins), s.run.Status, received, len(s.starts("f")))
		outcomes[outcome]++
		if len(wins) != 1 || s.run.Status != engine.StatusCompleted || received != 1 || len(s.starts("f")) != 1 {
			t.Errorf("round %d: %s; losers: %v", round, outcome, summarize(errs))
		}
		for _, err := range errs {
			var reason string
			for _, want := range []error{engine.ErrConflict, engine.ErrNotWaiting, engine.ErrNotPaused, engine.ErrTerminal} {
				if errors.Is(err, want) {
					reason = want.Error()
					break
				}
			}
			if reason == "" {
				reason = "other: " + err.Error()
				if i := strings.Index(reason, "run "); i >= 0 {
					reason = reason[:i] + "…"
				}
			}
			reasons[reason]++
		}
	}
	t.Logf("%d rounds: %v; losers told: %v", rounds, outcomes, reasons)
	for reason, n := range reasons {
		if strings.HasPrefix(reason, "other: ") {
			t.Errorf("%d losing resumes failed with %q, not a conflict, not-waiting, not-paused or ended error", n, reason)
		}
	}
}

// summarize counts distinct error texts (run ids elided).
func summarize(errs []error) map[string]int {
	m := map[string]int{}
	for _, err := range errs {
		msg := err.Error()
		if i := strings.Index(msg, "run "); i >= 0 && len(msg) > i+40 {
			msg = msg[:i+4] + "…" + msg[i+40:]
		}
		m[msg]++
	}
	return m
}

// --- paused runs cost no goroutine and little memory ---

func vmRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return -1
}

func heapInuse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

func settledGoroutines(base int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 200 && n > base; i++ {
		time.Sleep(10 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// pausedRuns starts n runs that pause at an approval and measures what
// they cost once paused.
func pausedRuns(t *testing.T, n int) (goroutines int, heap, rss int64) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "switchyard.db"), sqlite.WithLogger(quietLog))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := engine.New(engine.Config{Store: st, ArtifactsRoot: t.TempDir(), Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// Warm up: the first runs open read connections and grow the SQLite
	// page cache; the baseline is taken after that.
	for range 50 {
		r, err := e.StartGraph(ctx, pauseGraph(), engine.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitDone(t, e, r.ID)
	}
	baseG := settledGoroutines(0)
	baseHeap := heapInuse()
	debug.FreeOSMemory() // RSS then counts live memory, not freed heap not yet returned
	baseRSS := vmRSS(t)
	ids := make([]string, 0, n)
	const window = 64 // runs in flight at once while starting
	for i := 0; i < n; i++ {
		r, err := e.StartGraph(ctx, pauseGraph(), engine.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
		if len(ids) >= window {
			waitDone(t, e, ids[len(ids)-window])
		}
	}
	for _, id := range ids[max(0, len(ids)-window):] {
		waitDone(t, e, id)
	}
	paused, err := st.ListRuns(ctx, engine.RunFilter{Status: engine.StatusPaused, Limit: n + 100})
	if err != nil || len(paused) != n+50 {
		t.Fatalf("%d runs listed as paused (%v), want %d", len(paused), err, n+50)
	}
	goroutines = settledGoroutines(baseG) - baseG
	heap = heapInuse() - baseHeap
	debug.FreeOSMemory()
	rss = vmRSS(t) - baseRSS
	// Still resumable: answer one of the first.
	if _, err := e.Resume(ctx, ids[0], "ok", engine.Decision{Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	if r := waitDone(t, e, ids[0]); r.Status != engine.StatusFailed || !strings.Contains(r.Error, "no LLM") {
		t.Fatalf("resumed paused run: %s %s (no LLM is configured, so f fails)", r.Status, r.Error)
	}
	return goroutines, heap, rss
}

func TestPausedRunsHoldNoGoroutine(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 300
	}
	g, heap, rss := pausedRuns(t, n)
	t.Logf("%d paused runs: %+d goroutines, heap in use %+.1f MB, RSS %+.1f MB", n, g, float64(heap)/(1<<20), float64(rss)/(1<<20))
	if g > 0 {
		t.Errorf("%d paused runs left %d goroutines behind", n, g)
	}
	if heap > 20<<20 {
		t.Errorf("%d paused runs grew the heap by %.1f MB", n, float64(heap)/(1<<20))
	}
}

// TestTenThousandPausedRuns is the figure; it takes a while, so it
// runs only with SWITCHYARD_BIG=1.
func TestTenThousandPausedRuns(t *testing.T) {
	if os.Getenv("SWITCHYARD_BIG") == "" {
		t.Skip("set SWITCHYARD_BIG=1 to start 10,000 paused runs")
	}
	const n = 10000
	g, heap, rss := pausedRuns(t, n)
	t.Logf("%d paused runs: %+d goroutines, heap in use %+.1f MB, RSS %+.1f MB", n, g, float64(heap)/(1<<20), float64(rss)/(1<<20))
	if g > 0 {
		t.Errorf("%d goroutines left behind", g)
	}
	if heap > 20<<20 {
		t.Errorf("heap grew by %.1f MB", float64(heap)/(1<<20))
	}
}

// Cancel of a run another live process drives leaves a request that
// process acts on; when the holder does not act (here a lease taken by
// hand, as by a stalled process), Cancel says so with ErrCancelPending.
func TestCancelAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	h := newDurHarness(t)
	h.script.setHang("a", 2) // node a's calls hang until cancelled
	stA, stB := h.openStore(), h.openStore()
	a := h.process("A", 5*time.Second, stA)
	b := h.process("B", 5*time.Second, stB)
	r, err := a.StartGraph(ctx, chain3(), engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitInFlight(t, h.fake, 1)
	got, err := b.Cancel(ctx, r.ID)
	if err != nil || got.Status != engine.StatusCancelled {
		t.Fatalf("cancel from B: %v %+v", err, got)
	}
	if done := waitDone(t, a, r.ID); done.Status != engine.StatusCancelled {
		t.Fatalf("A ended the run %s", done.Status)
	}
	if n := len(h.script.callsOf("b")); n != 0 {
		t.Errorf("node b ran %d times after the cancel", n)
	}

	// A holder that never acts: A stops (its run stays running, unowned)
	// and a stalled "ghost" process holds the lease.
	r2, err := a.StartGraph(ctx, chain3(), engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitInFlight(t, h.fake, 1)
	a.Close()
	now := time.Now()
	if err := stB.AcquireRun(ctx, r2.ID, "ghost", "", now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	defer engine.SetCancelWait(300 * time.Millisecond)()
	if _, err := b.Cancel(ctx, r2.ID); !errors.Is(err, engine.ErrCancelPending) {
		t.Fatalf("cancel of a run a silent holder keeps: %v, want ErrCancelPending", err)
	}
	if ids, err := stB.TakeCancelRequests(ctx, "ghost"); err != nil || !slices.Equal(ids, []string{r2.ID}) {
		t.Errorf("the request waits for the holder: %v %v", ids, err)
	}
}

func waitInFlight(t *testing.T, fake *fakeopenai.Server, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for fake.InFlight() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d LLM calls in flight, want %d", fake.InFlight(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
