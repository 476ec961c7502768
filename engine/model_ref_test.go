package engine

// The reference model of the scheduler: a small sequential interpreter of
// the documented semantics (README "How it runs", the graph format and the
// YAML section), written without the engine's incremental bookkeeping: every
// decision is recomputed from the whole state. model_test.go compares the
// real engine against it.
//
// The semantics it implements:
//   - A node is looked at again ("pending") whenever one of its inputs
//     settles (its source completed, failed or was skipped).
//   - A pending node that is not busy is decided once each incoming edge
//     has fired or can no longer fire. An edge s->n can still fire when s
//     is active (queued, running, waiting, or pending with a fired input),
//     or an active node other than n reaches s by a path that avoids n.
//   - Deciding consumes the fired edges. Drawn graphs run the node when any
//     edge fired, with the fired inputs joined by a blank line in edge
//     order; YAML nodes apply their trigger rule to their dependencies'
//     outcomes, then `when:`. Otherwise a node that never ran is skipped and
//     the skip propagates; one that ran, or was skipped before, keeps its
//     last result and propagates nothing.
//   - Running a node a (maxVisits+1)-th time fails the run instead.
//   - In a cycle of joins where nothing else can move, one of the pending
//     nodes with a fired input runs (which one is the scheduler's choice).
//   - Drawn graphs fail at once when a node fails; running nodes are
//     cancelled. YAML nodes settle as failed and the run goes on; the run
//     fails at the end. Cancel nodes and rejected approvals cancel the run.
//   - The run's status is a function of the outcomes: cancelled if a node
//     cancelled it, failed if a node failed or the visit cap was hit,
//     completed otherwise.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/yamlflow"
)

// ---- the generated case ----

type mKind int

const (
	mStart    mKind = iota // drawn graphs: the start node
	mWork                  // agent (graph) or bash (YAML): a scripted outcome per visit
	mIf                    // drawn graphs
	mApproval              // both
	mCancel                // YAML
)

func (k mKind) String() string {
	return [...]string{"start", "work", "if", "approval", "cancel"}[k]
}

// mOutcome is one scripted visit of a work node.
type mOutcome struct {
	Fail  bool   // fail (graph: an error; YAML: exit Code)
	Code  int    // YAML exit code when failing
	Out   string // output when succeeding
	Delay int    // in 100 µs units
}

// mAnswer is the oracle's answer to one visit of an approval.
type mAnswer struct {
	Approve bool
	Note    string
}

// mCond is one comparison of a `when:` condition.
type mCond struct {
	Left  mOperand
	Op    string
	Right mOperand
}

type mOperand struct {
	Node  string // "" for a literal
	Field string // "" for the whole output
	Num   *int   // numeric literal
	Str   string // string literal (when Node == "" and Num == nil)
}

func (o mOperand) render() string {
	switch {
	case o.Node != "" && o.Field == "":
		return "$" + o.Node + ".output"
	case o.Node != "":
		return "$" + o.Node + ".output." + o.Field
	case o.Num != nil:
		return strconv.Itoa(*o.Num)
	}
	return "'" + o.Str + "'"
}

// mWhen is a condition: a disjunction of conjunctions, or garbage that
// does not parse.
type mWhen struct {
	Or      [][]mCond
	Garbage string
}

func (w *mWhen) render() string {
	if w.Garbage != "" {
		return w.Garbage
	}
	var ors []string
	for _, and := range w.Or {
		var ands []string
		for _, c := range and {
			ands = append(ands, c.Left.render()+" "+c.Op+" "+c.Right.render())
		}
		ors = append(ors, strings.Join(ands, " && "))
	}
	return strings.Join(ors, " || ")
}

type mNodeSpec struct {
	ID   string
	Kind mKind
	// work
	Outs []mOutcome // per visit; the last one repeats
	// if
	Conds []graph.Condition
	// start
	InitialInput string
	// approval
	Answers []mAnswer // per visit; the last one repeats
	Capture bool      // YAML capture_response
	// YAML
	Trigger string // "" = default (all_success)
	When    *mWhen
	Reason  string // cancel
}

