package engine

// Model-based tests of the scheduler: generated YAML DAGs and drawn graphs
// run on the real engine with scripted node outcomes and random delays, and
// are compared with a small sequential reference interpreter of the
// documented semantics. SWITCHYARD_MODEL_CASES sets the number of cases per
// family; SWITCHYARD_MODEL_SEED replays one case.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/yamlflow"
)

// modelCases is how many generated cases each family runs.
func modelCases(t *testing.T, full int) int {
	if s := os.Getenv("SWITCHYARD_MODEL_CASES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("SWITCHYARD_MODEL_CASES: %v", err)
		}
		return n
	}
	if testing.Short() {
		return full / 10
	}
	return full
}

// modelSeeds yields the seeds to run: one replayed seed, or cases seeds
// derived from a base that is printed so a failure can be replayed.
func modelSeeds(t *testing.T, cases int) []uint64 {
	if s := os.Getenv("SWITCHYARD_MODEL_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SWITCHYARD_MODEL_SEED: %v", err)
		}
		return []uint64{seed}
	}
	base := uint64(time.Now().UnixNano())
	seeds := make([]uint64, cases)
	for i := range seeds {
		seeds[i] = base + uint64(i)
	}
	return seeds
}

// script is a scripted node outcome: "ok <output> <delayµs>" or
// "fail - <delayµs>". The scripted executors sleep, honouring ctx, then
// succeed with the output or fail.
func runScript(ctx context.Context, script string) (Result, error) {
	f := strings.Fields(script)
	if len(f) != 3 {
		return Result{}, fmt.Errorf("bad script %q", script)
	}
	us, _ := strconv.Atoi(f[2])
	if us > 0 {
		t := time.NewTimer(time.Duration(us) * time.Microsecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Result{}, ctx.Err()
		}
	}
	if f[0] == "fail" {
		return Result{}, fmt.Errorf("scripted failure")
	}
	return Result{Output: f[1]}, nil
}

type scriptedYAML struct{ starts *atomic.Int64 }

func (s scriptedYAML) Execute(ctx context.Context, x *Exec) (Result, error) {
	s.starts.Add(1)
	return runScript(ctx, x.Spec().(*yamlSpec).n.Bash)
}

type scriptedAgent struct{}

func (scriptedAgent) Execute(ctx context.Context, x *Exec) (Result, error) {
	return runScript(ctx, x.Spec().(graph.Node).Data.UserPrompt)
}

// ---- YAML DAGs ----

type yNode struct {
	id      string
	deps    []int
	rule    string // "" is the default, all_success
	whenDep int    // -1: no when
	whenVal string
	fail    bool
	out     string
	delay   int // µs
}

var yamlRules = []string{"", yamlflow.TriggerAllSuccess, yamlflow.TriggerOneSuccess,
	yamlflow.TriggerNoneFailedMinOneSuccess, yamlflow.TriggerAllDone}

func genYAML(rng *rand.Rand) []yNode {
	n := 1 + rng.IntN(12)
	nodes := make([]yNode, n)
	for i := range nodes {
		nd := yNode{id: fmt.Sprintf("n%d", i), whenDep: -1, out: []string{"x", "y"}[rng.IntN(2)],
			fail: rng.IntN(6) == 0, delay: rng.IntN(3) * rng.IntN(1500)}
		if i > 0 && rng.IntN(5) > 0 {
			seen := map[int]bool{}
			for k := 0; k < 1+rng.IntN(3); k++ {
				d := rng.IntN(i)
				if !seen[d] {
					seen[d] = true
					nd.deps = append(nd.deps, d)
				}
			}
			nd.rule = yamlRules[rng.IntN(len(yamlRules))]
			if rng.IntN(3) == 0 {
				nd.whenDep = nd.deps[rng.IntN(len(nd.deps))]
				nd.whenVal = []string{"x", "y"}[rng.IntN(2)]
			}
		}
		nodes[i] = nd
	}
	return nodes
}

func yamlSource(nodes []yNode) string { return yamlSourceWith(nodes, scriptLine) }

func scriptLine(n yNode) string {
	verdict, out := "ok", n.out
	if n.fail {
		verdict, out = "fail", "-"
	}
	return fmt.Sprintf("%s %s %d", verdict, out, n.delay)
}

