package yamlflow

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Load reads and parses the workflow file at path. The error is a
// *LoadError when the file has error diagnostics, or a wrapped os error when
// it cannot be read. Diagnostics hold every warning and error.
func Load(path string) (*Workflow, []Diagnostic, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("load workflow: %w", err)
	}
	defer f.Close()
	// Read one byte past the limit so Parse can report an oversized file.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, nil, fmt.Errorf("load workflow %s: %w", path, err)
	}
	wf, diags, lerr := Parse(path, data)
	if wf != nil {
		if abs, err := filepath.Abs(path); err == nil {
			wf.Dir = filepath.Dir(abs)
		}
	}
	return wf, diags, lerr
}

// Parse parses workflow YAML; file names it in diagnostics and sets
// Workflow.File and Dir. On errors the returned Workflow is nil (YAML syntax
// error) or partial, never fit to run; check the error first.
func Parse(file string, data []byte) (*Workflow, []Diagnostic, error) {
	p := &parser{file: file}
	wf := p.parse(data)
	if wf != nil {
		wf.buildIndex()
	}
	errs := Errors(p.diags)
	if len(errs) > 0 {
		return wf, p.diags, &LoadError{File: file, Diagnostics: errs}
	}
	return wf, p.diags, nil
}

type parser struct {
	file  string
	diags []Diagnostic
}

// field says where a value sits, for diagnostics.
type field struct {
	line int
	node string
	name string
}

func (p *parser) add(sev string, line int, nodeID, fieldName, code, format string, args ...any) {
	p.diags = append(p.diags, Diagnostic{
		File: p.file, Line: line, NodeID: nodeID, Field: fieldName,
		Code: code, Severity: sev, Message: fmt.Sprintf(format, args...),
	})
}

func (p *parser) errorf(line int, nodeID, fieldName, code, format string, args ...any) {
	p.add(SeverityError, line, nodeID, fieldName, code, format, args...)
}

func (p *parser) warnf(line int, nodeID, fieldName, code, format string, args ...any) {
	p.add(SeverityWarning, line, nodeID, fieldName, code, format, args...)
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// decode reads the first YAML document. ok is false after a syntax error.
func (p *parser) decode(data []byte) (doc *yaml.Node, ok bool) {
	// The YAML library is third-party code run on untrusted input: a panic in
	// it must become a diagnostic, not a crash of the server.
	defer func() {
		if r := recover(); r != nil {
			p.errorf(1, "", "", CodeYAMLSyntax, "YAML parser failed: %v", r)
			doc, ok = nil, false
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var d yaml.Node
	if err := dec.Decode(&d); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, true
		}
		p.syntaxError(data, err)
		return nil, false
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		p.warnf(next.Line, "", "", CodeMultipleDocuments, "only the first YAML document is used; later documents (after ---) are ignored")
	case !errors.Is(err, io.EOF):
		p.syntaxError(data, err)
		return nil, false
	}
	return &d, true
}

func (p *parser) syntaxError(data []byte, err error) {
	msg, ctxLine := splitYAMLError(err)
	line := problemLine(data, msg, ctxLine)
	switch {
	case line > 0 && ctxLine > 0 && line != ctxLine:
		msg += fmt.Sprintf(" (in the block that starts at line %d)", ctxLine)
	case line == 0 && ctxLine > 0:
		line = ctxLine
	case line == 0:
		line = guessErrorLine(data, msg)
	}
	p.errorf(line, "", "", CodeYAMLSyntax, "invalid YAML: %s", msg)
}

// splitYAMLError separates yaml.v3's "yaml: line N: msg" into msg and N.
func splitYAMLError(err error) (string, int) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil && strings.HasPrefix(msg, m[0]+": ") {
		line, _ := strconv.Atoi(m[1])
		return strings.TrimPrefix(msg, m[0]+": "), line
	}
	return msg, 0
}

