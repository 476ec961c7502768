package engine

// The model-based test of the scheduler: thousands of generated drawn
// graphs and YAML DAGs, with scripted outcomes and random delays, run by
// the real engine and checked against the reference model in
// model_ref_test.go.
//
// Each run is checked three ways:
//   - Replay: the engine's event log is fed, event by event, to the model,
//     which checks that every step is allowed at that point (a node starts
//     only once the model decided it runs, with that visit number, at most
//     once per visit; every completion, failure, wait and skip is what the
//     model computes) and takes the engine's choices where the semantics
//     leave one (the order nodes finish in, which node of a cycle of joins
//     runs first). The engine decides after a batch of completions, and a
//     join reads its sources' outputs when it is decided, so the model
//     decides exactly where the engine did: markDecisions (export_test.go)
//     logs each decision point as an x-decide event.
//   - Invariants at the end: every node decided (nothing pending, queued,
//     running or waiting) in a run that ended normally; the run's status is
//     the function of the outcomes the model computes; node states equal
//     the model's.
//   - For acyclic workflows that do not end early, whose outcome does not
//     depend on timing, the model also runs on its own, one node at a time,
//     and the engine's final node states must equal that sequential result.
//
// Counts: SWITCHYARD_MODEL_CASES sets the number of generated cases per
// test (default 1500 for drawn graphs, 1500 for YAML with the scripted bash
// executor, 60 with real bash; -short divides by 10). A failure prints the
// case (graph JSON or YAML), the model's trace and the engine's events, and
// rapid's seed (-rapid.seed=N reproduces it; rapid shrinks it first).

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/switchyard/switchyard/graph"
)

// ---- scripted executors ----

// callLog counts executor invocations per node and visit.
type callLog struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *callLog) add(node string, visit int) {
	l.mu.Lock()
	if l.n == nil {
		l.n = map[string]int{}
	}
	l.n[fmt.Sprintf("%s/%d", node, visit)]++
	l.mu.Unlock()
}

func (l *callLog) get(node string, visit int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[fmt.Sprintf("%s/%d", node, visit)]
}

