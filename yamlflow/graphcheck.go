package yamlflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// parseOutputFormat converts output_format to JSON data and compiles it, so
// a schema that could never validate anything fails the load, not the run.
func (p *parser) parseOutputFormat(n *Node, f field, v *yaml.Node) {
	if isNull(v) {
		return
	}
	m := deref(v)
	if m.Kind != yaml.MappingNode {
		p.errorf(f.line, f.node, f.name, CodeBadOutputFormat, "output_format must be a JSON Schema object (a mapping), not %s", describe(m))
		return
	}
	val, err := toValue(m, new(int(maxValueNodes)), 0)
	if err != nil {
		p.errorf(f.line, f.node, f.name, CodeBadOutputFormat, "%v", err)
		return
	}
	schema := val.(map[string]any)
	if bad := nonJSONNumber(schema); bad != "" {
		p.errorf(f.line, f.node, f.name, CodeBadOutputFormat, "not valid JSON: %s", bad)
		return
	}
	n.OutputFormat = schema
	sch, err := CompileOutputFormat(schema)
	if err != nil {
		p.errorf(f.line, f.node, f.name, CodeBadOutputFormat, "invalid JSON Schema: %v", err)
		return
	}
	n.outputSchema = sch
}

// nonJSONNumber finds NaN/Inf values, which JSON cannot hold.
func nonJSONNumber(v any) string {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Sprintf("%v is not a JSON number", x)
		}
	case []any:
		for _, e := range x {
			if s := nonJSONNumber(e); s != "" {
				return s
			}
		}
	case map[string]any:
		for _, e := range x {
			if s := nonJSONNumber(e); s != "" {
				return s
			}
		}
	}
	return ""
}

// noLoader refuses every $ref outside the schema itself: a workflow file
// must not make the server read local files or fetch URLs.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q is not allowed in output_format", url)
}

const outputFormatURL = "urn:switchyard:output_format"

// CompileOutputFormat compiles a JSON Schema given as plain Go data (as in
// Node.OutputFormat). External $refs are refused.
func CompileOutputFormat(schema map[string]any) (*jsonschema.Schema, error) {
	// The compiler keeps references into the document; give it a private
	// JSON round-tripped copy so later edits of OutputFormat cannot change it.
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("output_format is not JSON: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("output_format is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource(outputFormatURL, doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile(outputFormatURL)
	if err != nil {
		return nil, errors.New(oneLine(err.Error()))
	}
	return sch, nil
}

func oneLine(s string) string {
	fields := strings.Fields(s)
	return strings.Join(fields, " ")
}

// outputRefRE finds $id.output references in text fields.
var outputRefRE = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_-]*)\.output\b`)

// outputFieldRefRE finds $id.output.field references (the field as the
// engine reads it: a letter or '_', then letters, digits and '_').
var outputFieldRefRE = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_-]*)\.output\.([A-Za-z_][A-Za-z0-9_]*)`)

// checkGraph runs the checks that need every node: ids, edges, cycles and
// references.
func (p *parser) checkGraph(wf *Workflow) {
	first := map[string]*Node{}
	for _, n := range wf.Nodes {
		if n.ID == "" {
			continue
		}
		if prev, dup := first[n.ID]; dup {
			p.errorf(n.Line, n.ID, "id", CodeDuplicateID, "duplicate node id (first defined at line %d)", prev.Line)
			continue
		}
		first[n.ID] = n
	}
	ids := make([]string, 0, len(first))
	for _, n := range wf.Nodes {
		if first[n.ID] == n {
			ids = append(ids, n.ID)
		}
	}

	for _, n := range wf.Nodes {
		seen := map[string]bool{}
		for i, dep := range n.DependsOn {
			line := n.Line
			if i < len(n.depLines) {
				line = n.depLines[i]
			}
			switch {
			case seen[dep]:
				p.warnf(line, n.ID, "depends_on", CodeDuplicateDependency, "%q is listed twice", dep)
			case first[dep] == nil:
				msg := fmt.Sprintf("depends on unknown node %q", dep)
				if s := suggest(dep, ids); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				}
				p.errorf(line, n.ID, "depends_on", CodeUnknownDependency, "%s", msg)
			}
			seen[dep] = true
		}
	}

	p.checkCycles(wf, first)

	for _, n := range wf.Nodes {
		p.checkWhenRefs(n, first, ids)
		p.checkOutputRefs(n, first)
	}
}