// problemLine finds the line a YAML syntax error is really on. yaml.v3
// reports the line where the enclosing block starts (for a bad indent 50
// lines into `nodes:`, the `nodes:` line), so parse ever longer prefixes of
// the file from there: the first prefix that fails with the same message
// ends on the offending line. The work is bounded; 0 means not found.
func problemLine(data []byte, msg string, from int) int {
	const maxLines, budget = 5000, 16 << 20
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > maxLines {
		return 0
	}
	prefix := 0
	for _, l := range lines[:max(from-1, 0)] {
		prefix += len(l)
	}
	spent := 0
	for k := max(from, 1); k <= len(lines); k++ {
		prefix += len(lines[k-1])
		if spent += prefix; spent > budget {
			return 0
		}
		if err := decodeAll(data[:prefix]); err != nil {
			if m, _ := splitYAMLError(err); m == msg {
				return k
			}
		}
	}
	return 0
}

// decodeAll decodes every document of data, returning the first error.
func decodeAll(data []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// guessErrorLine finds a line for YAML errors reported without one.
func guessErrorLine(data []byte, msg string) int {
	if !utf8.Valid(data) {
		for i := 0; i < len(data); {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size <= 1 {
				return 1 + bytes.Count(data[:i], []byte("\n"))
			}
			i += size
		}
	}
	if i := bytes.IndexFunc(data, func(r rune) bool {
		return r < 0x20 && r != '\n' && r != '\r' && r != '\t'
	}); i >= 0 && strings.Contains(msg, "control character") {
		return 1 + bytes.Count(data[:i], []byte("\n"))
	}
	if strings.Contains(msg, "end of stream") {
		return 1 + bytes.Count(bytes.TrimRight(data, "\n"), []byte("\n"))
	}
	return 1
}

func (p *parser) parse(data []byte) *Workflow {
	if len(data) > MaxFileSize {
		p.errorf(1, "", "", CodeFileTooLarge, "file is larger than %d bytes", MaxFileSize)
		return nil
	}
	doc, ok := p.decode(data)
	if !ok {
		return nil
	}
	wf := &Workflow{File: p.file, Dir: filepath.Dir(p.file), MutatesCheckout: true}
	if doc == nil || len(doc.Content) == 0 || isNull(doc.Content[0]) {
		p.errorf(1, "", "", CodeEmptyDocument, "workflow file is empty; it needs name, description and nodes")
		return wf
	}
	root := deref(doc.Content[0])
	if root == nil || root.Kind != yaml.MappingNode {
		p.errorf(doc.Content[0].Line, "", "", CodeInvalidDocument, "a workflow must be a YAML mapping with name, description and nodes, not %s", describe(root))
		return wf
	}

	var nodesVal *yaml.Node
	nodesLine := 0
	for _, e := range p.pairs(root, "", "") {
		f := field{line: e.line, name: e.key}
		switch e.key {
		case "name":
			wf.Name, _ = p.str(f, e.val)
			wf.Name = strings.TrimSpace(wf.Name)
		case "description":
			wf.Description, _ = p.str(f, e.val)
		case "nodes":
			nodesVal, nodesLine = e.val, e.line
		case "provider":
			wf.Provider, _ = p.str(f, e.val)
			wf.Provider = strings.TrimSpace(wf.Provider)
			p.checkProvider(e.line, "", wf.Provider)
		case "model":
			wf.Model, _ = p.str(f, e.val)
			wf.Model = strings.TrimSpace(wf.Model)
		case "interactive":
			wf.Interactive = p.boolean(f, e.val, false)
		case "mutates_checkout":
			wf.MutatesCheckout = p.boolean(f, e.val, true)
		case "tags":
			wf.Tags, _, _ = p.strList(f, e.val)
		case "pass_env":
			names, _, _ := p.strList(f, e.val)
			for _, n := range names {
				if !envNameRE.MatchString(n) {
					p.errorf(e.line, "", "pass_env", CodeInvalidValue, "%q is not an environment variable name", n)
					continue
				}
				wf.PassEnv = append(wf.PassEnv, n)
			}
		default:
			p.extraTopLevel(wf, e)
		}
	}
	if wf.Name == "" {
		p.errorf(root.Line, "", "name", CodeMissingName, "workflow %s has no name (a non-empty top-level `name:` is required)", p.file)
	}
	if strings.TrimSpace(wf.Description) == "" {
		p.errorf(root.Line, "", "description", CodeMissingDesc, "a non-empty top-level `description:` is required")
	}

	switch nv := deref(nodesVal); {
	case isNull(nodesVal):
		line := root.Line
		if nodesLine > 0 {
			line = nodesLine
		}
		hint := ""
		if _, ok := wf.Extra["steps"]; ok {
			hint = " (the sequential `steps:` format is not supported; write a DAG with `nodes:`)"
		}
		p.errorf(line, "", "nodes", CodeMissingNodes, "a non-empty `nodes:` list is required%s", hint)
	case nv.Kind != yaml.SequenceNode:
		p.errorf(nodesLine, "", "nodes", CodeInvalidType, "must be a list of nodes, not %s", describe(nv))
	case len(nv.Content) == 0:
		p.errorf(nodesLine, "", "nodes", CodeEmptyNodes, "the workflow has no nodes")
	default:
		for i, item := range nv.Content {
			if n := p.parseNode(i, item); n != nil {
				wf.Nodes = append(wf.Nodes, n)
			}
		}
	}
	p.checkGraph(wf)
	return wf
}

func (p *parser) extraTopLevel(wf *Workflow, e kv) {
	v, err := toValue(e.val, new(int(maxValueNodes)), 0)
	if err != nil {
		p.errorf(e.line, "", e.key, CodeInvalidValue, "%v", err)
	}
	if wf.Extra == nil {
		wf.Extra = map[string]any{}
	}
	wf.Extra[e.key] = v
	switch {
	case notImplementedTopLevel[e.key]:
		p.warnf(e.line, "", e.key, CodeNotImplemented, "not implemented by Switchyard; ignored")
	case commonNodeFields[e.key] || aiNodeFields[e.key] || isKindKey(e.key):
		p.warnf(e.line, "", e.key, CodeUnknownField, "unknown top-level field (it is a node field: put it on a node under `nodes:`); ignored")
	default:
		msg := "unknown top-level field; ignored"
		if s := suggest(e.key, keys(topLevelFields)); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		p.warnf(e.line, "", e.key, CodeUnknownField, "%s", msg)
	}
}

func isKindKey(k string) bool {
	for _, kind := range Kinds {
		if string(kind) == k {
			return true
		}
	}
	return false
}

func kindList() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// parseNode reads one entry of `nodes:`. It returns nil only when the entry
// is not a mapping at all.
func (p *parser) parseNode(idx int, item *yaml.Node) *Node {
	m := deref(item)
	if m == nil || m.Kind != yaml.MappingNode {
		p.errorf(item.Line, "", fmt.Sprintf("nodes[%d]", idx), CodeInvalidNode, "a node must be a mapping (id: ..., plus one of %s), not %s", kindList(), describe(m))
		return nil
	}
	n := &Node{Line: m.Line, TriggerRule: TriggerAllSuccess}
	ps := p.pairs(m, peekID(m), "")

	// The id first, so every later diagnostic can name the node.
	idSeen := false
	for _, e := range ps {
		if e.key == "id" {
			idSeen = true
			id, _ := p.str(field{line: e.line, name: "id"}, e.val)
			n.ID = strings.TrimSpace(id)
			if n.ID == "" {
				p.errorf(e.line, "", fmt.Sprintf("nodes[%d].id", idx), CodeMissingID, "node id must not be empty")
			} else if !nodeIDRE.MatchString(n.ID) {
				p.warnf(e.line, n.ID, "id", CodeUnreferenceableID, "id should use only letters, digits, '_' and '-' (starting with a letter or '_'), or `$%s.output` cannot refer to it", n.ID)
			}
		}
	}
	if !idSeen {
		p.errorf(m.Line, "", fmt.Sprintf("nodes[%d]", idx), CodeMissingID, "node has no `id:`")
	}
	id := n.ID

	// Choose the kind.
	var typeKeys []kv
	for _, e := range ps {
		if isKindKey(e.key) {
			typeKeys = append(typeKeys, e)
		} else if rejectedTypeKeys[e.key] {
			p.errorf(e.line, id, e.key, CodeUnknownTypeKey, "%q is not a node type Switchyard supports; a node has exactly one of: %s", e.key, kindList())
		}
	}
	switch len(typeKeys) {
	case 0:
		p.errorf(m.Line, id, "", CodeNoType, "node has no type; it needs exactly one of: %s", kindList())
	case 1:
		n.Kind = Kind(typeKeys[0].key)
	default:
		names := make([]string, len(typeKeys))
		for i, e := range typeKeys {
			names[i] = strconv.Quote(e.key)
		}
		p.errorf(typeKeys[1].line, id, typeKeys[1].key, CodeMutuallyExclusiveTypes, "fields %s are mutually exclusive: a node has exactly one type", strings.Join(names, " and "))
		n.Kind = Kind(typeKeys[0].key)
	}

	for _, e := range ps {
		f := field{line: e.line, node: id, name: e.key}
		n.setLine(e.key, e.line)
		switch {
		case e.key == "id":
		case isKindKey(e.key):
			if Kind(e.key) == n.Kind {
				p.parseBody(n, f, e.val)
			}
		case rejectedTypeKeys[e.key]:
			// reported above
		case commonNodeFields[e.key]:
			p.parseCommon(n, f, e.val)
		case aiNodeFields[e.key]:
			if n.Kind != "" && !n.Kind.IsAI() {
				p.warnf(e.line, id, e.key, CodeAIFieldIgnored, "applies to AI nodes (command, prompt, loop) only; ignored on a %s node", n.Kind)
				continue
			}
			p.parseAI(n, f, e.val)
		case scriptNodeFields[e.key]:
			if n.Kind != "" && n.Kind != KindScript {
				p.warnf(e.line, id, e.key, CodeFieldIgnored, "applies to script nodes only; ignored on a %s node", n.Kind)
				continue
			}
			p.parseScriptField(n, f, e.val)
		default:
			p.extraNodeField(n, e)
		}
	}
	if n.Kind.IsAI() && n.Context == "" {
		n.Context = defaultNodeContextForAINodes
	}
	if n.Kind == KindLoop && n.Retry != nil {
		line, _ := lookupPair(ps, "retry")
		p.errorf(line.line, id, "retry", CodeInvalidRetry, "a loop node cannot retry (its iterations are its retries); remove `retry:`")
	}
	if n.Kind == KindScript && n.Runtime == "" {
		if _, present := lookupPair(ps, "runtime"); !present {
			p.errorf(m.Line, id, "runtime", CodeMissingRuntime, "script node needs `runtime: bun` or `runtime: uv`")
		}
	}
	return n
}

// peekID finds a node's id before its mapping is read, so problems found
// while reading it (like duplicate keys) can name the node.
func peekID(m *yaml.Node) string {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := deref(m.Content[i]); k != nil && k.Kind == yaml.ScalarNode && k.Value == "id" {
			if v := deref(m.Content[i+1]); v != nil && v.Kind == yaml.ScalarNode && v.Tag != tagNull {
				return strings.TrimSpace(v.Value)
			}
			return ""
		}
	}
	return ""
}

