package engine

// plan is a workflow compiled for the scheduler: nodes and execution edges
// by index, so the hot path does no map lookups or string compares beyond
// handle matching.
type plan struct {
	nodes []*planNode
	index map[string]int
	edges []planEdge
	in    [][]int // edge indexes into each node, in edge order
	out   [][]int // edge indexes out of each node, in edge order
	roots []int   // nodes that start a run
	// reachable marks nodes some root can reach along execution edges.
	reachable []bool
	// acyclic graphs let the scheduler decide joins by counting settled
	// inputs; cyclic ones need the reachability rule (see canStillFire).
	acyclic bool
	// failFast: a node error fails the whole run (drawn graphs). YAML DAGs
	// instead settle the node as failed and let trigger rules decide.
	failFast  bool
	maxVisits int
	// defaultHandle is the handle a node that names none fires ("output"
	// in drawn graphs, where edges name handles; "" in YAML DAGs).
	defaultHandle string
	// extras is what one workflow kind's executors share beyond the plan
	// (graphExtras for drawn graphs); the scheduler never reads it.
	extras any
}

type planNode struct {
	id       string
	typ      string // executor key
	label    string // how messages name the node
	describe string // step_start content, e.g. "Poet agent node"
	spec     any    // graph.Node or a YAML node; read by the executor
	// join decides, once every input has settled, whether the node runs.
	join joinPolicy
}

type planEdge struct {
	id     string
	src    int
	dst    int
	handle string // fires when src completes with this handle; "" = any completion
}

// joinPolicy decides whether a node whose inputs have all settled runs.
type joinPolicy interface {
	// decide gets the node's incoming edges and whether each fired; it
	// returns whether to run. A policy may inspect source node states.
	decide(r *runner, n int, fired []bool) (run bool, reason string)
}

func (p *plan) addEdge(id string, src, dst int, handle string) {
	ei := len(p.edges)
	p.edges = append(p.edges, planEdge{id: id, src: src, dst: dst, handle: handle})
	p.out[src] = append(p.out[src], ei)
	p.in[dst] = append(p.in[dst], ei)
}

func (p *plan) init(n int) {
	p.index = make(map[string]int, n)
	p.in = make([][]int, n)
	p.out = make([][]int, n)
}

// finish computes reachability and whether the execution graph is acyclic.
func (p *plan) finish() {
	n := len(p.nodes)
	p.reachable = make([]bool, n)
	stack := append([]int(nil), p.roots...)
	for _, r := range p.roots {
		p.reachable[r] = true
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, ei := range p.out[v] {
			d := p.edges[ei].dst
			if !p.reachable[d] {
				p.reachable[d] = true
				stack = append(stack, d)
			}
		}
	}
	// Kahn's algorithm: acyclic iff every node can be ordered.
	indeg := make([]int, n)
	for _, e := range p.edges {
		indeg[e.dst]++
	}
	q := make([]int, 0, n)
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
		for _, ei := range p.out[v] {
			d := p.edges[ei].dst
			indeg[d]--
			if indeg[d] == 0 {
				q = append(q, d)
			}
		}
	}
	p.acyclic = seen == n
}