// checkCycles reports each dependency cycle once, as "a -> b -> a".
func (p *parser) checkCycles(wf *Workflow, byID map[string]*Node) {
	const (
		white = iota
		grey
		black
	)
	color := map[*Node]int{}
	var stack []*Node
	var visit func(n *Node)
	visit = func(n *Node) {
		color[n] = grey
		stack = append(stack, n)
		for _, dep := range n.DependsOn {
			d := byID[dep]
			if d == nil {
				continue
			}
			switch color[d] {
			case white:
				visit(d)
			case grey:
				// Back edge: the cycle is the stack from d to n, then d again.
				// Edges point from a node to what it depends on; print them in
				// that direction ("a -> b" = a depends on b).
				start := 0
				for i, s := range stack {
					if s == d {
						start = i
					}
				}
				names := make([]string, 0, len(stack)-start+1)
				for _, s := range stack[start:] {
					names = append(names, s.ID)
				}
				names = append(names, d.ID)
				p.errorf(d.fieldLine("depends_on"), d.ID, "depends_on", CodeDependencyCycle, "dependency cycle: %s", strings.Join(names, " -> "))
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
	}
	for _, n := range wf.Nodes {
		if byID[n.ID] == n && color[n] == white {
			visit(n)
		}
	}
}

// ancestors returns every node n transitively depends on.
func ancestors(n *Node, byID map[string]*Node) map[string]bool {
	out := map[string]bool{}
	work := append([]string(nil), n.DependsOn...)
	for len(work) > 0 {
		id := work[len(work)-1]
		work = work[:len(work)-1]
		if out[id] {
			continue
		}
		out[id] = true
		if d := byID[id]; d != nil {
			work = append(work, d.DependsOn...)
		}
	}
	return out
}

func (p *parser) checkWhenRefs(n *Node, byID map[string]*Node, ids []string) {
	if n.WhenExpr == nil {
		return
	}
	var up map[string]bool
	line := n.fieldLine("when")
	for _, r := range n.WhenExpr.Refs() {
		if byID[r.NodeID] == nil {
			msg := fmt.Sprintf("condition %q refers to unknown node %q", n.When, r.NodeID)
			if s := suggest(r.NodeID, ids); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			p.errorf(line, n.ID, "when", CodeUnknownWhenRef, "%s", msg)
			continue
		}
		if up == nil {
			up = ancestors(n, byID)
		}
		if !up[r.NodeID] {
			p.warnf(line, n.ID, "when", CodeWhenRefNotUpstream, "condition refers to %q, which this node does not depend on (directly or indirectly); its output may not exist yet when the condition is checked", r.NodeID)
		}
	}
}

func (p *parser) checkOutputRefs(n *Node, byID map[string]*Node) {
	texts := []struct{ field, text string }{
		{"prompt", n.Prompt}, {"bash", n.Bash}, {"systemPrompt", n.SystemPrompt}, {"cancel", n.CancelReason},
	}
	if !n.ScriptNamed {
		texts = append(texts, struct{ field, text string }{"script", n.Script})
	}
	if n.Loop != nil {
		texts = append(texts,
			struct{ field, text string }{"loop.prompt", n.Loop.Prompt},
			struct{ field, text string }{"loop.until_bash", n.Loop.UntilBash},
			struct{ field, text string }{"loop.gate_message", n.Loop.GateMessage})
	}
	if n.Approval != nil {
		texts = append(texts, struct{ field, text string }{"approval.message", n.Approval.Message})
		if n.Approval.OnReject != nil {
			texts = append(texts, struct{ field, text string }{"approval.on_reject.prompt", n.Approval.OnReject.Prompt})
		}
	}
	for _, t := range texts {
		reported := map[string]bool{}
		// In prompts (Archon's rule) an unknown reference outside code is a
		// load error: it is a typo that would reach the model as "". Inside
		// inline or fenced code, and in scripts, it may be literal text.
		// A field reference ($id.output.field) of an unknown node is an
		// error everywhere but in a prompt's code: nothing in a shell
		// script looks like it by accident, and at run time it would
		// quietly become "" where a value was expected.
		prose := promptFields[t.field]
		live := t.text
		switch {
		case prose:
			live = withoutCode(t.text)
		case t.field == "bash" || t.field == "loop.until_bash":
			live = withoutLineComments(t.text, "#")
		case t.field == "script":
			live = withoutLineComments(t.text, "#", "//")
		}
		for _, m := range outputFieldRefRE.FindAllStringSubmatch(live, -1) {
			id := m[1]
			if byID[id] != nil || reported[id] {
				continue
			}
			reported[id] = true
			p.errorf(n.fieldLine(t.field), n.ID, t.field, CodeUnknownOutputRef, "$%s.output.%s reads a field of unknown node %q (no node has that id)", id, m[2], id)
		}
		if prose {
			for _, m := range outputRefRE.FindAllStringSubmatch(live, -1) {
				id := m[1]
				if byID[id] != nil || reported[id] {
					continue
				}
				reported[id] = true
				p.errorf(n.fieldLine(t.field), n.ID, t.field, CodeUnknownOutputRef, "$%s.output refers to unknown node %q (no node has that id)", id, id)
			}
		}
		for _, m := range outputRefRE.FindAllStringSubmatch(t.text, -1) {
			id := m[1]
			if byID[id] != nil || reported[id] {
				continue
			}
			reported[id] = true
			p.warnf(n.fieldLine(t.field), n.ID, t.field, CodeUnknownOutputRef, "$%s.output refers to unknown node %q; it will be replaced by an empty string", id, id)
		}
	}
}

// promptFields are the text fields sent to a model as the user's turn:
// in them an unknown $id.output outside Markdown code is a load error.
var promptFields = map[string]bool{"prompt": true, "loop.prompt": true, "approval.on_reject.prompt": true}

// withoutLineComments blanks the lines of s that are whole-line comments
// (after indentation, they start with one of prefixes): a comment that
// explains "$node.output.field" is not a reference.
func withoutLineComments(s string, prefixes ...string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, line := range lines {
		t := strings.TrimLeft(line, " \t")
		for _, p := range prefixes {
			if strings.HasPrefix(t, p) {
				lines[i] = "\n"
				break
			}
		}
	}
	return strings.Join(lines, "")
}

// withoutCode blanks Markdown code in s: fenced blocks (``` or ~~~) and
// inline spans (`...`, any number of backticks).
func withoutCode(s string) string {
	var b strings.Builder
	lines := strings.SplitAfter(s, "\n")
	fence := ""
	for _, line := range lines {
		t := strings.TrimLeft(line, " \t")
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			b.WriteString("\n")
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			b.WriteString("\n")
			continue
		}
		b.WriteString(withoutInlineCode(line))
	}
	return b.String()
}

func withoutInlineCode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '`' {
			b.WriteByte(s[i])
			i++
			continue
		}
		n := 0
		for i+n < len(s) && s[i+n] == '`' {
			n++
		}
		ticks := s[i : i+n]
		end := strings.Index(s[i+n:], ticks)
		if end < 0 {
			b.WriteString(s[i:]) // an unclosed span is text
			break
		}
		i += n + end + n
		b.WriteByte(' ')
	}
	return b.String()
}
