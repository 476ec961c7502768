package yamlflow

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/switchyard/switchyard/graph"
)

// The UI shows a YAML workflow (and a YAML run) as a read-only graph: a
// projection of the DAG in the shape of drawn graphs, nodes of type "yaml"
// with a label, their kind and a short detail, laid out in layers (x by
// topological depth, y by place within the layer), edges from each
// depends_on entry.

// Layout spacing; the UI's own layered layout uses the same node size.
const (
	CanvasColumnGap = 330 // node width 240 + gap 90
	CanvasRowGap    = 146 // node height 110 + gap 36
	CanvasDetailLen = 80
)

// CanvasNodeType is the node type of a YAML workflow's graph projection.
const CanvasNodeType = "yaml"

// Canvas is a workflow in the shape of a drawn graph, for the UI.
type Canvas struct {
	Nodes []CanvasNode `json:"nodes"`
	Edges []CanvasEdge `json:"edges"`
}

// CanvasNode is one node of a Canvas.
type CanvasNode struct {
	ID       string         `json:"id"`
	Type     string         `json:"type"`
	Position graph.Position `json:"position"`
	Data     CanvasNodeData `json:"data"`
}

// CanvasNodeData is what a Canvas node shows.
type CanvasNodeData struct {
	Label string `json:"label"`
	// Kind is the node kind: command, prompt, bash, script, loop, approval
	// or cancel.
	Kind string `json:"kind"`
	// Detail is a short text: the bash script's first line, the prompt's
	// first 80 characters, the approval message, ...
	Detail string `json:"detail"`
	// Text is the whole text Detail is cut from (prompt, script, message),
	// for the step inspector; empty when it equals Detail.
	Text        string `json:"text,omitempty"`
	When        string `json:"when,omitempty"`
	TriggerRule string `json:"triggerRule,omitempty"`
	// Gate marks nodes that wait for a person (approvals, interactive
	// loops).
	Gate      bool `json:"gate,omitempty"`
	AlwaysRun bool `json:"alwaysRun,omitempty"`
	// Group is the id of the include node a node was inlined from (its
	// nodes are drawn as one group); GroupLabel names the included
	// workflow. Nodes of an include are not in the file: they are read-only.
	Group      string `json:"group,omitempty"`
	GroupLabel string `json:"groupLabel,omitempty"`
	// Settings are the step's other editable fields the file sets, by
	// dotted YAML name (timeout, retry.max_attempts, retry.delay_ms,
	// loop.until, loop.max_iterations, approval.on_reject.prompt,
	// approval.on_reject.max_attempts), for the step inspector.
	Settings map[string]any `json:"settings,omitempty"`
}