func lookupPair(ps []kv, key string) (kv, bool) {
	for _, e := range ps {
		if e.key == key {
			return e, true
		}
	}
	return kv{}, false
}

func (p *parser) extraNodeField(n *Node, e kv) {
	v, err := toValue(e.val, new(int(maxValueNodes)), 0)
	if err != nil {
		p.errorf(e.line, n.ID, e.key, CodeInvalidValue, "%v", err)
	}
	if n.Extra == nil {
		n.Extra = map[string]any{}
	}
	n.Extra[e.key] = v
	switch {
	case notImplementedNodeFields[e.key]:
		p.warnf(e.line, n.ID, e.key, CodeNotImplemented, "not implemented by Switchyard; ignored")
	case n.Kind == KindLoop && loopKeys[e.key]:
		p.warnf(e.line, n.ID, e.key, CodeUnknownField, "unknown node field (it belongs inside the `loop:` block); ignored")
	case n.Kind == KindApproval && approvalKeys[e.key]:
		p.warnf(e.line, n.ID, e.key, CodeUnknownField, "unknown node field (it belongs inside the `approval:` block); ignored")
	case topLevelFields[e.key] || notImplementedTopLevel[e.key]:
		p.warnf(e.line, n.ID, e.key, CodeUnknownField, "unknown node field (it is a top-level workflow field); ignored")
	default:
		msg := "unknown node field; ignored"
		if s := suggest(e.key, keys(commonNodeFields, aiNodeFields, scriptNodeFields, notImplementedNodeFields)); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		p.warnf(e.line, n.ID, e.key, CodeUnknownField, "%s", msg)
	}
}

