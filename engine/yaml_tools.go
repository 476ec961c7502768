package engine

import (
	"encoding/json"
	"path/filepath"

	"github.com/switchyard/switchyard/engine/tools"
)

// yamlToolPolicy reads an AI node's tools as Archon means them: no
// allowed_tools offers every built-in tool, allowed_tools: [] none, a list
// those named; denied_tools removes names (globs too); approve_tools makes
// matching calls wait for a reviewer; max_turns caps the loop.
func yamlToolPolicy(spec *yamlSpec) toolPolicy {
	n := spec.n
	var p toolPolicy
	allowed, hasAllowed := stringList(n.Extra["allowed_tools"])
	denied, _ := stringList(n.Extra["denied_tools"])
	if !hasAllowed {
		allowed = tools.Names()
	}
	for _, name := range allowed {
		if _, ok := tools.Lookup(name); !ok || matchesAny(denied, name) {
			continue
		}
		p.builtins = append(p.builtins, name)
	}
	if approve, ok := stringList(n.Extra["approve_tools"]); ok && len(approve) > 0 {
		pats := parseToolPatterns(approve)
		p.approve = func(name string, args json.RawMessage) bool { return matchToolPatterns(pats, name, args) }
	}
	if v, ok := n.Extra["max_turns"].(int); ok {
		p.maxTurns = v
	}
	return p
}

// mutates reports whether the policy offers a tool that writes or runs code.
func (p toolPolicy) mutates() bool {
	for _, n := range p.builtins {
		if tools.Mutating(n) {
			return true
		}
	}
	return false
}

func matchesAny(pats []string, name string) bool {
	for _, p := range pats {
		if ok, _ := filepath.Match(p, name); ok || p == name {
			return true
		}
	}
	return false
}

// stringList reads a YAML list of strings; ok is false when the field is
// absent (nil), so an empty list stays distinct.
func stringList(v any) ([]string, bool) {
	switch t := v.(type) {
	case nil:
		return nil, false
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out, true
	case []string:
		return t, true
	}
	return nil, true
}
