package engine

import (
	"encoding/json"
	"fmt"
	"strings"

	"pgregory.net/rapid"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/yamlflow"
)

// Generators of model cases (rapid shrinks them towards fewer nodes,
// fewer edges and the first choices of each list).

var mWords = []string{"yes", "no", "maybe", "ok"}

// genGraphCase draws a drawn graph: a start node, agents with scripted
// outcomes per visit, if nodes and approvals; forward edges so most nodes
// are reached, and some back edges (revise loops, self-loops) and
// repeated edges.
func genGraphCase(t *rapid.T) *mCase {
	n := rapid.IntRange(2, 8).Draw(t, "nodes")
	c := &mCase{
		MaxVisits:   rapid.IntRange(1, 4).Draw(t, "maxVisits"),
		MaxParallel: rapid.SampledFrom([]int{16, 1, 2}).Draw(t, "maxParallel"),
		Input:       rapid.SampledFrom(append([]string{""}, mWords...)).Draw(t, "input"),
	}
	c.Nodes = append(c.Nodes, mNodeSpec{ID: "s", Kind: mStart, InitialInput: rapid.SampledFrom(mWords).Draw(t, "initial")})
	for i := 1; i < n; i++ {
		id := fmt.Sprintf("n%d", i)
		spec := mNodeSpec{ID: id, Kind: mWork}
		switch k := rapid.IntRange(0, 19).Draw(t, id+".kind"); {
		case k >= 15:
			spec.Kind = mApproval
		case k >= 11:
			spec.Kind = mIf
		}
		visits := c.MaxVisits + 1
		switch spec.Kind {
		case mWork:
			for v := 1; v <= visits; v++ {
				spec.Outs = append(spec.Outs, mOutcome{
					Fail:  rapid.IntRange(0, 11).Draw(t, fmt.Sprintf("%s.v%d.fail", id, v)) == 11,
					Out:   rapid.SampledFrom(mWords).Draw(t, fmt.Sprintf("%s.v%d.out", id, v)),
					Delay: rapid.IntRange(0, 20).Draw(t, fmt.Sprintf("%s.v%d.delay", id, v)),
				})
			}
		case mIf:
			nc := rapid.IntRange(0, 2).Draw(t, id+".conds")
			for k := range nc {
				spec.Conds = append(spec.Conds, graph.Condition{
					Operator: rapid.SampledFrom([]string{graph.OpEqual, graph.OpContains}).Draw(t, fmt.Sprintf("%s.c%d.op", id, k)),
					Value:    rapid.SampledFrom([]string{"yes", "no", "ma", "o", "", "YES "}).Draw(t, fmt.Sprintf("%s.c%d.value", id, k)),
				})
			}
		case mApproval:
			for v := 1; v <= visits; v++ {
				a := mAnswer{Approve: rapid.IntRange(0, 4).Draw(t, fmt.Sprintf("%s.v%d.answer", id, v)) < 3}
				if !a.Approve {
					a.Note = fmt.Sprintf("redo %s/%d", id, v)
				}
				spec.Answers = append(spec.Answers, a)
			}
		}
		c.Nodes = append(c.Nodes, spec)
	}
	handle := func(src int, label string) string {
		s := &c.Nodes[src]
		switch s.Kind {
		case mIf:
			k := rapid.IntRange(0, len(s.Conds)).Draw(t, label)
			if k == len(s.Conds) {
				return graph.HandleFalse
			}
			return fmt.Sprintf("condition-%d", k)
		case mApproval:
			return rapid.SampledFrom([]string{graph.HandleApprove, graph.HandleReject}).Draw(t, label)
		}
		return graph.HandleOutput
	}
	edge := func(src, dst int, label string) {
		c.Edges = append(c.Edges, mEdge{Src: src, Dst: dst, Handle: handle(src, label+".handle")})
	}
	for j := 1; j < n; j++ {
		edge(rapid.IntRange(0, j-1).Draw(t, fmt.Sprintf("in%d", j)), j, fmt.Sprintf("in%d", j))
	}
	for k := range rapid.IntRange(0, n).Draw(t, "forward") {
		src := rapid.IntRange(0, n-2).Draw(t, fmt.Sprintf("fw%d.src", k))
		dst := rapid.IntRange(src+1, n-1).Draw(t, fmt.Sprintf("fw%d.dst", k))
		edge(src, dst, fmt.Sprintf("fw%d", k))
	}
	for k := range rapid.IntRange(0, 2).Draw(t, "back") {
		src := rapid.IntRange(1, n-1).Draw(t, fmt.Sprintf("bk%d.src", k))
		dst := rapid.IntRange(1, src).Draw(t, fmt.Sprintf("bk%d.dst", k))
		edge(src, dst, fmt.Sprintf("bk%d", k))
	}
	// A reached if or approval node needs a branch edge.
	for i := 1; i < n; i++ {
		if k := c.Nodes[i].Kind; k != mIf && k != mApproval {
			continue
		}
		has := false
		for _, e := range c.Edges {
			has = has || e.Src == i
		}
		if !has {
			edge(i, rapid.IntRange(1, n-1).Draw(t, fmt.Sprintf("out%d", i)), fmt.Sprintf("out%d", i))
		}
	}
	return c
}