func (p *parser) parseCommon(n *Node, f field, v *yaml.Node) {
	switch f.name {
	case "depends_on":
		n.DependsOn, n.depLines, _ = p.strList(f, v)
		for i := range n.DependsOn {
			n.DependsOn[i] = strings.TrimSpace(n.DependsOn[i])
		}
	case "when":
		s, ok := p.str(f, v)
		if !ok {
			return
		}
		n.When = strings.TrimSpace(s)
		if n.When == "" {
			p.warnf(f.line, f.node, f.name, CodeBadWhen, "empty `when:`; the node runs unconditionally")
			return
		}
		e, err := ParseWhen(n.When)
		if err != nil {
			p.warnf(f.line, f.node, f.name, CodeBadWhen, "condition %q does not parse (%v); at run time the node will be skipped", n.When, errMsg(err))
			return
		}
		n.WhenExpr = e
	case "trigger_rule":
		s, ok := p.str(f, v)
		if !ok {
			return
		}
		s = strings.TrimSpace(s)
		if s == "" {
			p.errorf(f.line, f.node, f.name, CodeInvalidTriggerRule, "trigger_rule must not be empty; use one of: %s (or leave the key out for %s)", strings.Join(TriggerRules, ", "), TriggerAllSuccess)
			return
		}
		for _, r := range TriggerRules {
			if s == r {
				n.TriggerRule = s
				return
			}
		}
		p.errorf(f.line, f.node, f.name, CodeInvalidTriggerRule, "unknown trigger rule %q; use one of: %s", s, strings.Join(TriggerRules, ", "))
	case "retry":
		n.Retry = p.parseRetry(n, f, v)
	case "timeout":
		if ms, present, ok := p.integer(f, v); present && ok {
			if ms <= 0 {
				p.errorf(f.line, f.node, f.name, CodeInvalidValue, "timeout must be a positive number of milliseconds, not %d", ms)
				return
			}
			n.TimeoutMS = ms
		}
	case "output_type":
		n.OutputType, _ = p.str(f, v)
	case "always_run":
		n.AlwaysRun = p.boolean(f, v, false)
	}
}

