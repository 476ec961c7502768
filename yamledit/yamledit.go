// Package yamledit changes YAML workflow files the way a person would:
// an edit (set a field, add or delete a node, add or remove a dependency,
// rename a node) replaces only the bytes of the YAML nodes it changes, so
// comments, key order, quoting, indentation and blank lines of everything
// else stay as they were, and a one-field change is a one-line diff.
//
// Every edit is applied twice: to the parsed yaml.v3 document tree, and as
// a splice of the original text (positions from yaml.v3's Line/Column,
// ends found by scanning the text). The spliced text is parsed again and
// must give the edited tree; when it does not (unusual layouts: anchors,
// aliases, odd indentation), the edit fails with an error instead of
// writing something else.
package yamledit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard/switchyard/yamlflow"
)

// Edit operations.
const (
	OpSet              = "set"              // node, field, value (null removes the field)
	OpUnset            = "unset"            // node, field
	OpAddNode          = "addNode"          // node (the new id), kind, value (the kind's body), dependsOn
	OpDeleteNode       = "deleteNode"       // node; also removed from every depends_on
	OpAddDependency    = "addDependency"    // node, dependency
	OpRemoveDependency = "removeDependency" // node, dependency
	OpRenameNode       = "renameNode"       // node, newId; depends_on entries follow
	// OpRestoreLines puts back exact text: from line on, the lines old
	// are replaced by text, byte for byte. Inverse writes it where no
	// structured edit gives the text back exactly (a deleted node, a
	// removed field with its comments and blank line, a value spelled in
	// a way JSON cannot carry). It applies only where old is still the
	// text at line: an edit computed from one text, not a way to write
	// any text (the server refuses it; a client saves the source instead).
	OpRestoreLines = "restoreLines" // line, old, text
)

// Edit is one change to a workflow file.
type Edit struct {
	Op string `json:"op"`
	// Node is the id of the node the edit is about; "" with set/unset
	// means the workflow's top level (name, description, model, ...).
	Node string `json:"node,omitempty"`
	// Field is a dotted path inside the node, e.g. "prompt",
	// "retry.max_attempts", "approval.on_reject.prompt".
	Field string `json:"field,omitempty"`
	// Value is a JSON value: set's new value, addNode's body of the kind
	// (a string for command, prompt, bash, script and cancel, an object for
	// loop and approval).
	Value json.RawMessage `json:"value,omitempty"`
	// Kind is addNode's node kind.
	Kind string `json:"kind,omitempty"`
	// DependsOn are addNode's dependencies.
	DependsOn []string `json:"dependsOn,omitempty"`
	// Dependency is the other end of addDependency/removeDependency: the
	// node Node waits for.
	Dependency string `json:"dependency,omitempty"`
	// NewID is renameNode's new id.
	NewID string `json:"newId,omitempty"`
	// After is, for a set that adds a field, the key of the mapping it is
	// added to that it goes right after ("": at the end, or for the top
	// level before `nodes:`); a set of a field that exists ignores it. It
	// lets an undo put a removed field back where it was (Inverse).
	After string `json:"after,omitempty"`
	// Line is restoreLines' first line (1-based; one past the last line
	// inserts at the end of a file that ends with a line break).
	Line int `json:"line,omitempty"`
	// Old is the exact text restoreLines replaces: whole lines from Line
	// on, line endings included ("": nothing, an insertion before Line).
	Old string `json:"old,omitempty"`
	// Text is the exact text restoreLines puts in their place: whole
	// lines, line endings included.
	Text string `json:"text,omitempty"`
}

// Set is an edit setting field of node to value (any JSON-encodable value).
func Set(node, field string, value any) Edit {
	raw, _ := json.Marshal(value)
	return Edit{Op: OpSet, Node: node, Field: field, Value: raw}
}

// Error is an edit that cannot be applied. It names the edit, the node,
// the field and the line.
type Error struct {
	Index int // 0-based place in the list of edits
	Op    string
	Node  string
	Field string
	Line  int
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "edit %d (%s)", e.Index+1, e.Op)
	if e.Node != "" {
		fmt.Fprintf(&b, ": node %q", e.Node)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// ErrParse wraps errors of text that is not a YAML mapping document.
var ErrParse = errors.New("not an editable YAML workflow")

// Doc is a workflow file being edited.
type Doc struct {
	t    *text
	root *yaml.Node // the document node
}

// Parse reads a workflow file for editing: it must be one YAML document
// whose top level is a mapping.
func Parse(src []byte) (*Doc, error) {
	if len(src) > yamlflow.MaxFileSize {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrParse, yamlflow.MaxFileSize)
	}
	root, err := decode(src)
	if err != nil {
		return nil, err
	}
	return &Doc{t: newText(src), root: root}, nil
}