// canvasSettings lists the fields of n the inspector edits beside its
// main text, as the file has them.
func canvasSettings(n *Node) map[string]any {
	m := map[string]any{}
	// Only what the file sets: defaults filled in by the loader are not
	// shown as if written (emptying one must not try to remove it).
	put := func(name string, v any) {
		if n.lines[name] > 0 {
			m[name] = v
		}
	}
	put("timeout", n.TimeoutMS)
	if n.Retry != nil {
		put("retry.max_attempts", n.Retry.MaxAttempts)
		put("retry.delay_ms", n.Retry.DelayMS)
	}
	if n.Loop != nil {
		put("loop.until", n.Loop.Until)
		put("loop.max_iterations", n.Loop.MaxIterations)
	}
	if n.Approval != nil && n.Approval.OnReject != nil {
		put("approval.on_reject.prompt", n.Approval.OnReject.Prompt)
		put("approval.on_reject.max_attempts", n.Approval.OnReject.MaxAttempts)
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// CanvasEdge is one depends_on entry of a Canvas.
type CanvasEdge struct {
	ID           string `json:"id"`
	Source       string `json:"source"`
	Target       string `json:"target"`
	SourceHandle string `json:"sourceHandle"`
	TargetHandle string `json:"targetHandle"`
}

// CanvasOf projects a workflow, which may be the partial result of a
// file with errors: nodes without an id or with a taken one are left out,
// as are dependencies on unknown nodes.
func CanvasOf(wf *Workflow) *Canvas {
	g := &Canvas{Nodes: []CanvasNode{}, Edges: []CanvasEdge{}}
	if wf == nil {
		return g
	}
	index := map[string]int{} // node id -> position in nodes
	var nodes []*Node
	for _, n := range wf.Nodes {
		if n == nil || n.ID == "" {
			continue
		}
		if _, dup := index[n.ID]; dup {
			continue
		}
		index[n.ID] = len(nodes)
		nodes = append(nodes, n)
	}
	deps := make([][]int, len(nodes)) // known, distinct dependencies
	for i, n := range nodes {
		seen := map[int]bool{}
		for _, d := range n.DependsOn {
			if j, ok := index[d]; ok && j != i && !seen[j] {
				seen[j] = true
				deps[i] = append(deps[i], j)
				g.Edges = append(g.Edges, CanvasEdge{ID: d + "->" + n.ID, Source: d, Target: n.ID,
					SourceHandle: graph.HandleOutput, TargetHandle: graph.HandleInput})
			}
		}
	}
	depth := canvasDepths(deps)

	// Layers in file order, then each layer after the first ordered by
	// the mean row of its dependencies (one barycenter pass: fewer
	// crossings, still deterministic).
	var layers [][]int
	for i := range nodes {
		for len(layers) <= depth[i] {
			layers = append(layers, nil)
		}
		layers[depth[i]] = append(layers[depth[i]], i)
	}
	row := make([]float64, len(nodes))
	pos := make([]graph.Position, len(nodes))
	for d, layer := range layers {
		if d > 0 {
			key := make(map[int]float64, len(layer))
			for _, i := range layer {
				sum, cnt := 0.0, 0
				for _, j := range deps[i] {
					if depth[j] < d {
						sum += row[j]
						cnt++
					}
				}
				if cnt > 0 {
					key[i] = sum / float64(cnt)
				}
			}
			sort.SliceStable(layer, func(a, b int) bool { return key[layer[a]] < key[layer[b]] })
		}
		// Centre each layer on y = 0.
		off := float64(len(layer)-1) / 2
		for k, i := range layer {
			row[i] = float64(k) - off
			pos[i] = graph.Position{X: float64(d * CanvasColumnGap), Y: row[i] * CanvasRowGap}
		}
	}
	for i, n := range nodes {
		// Texts as the file wrote them (loading rewrites the references
		// of workflows with includes); the graph as loaded.
		w := n
		if n.written != nil {
			w = n.written
		}
		data := CanvasNodeData{Label: n.ID, Kind: string(n.Kind), Detail: canvasDetail(w), When: strings.TrimSpace(w.When),
			AlwaysRun: n.AlwaysRun, Group: n.IncludedFrom}
		if n.Origin != nil {
			data.GroupLabel = n.Origin.Workflow
		}
		if t := canvasText(w); t != data.Detail {
			data.Text = t
		}
		switch {
		case n.includeNode:
			// An include that could not be expanded (the file has errors).
			data.Kind, data.Detail = includeKey, clipDetail("include: "+n.include)
		case data.Kind == "":
			data.Kind = "node"
		}
		// A rule the file sets is shown (and editable) even where it changes
		// nothing; the default is shown only on a join that differs.
		if n.TriggerRule != "" && (n.lines["trigger_rule"] > 0 || len(n.DependsOn) > 0 && n.TriggerRule != TriggerAllSuccess) {
			data.TriggerRule = n.TriggerRule
		}
		data.Gate = n.Kind == KindApproval || n.Kind == KindLoop && n.Loop != nil && n.Loop.Interactive
		data.Settings = canvasSettings(w)
		g.Nodes = append(g.Nodes, CanvasNode{ID: n.ID, Type: CanvasNodeType, Position: pos[i], Data: data})
	}
	return g
}

// canvasDepths gives each node its longest distance from a node without
// dependencies. Nodes on a cycle (an error the loader reports) get the
// depth known when the cycle is met, so bad input still lays out.
func canvasDepths(deps [][]int) []int {
	n := len(deps)
	depth := make([]int, n)
	state := make([]uint8, n) // 0 new, 1 in progress, 2 done
	type frame struct{ v, next int }
	for root := 0; root < n; root++ {
		if state[root] != 0 {
			continue
		}
		stack := []frame{{root, 0}}
		state[root] = 1
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next < len(deps[top.v]) {
				w := deps[top.v][top.next]
				top.next++
				if state[w] == 0 {
					state[w] = 1
					stack = append(stack, frame{w, 0})
				}
				continue
			}
			v := top.v
			for _, w := range deps[v] {
				if state[w] == 2 && depth[w]+1 > depth[v] {
					depth[v] = depth[w] + 1
				}
			}
			state[v] = 2
			stack = stack[:len(stack)-1]
		}
	}
	return depth
}

// canvasDetail is the short text a node shows under its id.
func canvasDetail(n *Node) string {
	switch n.Kind {
	case KindCommand:
		return "command: " + clipDetail(n.Command)
	case KindPrompt:
		return clipDetail(oneLineText(n.Prompt))
	case KindBash:
		return clipDetail(firstLine(n.Bash))
	case KindScript:
		rt := n.Runtime
		if rt == "" {
			rt = "script"
		}
		if n.ScriptNamed {
			return clipDetail(rt + ": " + strings.TrimSpace(n.Script))
		}
		return clipDetail(rt + ": " + firstLine(n.Script))
	case KindLoop:
		if n.Loop == nil {
			return ""
		}
		head := fmt.Sprintf("until %s, max %d", n.Loop.Until, n.Loop.MaxIterations)
		if n.Loop.Interactive {
			head += ", interactive"
		}
		return clipDetail(head + ": " + oneLineText(n.Loop.Prompt))
	case KindApproval:
		if n.Approval == nil {
			return ""
		}
		return clipDetail(oneLineText(n.Approval.Message))
	case KindCancel:
		return clipDetail(oneLineText(n.CancelReason))
	}
	return ""
}

// canvasText is the whole text of a node, uncut, as written in the file.
func canvasText(n *Node) string {
	switch n.Kind {
	case KindCommand:
		return "command: " + n.Command
	case KindPrompt:
		return strings.TrimSpace(n.Prompt)
	case KindBash:
		return strings.TrimSpace(n.Bash)
	case KindScript:
		rt := n.Runtime
		if rt == "" {
			rt = "script"
		}
		return rt + ": " + strings.TrimSpace(n.Script)
	case KindLoop:
		if n.Loop == nil {
			return ""
		}
		return strings.TrimSpace(n.Loop.Prompt)
	case KindApproval:
		if n.Approval == nil {
			return ""
		}
		return strings.TrimSpace(n.Approval.Message)
	case KindCancel:
		return strings.TrimSpace(n.CancelReason)
	}
	return ""
}

// firstLine is the first non-blank line of s, trimmed.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" {
			return t
		}
	}
	return ""
}

// oneLineText collapses all runs of white space to single spaces.
func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip cuts s to CanvasDetailLen characters, marking a cut with "…".
func clipDetail(s string) string {
	if utf8.RuneCountInString(s) <= CanvasDetailLen {
		return s
	}
	r := []rune(s)
	return string(r[:CanvasDetailLen-1]) + "…"
}

// CanvasJSON is CanvasOf(wf) as JSON.
func CanvasJSON(wf *Workflow) json.RawMessage {
	raw, err := json.Marshal(CanvasOf(wf))
	if err != nil {
		return nil // plain strings and numbers: cannot happen
	}
	return raw
}