// bashLine is the same outcome as a real bash command.
func bashLine(n yNode) string {
	if n.fail {
		return fmt.Sprintf("sleep 0.%06d; exit 3", n.delay)
	}
	return fmt.Sprintf("sleep 0.%06d; echo %s", n.delay, n.out)
}

func yamlSourceWith(nodes []yNode, line func(yNode) string) string {
	var b strings.Builder
	b.WriteString("name: model\ndescription: generated\nnodes:\n")
	for _, n := range nodes {
		fmt.Fprintf(&b, "  - id: %s\n    bash: %q\n", n.id, line(n))
		if len(n.deps) > 0 {
			ids := make([]string, len(n.deps))
			for k, d := range n.deps {
				ids[k] = nodes[d].id
			}
			fmt.Fprintf(&b, "    depends_on: [%s]\n", strings.Join(ids, ", "))
		}
		if n.rule != "" {
			fmt.Fprintf(&b, "    trigger_rule: %s\n", n.rule)
		}
		if n.whenDep >= 0 {
			fmt.Fprintf(&b, "    when: \"$%s.output == '%s'\"\n", nodes[n.whenDep].id, n.whenVal)
		}
	}
	return b.String()
}

// refYAML is the reference: nodes decided one by one in dependency order.
func refYAML(nodes []yNode) (map[string]NodeStatus, RunStatus) {
	st := make([]NodeStatus, len(nodes))
	runs := func(i int) bool {
		n := nodes[i]
		if len(n.deps) == 0 {
			return true
		}
		var done, failed int
		for _, d := range n.deps {
			switch st[d] {
			case NodeCompleted:
				done++
			case NodeFailed:
				failed++
			}
		}
		switch n.rule {
		case yamlflow.TriggerOneSuccess:
			if done == 0 {
				return false
			}
		case yamlflow.TriggerNoneFailedMinOneSuccess:
			if failed > 0 || done == 0 {
				return false
			}
		case yamlflow.TriggerAllDone:
		default:
			if done != len(n.deps) {
				return false
			}
		}
		if n.whenDep >= 0 {
			d := nodes[n.whenDep]
			return st[n.whenDep] == NodeCompleted && !d.fail && d.out == n.whenVal
		}
		return true
	}
	status := StatusCompleted
	out := map[string]NodeStatus{}
	for i, n := range nodes {
		switch {
		case !runs(i):
			st[i] = NodeSkipped
		case n.fail:
			st[i] = NodeFailed
			status = StatusFailed
		default:
			st[i] = NodeCompleted
		}
		out[n.id] = st[i]
	}
	return out, status
}

func TestModelYAMLDAGs(t *testing.T) {
	t.Parallel()
	var starts atomic.Int64
	e, rec := newTestEngine(t, Config{MaxParallel: 4,
		Executors: map[string]Executor{yamlTypePrefix + "bash": scriptedYAML{starts: &starts}}})
	n := modelYAML(t, e, rec, modelCases(t, 2000), yamlSource)
	t.Logf("%d generated YAML DAGs matched the reference (%d scripted steps)", n, starts.Load())
}

// TestModelYAMLRealBash runs fewer generated DAGs through real bash.
func TestModelYAMLRealBash(t *testing.T) {
	t.Parallel()
	e, rec := yamlEngine(t)
	n := modelYAML(t, e, rec, modelCases(t, 60), func(nodes []yNode) string { return yamlSourceWith(nodes, bashLine) })
	t.Logf("%d generated YAML DAGs of real bash nodes matched the reference", n)
}

func modelYAML(t *testing.T, e *Engine, rec *recorder, cases int, source func([]yNode) string) int {
	t.Helper()
	seeds := modelSeeds(t, cases)
	for _, seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 1))
		nodes := genYAML(rng)
		src := source(nodes)
		run, err := e.StartYAML(context.Background(), "model.yaml", []byte(src), StartOptions{WorkDir: t.TempDir()})
		if err != nil {
			t.Fatalf("seed %d: start: %v\n%s", seed, err, src)
		}
		got := waitRun(t, e, run.ID)
		wantNodes, wantStatus := refYAML(nodes)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d (replay: SWITCHYARD_MODEL_SEED=%d): %s\n%s", seed, seed, fmt.Sprintf(format, args...), src)
		}
		if got.Status != wantStatus {
			fail("run status %s, reference %s", got.Status, wantStatus)
		}
		ns := nodeStates(t, e, run.ID)
		for id, want := range wantNodes {
			if ns[id].Status != want {
				fail("node %s is %s, reference %s", id, ns[id].Status, want)
			}
		}
		deps := map[string][]string{}
		for _, n := range nodes {
			for _, d := range n.deps {
				deps[n.id] = append(deps[n.id], nodes[d].id)
			}
		}
		checkOrder(t, rec.events(run.ID), deps, fail)
	}
	return len(seeds)
}