func decode(src []byte) (doc *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, fmt.Errorf("%w: YAML parser failed: %v", ErrParse, r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var d yaml.Node
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrParse, err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: more than one YAML document", ErrParse)
	}
	if len(d.Content) != 1 || d.Content[0].Kind != yaml.MappingNode || d.Content[0].Style&yaml.FlowStyle != 0 {
		return nil, fmt.Errorf("%w: the top level must be a block mapping (name:, description:, nodes:)", ErrParse)
	}
	return &d, nil
}

// Bytes is the current text.
func (d *Doc) Bytes() []byte { return d.t.src }

// Apply applies edits to src in order; an error leaves nothing applied.
func Apply(src []byte, edits []Edit) ([]byte, error) {
	d, err := Parse(src)
	if err != nil {
		return nil, err
	}
	for i, e := range edits {
		if err := d.Apply(e); err != nil {
			var ee *Error
			if errors.As(err, &ee) {
				ee.Index = i
			}
			return nil, err
		}
	}
	return d.Bytes(), nil
}

// Apply applies one edit. On error d is unchanged.
func (d *Doc) Apply(e Edit) error {
	fail := func(line int, format string, args ...any) error {
		return &Error{Op: e.Op, Node: e.Node, Field: e.Field, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	// An id two nodes share names either of them: an edit by id could
	// land on the wrong one (findNode takes the first).
	if line, err := d.duplicateID(); err != nil {
		return fail(line, "%v", err)
	}
	// So does a key a mapping holds twice: the edit would change the
	// first, and the loader refuses the file either way.
	if line, err := d.duplicateKey(); err != nil {
		return fail(line, "%v", err)
	}
	saved := *d
	err := d.apply(e, fail)
	if err != nil {
		*d = saved
		var ee *Error
		if !errors.As(err, &ee) {
			err = fail(0, "%v", err)
		}
	}
	return err
}

const opNames = "set, unset, addNode, deleteNode, addDependency, removeDependency, renameNode, restoreLines"

var (
	fieldPartRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
	nodeIDRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
)

func (d *Doc) apply(e Edit, fail func(int, string, ...any) error) error {
	switch e.Op {
	case OpSet, OpUnset:
		path := strings.Split(e.Field, ".")
		for _, p := range path {
			if !fieldPartRE.MatchString(p) {
				return fail(0, "a field is a dotted path of names such as prompt or retry.max_attempts")
			}
		}
		if e.Node != "" && path[0] == "id" {
			return fail(0, "use renameNode to change an id")
		}
		if e.Node == "" && path[0] == "nodes" {
			return fail(0, "nodes are changed with addNode and deleteNode")
		}
		var v *yaml.Node
		if e.Op == OpSet {
			if len(e.Value) == 0 {
				return fail(0, "set needs a value (null removes the field)")
			}
			var err error
			if v, err = ValueNode(e.Value); err != nil {
				return fail(0, "%v", err)
			}
			if v.ShortTag() == "!!null" {
				v = nil
			}
		}
		m, chain, line, err := d.target(e.Node)
		if err != nil {
			return fail(line, "%v", err)
		}
		return d.setPath(chain, m, path, v, e.After, fail)
	case OpAddNode:
		return d.addNode(e, fail)
	case OpDeleteNode:
		return d.deleteNode(e.Node, fail)
	case OpAddDependency, OpRemoveDependency:
		if e.Dependency == "" {
			return fail(0, "dependency is required: the id of the node %q waits for", e.Node)
		}
		m, chain, line, err := d.target(e.Node)
		if err != nil || e.Node == "" {
			if err == nil {
				err = errors.New("node is required")
			}
			return fail(line, "%v", err)
		}
		if e.Op == OpAddDependency {
			if e.Dependency == e.Node {
				return fail(line, "a node cannot depend on itself")
			}
			if _, _, _, err := d.target(e.Dependency); err != nil {
				return fail(line, "dependency: %v", err)
			}
			return d.addDep(chain, m, e.Dependency, fail)
		}
		return d.removeDep(chain, m, e.Dependency, fail)
	case OpRenameNode:
		return d.rename(e.Node, e.NewID, fail)
	case OpRestoreLines:
		return d.restoreLines(e, fail)
	case "":
		return fail(0, "op is required (one of %s)", opNames)
	}
	return fail(0, "unknown op %q (one of %s)", e.Op, opNames)
}

// topMap is the document's top-level mapping.
func (d *Doc) topMap() *yaml.Node { return d.root.Content[0] }

// nodesSeq is the `nodes:` sequence, or nil.
func (d *Doc) nodesSeq() (*yaml.Node, error) {
	_, v := lookup(d.topMap(), "nodes")
	if v == nil {
		return nil, errors.New("the file has no `nodes:` list")
	}
	if v.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("`nodes:` (line %d) is not a list", v.Line)
	}
	return v, nil
}

// target finds the mapping of node id ("" = the top level) and the chain
// of collections from the top level down to it.
func (d *Doc) target(id string) (m *yaml.Node, chain []*yaml.Node, line int, err error) {
	top := d.topMap()
	if id == "" {
		return top, []*yaml.Node{top}, 0, nil
	}
	seq, err := d.nodesSeq()
	if err != nil {
		return nil, nil, 0, err
	}
	i := findNode(seq, id)
	if i < 0 {
		return nil, nil, 0, fmt.Errorf("no node with id %q", id)
	}
	item := seq.Content[i]
	if item.Kind != yaml.MappingNode {
		return nil, nil, item.Line, fmt.Errorf("node %q is not a mapping", id)
	}
	return item, []*yaml.Node{top, seq, item}, item.Line, nil
}

func findNode(seq *yaml.Node, id string) int {
	for i, item := range seq.Content {
		if item.Kind != yaml.MappingNode {
			continue
		}
		if _, v := lookup(item, "id"); v != nil && v.Kind == yaml.ScalarNode && strings.TrimSpace(v.Value) == id {
			return i
		}
	}
	return -1
}

// duplicateID refuses a file where two nodes have the same id (as
// findNode compares them), naming the id and both lines.
func (d *Doc) duplicateID() (int, error) {
	_, seq := lookup(d.topMap(), "nodes")
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return 0, nil
	}
	seen := map[string]int{}
	for _, item := range seq.Content {
		if item.Kind != yaml.MappingNode {
			continue
		}
		_, v := lookup(item, "id")
		if v == nil || v.Kind != yaml.ScalarNode {
			continue
		}
		id := strings.TrimSpace(v.Value)
		if first, ok := seen[id]; ok {
			return v.Line, fmt.Errorf("node id %q is used twice (lines %d and %d): give each node its own id before editing", id, first, v.Line)
		}
		seen[id] = v.Line
	}
	return 0, nil
}