func (s *mNodeSpec) outcome(visit int) mOutcome {
	if visit-1 < len(s.Outs) {
		return s.Outs[visit-1]
	}
	return s.Outs[len(s.Outs)-1]
}

func (s *mNodeSpec) answer(visit int) mAnswer {
	if visit-1 < len(s.Answers) {
		return s.Answers[visit-1]
	}
	return s.Answers[len(s.Answers)-1]
}

type mEdge struct {
	Src, Dst int
	Handle   string // drawn graphs; "" in YAML
}

// mCase is one generated workflow with its scripted outcomes.
type mCase struct {
	YAML        bool
	Nodes       []mNodeSpec
	Edges       []mEdge // drawn graphs: in edge order; YAML: derived from DependsOn
	Deps        [][]int // YAML: depends_on per node, in order
	Input       string  // run input
	MaxVisits   int
	MaxParallel int
}

func (c *mCase) acyclic() bool {
	n := len(c.Nodes)
	indeg := make([]int, n)
	for _, e := range c.Edges {
		indeg[e.Dst]++
	}
	var q []int
	for i := range indeg {
		if indeg[i] == 0 {
			q = append(q, i)
		}
	}
	seen := 0
	for len(q) > 0 {
		v := q[0]
		q = q[1:]
		seen++
		for _, e := range c.Edges {
			if e.Src == v {
				if indeg[e.Dst]--; indeg[e.Dst] == 0 {
					q = append(q, e.Dst)
				}
			}
		}
	}
	return seen == n
}

// ---- the model ----

type refNode struct {
	status    NodeStatus
	visits    int
	input     string
	output    string
	handle    string
	rejection string
	err       string
	last      NodeStatus // status after the last visit that ran
	stamp     int        // when it became pending (oldest first)
	resumed   bool       // approval: the oracle answered this visit
	overCap   bool       // deciding it would exceed maxVisits
	abandoned bool       // was waiting when the run ended early
}

// refResult is what one visit of a node produced.
type refResult struct {
	fail      bool
	err       string // expected error text (prefix)
	wait      bool
	output    string
	handle    string
	decided   bool
	rejection string
	cancel    string // the run is cancelled with this reason
}

type refModel struct {
	c       *mCase
	in, out [][]int // edge indexes per node, in edge order
	edges   []mEdge // after dropping ignored duplicates
	st      []refNode
	fired   []bool
	pending []bool
	clock   int

	ending    RunStatus // failed or cancelled once the run ends early
	endReason string
	anyFailed bool

	// skips lists the nodes the model skipped, in order, for the replay to
	// match against the engine's skip events.
	skips []int
	trace []string // what happened, for failure messages
}

func newRefModel(c *mCase) *refModel {
	m := &refModel{c: c}
	n := len(c.Nodes)
	m.in = make([][]int, n)
	m.out = make([][]int, n)
	if c.YAML {
		for i, deps := range c.Deps {
			for _, d := range deps {
				m.edges = append(m.edges, mEdge{Src: d, Dst: i})
			}
		}
	} else {
		// The validator says a repeated edge "is ignored": only the first
		// of several edges with the same source, handle and target counts.
		type key struct {
			s, d int
			h    string
		}
		seen := map[key]bool{}
		for _, e := range c.Edges {
			k := key{e.Src, e.Dst, e.Handle}
			if seen[k] {
				continue
			}
			seen[k] = true
			m.edges = append(m.edges, e)
		}
	}
	for k, e := range m.edges {
		m.out[e.Src] = append(m.out[e.Src], k)
		m.in[e.Dst] = append(m.in[e.Dst], k)
	}
	m.st = make([]refNode, n)
	m.fired = make([]bool, len(m.edges))
	m.pending = make([]bool, n)
	return m
}

func (m *refModel) logf(format string, args ...any) {
	m.trace = append(m.trace, fmt.Sprintf(format, args...))
}

func (m *refModel) id(i int) string { return m.c.Nodes[i].ID }

func (m *refModel) index(id string) int {
	for i, n := range m.c.Nodes {
		if n.ID == id {
			return i
		}
	}
	return -1
}

