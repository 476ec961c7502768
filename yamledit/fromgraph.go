package yamledit

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard/switchyard/graph"
)

// Unconverted is a part of a drawn graph the YAML format cannot express:
// the graph node it concerns ("" for the whole workflow) and why.
type Unconverted struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

var slugRE = regexp.MustCompile(`[^a-z0-9]+`)

// FileName is a file name for a converted workflow: its name in lower
// case with dashes, ".yaml" (workflow.yaml for a name without letters).
func FileName(name string) string {
	s := strings.Trim(slugRE.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(s) > 60 {
		s = strings.Trim(s[:60], "-")
	}
	if s == "" {
		s = "workflow"
	}
	return s + ".yaml"
}

// yamlID makes s a node id YAML references accept.
func yamlID(s string) string {
	s = strings.Trim(regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(s, "_"), "_-")
	if s == "" || !(s[0] == '_' || s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		s = "n_" + s
	}
	return s
}

// quoteWhen writes s as a single-quoted string of the when: language.
func quoteWhen(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `'`, `\'`) + "'"
}

// FromGraph writes a drawn workflow as YAML text where the kinds map:
// agent nodes become prompt nodes, approval nodes approval nodes, if
// nodes become when: conditions on the nodes of their branches, and the
// start node the run's input ($ARGUMENTS). What cannot be expressed is
// listed (and left out) rather than guessed.
func FromGraph(name, description string, g *graph.Graph) ([]byte, []Unconverted) {
	unconv := []Unconverted{}
	note := func(node, format string, args ...any) {
		unconv = append(unconv, Unconverted{Node: node, Reason: fmt.Sprintf(format, args...)})
	}
	if g == nil {
		g = &graph.Graph{}
	}
	byID := map[string]*graph.Node{}
	for i := range g.Nodes {
		byID[g.Nodes[i].ID] = &g.Nodes[i]
	}
	// YAML ids: agent names where unique, else the graph ids.
	ids := map[string]string{}
	taken := map[string]bool{}
	for _, n := range g.Nodes {
		if n.Type != graph.TypeAgent && n.Type != graph.TypeApproval {
			continue
		}
		base := n.ID
		if n.Type == graph.TypeAgent && strings.TrimSpace(n.Data.AgentName) != "" {
			base = n.Data.AgentName
		}
		id := yamlID(base)
		for k := 2; taken[id]; k++ {
			id = fmt.Sprintf("%s_%d", yamlID(base), k)
		}
		taken[id] = true
		ids[n.ID] = id
	}

	// Execution edges by target; subagent edges cannot be converted.
	in := map[string][]graph.Edge{}
	out := map[string][]graph.Edge{}
	for _, e := range g.Edges {
		if byID[e.Source] == nil || byID[e.Target] == nil {
			continue
		}
		if e.IsSubagent() {
			note(e.Source, "subagent %q: YAML nodes cannot hand another agent to a model as a tool; left out", e.Target)
			continue
		}
		if e.SourceHandle == graph.HandleReject && byID[e.Source].Type == graph.TypeApproval {
			note(e.Source, "the reject branch to %q: a YAML approval stops the run when rejected (approval.on_reject can re-run a prompt instead); left out", e.Target)
			continue
		}
		in[e.Target] = append(in[e.Target], e)
		out[e.Source] = append(out[e.Source], e)
	}
	// Edges that close a cycle: YAML workflows are DAGs.
	back := map[string]bool{}
	state := map[string]int{}
	var visit func(id string)
	visit = func(id string) {
		state[id] = 1
		for _, e := range out[id] {
			switch state[e.Target] {
			case 0:
				visit(e.Target)
			case 1:
				back[e.ID+"\x00"+e.Source+"\x00"+e.Target] = true
				note(e.Target, "the edge back from %q closes a loop: YAML workflows have no cycles (a loop: node repeats one prompt instead); left out", e.Source)
			}
		}
		state[id] = 2
	}
	for _, n := range g.Nodes {
		if state[n.ID] == 0 {
			visit(n.ID)
		}
	}
	isBack := func(e graph.Edge) bool { return back[e.ID+"\x00"+e.Source+"\x00"+e.Target] }

	// resolve turns an edge into (dependency, condition) pairs, looking
	// through if nodes; "" dependency is the start node.
	type dep struct{ id, when string }
	var resolve func(e graph.Edge, depth int) []dep
	noted := map[string]bool{}
	noteOnce := func(node, format string, args ...any) {
		key := node + format
		if !noted[key] {
			noted[key] = true
			note(node, format, args...)
		}
	}
	resolve = func(e graph.Edge, depth int) []dep {
		src := byID[e.Source]
		switch src.Type {
		case graph.TypeAgent, graph.TypeApproval:
			return []dep{{id: ids[src.ID]}}
		case graph.TypeIf:
			if depth > 50 {
				return nil
			}
			var ins []graph.Edge
			for _, ie := range in[src.ID] {
				if !isBack(ie) {
					ins = append(ins, ie)
				}
			}
			cond := ""
			var subject string
			if len(ins) == 1 && (byID[ins[0].Source].Type == graph.TypeAgent || byID[ins[0].Source].Type == graph.TypeApproval) {
				subject = "$" + ids[ins[0].Source] + ".output"
			} else {
				noteOnce(src.ID, "the if node tests the run's input or several inputs: a when: condition can only test one node's output; its branches run unconditionally")
			}
			if subject != "" {
				var eqs []string
				ok := true
				for _, c := range src.Data.Conditions {
					if c.Operator == graph.OpContains {
						ok = false
						noteOnce(src.ID, "condition %q contains %q: when: has no contains operator; its branches run unconditionally", c.Operator, c.Value)
					}
					eqs = append(eqs, strings.ToLower(strings.TrimSpace(c.Value)))
				}
				if ok && len(eqs) > 0 {
					noteOnce(src.ID, "the if node compares case-insensitively; the when: conditions written for it compare exactly")
					if strings.HasPrefix(e.SourceHandle, graph.HandleConditionPrefix) {
						var k int
						if _, err := fmt.Sscanf(e.SourceHandle, graph.HandleConditionPrefix+"%d", &k); err == nil && k >= 0 && k < len(eqs) {
							cond = subject + " == " + quoteWhen(eqs[k])
						}
					} else if e.SourceHandle == graph.HandleFalse {
						var parts []string
						for _, v := range eqs {
							parts = append(parts, subject+" != "+quoteWhen(v))
						}
						cond = strings.Join(parts, " && ")
					}
				}
			}
			var outDeps []dep
			if len(ins) == 0 {
				ins = nil
				outDeps = append(outDeps, dep{})
			}
			for _, ie := range ins {
				for _, d := range resolve(ie, depth+1) {
					d.when = andWhen(d.when, cond)
					outDeps = append(outDeps, d)
				}
			}
			return outDeps
		}
		return []dep{{}} // start
	}

	// The nodes, in a topological order (file order breaks ties).
	type ynode struct {
		gid      string
		deps     []string
		when     string
		anyWhen  bool
		position int
	}
	var nodes []*ynode
	byY := map[string]*ynode{}
	for i, n := range g.Nodes {
		switch n.Type {
		case graph.TypeAgent, graph.TypeApproval:
		case graph.TypeStart:
			if strings.TrimSpace(n.Data.InitialInput) != "" {
				note(n.ID, "the start node's initial input is not part of a YAML workflow: give it as the run's input ($ARGUMENTS)")
			}
			continue
		case graph.TypeIf:
			continue
		default:
			note(n.ID, "node type %q has no YAML kind; left out", n.Type)
			continue
		}
		yn := &ynode{gid: n.ID, position: i}
		seen := map[string]bool{}
		var conds []string
		uncond := false
		for _, e := range in[n.ID] {
			if isBack(e) {
				continue
			}
			for _, d := range resolve(e, 0) {
				if d.id != "" && !seen[d.id] {
					seen[d.id] = true
					yn.deps = append(yn.deps, d.id)
				}
				if d.when == "" {
					uncond = true
				} else {
					conds = append(conds, d.when)
					yn.anyWhen = true
				}
			}
		}
		if !uncond && len(conds) > 0 {
			yn.when = strings.Join(conds, " || ")
		}
		nodes = append(nodes, yn)
		byY[ids[n.ID]] = yn
	}
	order := topo(nodes, func(n *ynode) string { return ids[n.gid] }, func(n *ynode) []string { return n.deps })

	if len(order) == 0 {
		note("", "the graph has no agent or approval nodes: the YAML workflow needs at least one node")
	}
	str := func(s string) *yaml.Node { return strNode(s) }
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for _, yn := range order {
		n := byID[yn.gid]
		id := ids[n.ID]
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{str("id"), str(id)}}
		add := func(k string, v *yaml.Node) { m.Content = append(m.Content, str(k), v) }
		if len(yn.deps) > 0 {
			ds := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
			for _, d := range yn.deps {
				ds.Content = append(ds.Content, str(d))
			}
			add("depends_on", ds)
		}
		if yn.when != "" {
			add("when", str(yn.when))
		}
		if len(yn.deps) > 1 {
			for _, d := range yn.deps {
				if byY[d] != nil && byY[d].anyWhen {
					add("trigger_rule", str("none_failed_min_one_success"))
					break
				}
			}
		}
		switch n.Type {
		case graph.TypeAgent:
			d := n.Data
			prompt := d.UserPrompt
			if strings.TrimSpace(prompt) == "" {
				switch len(yn.deps) {
				case 0:
					prompt = "$ARGUMENTS"
				case 1:
					prompt = "$" + yn.deps[0] + ".output"
				default:
					prompt = "{{PREVIOUS_OUTPUT}}"
				}
				note(n.ID, "the agent has no user prompt: the YAML prompt is its input (%s)", prompt)
			}
			add("prompt", str(prompt))
			if d.SystemPrompt != "" {
				add("systemPrompt", str(d.SystemPrompt))
			}
			if d.Model != "" {
				add("model", str(d.Model))
			}
			if d.ReasoningEffort != "" {
				add("effort", str(d.ReasoningEffort))
			}
			if d.Tools != nil && d.Tools.WebSearch {
				note(n.ID, "web search: YAML prompt nodes have no web search tool; left out")
			}
		case graph.TypeApproval:
			msg := strings.TrimSpace(n.Data.Prompt)
			if msg == "" {
				msg = "Approve?"
			}
			add("approval", &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{str("message"), str(msg)}})
		}
		seq.Content = append(seq.Content, m)
	}
	if len(seq.Content) == 0 {
		seq.Style = yaml.FlowStyle
	}
	if strings.TrimSpace(name) == "" {
		name = "Converted workflow"
	}
	if strings.TrimSpace(description) == "" {
		description = "Converted from the drawn workflow " + name + "."
	}
	doc := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		str("name"), str(name), str("description"), str(description), str("nodes"), seq}}
	for _, s := range []*yaml.Node{doc.Content[1], doc.Content[3]} {
		if literalOK(s.Value) {
			s.Style = yaml.LiteralStyle
		}
	}
	markLiterals(seq)
	text, err := encode(doc)
	if err != nil {
		note("", "cannot write YAML: %v", err)
		return nil, unconv
	}
	sort.SliceStable(unconv, func(i, j int) bool { return unconv[i].Node < unconv[j].Node })
	return []byte(text + "\n"), unconv
}