// errMsg strips the repeated expression from a when error for messages that
// already quote it.
func errMsg(err error) string {
	var se *WhenSyntaxError
	if errors.As(err, &se) {
		return se.Detail()
	}
	return err.Error()
}

func (p *parser) parseAI(n *Node, f field, v *yaml.Node) {
	switch f.name {
	case "model":
		s, _ := p.str(f, v)
		n.Model = strings.TrimSpace(s)
	case "provider":
		s, _ := p.str(f, v)
		n.Provider = strings.TrimSpace(s)
		p.checkProvider(f.line, f.node, n.Provider)
	case "systemPrompt":
		n.SystemPrompt, _ = p.str(f, v)
	case "effort":
		s, _ := p.str(f, v)
		n.Effort = strings.TrimSpace(s)
	case "context":
		s, ok := p.str(f, v)
		if !ok {
			return
		}
		switch s = strings.TrimSpace(s); s {
		case "":
		case ContextFresh, ContextShared:
			n.Context = s
		default:
			p.errorf(f.line, f.node, f.name, CodeInvalidContext, "context must be %q or %q, not %q", ContextFresh, ContextShared, s)
		}
	case "idle_timeout":
		if ms, present, ok := p.integer(f, v); present && ok {
			if ms <= 0 {
				p.errorf(f.line, f.node, f.name, CodeInvalidValue, "idle_timeout must be a positive number of milliseconds, not %d", ms)
				return
			}
			n.IdleTimeoutMS = ms
		}
	case "output_format":
		p.parseOutputFormat(n, f, v)
	}
}