// graphOf renders a case as a drawn graph. An agent's scripted outcomes
// travel in its system prompt, which the scripted executor reads.
func (c *mCase) graphOf() *graph.Graph {
	b := &gb{}
	for _, n := range c.Nodes {
		switch n.Kind {
		case mStart:
			b.node(n.ID, graph.TypeStart, graph.NodeData{InitialInput: n.InitialInput})
		case mWork:
			outs, _ := json.Marshal(n.Outs)
			b.node(n.ID, graph.TypeAgent, graph.NodeData{AgentName: n.ID, SystemPrompt: string(outs)})
		case mIf:
			b.node(n.ID, graph.TypeIf, graph.NodeData{Conditions: n.Conds})
		case mApproval:
			b.node(n.ID, graph.TypeApproval, graph.NodeData{Prompt: "ok " + n.ID + "?"})
		}
	}
	for _, e := range c.Edges {
		b.edge(c.Nodes[e.Src].ID, e.Handle, c.Nodes[e.Dst].ID)
	}
	return b.build()
}

// genYAMLCase draws a YAML DAG: bash nodes with scripted outcomes (exit
// codes, JSON or plain output, delays), approvals and the odd cancel node;
// dependencies on earlier nodes with random trigger rules and `when:`
// conditions over upstream outputs, some of which fail to evaluate or to
// parse.
func genYAMLCase(t *rapid.T, maxNodes int) *mCase {
	n := rapid.IntRange(1, maxNodes).Draw(t, "nodes")
	c := &mCase{YAML: true, MaxVisits: 25, MaxParallel: rapid.SampledFrom([]int{16, 1, 3}).Draw(t, "maxParallel")}
	ancestors := make([]map[int]bool, n)
	for i := range n {
		id := fmt.Sprintf("n%d", i)
		spec := mNodeSpec{ID: id, Kind: mWork}
		switch k := rapid.IntRange(0, 24).Draw(t, id+".kind"); {
		case k == 24 && i > 0:
			spec.Kind = mCancel
			spec.Reason = "stop at " + id
		case k >= 21:
			spec.Kind = mApproval
			a := mAnswer{Approve: rapid.IntRange(0, 5).Draw(t, id+".answer") > 0}
			a.Note = rapid.SampledFrom([]string{"", "fine by me"}).Draw(t, id+".note")
			spec.Answers = []mAnswer{a}
			spec.Capture = rapid.Bool().Draw(t, id+".capture")
		}
		if spec.Kind == mWork {
			o := mOutcome{Delay: rapid.IntRange(0, 20).Draw(t, id+".delay")}
			if rapid.IntRange(0, 6).Draw(t, id+".fail") == 6 {
				o.Fail, o.Code = true, rapid.IntRange(1, 3).Draw(t, id+".code")
			} else if rapid.IntRange(0, 3).Draw(t, id+".plain") == 3 {
				o.Out = rapid.SampledFrom(mWords).Draw(t, id+".word")
			} else {
				o.Out = fmt.Sprintf(`{"n": %d, "k": "%s"}`, rapid.IntRange(0, 10).Draw(t, id+".n"),
					rapid.SampledFrom([]string{"bug", "feature"}).Draw(t, id+".k"))
			}
			spec.Outs = []mOutcome{o}
		}
		var deps []int
		ancestors[i] = map[int]bool{}
		if i > 0 {
			for k := range rapid.IntRange(0, min(i, 3)).Draw(t, id+".deps") {
				d := rapid.IntRange(0, i-1).Draw(t, fmt.Sprintf("%s.dep%d", id, k))
				if !containsInt(deps, d) {
					deps = append(deps, d)
					ancestors[i][d] = true
					for a := range ancestors[d] {
						ancestors[i][a] = true
					}
				}
			}
		}
		c.Deps = append(c.Deps, deps)
		if len(deps) > 0 {
			spec.Trigger = rapid.SampledFrom([]string{"", yamlflow.TriggerAllSuccess, yamlflow.TriggerOneSuccess,
				yamlflow.TriggerNoneFailedMinOneSuccess, yamlflow.TriggerAllDone}).Draw(t, id+".trigger")
		}
		if rapid.IntRange(0, 9).Draw(t, id+".when") >= 6 {
			spec.When = genWhen(t, id, sortedKeys(ancestors[i]), c)
		}
		c.Nodes = append(c.Nodes, spec)
	}
	for i, deps := range c.Deps {
		for _, d := range deps {
			c.Edges = append(c.Edges, mEdge{Src: d, Dst: i})
		}
	}
	return c
}