// markLiterals writes multi-line strings as literal blocks.
func markLiterals(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && literalOK(n.Value) {
		n.Style = yaml.LiteralStyle
	}
	for _, c := range n.Content {
		markLiterals(c)
	}
}

// andWhen is a && b in disjunctive form (the when: language has no
// parentheses; && binds tighter than ||).
func andWhen(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	var terms []string
	for _, ta := range strings.Split(a, " || ") {
		for _, tb := range strings.Split(b, " || ") {
			terms = append(terms, ta+" && "+tb)
		}
	}
	return strings.Join(terms, " || ")
}

// topo orders items so every item follows its dependencies; ties keep
// the input order. Items on a cycle (none after back edges are dropped)
// come last in input order.
func topo[T any](items []T, id func(T) string, deps func(T) []string) []T {
	index := map[string]int{}
	for i, it := range items {
		index[id(it)] = i
	}
	done := make([]bool, len(items))
	var out []T
	for len(out) < len(items) {
		progress := false
		for i, it := range items {
			if done[i] {
				continue
			}
			ready := true
			for _, d := range deps(it) {
				if j, ok := index[d]; ok && !done[j] {
					ready = false
					break
				}
			}
			if ready {
				done[i] = true
				out = append(out, it)
				progress = true
				break
			}
		}
		if !progress {
			for i, it := range items {
				if !done[i] {
					done[i] = true
					out = append(out, it)
				}
			}
		}
	}
	return out
}