// duplicateKey refuses a file where a mapping holds a key twice (YAML
// does not allow it, and yamlflow refuses such a file), naming the key,
// its node where it is in one, and both lines.
func (d *Doc) duplicateKey() (int, error) {
	nodes, _ := d.nodesSeq() // nil without a `nodes:` list
	var walk func(n *yaml.Node, node string) (int, error)
	walk = func(n *yaml.Node, node string) (int, error) {
		if n.Kind == yaml.MappingNode {
			seen := map[string]int{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if k.Kind != yaml.ScalarNode {
					continue
				}
				if first, ok := seen[k.Value]; ok {
					where := ""
					if node != "" {
						where = fmt.Sprintf("node %q: ", node)
					}
					return k.Line, fmt.Errorf("%sfield %q is defined twice (lines %d and %d): remove one before editing", where, k.Value, first, k.Line)
				}
				seen[k.Value] = k.Line
			}
		}
		for _, c := range n.Content {
			in := node
			if n == nodes && c.Kind == yaml.MappingNode {
				if _, id := lookup(c, "id"); id != nil && id.Kind == yaml.ScalarNode {
					in = strings.TrimSpace(id.Value)
				}
			}
			if line, err := walk(c, in); err != nil {
				return line, err
			}
		}
		return 0, nil
	}
	return walk(d.root, "")
}