// checkOrder asserts, from a run's event log, that no node started before
// each of its inputs had ended (completed, failed or skipped), and that no
// node started twice per visit.
func checkOrder(t *testing.T, evs []Event, deps map[string][]string, fail func(string, ...any)) {
	t.Helper()
	checkSeq(t, evs)
	ended := map[string]bool{}
	startedVisit := map[string]map[int]bool{}
	for _, ev := range evs {
		switch ev.Type {
		case EvStepEnd:
			ended[ev.NodeID] = true
		case EvStepStart:
			for _, d := range deps[ev.NodeID] {
				if !ended[d] {
					fail("node %s started (seq %d) before its input %s decided", ev.NodeID, ev.Seq, d)
				}
			}
			var data struct {
				Visit int    `json:"visit"`
				Retry string `json:"retry"`
			}
			_ = json.Unmarshal(ev.Data, &data)
			if startedVisit[ev.NodeID] == nil {
				startedVisit[ev.NodeID] = map[int]bool{}
			}
			if startedVisit[ev.NodeID][data.Visit] && data.Retry == "" {
				fail("node %s started twice in visit %d", ev.NodeID, data.Visit)
			}
			startedVisit[ev.NodeID][data.Visit] = true
		}
	}
}

// ---- drawn graphs ----

type gNode struct {
	id    string
	typ   string // start, agent, if, approval
	fail  bool
	out   string
	delay int
	// approve is the oracle's answer for an approval node.
	approve bool
}

type gEdge struct {
	src, dst int
	handle   string
}

func handlesOf(typ string) []string {
	switch typ {
	case graph.TypeIf:
		return []string{graph.HandleConditionPrefix + "0", graph.HandleFalse}
	case graph.TypeApproval:
		return []string{graph.HandleApprove, graph.HandleReject}
	}
	return []string{graph.HandleOutput}
}

// genGraph makes an acyclic drawn graph: a start node, then agents, if and
// approval nodes, each fed by at least one earlier node.
func genGraph(rng *rand.Rand) ([]gNode, []gEdge) {
	n := 2 + rng.IntN(10)
	nodes := []gNode{{id: "s", typ: graph.TypeStart, out: "s"}}
	var edges []gEdge
	for i := 1; i < n; i++ {
		typ := graph.TypeAgent
		switch r := rng.IntN(10); {
		case r < 2 && i < n-1:
			typ = graph.TypeApproval
		case r < 4 && i < n-1:
			typ = graph.TypeIf
		}
		nodes = append(nodes, gNode{id: fmt.Sprintf("g%d", i), typ: typ,
			out: []string{"x", "y"}[rng.IntN(2)], fail: typ == graph.TypeAgent && rng.IntN(12) == 0,
			delay: rng.IntN(3) * rng.IntN(1500), approve: rng.IntN(2) == 0})
		seen := map[int]bool{}
		for k := 0; k < 1+rng.IntN(2); k++ {
			src := rng.IntN(i)
			if seen[src] {
				continue
			}
			seen[src] = true
			hs := handlesOf(nodes[src].typ)
			edges = append(edges, gEdge{src: src, dst: i, handle: hs[rng.IntN(len(hs))]})
		}
	}
	// Every approval and if node needs a way out: give those without one
	// an edge on (the generator never makes either the last node).
	for i, nd := range nodes {
		if nd.typ != graph.TypeApproval && nd.typ != graph.TypeIf {
			continue
		}
		has := false
		for _, e := range edges {
			has = has || e.src == i
		}
		if !has {
			hs := handlesOf(nd.typ)
			edges = append(edges, gEdge{src: i, dst: i + 1 + rng.IntN(len(nodes)-i-1), handle: hs[rng.IntN(len(hs))]})
		}
	}
	return nodes, edges
}