func genWhen(t *rapid.T, id string, anc []int, c *mCase) *mWhen {
	if rapid.IntRange(0, 9).Draw(t, id+".garbage") == 9 {
		return &mWhen{Garbage: rapid.SampledFrom([]string{"a is big", "1 >", "'open", "&& 1 == 1"}).Draw(t, id+".garbageText")}
	}
	num := func(label string) *int { v := rapid.IntRange(0, 10).Draw(t, label); return &v }
	w := &mWhen{}
	for o := range rapid.IntRange(1, 2).Draw(t, id+".ors") {
		var and []mCond
		for a := range rapid.IntRange(1, 2).Draw(t, fmt.Sprintf("%s.or%d", id, o)) {
			l := fmt.Sprintf("%s.or%d.and%d", id, o, a)
			if len(anc) == 0 {
				and = append(and, mCond{Left: mOperand{Num: num(l + ".l")}, Op: "<", Right: mOperand{Num: num(l + ".r")}})
				continue
			}
			ref := c.Nodes[rapid.SampledFrom(anc).Draw(t, l+".ref")].ID
			switch rapid.IntRange(0, 4).Draw(t, l+".form") {
			case 0: // numeric field, ordering
				and = append(and, mCond{Left: mOperand{Node: ref, Field: "n"},
					Op: rapid.SampledFrom([]string{"<", ">", "<=", ">="}).Draw(t, l+".op"), Right: mOperand{Num: num(l + ".v")}})
			case 1: // numeric field against a quoted number, as text
				v := fmt.Sprint(rapid.IntRange(0, 10).Draw(t, l+".v"))
				and = append(and, mCond{Left: mOperand{Node: ref, Field: "n"},
					Op: rapid.SampledFrom([]string{"==", "!="}).Draw(t, l+".op"), Right: mOperand{Str: v}})
			case 2: // string field
				and = append(and, mCond{Left: mOperand{Node: ref, Field: "k"},
					Op:    rapid.SampledFrom([]string{"==", "!="}).Draw(t, l+".op"),
					Right: mOperand{Str: rapid.SampledFrom([]string{"bug", "feature", ""}).Draw(t, l+".v")}})
			case 3: // the whole output
				and = append(and, mCond{Left: mOperand{Node: ref},
					Op:    rapid.SampledFrom([]string{"==", "!="}).Draw(t, l+".op"),
					Right: mOperand{Str: rapid.SampledFrom(mWords).Draw(t, l+".v")}})
			default: // a field compared with a quoted number, by order
				and = append(and, mCond{Left: mOperand{Node: ref, Field: "n"}, Op: ">=",
					Right: mOperand{Str: fmt.Sprint(rapid.IntRange(0, 10).Draw(t, l+".v"))}})
			}
		}
		w.Or = append(w.Or, and)
	}
	return w
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func sortedKeys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// bashOf is a work node's script: real bash runs it, the scripted
// executor interprets it.
func bashOf(o mOutcome) string {
	s := fmt.Sprintf("sleep %.4f; ", float64(o.Delay)/10000)
	if o.Fail {
		return s + fmt.Sprintf("exit %d", o.Code)
	}
	return s + "echo '" + o.Out + "'"
}

// yamlOf renders a YAML case as workflow source.
func (c *mCase) yamlOf() string {
	var b strings.Builder
	b.WriteString("name: model\ndescription: generated by the model-based test\nmutates_checkout: false\nnodes:\n")
	q := func(s string) string { j, _ := json.Marshal(s); return string(j) }
	for i, n := range c.Nodes {
		fmt.Fprintf(&b, "  - id: %s\n", n.ID)
		switch n.Kind {
		case mWork:
			fmt.Fprintf(&b, "    bash: %s\n", q(bashOf(n.Outs[0])))
		case mApproval:
			fmt.Fprintf(&b, "    approval: {message: %s, capture_response: %t}\n", q("ok "+n.ID+"?"), n.Capture)
		case mCancel:
			fmt.Fprintf(&b, "    cancel: %s\n", q(n.Reason))
		}
		if len(c.Deps[i]) > 0 {
			var ids []string
			for _, d := range c.Deps[i] {
				ids = append(ids, c.Nodes[d].ID)
			}
			fmt.Fprintf(&b, "    depends_on: [%s]\n", strings.Join(ids, ", "))
		}
		if n.Trigger != "" {
			fmt.Fprintf(&b, "    trigger_rule: %s\n", n.Trigger)
		}
		if n.When != nil {
			fmt.Fprintf(&b, "    when: %s\n", q(n.When.render()))
		}
	}
	return b.String()
}