// lookup finds key in mapping m: the key's index and the value.
func lookup(m *yaml.Node, key string) (int, *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Kind == yaml.ScalarNode && m.Content[i].Value == key {
			return i, m.Content[i+1]
		}
	}
	return -1, nil
}

// splice replaces src[start:end] with s (its \n written as the file's
// line ending), parses the result and checks it is the edited tree.
func (d *Doc) splice(start, end int, s string, line int, fail func(int, string, ...any) error) error {
	if d.t.crlf {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	out := make([]byte, 0, len(d.t.src)-(end-start)+len(s))
	out = append(out, d.t.src[:start]...)
	out = append(out, s...)
	out = append(out, d.t.src[end:]...)
	root, err := decode(out)
	if err != nil || !equalNode(root, d.root) {
		return fail(line, "the file's layout around line %d is too unusual to change in place (anchors, aliases, or odd indentation); edit the text instead", line)
	}
	d.t = newText(out)
	d.root = root
	return nil
}

// flowAncestor is the outermost flow-style collection of chain, if any.
func flowAncestor(chain []*yaml.Node) *yaml.Node {
	for _, n := range chain {
		if n.Style&yaml.FlowStyle != 0 {
			return n
		}
	}
	return nil
}

// checkEditable refuses nodes the text splice cannot handle reliably.
func checkEditable(ns ...*yaml.Node) error {
	for _, n := range ns {
		if n == nil {
			continue
		}
		if n.Kind == yaml.AliasNode || n.Anchor != "" {
			return fmt.Errorf("line %d uses a YAML anchor or alias; edit the text instead", n.Line)
		}
	}
	return nil
}

// rewriteFlow rewrites the whole flow collection f (already edited in the
// tree), whose text starts at start and ends at end.
func (d *Doc) rewriteFlow(f *yaml.Node, start, end int, fail func(int, string, ...any) error) error {
	s, err := encode(withoutComments(f))
	if err != nil {
		return fail(f.Line, "%v", err)
	}
	if strings.Contains(s, "\n") {
		return fail(f.Line, "the flow collection at line %d cannot be rewritten on one line; edit the text instead", f.Line)
	}
	return d.splice(start, end, s, f.Line, fail)
}

// withoutComments is a copy of n without comments (the text keeps those
// outside the rewritten range).
func withoutComments(n *yaml.Node) *yaml.Node {
	c := *n
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = withoutComments(k)
	}
	return &c
}

// keepQuotes gives a new single-line string the quoting of the one it
// replaces.
func keepQuotes(v, old *yaml.Node) {
	if v.Kind == yaml.ScalarNode && old != nil && old.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" &&
		!strings.Contains(v.Value, "\n") && v.Style == 0 {
		v.Style = old.Style & (yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle)
	}
}

// setPath sets (v != nil) or removes (v == nil) the field at path under
// mapping m.
func (d *Doc) setPath(chain []*yaml.Node, m *yaml.Node, path []string, v *yaml.Node, afterKey string, fail func(int, string, ...any) error) error {
	// placeAfter is the index insertPair puts a new key of mapping m
	// after: afterKey's, or def.
	placeAfter := func(m *yaml.Node, def int) (int, error) {
		if afterKey == "" {
			return def, nil
		}
		i, _ := lookup(m, afterKey)
		if i < 0 {
			return 0, fail(m.Line, "after: the mapping has no field %q", afterKey)
		}
		return i, nil
	}
	for len(path) > 1 {
		i, sub := lookup(m, path[0])
		if sub == nil {
			if v == nil {
				return nil // nothing to remove
			}
			// Build the missing mappings around v.
			for k := len(path) - 1; k >= 1; k-- {
				v = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{strNode(path[k]), v}}
			}
			after, err := placeAfter(m, -1)
			if err != nil {
				return err
			}
			return d.insertPair(chain, m, path[0], v, after, fail)
		}
		if err := checkEditable(m.Content[i], sub); err != nil {
			return fail(sub.Line, "%v", err)
		}
		if sub.Kind != yaml.MappingNode {
			if v == nil {
				return nil
			}
			return fail(sub.Line, "%s is not a mapping (it is %s)", path[0], kindName(sub))
		}
		m, chain, path = sub, append(chain, sub), path[1:]
	}
	key := path[0]
	i, old := lookup(m, key)
	switch {
	case old == nil && v == nil:
		return nil
	case old == nil:
		after := -1
		if m == d.topMap() {
			// Top-level fields go before `nodes:`.
			if ni, _ := lookup(m, "nodes"); ni > 0 {
				after = ni - 2
			}
		}
		after, err := placeAfter(m, after)
		if err != nil {
			return err
		}
		return d.insertPair(chain, m, key, v, after, fail)
	case v == nil:
		return d.deletePair(chain, m, i, fail)
	case equalNode(old, v):
		return nil // a no-op keeps the file byte for byte
	}
	return d.replaceValue(chain, m, i, v, fail)
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a scalar"
}

