package yamlflow

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

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
			s, ok := p.str(sf, e.val)
			l.UntilBash = s
			// A blank check would exit 0 at once and end the loop after
			// its first iteration: surely not what the author meant.
			if ok && strings.TrimSpace(s) == "" {
				p.errorf(e.line, n.ID, sf.name, CodeInvalidLoop, "must not be empty (a shell command that exits 0 when the loop is done); remove the key to rely on `until:` alone")
			}
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