func (p *parser) parseScriptField(n *Node, f field, v *yaml.Node) {
	switch f.name {
	case "runtime":
		s, ok := p.str(f, v)
		if !ok {
			return
		}
		switch s = strings.TrimSpace(s); s {
		case RuntimeBun, RuntimeUV:
			n.Runtime = s
		case "":
			p.errorf(f.line, f.node, f.name, CodeMissingRuntime, "script node needs `runtime: bun` or `runtime: uv`")
		default:
			p.errorf(f.line, f.node, f.name, CodeInvalidRuntime, "runtime must be %q or %q, not %q", RuntimeBun, RuntimeUV, s)
		}
	case "deps":
		deps, _, _ := p.strList(f, v)
		for _, d := range deps {
			if strings.TrimSpace(d) == "" {
				p.errorf(f.line, f.node, f.name, CodeInvalidValue, "each dep must be a non-empty package name")
				continue
			}
			n.Deps = append(n.Deps, strings.TrimSpace(d))
		}
	}
}

// parseBody reads the type key's value.
func (p *parser) parseBody(n *Node, f field, v *yaml.Node) {
	switch n.Kind {
	case KindCommand:
		s, ok := p.str(f, v)
		if !ok {
			return
		}
		n.Command = strings.TrimSpace(s)
		if n.Command == "" {
			p.errorf(f.line, f.node, f.name, CodeEmptyCommand, "must not be empty (name a command file)")
		} else if err := ValidCommandName(n.Command); err != nil {
			p.errorf(f.line, f.node, f.name, CodeInvalidCommandName, "%v", err)
		}
	case KindPrompt:
		s, ok := p.str(f, v)
		if !ok {
			return
		}
		n.Prompt = s
		if strings.TrimSpace(s) == "" {
			p.errorf(f.line, f.node, f.name, CodeEmptyPrompt, "must not be empty")
		}
	case KindBash:
		s, ok := p.str(f, v)
		if !ok {
			return
		}
		n.Bash = s
		if strings.TrimSpace(s) == "" {
			p.errorf(f.line, f.node, f.name, CodeEmptyBash, "must not be empty")
		}
	case KindScript:
		s, ok := p.str(f, v)
		if !ok {
			return
		}
		n.Script = s
		if strings.TrimSpace(s) == "" {
			p.errorf(f.line, f.node, f.name, CodeEmptyScript, "must not be empty (inline code or a named script)")
			return
		}
		n.ScriptNamed = IsNamedScript(s)
		if n.ScriptNamed {
			n.Script = strings.TrimSpace(s)
		}
	case KindCancel:
		s, ok := p.str(f, v)
		if !ok {
			return
		}
		n.CancelReason = strings.TrimSpace(s)
		if n.CancelReason == "" {
			p.errorf(f.line, f.node, f.name, CodeEmptyCancelReason, "cancel needs a non-empty reason")
		}
	case KindLoop:
		n.Loop = p.parseLoop(n, f, v)
	case KindApproval:
		n.Approval = p.parseApproval(n, f, v)
	}
}

func (p *parser) subFieldExtra(n *Node, e kv, path string, known map[string]bool) {
	name := path + "." + e.key
	v, err := toValue(e.val, new(int(maxValueNodes)), 0)
	if err != nil {
		p.errorf(e.line, n.ID, name, CodeInvalidValue, "%v", err)
	}
	if n.Extra == nil {
		n.Extra = map[string]any{}
	}
	n.Extra[name] = v
	msg := fmt.Sprintf("unknown field in `%s:`; ignored", path)
	if s := suggest(e.key, keys(known)); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	p.warnf(e.line, n.ID, name, CodeUnknownField, "%s", msg)
}