// keyIndent is the indentation of mapping m's keys.
func keyIndent(m *yaml.Node) int { return m.Column - 1 }

// afterColon is the offset just past the ':' that follows key k.
func (d *Doc) afterColon(k *yaml.Node) int {
	o := d.t.nodeOff(k)
	if o < len(d.t.src) && (d.t.src[o] == '"' || d.t.src[o] == '\'') {
		o = d.t.scanQuoted(o)
	}
	for o < len(d.t.src) && d.t.src[o] != ':' && d.t.src[o] != '\n' {
		o++
	}
	if o < len(d.t.src) && d.t.src[o] == ':' {
		o++
	}
	return o
}

// valueEnd is the end of the value of the pair at i in block mapping m.
func (d *Doc) valueEnd(m *yaml.Node, i int) int {
	k, v := m.Content[i], m.Content[i+1]
	colon := d.afterColon(k)
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" && v.Value == "" {
		return colon // `key:` with nothing after it
	}
	if e := d.t.nodeEnd(v, keyIndent(m)); e > colon {
		return e
	}
	return colon
}

// step is the indentation step of block mapping m's children (2 when it
// has none to measure).
func (d *Doc) step(m *yaml.Node) int {
	for i := 1; i < len(m.Content); i += 2 {
		v := m.Content[i]
		if isBlockCollection(v) && v.Line > m.Content[i-1].Line {
			if s := v.Column - m.Column; s > 0 {
				if v.Kind == yaml.SequenceNode && s < 2 {
					return 2
				}
				return s
			}
		}
	}
	return 2
}

func (d *Doc) replaceValue(chain []*yaml.Node, m *yaml.Node, i int, v *yaml.Node, fail func(int, string, ...any) error) error {
	k, old := m.Content[i], m.Content[i+1]
	if err := checkEditable(k, old); err != nil {
		return fail(old.Line, "%v", err)
	}
	if f := flowAncestor(chain); f != nil {
		start, end := d.t.nodeOff(f), d.t.nodeEnd(f, 0)
		keepQuotes(v, old)
		m.Content[i+1] = v
		return d.rewriteFlow(f, start, end, fail)
	}
	ind := keyIndent(m)
	start, end := d.afterColon(k), d.valueEnd(m, i)
	contentIndent := ind + d.step(m)
	if old.Kind == yaml.ScalarNode && old.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		// Keep the block's own indentation.
		for l := old.Line + 1; l <= d.t.lineOf(end); l++ {
			if !d.t.blank(l) {
				contentIndent = d.t.indent(l)
				break
			}
		}
	}
	var s string
	var err error
	switch {
	case v.Kind == yaml.ScalarNode:
		s, err = renderScalar(v, contentIndent, old)
		s = " " + s
	case isBlockCollection(v):
		bi := ind + d.step(m)
		if isBlockCollection(old) && old.Kind == v.Kind {
			bi = old.Column - 1
		}
		s, err = renderBlock(v, bi)
		s = "\n" + s
	default:
		s, err = renderAfterKey(v, ind, d.step(m), old)
	}
	if err != nil {
		return fail(old.Line, "%v", err)
	}
	// A scalar that stays on the key's line keeps what is before it; so
	// does a flow collection on its own line below the key, written again
	// in flow style (`depends_on:` then `  [a, b]`): a one-line change.
	if old.Line == k.Line && !isBlockCollection(old) ||
		old.Line > k.Line && old.Kind != yaml.ScalarNode && !isBlockCollection(old) && v.Kind != yaml.ScalarNode && !strings.Contains(s, "\n") {
		if o := d.t.nodeOff(old); o > start && o <= end && s[0] == ' ' {
			start, s = o, s[1:]
		}
	}
	// Keep a comment after `key:` when the old value started below it.
	if lineEnd := d.t.lineEnd(k.Line); old.Line > k.Line && !strings.HasPrefix(s, "\n") && start <= lineEnd {
		if rest := d.t.src[start:lineEnd]; len(bytes.TrimSpace(rest)) > 0 {
			return fail(k.Line, "the value of %q has a comment before it; edit the text instead", k.Value)
		}
	}
	if strings.HasPrefix(s, "\n") {
		if ke := d.t.lineEnd(k.Line); ke < end && start < ke {
			if rest := bytes.TrimRight(d.t.src[start:ke], " \t"); len(bytes.TrimSpace(rest)) > 0 && bytes.HasPrefix(bytes.TrimSpace(rest), []byte("#")) {
				start = start + len(rest) // keep "key: # comment"
			}
		}
	}
	m.Content[i+1] = v
	return d.splice(start, end, s, k.Line, fail)
}