// begin seeds the roots: the start node runs with the run's input; YAML
// nodes without dependencies are decided like any other node.
func (m *refModel) begin() {
	for i, n := range m.c.Nodes {
		if m.c.YAML && len(m.c.Deps[i]) == 0 {
			m.notify(i)
		}
		if !m.c.YAML && n.Kind == mStart {
			m.enqueue(i, m.c.Input, "")
		}
	}
}

func (m *refModel) busy(i int) bool {
	s := m.st[i].status
	return s == NodeQueued || s == NodeRunning || s == NodeWaiting
}

func (m *refModel) anyFired(i int) bool {
	for _, e := range m.in[i] {
		if m.fired[e] {
			return true
		}
	}
	return false
}

// active: running, about to run, or pending and able to run: in a drawn
// graph only with a fired input; a YAML node may run without one (all_done
// after a skipped dependency).
func (m *refModel) active(i int) bool {
	return m.busy(i) || (m.pending[i] && !m.st[i].overCap && (m.c.YAML || m.anyFired(i)))
}

// canStillFire: may node s complete again before node n is decided?
func (m *refModel) canStillFire(s, n int) bool {
	if s == n {
		return false // n's own edge fires only after n runs, which this decision is about
	}
	if m.active(s) {
		return true
	}
	seen := make([]bool, len(m.st))
	seen[n] = true
	var stack []int
	for i := range m.st {
		if i != n && m.active(i) {
			seen[i] = true
			stack = append(stack, i)
		}
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range m.out[v] {
			d := m.edges[e].Dst
			if d == s {
				return true
			}
			if !seen[d] {
				seen[d] = true
				stack = append(stack, d)
			}
		}
	}
	return false
}

func (m *refModel) blocked(n int) bool {
	for _, e := range m.in[n] {
		if !m.fired[e] && m.canStillFire(m.edges[e].Src, n) {
			return true
		}
	}
	return false
}

func (m *refModel) notify(n int) {
	if m.pending[n] {
		return
	}
	m.pending[n] = true
	m.clock++
	m.st[n].stamp = m.clock
	if s := m.st[n].status; s == NodeIdle || s.Settled() {
		m.st[n].status = NodePending
	}
}

// pendingOrder lists the pending nodes, oldest first.
func (m *refModel) pendingOrder() []int {
	var ps []int
	for i := range m.st {
		if m.pending[i] {
			ps = append(ps, i)
		}
	}
	slices.SortFunc(ps, func(a, b int) int { return m.st[a].stamp - m.st[b].stamp })
	return ps
}

func (m *refModel) quiescent() bool {
	for i := range m.st {
		if m.busy(i) {
			return false
		}
	}
	return true
}

// settle decides every pending node it can. It stops at a deadlock (a
// cycle of joins, nothing busy) and leaves the choice to the caller; see
// candidates and force.
func (m *refModel) settle() {
	for m.ending == "" {
		progress := false
		for _, n := range m.pendingOrder() {
			if m.ending != "" {
				return
			}
			if !m.pending[n] || m.busy(n) || m.st[n].overCap || m.blocked(n) {
				continue
			}
			m.decide(n)
			progress = true
		}
		if !progress {
			return
		}
	}
}

// candidates are the nodes the scheduler may force to run at a deadlock.
func (m *refModel) candidates() []int {
	if m.ending != "" || !m.quiescent() {
		return nil
	}
	for _, n := range m.pendingOrder() {
		if !m.blocked(n) && !m.st[n].overCap {
			return nil // not a deadlock: settle has work
		}
	}
	var out []int
	for _, n := range m.pendingOrder() {
		if m.anyFired(n) && !m.st[n].overCap {
			out = append(out, n)
		}
	}
	return out
}

func (m *refModel) force(n int) {
	m.logf("force %s (cycle of joins)", m.id(n))
	m.decide(n)
	m.settle()
}