func buildGraph(nodes []gNode, edges []gEdge) *graph.Graph {
	b := &gb{}
	for _, n := range nodes {
		var d graph.NodeData
		switch n.typ {
		case graph.TypeStart:
			d.InitialInput = n.out
		case graph.TypeAgent:
			verdict, out := "ok", n.out
			if n.fail {
				verdict, out = "fail", "-"
			}
			d.AgentName = n.id
			d.UserPrompt = fmt.Sprintf("%s %s %d", verdict, out, n.delay)
		case graph.TypeIf:
			d.Conditions = []graph.Condition{{Operator: graph.OpContains, Value: "x"}}
		case graph.TypeApproval:
			d.Prompt = "ok?"
		}
		b.node(n.id, n.typ, d)
	}
	for _, e := range edges {
		b.edge(nodes[e.src].id, e.handle, nodes[e.dst].id)
	}
	return b.build()
}

// refGraph is the reference for acyclic drawn graphs: a node runs once
// every input has decided and at least one fired; its inputs are joined.
func refGraph(nodes []gNode, edges []gEdge) (map[string]NodeStatus, RunStatus) {
	st := make([]NodeStatus, len(nodes))
	outs := make([]string, len(nodes))
	handle := make([]string, len(nodes))
	status := StatusCompleted
	for i, n := range nodes {
		var inputs []string
		for _, e := range edges {
			if e.dst == i && st[e.src] == NodeCompleted && handle[e.src] == e.handle {
				inputs = append(inputs, outs[e.src])
			}
		}
		if i > 0 && len(inputs) == 0 {
			st[i] = NodeSkipped
			continue
		}
		in := strings.Join(inputs, "\n\n")
		st[i] = NodeCompleted
		switch n.typ {
		case graph.TypeStart:
			outs[i], handle[i] = n.out, graph.HandleOutput
		case graph.TypeAgent:
			if n.fail {
				st[i] = NodeFailed
				status = StatusFailed
			}
			outs[i], handle[i] = n.out, graph.HandleOutput
		case graph.TypeIf:
			outs[i], handle[i] = in, graph.HandleFalse
			if strings.Contains(in, "x") {
				handle[i] = graph.HandleConditionPrefix + "0"
			}
		case graph.TypeApproval:
			outs[i], handle[i] = in, graph.HandleReject
			if n.approve {
				handle[i] = graph.HandleApprove
			}
		}
	}
	out := map[string]NodeStatus{}
	for i, n := range nodes {
		out[n.id] = st[i]
	}
	return out, status
}

// answerUntilDone drives a run to its end, answering every waiting approval
// with the oracle's decision.
func answerUntilDone(t *testing.T, e *Engine, runID string, oracle func(nodeID string, visit int) Decision) *Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		run, err := e.Wait(ctx, runID)
		if err != nil {
			t.Fatalf("wait run: %v", err)
		}
		if run.Status != StatusPaused {
			return run
		}
		_, states, err := e.Snapshot(ctx, runID)
		if err != nil {
			t.Fatal(err)
		}
		answered := false
		for _, ns := range states {
			if ns.Status == NodeWaiting {
				if _, err := e.Resume(ctx, runID, ns.NodeID, oracle(ns.NodeID, ns.Visits)); err != nil {
					t.Fatalf("resume %s: %v", ns.NodeID, err)
				}
				answered = true
			}
		}
		if !answered {
			t.Fatalf("run %s paused with no waiting node", runID)
		}
	}
}