func (p *parser) parseLoop(n *Node, f field, v *yaml.Node) *Loop {
	m := deref(v)
	if m == nil || m.Kind != yaml.MappingNode {
		p.errorf(f.line, f.node, f.name, CodeInvalidLoop, "loop must be a mapping with prompt, until and max_iterations, not %s", describe(m))
		return nil
	}
	l := &Loop{}
	seen := map[string]bool{}
	for _, e := range p.pairs(m, n.ID, "loop") {
		sf := field{line: e.line, node: n.ID, name: "loop." + e.key}
		n.setLine(sf.name, e.line)
		seen[e.key] = true
		switch e.key {
		case "prompt":
			l.Prompt, _ = p.str(sf, e.val)
			if strings.TrimSpace(l.Prompt) == "" {
				p.errorf(e.line, n.ID, sf.name, CodeEmptyPrompt, "must not be empty")
			}
		case "until":
			s, _ := p.str(sf, e.val)
			l.Until = strings.TrimSpace(s)
			if l.Until == "" {
				p.errorf(e.line, n.ID, sf.name, CodeInvalidLoop, "must not be empty (the completion signal to look for)")
			}
		case "max_iterations":
			if it, present, ok := p.integer(sf, e.val); ok {
				if !present || it < 1 {
					p.errorf(e.line, n.ID, sf.name, CodeInvalidLoop, "must be at least 1")
				}
				l.MaxIterations = it
			}
		case "fresh_context":
			l.FreshContext = p.boolean(sf, e.val, false)
		case "interactive":
			l.Interactive = p.boolean(sf, e.val, false)
		case "gate_message":
			l.GateMessage, _ = p.str(sf, e.val)
		case "until_bash":
			l.UntilBash, _ = p.str(sf, e.val)
		default:
			p.subFieldExtra(n, e, "loop", loopKeys)
		}
	}
	for _, req := range []string{"prompt", "until", "max_iterations"} {
		if !seen[req] {
			p.errorf(f.line, n.ID, "loop."+req, CodeInvalidLoop, "loop needs `%s:`", req)
		}
	}
	if l.Interactive && strings.TrimSpace(l.GateMessage) == "" {
		p.errorf(f.line, n.ID, "loop.gate_message", CodeInvalidLoop, "an interactive loop needs a non-empty `gate_message:`")
	}
	return l
}

func (p *parser) parseApproval(n *Node, f field, v *yaml.Node) *Approval {
	m := deref(v)
	if m == nil || m.Kind != yaml.MappingNode {
		p.errorf(f.line, f.node, f.name, CodeInvalidApproval, "approval must be a mapping with a message (approval: {message: ...}), not %s", describe(m))
		return nil
	}
	a := &Approval{}
	msgSeen := false
	for _, e := range p.pairs(m, n.ID, "approval") {
		sf := field{line: e.line, node: n.ID, name: "approval." + e.key}
		n.setLine(sf.name, e.line)
		switch e.key {
		case "message":
			msgSeen = true
			a.Message, _ = p.str(sf, e.val)
			if strings.TrimSpace(a.Message) == "" {
				p.errorf(e.line, n.ID, sf.name, CodeInvalidApproval, "must not be empty")
			}
		case "capture_response":
			a.CaptureResponse = p.boolean(sf, e.val, false)
		case "on_reject":
			a.OnReject = p.parseOnReject(n, sf, e.val)
		default:
			p.subFieldExtra(n, e, "approval", approvalKeys)
		}
	}
	if !msgSeen {
		p.errorf(f.line, n.ID, "approval.message", CodeInvalidApproval, "approval needs `message:`")
	}
	return a
}

func (p *parser) parseOnReject(n *Node, f field, v *yaml.Node) *OnReject {
	m := deref(v)
	if m == nil || m.Kind != yaml.MappingNode {
		p.errorf(f.line, f.node, f.name, CodeInvalidApproval, "on_reject must be a mapping with a prompt, not %s", describe(m))
		return nil
	}
	r := &OnReject{MaxAttempts: DefaultOnRejectMaxAttempts}
	promptSeen := false
	for _, e := range p.pairs(m, n.ID, f.name) {
		sf := field{line: e.line, node: n.ID, name: f.name + "." + e.key}
		n.setLine(sf.name, e.line)
		switch e.key {
		case "prompt":
			promptSeen = true
			r.Prompt, _ = p.str(sf, e.val)
			if strings.TrimSpace(r.Prompt) == "" {
				p.errorf(e.line, n.ID, sf.name, CodeEmptyPrompt, "must not be empty")
			}
		case "max_attempts":
			if a, present, ok := p.integer(sf, e.val); present && ok {
				if a < 1 || a > MaxOnRejectAttempts {
					p.errorf(e.line, n.ID, sf.name, CodeInvalidApproval, "must be between 1 and %d, not %d", MaxOnRejectAttempts, a)
				} else {
					r.MaxAttempts = a
				}
			}
		default:
			p.subFieldExtra(n, e, f.name, onRejectKeys)
		}
	}
	if !promptSeen {
		p.errorf(f.line, n.ID, f.name+".prompt", CodeEmptyPrompt, "on_reject needs `prompt:`")
	}
	return r
}