func sleepCtx(ctx context.Context, units int) error {
	if units == 0 {
		return ctx.Err()
	}
	t := time.NewTimer(time.Duration(units) * 100 * time.Microsecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// scriptedAgent replaces the agent executor: its outcomes per visit are
// in the node's system prompt (see graphOf).
type scriptedAgent struct{ calls *callLog }

func (s scriptedAgent) Execute(ctx context.Context, x *Exec) (Result, error) {
	n := x.Spec().(graph.Node)
	var outs []mOutcome
	if err := json.Unmarshal([]byte(n.Data.SystemPrompt), &outs); err != nil || len(outs) == 0 {
		return Result{}, fmt.Errorf("bad script: %v", err)
	}
	s.calls.add(x.NodeID(), x.Visit)
	o := (&mNodeSpec{Outs: outs}).outcome(x.Visit)
	if err := sleepCtx(ctx, o.Delay); err != nil {
		return Result{}, err
	}
	if o.Fail {
		return Result{}, errors.New(scriptedFailure(x.NodeID(), x.Visit))
	}
	return Result{Output: o.Out}, nil
}

// scriptedBash replaces the YAML bash executor for the many fast cases:
// it interprets the scripts bashOf writes ("sleep S; echo 'OUT'" or
// "sleep S; exit N") instead of starting bash, after the same `when:`
// check the real executor makes.
type scriptedBash struct{ calls *callLog }

var scriptRE = regexp.MustCompile(`^sleep ([0-9.]+); (?:echo '([^']*)'|exit ([0-9]+))$`)

func (s scriptedBash) Execute(ctx context.Context, x *Exec) (Result, error) {
	spec := x.Spec().(*yamlSpec)
	s.calls.add(x.NodeID(), x.Visit)
	if err := checkWhen(x, spec); err != nil {
		return Result{}, err
	}
	m := scriptRE.FindStringSubmatch(spec.n.Bash)
	if m == nil {
		return Result{}, fmt.Errorf("scripted bash cannot run %q", spec.n.Bash)
	}
	secs, _ := strconv.ParseFloat(m[1], 64)
	if err := sleepCtx(ctx, int(secs*10000+0.5)); err != nil {
		return Result{}, err
	}
	if m[3] != "" {
		return Result{}, fmt.Errorf("exit status %s", m[3])
	}
	return Result{Output: m[2]}, nil
}

// ---- running a case ----

// modelCounts are the figures the tests report.
type modelCounts struct {
	cases, alone, events, paused, earlyEnd, forced atomic.Int64
	leftover                                       atomic.Int64 // early ends leaving nodes pending or queued
	status                                         sync.Map     // RunStatus -> *atomic.Int64
}

func (mc *modelCounts) addStatus(s RunStatus) {
	v, _ := mc.status.LoadOrStore(s, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

func (mc *modelCounts) String() string {
	var st []string
	for _, s := range []RunStatus{StatusCompleted, StatusFailed, StatusCancelled} {
		if v, ok := mc.status.Load(s); ok {
			st = append(st, fmt.Sprintf("%s %d", s, v.(*atomic.Int64).Load()))
		}
	}
	return fmt.Sprintf("%d cases (%s; %d paused for approvals at least once; %d ended early, %d of them leaving nodes pending or queued; "+
		"%d forced a cycle of joins), %d also compared with the model run alone, %d events replayed",
		mc.cases.Load(), strings.Join(st, ", "), mc.paused.Load(), mc.earlyEnd.Load(), mc.leftover.Load(), mc.forced.Load(),
		mc.alone.Load(), mc.events.Load())
}

// caseEnv is what a case runs in.
type caseEnv struct {
	dir      string // artifacts and working directories
	realBash bool
	counts   *modelCounts
}

// runCase runs c on a fresh engine, answering approvals from the case's
// oracle until the run ends, and checks it against the model. It returns
// a description of every discrepancy.
func runCase(env *caseEnv, c *mCase, pick func(n int) int) error {
	calls := &callLog{}
	rec := newRecorder()
	cfg := Config{MaxVisits: c.MaxVisits, MaxParallel: c.MaxParallel, ArtifactsRoot: env.dir, Sinks: []Sink{rec},
		Executors: map[string]Executor{graph.TypeAgent: scriptedAgent{calls}}}
	if c.YAML && !env.realBash {
		cfg.Executors["yaml.bash"] = scriptedBash{calls}
	}
	e, err := New(cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	markDecisions(e)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var run *Run
	if c.YAML {
		run, err = e.StartYAML(ctx, filepath.Join(env.dir, "wf.yaml"), []byte(c.yamlOf()), StartOptions{WorkDir: env.dir})
	} else {
		run, err = e.StartGraph(ctx, c.graphOf(), StartOptions{Input: c.Input})
	}
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	paused := false
	var final *Run
	for round := 0; ; round++ {
		r, err := e.Wait(ctx, run.ID)
		if err != nil {
			return fmt.Errorf("wait (round %d): %w: the run never ended or paused", round, err)
		}
		if r.Status != StatusPaused {
			final = r
			break
		}
		paused = true
		if round > 200 {
			return fmt.Errorf("still paused after %d answers", round)
		}
		if len(r.PendingApprovals) == 0 {
			return fmt.Errorf("paused with no pending approval")
		}
		pa := r.PendingApprovals[pick(len(r.PendingApprovals))]
		_, nodes, err := e.Snapshot(ctx, run.ID)
		if err != nil {
			return err
		}
		visit := 0
		for _, ns := range nodes {
			if ns.NodeID == pa.NodeID {
				visit = ns.Visits
			}
		}
		var spec *mNodeSpec
		for i := range c.Nodes {
			if c.Nodes[i].ID == pa.NodeID {
				spec = &c.Nodes[i]
			}
		}
		if spec == nil || spec.Kind != mApproval || visit < 1 {
			return fmt.Errorf("paused on %q (visit %d), which is no approval", pa.NodeID, visit)
		}
		a := spec.answer(visit)
		d := Decision{Decision: "reject", Note: a.Note}
		if a.Approve {
			d.Decision = "approve"
		}
		if _, err := e.Resume(ctx, run.ID, pa.NodeID, d); err != nil {
			return fmt.Errorf("resume %s: %w", pa.NodeID, err)
		}
	}
	_, nodes, err := e.Snapshot(ctx, run.ID)
	if err != nil {
		return err
	}
	evs := rec.events(run.ID)
	rp := newReplay(c)
	if c.YAML && env.realBash {
		calls = nil // real bash: nothing counts its calls
	}
	err = rp.check(evs, final, nodes, calls)
	if env.counts != nil {
		env.counts.cases.Add(1)
		env.counts.events.Add(int64(len(evs)))
		env.counts.addStatus(final.Status)
		if paused {
			env.counts.paused.Add(1)
		}
		if rp.m.ending != "" {
			env.counts.earlyEnd.Add(1)
			for _, ns := range nodes {
				if ns.Status == NodePending || ns.Status == NodeQueued {
					env.counts.leftover.Add(1)
					break
				}
			}
		}
		if rp.forced > 0 {
			env.counts.forced.Add(1)
		}
		if rp.alone {
			env.counts.alone.Add(1)
		}
	}
	if err != nil {
		return fmt.Errorf("%w\n%s", err, describeRun(c, rp.m, evs, final, nodes))
	}
	return nil
}

// describeRun is the failure report: the case, the model's trace, the
// engine's events and final node states.
func describeRun(c *mCase, m *refModel, evs []Event, final *Run, nodes []*NodeState) string {
	var b strings.Builder
	if c.YAML {
		fmt.Fprintf(&b, "--- workflow (maxParallel %d):\n%s", c.MaxParallel, c.yamlOf())
		for _, n := range c.Nodes {
			if n.Kind == mApproval {
				fmt.Fprintf(&b, "oracle %s: %+v\n", n.ID, n.Answers)
			}
		}
	} else {
		g, _ := json.Marshal(c.graphOf())
		fmt.Fprintf(&b, "--- graph (input %q, maxVisits %d, maxParallel %d):\n%s\n", c.Input, c.MaxVisits, c.MaxParallel, g)
		for _, n := range c.Nodes {
			if n.Kind == mApproval {
				fmt.Fprintf(&b, "oracle %s: %+v\n", n.ID, n.Answers)
			}
		}
	}
	b.WriteString("--- model trace:\n")
	for _, l := range m.trace {
		b.WriteString("  " + l + "\n")
	}
	b.WriteString("--- engine events:\n")
	for _, ev := range evs {
		if ev.Type == EvOutput || ev.Type == EvLogicCheck || ev.Type == evDecide {
			continue
		}
		fmt.Fprintf(&b, "  %3d %-8s %-13s %q %s\n", ev.Seq, ev.NodeID, ev.Type, ev.Content, ev.Data)
	}
	fmt.Fprintf(&b, "--- engine final: run %s (%s)\n", final.Status, final.Error)
	for _, ns := range nodes {
		fmt.Fprintf(&b, "  %-4s %-9s visits %d input %q output %q handle %q error %q\n",
			ns.NodeID, ns.Status, ns.Visits, ns.Input, ns.Output, ns.Handle, ns.Error)
	}
	return b.String()
}

// ---- the replay ----

type replay struct {
	c       *mCase
	m       *refModel
	started map[string]int // node/visit -> step_starts
	running int
	forced  int
	alone   bool
}

func newReplay(c *mCase) *replay {
	return &replay{c: c, m: newRefModel(c), started: map[string]int{}}
}

type evData struct {
	Status     NodeStatus `json:"status"`
	Output     string     `json:"output"`
	Handle     string     `json:"handle"`
	Error      string     `json:"error"`
	Visit      int        `json:"visit"`
	Retry      string     `json:"retry"`
	Decided    bool       `json:"decided"`
	Rejection  *string    `json:"rejection"`
	Reason     string     `json:"reason"`
	DurationMs *int64     `json:"durationMs"`
}

// check replays the engine's events through the model, then compares the
// end state.
func (rp *replay) check(evs []Event, final *Run, nodes []*NodeState, calls *callLog) error {
	m := rp.m
	m.begin()
	for _, ev := range evs {
		if err := rp.step(ev); err != nil {
			return fmt.Errorf("event %d (%s %s %q): %w", ev.Seq, ev.NodeID, ev.Type, ev.Content, err)
		}
	}
	return rp.finish(final, nodes, calls)
}

func (rp *replay) step(ev Event) error {
	m := rp.m
	var d evData
	if len(ev.Data) > 0 {
		_ = json.Unmarshal(ev.Data, &d)
	}
	n := -1
	if ev.NodeID != SystemNodeID {
		n = m.index(ev.NodeID)
		if n < 0 {
			return fmt.Errorf("unknown node")
		}
	}
	switch ev.Type {
	case EvStepStart:
		if m.ending != "" {
			return fmt.Errorf("a node started after the run ended (%s)", m.ending)
		}
		if d.Retry != "" {
			return fmt.Errorf("marked retry %q, but no process died", d.Retry)
		}
		if m.st[n].status != NodeQueued && containsInt(m.candidates(), n) {
			rp.forced++
			m.force(n)
		}
		if st := m.st[n].status; st != NodeQueued {
			return fmt.Errorf("%s started, but the model has it %q (pending %t, visits %d): it runs before its inputs decide",
				ev.NodeID, st, m.pending[n], m.st[n].visits)
		}
		if d.Visit != m.st[n].visits {
			return fmt.Errorf("started as visit %d, the model's visit is %d", d.Visit, m.st[n].visits)
		}
		key := fmt.Sprintf("%s/%d", ev.NodeID, d.Visit)
		if rp.started[key]++; rp.started[key] > 1 {
			return fmt.Errorf("%s started twice in visit %d", ev.NodeID, d.Visit)
		}
		m.st[n].status = NodeRunning
		if rp.running++; rp.running > rp.c.MaxParallel {
			return fmt.Errorf("%d nodes running at once, cap %d", rp.running, rp.c.MaxParallel)
		}
	case EvWaitInput:
		if m.st[n].status != NodeRunning {
			return fmt.Errorf("waits, but the model has it %q", m.st[n].status)
		}
		if res := m.result(n); !res.wait {
			return fmt.Errorf("waits, but the model expects %+v", res)
		}
		rp.running--
		m.complete(n, refResult{wait: true})
	case EvInputReceived:
		if m.st[n].abandoned {
			// Answered before the run ended, but its resume was still in
			// flight (it logs this event itself): it ends with the run.
			return nil
		}
		if m.st[n].status != NodeWaiting || m.st[n].resumed {
			return fmt.Errorf("answered, but the model has it %q", m.st[n].status)
		}
		m.st[n].resumed = true
	case EvStepEnd:
		return rp.stepEnd(n, ev, d)
	case EvError:
		if !strings.Contains(ev.Content, "maxVisits") {
			return nil // a node's own error: its step_end follows
		}
		if !m.st[n].overCap && containsInt(m.candidates(), n) {
			rp.forced++
			m.force(n)
		}
		if !m.st[n].overCap {
			return fmt.Errorf("the engine hit maxVisits on %s; the model has it %q with %d visits", ev.NodeID, m.st[n].status, m.st[n].visits)
		}
		m.end(StatusFailed, ev.NodeID+" exceeds maxVisits")
	case evDecide:
		m.settle() // the engine decides here, after a batch of completions
	case EvRunStatus:
		switch RunStatus(ev.Content) {
		case StatusPaused:
			if m.status() != StatusPaused {
				return fmt.Errorf("the run paused with nothing waiting in the model")
			}
		}
	}
	return nil
}

func (rp *replay) stepEnd(n int, ev Event, d evData) error {
	m := rp.m
	ns := &m.st[n]
	switch d.Status {
	case NodeSkipped:
		// A run that ends early skips what it never ran (no visit yet).
		// The model may have gone on deciding (it decides after each
		// completion, the engine per batch): a node it queued, or skipped,
		// was not started either.
		if m.ending != "" && d.Reason == "run "+string(m.ending) {
			switch ns.status {
			case NodeQueued:
				ns.visits-- // the queued visit never started
			case NodeIdle, NodePending, NodeSkipped:
			default:
				return fmt.Errorf("the engine skipped %s at the run's end; the model has it %q after %d visits", ev.NodeID, ns.status, ns.visits)
			}
			if ns.visits > 0 {
				return fmt.Errorf("the engine skipped %s at the run's end; the model has %d earlier visits", ev.NodeID, ns.visits)
			}
			ns.status = NodeSkipped
			m.pending[n] = false
			return nil
		}
		// The model decides as soon as it can, the engine after a batch of
		// completions: by now the model skipped it too.
		if ns.status != NodeSkipped {
			return fmt.Errorf("the engine skipped %s (%s); the model has it %q (pending %t)", ev.NodeID, d.Reason, ns.status, m.pending[n])
		}
		return nil
	case NodeCompleted, NodeFailed:
	default:
		return fmt.Errorf("step_end with status %q", d.Status)
	}
	if ns.abandoned && d.Status == NodeFailed && d.Error == string(m.ending) {
		ns.abandoned = false // its one step_end
		return nil
	}
	resumed := ns.status == NodeWaiting && ns.resumed
	if ns.status != NodeRunning && !resumed {
		return fmt.Errorf("ended, but the model has it %q", ns.status)
	}
	if !resumed {
		rp.running--
	}
	if m.ending != "" {
		if d.Status != NodeFailed || d.Error != string(m.ending) {
			return fmt.Errorf("ended %s (%q) after the run ended %s; want failed %q", d.Status, d.Error, m.ending, m.ending)
		}
		m.complete(n, refResult{})
		return nil
	}
	res := m.result(n)
	switch {
	case res.wait:
		return fmt.Errorf("ended %s; the model expects it to wait", d.Status)
	case res.fail && d.Status != NodeFailed:
		return fmt.Errorf("completed with %q; the model expects it to fail with %q", d.Output, res.err)
	case res.fail && !strings.HasPrefix(d.Error, res.err):
		return fmt.Errorf("failed with %q; the model expects %q", d.Error, res.err)
	case !res.fail && d.Status != NodeCompleted:
		return fmt.Errorf("failed with %q; the model expects it to complete with %q", d.Error, res.output)
	case !res.fail && (d.Output != res.output || d.Handle != res.handle):
		return fmt.Errorf("completed with output %q handle %q; the model expects %q handle %q", d.Output, d.Handle, res.output, res.handle)
	case !res.fail && d.Visit != ns.visits:
		return fmt.Errorf("completed visit %d; the model's visit is %d", d.Visit, ns.visits)
	}
	m.complete(n, res)
	return nil
}

// finish checks the end state against the model.
func (rp *replay) finish(final *Run, nodes []*NodeState, calls *callLog) error {
	m := rp.m
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	byID := map[string]*NodeState{}
	for _, ns := range nodes {
		byID[ns.NodeID] = ns
	}
	// Every node decided: nothing left pending, queued, running or waiting.
	if final.Status.Terminal() {
		var left []string
		for _, ns := range nodes {
			switch ns.Status {
			case NodePending, NodeQueued, NodeRunning, NodeWaiting:
				left = append(left, ns.NodeID+"="+string(ns.Status))
			}
		}
		if len(left) > 0 && m.ending == "" {
			fail("the run ended %s with undecided nodes: %s", final.Status, strings.Join(left, ", "))
		}
		for _, ns := range nodes {
			if ns.Status == NodeRunning || ns.Status == NodeWaiting {
				fail("the run ended %s with %s still %s", final.Status, ns.NodeID, ns.Status)
			}
		}
	} else {
		fail("the run stopped as %q", final.Status)
	}
	if m.ending == "" {
		m.settle() // anything the engine left undecided shows below
		if c := m.candidates(); len(c) > 0 {
			var ids []string
			for _, n := range c {
				ids = append(ids, m.id(n))
			}
			fail("the engine stopped while a cycle of joins could still run one of %v", ids)
		}
		if u := m.undecided(); len(u) > 0 {
			fail("the model still has undecided nodes when the engine stopped: %v", u)
		}
		for i := range m.st {
			if m.st[i].overCap {
				fail("the model has %s exceed maxVisits; the engine did not", m.id(i))
			}
		}
	}
	// The run's status is a function of the outcomes.
	if want := m.status(); final.Status != want {
		fail("run status %s (%s); the model says %s (%s)", final.Status, final.Error, want, m.endReason)
	}
	if (final.Status == StatusFailed || final.Status == StatusCancelled) && final.Error == "" {
		fail("run %s without an error message", final.Status)
	}
	if final.Status.Terminal() && (final.WaitingForInput || len(final.PendingApprovals) > 0) {
		fail("run %s still lists pending approvals %+v", final.Status, final.PendingApprovals)
	}
	// Node states equal the model's. After an early end, nodes the engine
	// never got to may be left as they were.
	for i, spec := range m.c.Nodes {
		ns, ms := byID[spec.ID], &m.st[i]
		if ns == nil {
			fail("node %s missing from the snapshot", spec.ID)
			continue
		}
		if m.ending != "" && (!ns.Status.Settled() || !ms.status.Settled()) {
			// Ended early: the engine stopped deciding at its end, the model
			// (deciding after each completion, not per batch) may have gone
			// on. The replay checked every step either side of it.
			continue
		}
		if ns.Status != ms.status {
			fail("node %s is %s; the model says %s", spec.ID, ns.Status, ms.status)
			continue
		}
		if ns.Visits != ms.visits {
			fail("node %s ran %d times; the model says %d", spec.ID, ns.Visits, ms.visits)
		}
		if ms.visits > 0 && ns.Input != ms.input {
			fail("node %s had input %q; the model says %q", spec.ID, ns.Input, ms.input)
		}
		if ns.Status == NodeCompleted && (ns.Output != ms.output || ns.Handle != ms.handle) {
			fail("node %s output %q handle %q; the model says %q %q", spec.ID, ns.Output, ns.Handle, ms.output, ms.handle)
		}
		if ms.visits > 0 && ns.Rejection != ms.rejection {
			fail("node %s rejection note %q; the model says %q", spec.ID, ns.Rejection, ms.rejection)
		}
		if ns.Status == NodeFailed && !strings.HasPrefix(ns.Error, ms.err) {
			fail("node %s error %q; the model says %q", spec.ID, ns.Error, ms.err)
		}
		// No node ran twice per visit: the scripted executor was called
		// once for each visit that started.
		if spec.Kind == mWork && calls != nil {
			for v := 1; v <= ns.Visits; v++ {
				k := calls.get(spec.ID, v)
				if k > 1 || (k == 0 && rp.started[fmt.Sprintf("%s/%d", spec.ID, v)] > 0) {
					fail("node %s visit %d: executor called %d times", spec.ID, v, k)
				}
			}
		}
	}
	// For acyclic workflows that did not end early, the result does not
	// depend on timing: it must equal the model's own sequential run.
	if m.ending == "" && m.c.acyclic() {
		alone := newRefModel(m.c)
		alone.runAlone()
		if alone.ending == "" {
			rp.alone = true
			if alone.status() != final.Status {
				fail("run status %s; the sequential model says %s", final.Status, alone.status())
			}
			for i, spec := range m.c.Nodes {
				ns, ms := byID[spec.ID], &alone.st[i]
				if ns == nil {
					continue
				}
				if ns.Status != ms.status || ns.Visits != ms.visits || (ms.visits > 0 && ns.Input != ms.input) ||
					(ns.Status == NodeCompleted && (ns.Output != ms.output || ns.Handle != ms.handle)) {
					fail("node %s: engine %s visits %d input %q output %q; the sequential model %s visits %d input %q output %q",
						spec.ID, ns.Status, ns.Visits, ns.Input, ns.Output, ms.status, ms.visits, ms.input, ms.output)
				}
			}
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "\n"))
	}
	return nil
}

// ---- the property tests ----

// modelCases is how many cases a test generates.
func modelCases(t *testing.T, def int) int {
	n := def
	if s := os.Getenv("SWITCHYARD_MODEL_CASES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("SWITCHYARD_MODEL_CASES=%q: want a positive number", s)
		}
		n = v
	}
	if testing.Short() {
		n = max(n/10, 1)
	}
	return n
}

// checkModel runs prop on cases generated by gen, in shards that run in
// parallel (most of a case is waiting on scripted delays). rapid runs
// checks per shard; its own -rapid.checks flag is not used, and -short
// does not divide again.
func checkModel(t *testing.T, total int, prop func(*rapid.T)) {
	const shards = 4
	checks := flag.Lookup("rapid.checks")
	old := checks.Value.String()
	per := max((total+shards-1)/shards, 1)
	if testing.Short() {
		per *= 5 // rapid divides checks by 5 under -short; modelCases already did
	}
	if err := checks.Value.Set(strconv.Itoa(per)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = checks.Value.Set(old) })
	for s := range shards {
		t.Run(fmt.Sprintf("shard%d", s), func(t *testing.T) {
			t.Parallel()
			rapid.Check(t, prop)
		})
	}
}

func TestModelGraphs(t *testing.T) {
	counts := &modelCounts{}
	env := &caseEnv{dir: t.TempDir(), counts: counts}
	start := time.Now()
	t.Run("cases", func(t *testing.T) {
		checkModel(t, modelCases(t, 1500), func(rt *rapid.T) {
			c := genGraphCase(rt)
			pick := func(n int) int { return rapid.IntRange(0, n-1).Draw(rt, "answer") }
			if err := runCase(env, c, pick); err != nil {
				rt.Fatal(err)
			}
		})
	})
	t.Logf("drawn graphs: %s, in %s", counts, time.Since(start).Round(time.Millisecond))
}

func TestModelYAML(t *testing.T) {
	counts := &modelCounts{}
	env := &caseEnv{dir: t.TempDir(), counts: counts}
	start := time.Now()
	t.Run("cases", func(t *testing.T) {
		checkModel(t, modelCases(t, 1500), func(rt *rapid.T) {
			c := genYAMLCase(rt, 9)
			pick := func(n int) int { return rapid.IntRange(0, n-1).Draw(rt, "answer") }
			if err := runCase(env, c, pick); err != nil {
				rt.Fatal(err)
			}
		})
	})
	t.Logf("YAML DAGs (scripted bash): %s, in %s", counts, time.Since(start).Round(time.Millisecond))
}

// TestModelYAMLRealBash runs fewer generated YAML DAGs with real bash
// processes, so the real executor's path is covered too.
func TestModelYAMLRealBash(t *testing.T) {
	counts := &modelCounts{}
	env := &caseEnv{dir: t.TempDir(), realBash: true, counts: counts}
	start := time.Now()
	t.Run("cases", func(t *testing.T) {
		checkModel(t, modelCases(t, 60), func(rt *rapid.T) {
			c := genYAMLCase(rt, 7)
			pick := func(n int) int { return rapid.IntRange(0, n-1).Draw(rt, "answer") }
			if err := runCase(env, c, pick); err != nil {
				rt.Fatal(err)
			}
		})
	})
	t.Logf("YAML DAGs (real bash): %s, in %s", counts, time.Since(start).Round(time.Millisecond))
}