// decide runs or skips pending node n and consumes its fired inputs.
func (m *refModel) decide(n int) {
	m.pending[n] = false
	var inputs []string
	firedAny := false
	for _, e := range m.in[n] {
		if m.fired[e] {
			firedAny = true
			inputs = append(inputs, m.st[m.edges[e].Src].output)
			m.fired[e] = false
		}
	}
	run, why := m.join(n, firedAny)
	if run {
		m.enqueue(n, strings.Join(inputs, "\n\n"), m.st[n].rejection)
		return
	}
	if m.st[n].visits > 0 || m.st[n].last == NodeSkipped {
		// A branch not taken back into a node that ran, or that was
		// skipped already: it keeps its result, and propagates nothing.
		if m.st[n].status == NodePending {
			m.st[n].status = m.st[n].last
		}
		m.logf("%s keeps its result (%s)", m.id(n), why)
		return
	}
	m.st[n].status, m.st[n].last = NodeSkipped, NodeSkipped
	m.skips = append(m.skips, n)
	m.logf("skip %s: %s", m.id(n), why)
	for _, e := range m.out[n] {
		m.notify(m.edges[e].Dst)
	}
}

// join is the node's policy once its inputs have settled.
func (m *refModel) join(n int, firedAny bool) (bool, string) {
	if !m.c.YAML {
		if firedAny {
			return true, ""
		}
		return false, "no input fired"
	}
	spec := &m.c.Nodes[n]
	if m.st[n].visits > 0 {
		return false, "already ran"
	}
	var done, failed, total int
	for _, d := range m.c.Deps[n] {
		total++
		switch m.st[d].status {
		case NodeCompleted:
			done++
		case NodeFailed:
			failed++
		}
	}
	if total > 0 {
		switch spec.Trigger {
		case yamlflow.TriggerOneSuccess:
			if done == 0 {
				return false, "one_success: none succeeded"
			}
		case yamlflow.TriggerNoneFailedMinOneSuccess:
			if failed > 0 || done == 0 {
				return false, "none_failed_min_one_success"
			}
		case yamlflow.TriggerAllDone:
		default:
			if done != total {
				return false, "all_success: not all succeeded"
			}
		}
	}
	if spec.When == nil {
		return true, ""
	}
	if spec.When.Garbage != "" {
		return false, "when does not parse"
	}
	ok, err := m.evalWhen(spec.When)
	if err != nil {
		return true, "" // runs, and fails on the error
	}
	if !ok {
		return false, "when is false"
	}
	return true, ""
}

// evalWhen evaluates a condition: && and || short-circuit; == and !=
// compare text; ordering operators compare numbers and fail on anything
// else; a node that did not complete reads as "", and a field of it fails
// the node; a missing field reads as "".
func (m *refModel) evalWhen(w *mWhen) (bool, error) {
	for _, and := range w.Or {
		all := true
		for _, c := range and {
			ok, err := m.evalCond(c)
			if err != nil {
				return false, err
			}
			if !ok {
				all = false
				break
			}
		}
		if all {
			return true, nil
		}
	}
	return false, nil
}

// refValue is a looked-up operand: its text, and its number when it is one.
type refValue struct {
	text  string
	num   float64
	isNum bool
}

func (m *refModel) operand(o mOperand) (refValue, error) {
	if o.Node == "" {
		if o.Num != nil {
			return refValue{text: strconv.Itoa(*o.Num), num: float64(*o.Num), isNum: true}, nil
		}
		v := refValue{text: o.Str}
		if f, err := strconv.ParseFloat(o.Str, 64); err == nil {
			v.num, v.isNum = f, true
		}
		return v, nil
	}
	k := m.index(o.Node)
	if m.st[k].status != NodeCompleted {
		if o.Field != "" {
			// As substitution: a node without output has no field.
			return refValue{}, fmt.Errorf("%s: node has no output", o.render())
		}
		return refValue{}, nil
	}
	out := m.st[k].output
	if o.Field == "" {
		return textValue(out), nil
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &obj); err != nil || obj == nil {
		return refValue{}, fmt.Errorf("%s: output is not a JSON object", o.render())
	}
	switch v := obj[o.Field].(type) {
	case nil:
		return refValue{}, nil
	case float64:
		return refValue{text: strconv.FormatFloat(v, 'f', -1, 64), num: v, isNum: true}, nil
	case string:
		return textValue(v), nil
	default:
		b, _ := json.Marshal(v)
		return refValue{text: string(b)}, nil
	}
}