// insertPair adds key: v to block mapping m after the pair at index after
// (-1: at the end).
func (d *Doc) insertPair(chain []*yaml.Node, m *yaml.Node, key string, v *yaml.Node, after int, fail func(int, string, ...any) error) error {
	if f := flowAncestor(chain); f != nil {
		start, end := d.t.nodeOff(f), d.t.nodeEnd(f, 0)
		m.Content = insertAt(m.Content, after, strNode(key), v)
		return d.rewriteFlow(f, start, end, fail)
	}
	if len(m.Content) == 0 {
		return fail(m.Line, "cannot add %q to an empty mapping in place; edit the text instead", key)
	}
	if after < 0 {
		after = len(m.Content) - 2
	}
	if err := checkEditable(m.Content[after], m.Content[after+1]); err != nil {
		return fail(m.Content[after].Line, "%v", err)
	}
	at := d.t.lineEnd(d.t.lineOf(d.valueEnd(m, after)))
	ind := keyIndent(m)
	ks, err := encode(strNode(key))
	if err != nil {
		return fail(m.Line, "%v", err)
	}
	vs, err := renderAfterKey(v, ind, d.step(m), nil)
	if err != nil {
		return fail(m.Line, "%v", err)
	}
	line := m.Content[after].Line
	m.Content = insertAt(m.Content, after, strNode(key), v)
	return d.splice(at, at, "\n"+strings.Repeat(" ", ind)+ks+":"+vs, line, fail)
}

func insertAt(c []*yaml.Node, after int, k, v *yaml.Node) []*yaml.Node {
	if after < 0 {
		after = len(c) - 2
	}
	out := make([]*yaml.Node, 0, len(c)+2)
	out = append(out, c[:after+2]...)
	out = append(out, k, v)
	return append(out, c[after+2:]...)
}

// deletePair removes the pair at index i of mapping m, with its lines.
func (d *Doc) deletePair(chain []*yaml.Node, m *yaml.Node, i int, fail func(int, string, ...any) error) error {
	k := m.Content[i]
	if err := checkEditable(k, m.Content[i+1]); err != nil {
		return fail(k.Line, "%v", err)
	}
	if f := flowAncestor(chain); f != nil {
		start, end := d.t.nodeOff(f), d.t.nodeEnd(f, 0)
		m.Content = append(m.Content[:i:i], m.Content[i+2:]...)
		return d.rewriteFlow(f, start, end, fail)
	}
	if len(m.Content) == 2 {
		return fail(k.Line, "%q is the mapping's only field; remove the mapping instead", k.Value)
	}
	endLine := d.t.lineOf(d.valueEnd(m, i))
	var start, end int
	if before := d.t.src[d.t.lineStart(k.Line):d.t.nodeOff(k)]; len(bytes.TrimSpace(before)) > 0 {
		// The first key of a list item (`- key: value`): the next key
		// moves up to its place.
		next := m.Content[i+2]
		if i != 0 || next.Line <= endLine || next.Column != k.Column {
			return fail(k.Line, "cannot remove %q in place; edit the text instead", k.Value)
		}
		start, end = d.t.nodeOff(k), d.t.nodeOff(next)
	} else {
		start, end = d.t.lineStart(k.Line), d.t.lineStart(endLine+1)
	}
	m.Content = append(m.Content[:i:i], m.Content[i+2:]...)
	return d.splice(start, end, "", k.Line, fail)
}
