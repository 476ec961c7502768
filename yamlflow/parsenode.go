package yamlflow

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

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
	// `include:` (inline another workflow) takes the place of a type.
	var typeKeys []kv
	for _, e := range ps {
		if isKindKey(e.key) || e.key == includeKey {
			typeKeys = append(typeKeys, e)
		} else if rejectedTypeKeys[e.key] {
			p.errorf(e.line, id, e.key, CodeUnknownTypeKey, "%q is not a node type Switchyard supports; a node has exactly one of: %s (or include)", e.key, kindList())
		}
	}
	switch len(typeKeys) {
	case 0:
		p.errorf(m.Line, id, "", CodeNoType, "node has no type; it needs exactly one of: %s (or include: another workflow)", kindList())
	case 1:
		if typeKeys[0].key == includeKey {
			n.includeNode = true
		} else {
			n.Kind = Kind(typeKeys[0].key)
		}
	default:
		names := make([]string, len(typeKeys))
		for i, e := range typeKeys {
			names[i] = strconv.Quote(e.key)
		}
		p.errorf(typeKeys[1].line, id, typeKeys[1].key, CodeMutuallyExclusiveTypes, "fields %s are mutually exclusive: a node has exactly one type", strings.Join(names, " and "))
		for _, e := range typeKeys {
			if e.key != includeKey {
				n.Kind = Kind(e.key)
				break
			}
		}
	}

	for _, e := range ps {
		f := field{line: e.line, node: id, name: e.key}
		n.setLine(e.key, e.line)
		switch {
		case e.key == "id":
		case e.key == includeKey:
			if n.includeNode {
				p.parseIncludeTarget(n, f, e.val)
			}
		case n.includeNode && !includeNodeFields[e.key] &&
			(commonNodeFields[e.key] || aiNodeFields[e.key] || agentNodeFields[e.key] || scriptNodeFields[e.key]):
			p.warnf(e.line, id, e.key, CodeFieldIgnored, "does not apply to an include node (it inlines another workflow, whose nodes have their own settings); ignored")
		case isKindKey(e.key):
			if Kind(e.key) == n.Kind {
				p.parseBody(n, f, e.val)
			}
		case rejectedTypeKeys[e.key]:
			// reported above
		case commonNodeFields[e.key]:
			p.parseCommon(n, f, e.val)
		case aiNodeFields[e.key] || agentNodeFields[e.key]:
			if n.Kind != "" && !n.Kind.IsAI() {
				p.warnf(e.line, id, e.key, CodeAIFieldIgnored, "applies to AI nodes (command, prompt, loop) only; ignored on a %s node", n.Kind)
				continue
			}
			if agentNodeFields[e.key] {
				p.parseAgentField(n, f, e.val)
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
		if s := suggest(e.key, keys(commonNodeFields, aiNodeFields, agentNodeFields, scriptNodeFields, notImplementedNodeFields)); s != "" {
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
