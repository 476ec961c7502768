package engine

import (
	"encoding/json"
	"fmt"

	"github.com/switchyard/switchyard/graph"
)

// graphExtras is what a drawn graph's executors share beyond the plan:
// each agent's subagent children, reached along subagent edges.
type graphExtras struct {
	subagents map[string][]graph.Node
}

// subagentsOf returns the plan's subagent map (nil outside drawn graphs).
func (p *plan) subagentsOf() map[string][]graph.Node {
	if g, ok := p.extras.(*graphExtras); ok {
		return g.subagents
	}
	return nil
}

// anyFired runs a node when at least one of its inputs fired (drawn graphs).
type anyFired struct{}

func (anyFired) decide(_ *runner, _ int, fired []bool) (bool, string) {
	for _, f := range fired {
		if f {
			return true, ""
		}
	}
	return false, "no incoming branch was taken"
}

// graphNodeDescription is the step_start content of a drawn node.
func graphNodeDescription(n graph.Node) string {
	switch n.Type {
	case graph.TypeAgent:
		if n.Data.AgentName != "" {
			return n.Data.AgentName + " agent node"
		}
		return "Agent node"
	case graph.TypeStart:
		return "Start node"
	case graph.TypeIf:
		return "If node"
	case graph.TypeApproval:
		return "Approval node"
	}
	return n.Type + " node"
}

// compileGraph turns a normalized, valid graph into a plan. Subagent edges
// are not execution edges: subagent targets never run on their own.
func compileGraph(g *graph.Graph, maxVisits int) *plan {
	p := &plan{failFast: true, maxVisits: maxVisits, defaultHandle: graph.HandleOutput}
	subagents := map[string][]graph.Node{}
	p.extras = &graphExtras{subagents: subagents}
	p.init(len(g.Nodes))
	for _, n := range g.Nodes {
		p.index[n.ID] = len(p.nodes)
		p.nodes = append(p.nodes, &planNode{
			id: n.ID, typ: n.Type, label: n.Label(), describe: graphNodeDescription(n),
			spec: n, join: anyFired{},
		})
	}
	byID := make(map[string]graph.Node, len(g.Nodes))
	for _, n := range g.Nodes {
		byID[n.ID] = n
	}
	seen := make(map[[3]string]bool, len(g.Edges))
	for _, e := range g.Edges {
		if e.IsSubagent() {
			if c, ok := byID[e.Target]; ok {
				subagents[e.Source] = append(subagents[e.Source], c)
			}
			continue
		}
		s, ok1 := p.index[e.Source]
		d, ok2 := p.index[e.Target]
		if !ok1 || !ok2 {
			continue // validation reports missing_node; never reached for valid graphs
		}
		h := e.SourceHandle
		if h == "" {
			h = graph.HandleOutput
		}
		// A repeated edge is ignored, as validation warns: it would
		// otherwise join the same input twice.
		if k := [3]string{e.Source, h, e.Target}; seen[k] {
			continue
		} else {
			seen[k] = true
		}
		p.addEdge(e.ID, s, d, h)
	}
	for i, n := range g.Nodes {
		if n.Type == graph.TypeStart {
			p.roots = append(p.roots, i)
		}
	}
	p.finish()
	return p
}

// compileGraphRun rebuilds a drawn graph's plan from its snapshot.
func compileGraphRun(e *Engine, run *Run) (*plan, error) {
	var g graph.Graph
	if err := json.Unmarshal(run.Definition, &g); err != nil {
		return nil, fmt.Errorf("run %s: decode graph snapshot: %w", run.ID, err)
	}
	return compileGraph(&g, e.cfg.MaxVisits), nil
}
