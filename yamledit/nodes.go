package yamledit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard/switchyard/yamlflow"
)

func validKind(k string) bool {
	for _, kind := range yamlflow.Kinds {
		if string(kind) == k {
			return true
		}
	}
	return false
}

func kindNames() string {
	s := make([]string, len(yamlflow.Kinds))
	for i, k := range yamlflow.Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// NodeBody is the default body of a new node of kind k (what addNode
// writes when the edit has no value).
func NodeBody(k string) json.RawMessage {
	switch yamlflow.Kind(k) {
	case yamlflow.KindCommand:
		return json.RawMessage(`"my-command"`)
	case yamlflow.KindPrompt:
		return json.RawMessage(`"Describe the task."`)
	case yamlflow.KindBash:
		return json.RawMessage(`"echo hello"`)
	case yamlflow.KindScript:
		return json.RawMessage(`"console.log('hello')"`)
	case yamlflow.KindLoop:
		return json.RawMessage(`{"prompt":"Work on the task. Say DONE when finished.","until":"DONE","max_iterations":5}`)
	case yamlflow.KindApproval:
		return json.RawMessage(`{"message":"Approve?"}`)
	case yamlflow.KindCancel:
		return json.RawMessage(`"Cancelled."`)
	}
	return nil
}

func (d *Doc) addNode(e Edit, fail func(int, string, ...any) error) error {
	if !nodeIDRE.MatchString(e.Node) {
		return fail(0, "the new node's id must be letters, digits, '_' and '-', starting with a letter or '_'")
	}
	if !validKind(e.Kind) {
		return fail(0, "kind %q is not one of %s", e.Kind, kindNames())
	}
	seq, err := d.nodesSeq()
	if err != nil {
		return fail(0, "%v", err)
	}
	if findNode(seq, e.Node) >= 0 {
		return fail(0, "a node with id %q already exists", e.Node)
	}
	raw := e.Value
	if len(raw) == 0 {
		raw = NodeBody(e.Kind)
	}
	body, err := ValueNode(raw)
	if err != nil {
		return fail(0, "%v", err)
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{strNode("id"), strNode(e.Node)}}
	if len(e.DependsOn) > 0 {
		deps := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
		for _, dep := range e.DependsOn {
			if findNode(seq, dep) < 0 {
				return fail(0, "dependsOn: no node with id %q", dep)
			}
			deps.Content = append(deps.Content, strNode(dep))
		}
		m.Content = append(m.Content, strNode("depends_on"), deps)
	}
	if e.Kind == string(yamlflow.KindScript) && body.Kind == yaml.ScalarNode {
		m.Content = append(m.Content, strNode("runtime"), strNode(yamlflow.RuntimeBun))
	}
	m.Content = append(m.Content, strNode(e.Kind), body)

	if err := checkEditable(seq); err != nil {
		return fail(seq.Line, "%v", err)
	}
	if seq.Style&yaml.FlowStyle != 0 || len(seq.Content) == 0 {
		// `nodes: []` or a flow list: write the list again in block style.
		top := d.topMap()
		i, _ := lookup(top, "nodes")
		ns := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: append(append([]*yaml.Node{}, seq.Content...), m)}
		return d.replaceValue([]*yaml.Node{top}, top, i, ns, fail)
	}
	last := seq.Content[len(seq.Content)-1]
	if err := checkEditable(last); err != nil {
		return fail(last.Line, "%v", err)
	}
	dash := seq.Column - 1
	itemIndent := last.Column - 1 // where the item's keys start
	if itemIndent <= dash {
		itemIndent = dash + 2
	}
	endLine := d.t.lineOf(d.t.nodeEnd(last, dash))
	at := d.t.lineEnd(endLine)
	// Separate it by a blank line when the last two items are.
	sep := "\n"
	if len(seq.Content) >= 2 {
		prev := seq.Content[len(seq.Content)-2]
		pe := d.t.lineOf(d.t.nodeEnd(prev, dash))
		if pe+1 < last.Line && d.t.blank(pe+1) {
			sep = "\n\n"
		}
	}
	block, err := renderBlock(m, itemIndent)
	if err != nil {
		return fail(0, "%v", err)
	}
	block = strings.Repeat(" ", dash) + "-" + strings.Repeat(" ", itemIndent-dash-1) + block[itemIndent:]
	seq.Content = append(seq.Content, m)
	return d.splice(at, at, sep+block, last.Line, fail)
}