func textValue(s string) refValue {
	v := refValue{text: s}
	if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && strings.TrimSpace(s) != "" {
		v.num, v.isNum = f, true
	}
	return v
}

func (m *refModel) evalCond(c mCond) (bool, error) {
	l, err := m.operand(c.Left)
	if err != nil {
		return false, err
	}
	r, err := m.operand(c.Right)
	if err != nil {
		return false, err
	}
	switch c.Op {
	case "==":
		return l.text == r.text, nil
	case "!=":
		return l.text != r.text, nil
	}
	if !l.isNum || !r.isNum {
		return false, fmt.Errorf("not a number")
	}
	switch c.Op {
	case "<":
		return l.num < r.num, nil
	case ">":
		return l.num > r.num, nil
	case "<=":
		return l.num <= r.num, nil
	}
	return l.num >= r.num, nil
}

// enqueue decides that node n runs, or fails the run at the visit cap.
func (m *refModel) enqueue(n int, input, rejection string) {
	ns := &m.st[n]
	if ns.visits >= m.c.MaxVisits {
		// The run fails; when exactly is the engine's to say (its error
		// event), since it decides in batches. Until then n waits.
		ns.overCap = true
		m.pending[n] = true
		m.logf("%s would exceed maxVisits", m.id(n))
		return
	}
	ns.status = NodeQueued
	ns.visits++
	ns.input = input
	ns.rejection = rejection
	ns.err = ""
	ns.resumed = false
	m.logf("queue %s visit %d input %q", m.id(n), ns.visits, input)
}

// end ends the run early.
func (m *refModel) end(s RunStatus, reason string) {
	if m.ending != "" {
		return
	}
	m.ending = s
	m.endReason = reason
	m.logf("run ends %s: %s", s, reason)
	// Nodes waiting for a human are in flight: they end with the run, as
	// running nodes do.
	for i := range m.st {
		if m.st[i].status == NodeWaiting {
			m.st[i].status, m.st[i].err = NodeFailed, string(s)
			m.st[i].abandoned = true
			m.logf("%s stops waiting: the run ended", m.id(i))
		}
	}
}

// result is what node n's current visit produces (n is running, or
// waiting and answered).
func (m *refModel) result(n int) refResult {
	spec := &m.c.Nodes[n]
	ns := &m.st[n]
	if m.c.YAML && spec.When != nil && spec.When.Garbage == "" {
		if _, err := m.evalWhen(spec.When); err != nil {
			return refResult{fail: true, err: "when condition: "}
		}
	}
	switch spec.Kind {
	case mStart:
		out := m.c.Input
		if out == "" {
			out = spec.InitialInput
		}
		return refResult{output: out}
	case mWork:
		o := spec.outcome(ns.visits)
		if o.Fail {
			if m.c.YAML {
				return refResult{fail: true, err: fmt.Sprintf("exit status %d", o.Code)}
			}
			return refResult{fail: true, err: scriptedFailure(spec.ID, ns.visits)}
		}
		return refResult{output: o.Out}
	case mIf:
		subject := strings.ToLower(ns.input)
		for k, c := range spec.Conds {
			v := strings.ToLower(strings.TrimSpace(c.Value))
			if v == "" {
				continue
			}
			if (c.Operator == graph.OpContains && strings.Contains(subject, v)) ||
				(c.Operator != graph.OpContains && subject == v) {
				return refResult{output: ns.input, handle: fmt.Sprintf("condition-%d", k)}
			}
		}
		return refResult{output: ns.input, handle: "false"}
	case mApproval:
		if !ns.resumed {
			return refResult{wait: true}
		}
		a := spec.answer(ns.visits)
		if !m.c.YAML {
			if a.Approve {
				return refResult{output: ns.input, handle: "approve", decided: true}
			}
			return refResult{output: ns.input, handle: "reject", decided: true, rejection: a.Note}
		}
		if a.Approve {
			out := ""
			if spec.Capture {
				out = a.Note
			}
			return refResult{output: out, decided: true}
		}
		return refResult{decided: true, rejection: a.Note, cancel: fmt.Sprintf("approval %q rejected", spec.ID)}
	case mCancel:
		return refResult{output: spec.Reason, cancel: spec.Reason}
	}
	panic("unknown kind")
}