func (p *parser) parseRetry(n *Node, f field, v *yaml.Node) *Retry {
	m := deref(v)
	if isNull(v) {
		return nil
	}
	if m.Kind != yaml.MappingNode {
		p.errorf(f.line, f.node, f.name, CodeInvalidRetry, "retry must be a mapping like {max_attempts: 3}, not %s", describe(m))
		return nil
	}
	r := &Retry{DelayMS: DefaultRetryDelayMS, OnError: RetryOnTransient}
	attemptsSeen := false
	for _, e := range p.pairs(m, f.node, "retry") {
		sf := field{line: e.line, node: f.node, name: "retry." + e.key}
		n.setLine(sf.name, e.line)
		switch e.key {
		case "max_attempts":
			attemptsSeen = true
			if a, present, ok := p.integer(sf, e.val); ok {
				if !present || a < MinRetryAttempts || a > MaxRetryAttempts {
					p.errorf(e.line, f.node, sf.name, CodeInvalidRetry, "must be between %d and %d", MinRetryAttempts, MaxRetryAttempts)
				}
				r.MaxAttempts = a
			}
		case "delay_ms":
			if d, present, ok := p.integer(sf, e.val); present && ok {
				if d < MinRetryDelayMS || d > MaxRetryDelayMS {
					p.errorf(e.line, f.node, sf.name, CodeInvalidRetry, "must be between %d and %d (milliseconds), not %d", MinRetryDelayMS, MaxRetryDelayMS, d)
				} else {
					r.DelayMS = d
				}
			}
		case "on_error":
			s, ok := p.str(sf, e.val)
			if !ok {
				continue
			}
			switch s = strings.TrimSpace(s); s {
			case RetryOnTransient, RetryOnAll:
				r.OnError = s
			default:
				p.errorf(e.line, f.node, sf.name, CodeInvalidRetry, "must be %q or %q, not %q", RetryOnTransient, RetryOnAll, s)
			}
		default:
			p.warnf(e.line, f.node, sf.name, CodeUnknownField, "unknown field in `retry:`; ignored")
		}
	}
	if !attemptsSeen {
		p.errorf(f.line, f.node, "retry.max_attempts", CodeInvalidRetry, "retry needs `max_attempts:` (1-%d)", MaxRetryAttempts)
	}
	return r
}

// envNameRE is the shape of an environment variable name.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// nodeIDRE is the id shape `$id.output` references can name.
var nodeIDRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// namedScriptRE is a bare name: no spaces, newlines, path separators or code
// punctuation; an optional extension.
var namedScriptRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*(\.[A-Za-z0-9]+)?$`)

// IsNamedScript reports whether a script node's `script:` value names a
// script file (like "echo-args") rather than holding inline code.
func IsNamedScript(s string) bool {
	return namedScriptRE.MatchString(strings.TrimSpace(s))
}

// ErrInvalidCommandName is wrapped by ValidCommandName's errors.
var ErrInvalidCommandName = errors.New("invalid command name")

// ValidCommandName checks that a command node's name can only name a file
// inside the commands folder: not empty, no '/', '\' or "..", and not
// starting with '.'.
func ValidCommandName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidCommandName)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("%w %q: must not contain '/' or '\\'", ErrInvalidCommandName, name)
	case strings.Contains(name, ".."):
		return fmt.Errorf("%w %q: must not contain \"..\"", ErrInvalidCommandName, name)
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("%w %q: must not start with '.'", ErrInvalidCommandName, name)
	case strings.ContainsRune(name, 0):
		return fmt.Errorf("%w %q: must not contain NUL", ErrInvalidCommandName, name)
	}
	return nil
}