func (d *Doc) deleteNode(id string, fail func(int, string, ...any) error) error {
	seq, err := d.nodesSeq()
	if err != nil {
		return fail(0, "%v", err)
	}
	i := findNode(seq, id)
	if i < 0 {
		return fail(0, "no node with id %q", id)
	}
	if len(seq.Content) == 1 {
		return fail(seq.Content[0].Line, "it is the workflow's only node; a workflow needs at least one")
	}
	// Other nodes stop waiting for it first.
	for _, item := range seq.Content {
		if item.Kind != yaml.MappingNode {
			continue
		}
		if _, deps := lookup(item, "depends_on"); deps != nil && deps.Kind == yaml.SequenceNode {
			for _, dep := range deps.Content {
				if dep.Kind == yaml.ScalarNode && strings.TrimSpace(dep.Value) == id {
					_, v := lookup(item, "id")
					if err := d.removeDep([]*yaml.Node{d.topMap(), seq, item}, item, id, fail); err != nil {
						return fmt.Errorf("removing it from the depends_on of %q: %w", v.Value, err)
					}
					return d.deleteNode(id, fail) // positions changed: start again
				}
			}
		}
	}
	item := seq.Content[i]
	if err := checkEditable(seq, item); err != nil {
		return fail(item.Line, "%v", err)
	}
	if seq.Style&yaml.FlowStyle != 0 {
		start, end := d.t.nodeOff(seq), d.t.nodeEnd(seq, 0)
		seq.Content = append(seq.Content[:i:i], seq.Content[i+1:]...)
		return d.rewriteFlow(seq, start, end, fail)
	}
	dash := seq.Column - 1
	first := item.Line
	if before := d.t.src[d.t.lineStart(first):d.t.nodeOff(item)]; !bytes.Contains(before, []byte("-")) {
		first-- // `-` alone on the line above
	}
	last := d.t.lineOf(d.t.nodeEnd(item, dash))
	start, end := d.t.lineStart(first), d.t.lineStart(last+1)
	// Do not leave two blank lines where the node was, nor one after
	// `nodes:`.
	switch {
	case last+1 <= d.t.lines() && d.t.blank(last+1) && (i == 0 || d.t.blank(first-1)):
		end = d.t.lineStart(last + 2)
	case first > 1 && d.t.blank(first-1) && (last+1 > d.t.lines() || d.t.blank(last+1)):
		start = d.t.lineStart(first - 1)
	}
	seq.Content = append(seq.Content[:i:i], seq.Content[i+1:]...)
	return d.splice(start, end, "", item.Line, fail)
}

func (d *Doc) addDep(chain []*yaml.Node, m *yaml.Node, dep string, fail func(int, string, ...any) error) error {
	i, deps := lookup(m, "depends_on")
	if deps == nil || deps.Kind == yaml.ScalarNode && deps.ShortTag() == "!!null" {
		v := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle, Content: []*yaml.Node{strNode(dep)}}
		if deps != nil {
			return d.replaceValue(chain, m, i, v, fail)
		}
		idIdx, _ := lookup(m, "id")
		return d.insertPair(chain, m, "depends_on", v, idIdx, fail)
	}
	if deps.Kind != yaml.SequenceNode {
		return fail(deps.Line, "depends_on is not a list")
	}
	for _, c := range deps.Content {
		if c.Kind == yaml.ScalarNode && strings.TrimSpace(c.Value) == dep {
			return nil // already there
		}
	}
	if err := checkEditable(deps); err != nil {
		return fail(deps.Line, "%v", err)
	}
	if deps.Style&yaml.FlowStyle != 0 || len(deps.Content) == 0 || flowAncestor(chain) != nil {
		nv := *deps
		nv.Content = append(append([]*yaml.Node{}, deps.Content...), strNode(dep))
		return d.replaceValue(chain, m, i, &nv, fail)
	}
	last := deps.Content[len(deps.Content)-1]
	dash := deps.Column - 1
	at := d.t.lineEnd(d.t.lineOf(d.t.nodeEnd(last, dash)))
	s, err := encode(strNode(dep))
	if err != nil {
		return fail(deps.Line, "%v", err)
	}
	gap := last.Column - deps.Column - 1
	if gap < 1 {
		gap = 1
	}
	deps.Content = append(deps.Content, strNode(dep))
	return d.splice(at, at, "\n"+strings.Repeat(" ", dash)+"-"+strings.Repeat(" ", gap)+s, last.Line, fail)
}