func scriptedFailure(id string, visit int) string {
	return fmt.Sprintf("scripted failure of %s, visit %d", id, visit)
}

// complete applies the result of node n's current visit. Deciding what
// follows is settle's: the engine decides after a batch of completions.
func (m *refModel) complete(n int, res refResult) {
	ns := &m.st[n]
	if m.ending != "" {
		ns.status = NodeFailed
		ns.err = string(m.ending)
		m.logf("%s cancelled by the run's end", m.id(n))
		return
	}
	if res.fail {
		ns.status, ns.err, ns.last = NodeFailed, res.err, NodeFailed
		m.logf("%s failed: %s", m.id(n), res.err)
		if !m.c.YAML {
			m.end(StatusFailed, m.id(n)+" failed")
			return
		}
		m.anyFailed = true
		for _, e := range m.out[n] {
			m.notify(m.edges[e].Dst)
		}
		return
	}
	if res.wait {
		ns.status = NodeWaiting
		m.logf("%s waits", m.id(n))
		return
	}
	ns.status, ns.output, ns.handle, ns.last = NodeCompleted, res.output, res.handle, NodeCompleted
	m.logf("%s completed handle %q output %q", m.id(n), res.handle, res.output)
	if res.cancel != "" {
		m.end(StatusCancelled, res.cancel)
		return
	}
	handle := res.handle
	if handle == "" && !m.c.YAML {
		handle = graph.HandleOutput
	}
	for _, e := range m.out[n] {
		ed := m.edges[e]
		if ed.Handle == "" || ed.Handle == handle {
			m.fired[e] = true
			rej := ns.rejection
			if res.decided {
				rej = res.rejection
			}
			m.st[ed.Dst].rejection = rej
		}
		m.notify(ed.Dst)
	}
}

// status is the run's final status as a function of the outcomes.
func (m *refModel) status() RunStatus {
	if m.ending != "" {
		return m.ending
	}
	for i := range m.st {
		if m.st[i].status == NodeWaiting {
			return StatusPaused
		}
	}
	if m.anyFailed {
		return StatusFailed
	}
	return StatusCompleted
}

// undecided lists nodes a run that ended normally must not have: pending,
// queued, running or waiting.
func (m *refModel) undecided() []string {
	var out []string
	for i := range m.st {
		if m.pending[i] || m.busy(i) {
			out = append(out, m.id(i)+"="+string(m.st[i].status))
		}
	}
	return out
}

// runAlone runs the model on its own: one node at a time, the oldest
// queued first; approvals answered once nothing else can move, oldest
// first; at a deadlock the oldest candidate runs.
func (m *refModel) runAlone() {
	m.begin()
	m.settle()
	order := map[int]int{} // queue order
	seq := 0
	for m.ending == "" {
		for i := range m.st {
			if m.st[i].status == NodeQueued {
				if _, ok := order[i]; !ok {
					seq++
					order[i] = seq
				}
			}
		}
		next, waiting := -1, -1
		for i := range m.st {
			if m.st[i].status == NodeQueued && (next < 0 || order[i] < order[next]) {
				next = i
			}
			if m.st[i].status == NodeWaiting && waiting < 0 {
				waiting = i
			}
		}
		switch {
		case next >= 0:
			delete(order, next)
			m.st[next].status = NodeRunning
			m.complete(next, m.result(next))
			m.settle()
		case waiting >= 0:
			m.st[waiting].resumed = true
			m.complete(waiting, m.result(waiting))
			m.settle()
		default:
			for i := range m.st {
				if m.st[i].overCap {
					m.end(StatusFailed, m.id(i)+" exceeds maxVisits")
					return
				}
			}
			c := m.candidates()
			if len(c) == 0 {
				return
			}
			m.force(c[0])
		}
	}
}