func TestModelDrawnGraphs(t *testing.T) {
	t.Parallel()
	e, rec := newTestEngine(t, Config{MaxParallel: 4, Executors: map[string]Executor{graph.TypeAgent: scriptedAgent{}}})
	seeds := modelSeeds(t, modelCases(t, 1500))
	invalid := 0
	for _, seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 2))
		nodes, edges := genGraph(rng)
		g := buildGraph(nodes, edges)
		desc, _ := json.Marshal(g)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d (replay: SWITCHYARD_MODEL_SEED=%d): %s\n%s", seed, seed, fmt.Sprintf(format, args...), desc)
		}
		if graph.HasErrors(graph.Validate(g)) {
			invalid++
			continue
		}
		run, err := e.StartGraph(context.Background(), g, StartOptions{})
		if err != nil {
			fail("start: %v", err)
		}
		byID := map[string]gNode{}
		for _, n := range nodes {
			byID[n.id] = n
		}
		got := answerUntilDone(t, e, run.ID, func(id string, _ int) Decision {
			if byID[id].approve {
				return Decision{Decision: "approve"}
			}
			return Decision{Decision: "reject", Note: "no"}
		})
		wantNodes, wantStatus := refGraph(nodes, edges)
		if got.Status != wantStatus {
			fail("run status %s, reference %s", got.Status, wantStatus)
		}
		ns := nodeStates(t, e, run.ID)
		if wantStatus == StatusCompleted {
			// Fail-fast cancels whatever runs beside a failure, so node
			// states are compared only for runs that complete.
			for id, want := range wantNodes {
				if ns[id].Status != want {
					fail("node %s is %s, reference %s", id, ns[id].Status, want)
				}
			}
		}
		for id, s := range ns {
			if !s.Status.Settled() {
				fail("node %s ended %s in a %s run", id, s.Status, got.Status)
			}
		}
		deps := map[string][]string{}
		for _, ed := range edges {
			deps[nodes[ed.dst].id] = append(deps[nodes[ed.dst].id], nodes[ed.src].id)
		}
		checkOrder(t, rec.events(run.ID), deps, fail)
	}
	if invalid > len(seeds)/2 {
		t.Fatalf("%d of %d generated graphs were invalid: the generator is off", invalid, len(seeds))
	}
	t.Logf("%d generated drawn graphs matched the reference (%d invalid ones not run)", len(seeds)-invalid, invalid)
}

const modelMaxVisits = 25 // the engine default (Config.MaxVisits)

// TestModelReviseLoops: writer → approval, reject → writer, approve →
// publisher. The oracle rejects k times; the reference says the writer
// runs k+1 times, or the run fails once that would pass maxVisits.
func TestModelReviseLoops(t *testing.T) {
	t.Parallel()
	e, _ := newTestEngine(t, Config{Executors: map[string]Executor{graph.TypeAgent: scriptedAgent{}}})
	cases := modelCases(t, 200)
	for c := 0; c < cases; c++ {
		k := c % (modelMaxVisits + 3)
		g := (&gb{}).
			node("s", graph.TypeStart, graph.NodeData{InitialInput: "topic"}).
			node("w", graph.TypeAgent, graph.NodeData{AgentName: "Writer", UserPrompt: fmt.Sprintf("ok draft %d", c%7*100)}).
			node("a", graph.TypeApproval, graph.NodeData{Prompt: "ok?"}).
			node("p", graph.TypeAgent, graph.NodeData{AgentName: "Publisher", UserPrompt: "ok done 0"}).
			edge("s", graph.HandleOutput, "w").edge("w", graph.HandleOutput, "a").
			edge("a", graph.HandleApprove, "p").edge("a", graph.HandleReject, "w").build()
		run, err := e.StartGraph(context.Background(), g, StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := answerUntilDone(t, e, run.ID, func(_ string, visit int) Decision {
			if visit <= k {
				return Decision{Decision: "reject", Note: "again"}
			}
			return Decision{Decision: "approve"}
		})
		ns := nodeStates(t, e, run.ID)
		if k+1 > modelMaxVisits {
			if got.Status != StatusFailed || ns["w"].Visits != modelMaxVisits {
				t.Fatalf("k=%d: run %s with writer visits %d, want failed at the visit cap %d", k, got.Status, ns["w"].Visits, modelMaxVisits)
			}
			continue
		}
		if got.Status != StatusCompleted || ns["w"].Visits != k+1 || ns["a"].Visits != k+1 || ns["p"].Visits != 1 {
			t.Fatalf("k=%d: run %s, visits w=%d a=%d p=%d; want completed, %d/%d/1",
				k, got.Status, ns["w"].Visits, ns["a"].Visits, ns["p"].Visits, k+1, k+1)
		}
	}
	t.Logf("%d revise loops matched the reference", cases)
}