func (d *Doc) removeDep(chain []*yaml.Node, m *yaml.Node, dep string, fail func(int, string, ...any) error) error {
	i, deps := lookup(m, "depends_on")
	if deps == nil || deps.Kind != yaml.SequenceNode {
		return nil
	}
	j := -1
	for k, c := range deps.Content {
		if c.Kind == yaml.ScalarNode && strings.TrimSpace(c.Value) == dep {
			j = k
			break
		}
	}
	if j < 0 {
		return nil // not there
	}
	if err := checkEditable(deps); err != nil {
		return fail(deps.Line, "%v", err)
	}
	if len(deps.Content) == 1 {
		return d.deletePair(chain, m, i, fail)
	}
	if deps.Style&yaml.FlowStyle != 0 || flowAncestor(chain) != nil {
		nv := *deps
		nv.Content = append(append([]*yaml.Node{}, deps.Content[:j]...), deps.Content[j+1:]...)
		return d.replaceValue(chain, m, i, &nv, fail)
	}
	item := deps.Content[j]
	dash := deps.Column - 1
	if d.t.indent(item.Line) != dash {
		return fail(item.Line, "cannot remove the depends_on entry in place; edit the text instead")
	}
	last := d.t.lineOf(d.t.nodeEnd(item, dash))
	deps.Content = append(deps.Content[:j:j], deps.Content[j+1:]...)
	return d.splice(d.t.lineStart(item.Line), d.t.lineStart(last+1), "", item.Line, fail)
}

func (d *Doc) rename(id, newID string, fail func(int, string, ...any) error) error {
	if !nodeIDRE.MatchString(newID) {
		return fail(0, "newId must be letters, digits, '_' and '-', starting with a letter or '_'")
	}
	m, chain, line, err := d.target(id)
	if err != nil || id == "" {
		if err == nil {
			err = fmt.Errorf("node is required")
		}
		return fail(line, "%v", err)
	}
	if id == newID {
		return nil
	}
	seq, _ := d.nodesSeq()
	if findNode(seq, newID) >= 0 {
		return fail(line, "a node with id %q already exists", newID)
	}
	i, _ := lookup(m, "id")
	if err := d.replaceValue(chain, m, i, strNode(newID), fail); err != nil {
		return err
	}
	// depends_on entries follow, one at a time (positions move).
	for {
		seq, _ := d.nodesSeq()
		done := true
		for _, item := range seq.Content {
			if item.Kind != yaml.MappingNode {
				continue
			}
			_, deps := lookup(item, "depends_on")
			if deps == nil || deps.Kind != yaml.SequenceNode {
				continue
			}
			for j, c := range deps.Content {
				if c.Kind == yaml.ScalarNode && strings.TrimSpace(c.Value) == id {
					ch := []*yaml.Node{d.topMap(), seq, item, deps}
					if err := d.replaceItem(ch, deps, j, strNode(newID), fail); err != nil {
						return err
					}
					done = false
					break
				}
			}
			if !done {
				break
			}
		}
		if done {
			return nil
		}
	}
}

// replaceItem replaces scalar item j of sequence s.
func (d *Doc) replaceItem(chain []*yaml.Node, s *yaml.Node, j int, v *yaml.Node, fail func(int, string, ...any) error) error {
	old := s.Content[j]
	if err := checkEditable(old); err != nil {
		return fail(old.Line, "%v", err)
	}
	if f := flowAncestor(chain); f != nil {
		start, end := d.t.nodeOff(f), d.t.nodeEnd(f, 0)
		s.Content[j] = v
		return d.rewriteFlow(f, start, end, fail)
	}
	start, end := d.t.nodeOff(old), d.t.nodeEnd(old, s.Column-1)
	out, err := renderScalar(v, 0, old)
	if err != nil {
		return fail(old.Line, "%v", err)
	}
	s.Content[j] = v
	return d.splice(start, end, out, old.Line, fail)
}
