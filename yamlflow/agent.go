package yamlflow

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard/switchyard/graph"
)

// The agent fields of AI nodes: allowed_tools, denied_tools,
// approve_tools, max_turns, mcp, hooks (hooks.go) and skills.

// agentNodeFields are the AI-node fields that configure the agent loop
// (tools, turns, MCP servers). They are AI fields: on other kinds they warn.
var agentNodeFields = set("allowed_tools", "denied_tools", "approve_tools", "max_turns", "mcp", "hooks", "skills")

// MCP server transports.
const (
	MCPTypeStdio = "stdio"
	MCPTypeHTTP  = "http"
	MCPTypeSSE   = "sse"
)

// MCPConfig is a node's `mcp:` field: either File, the path of an
// mcpServers JSON file as written (relative paths are relative to the
// workflow's folder, Workflow.Dir; the engine reads it), or Servers, an
// inline map of server name to server, validated at load. Raw is the
// inline value as plain data (map[string]any), for the engine to use as is.
type MCPConfig struct {
	File    string
	Servers map[string]MCPServer
	Raw     map[string]any
}

// MCPServer is one inline MCP server: a command to start (stdio) or a URL
// to reach (http, sse).
type MCPServer struct {
	Type    string            // stdio (default when Command is set), http or sse
	Command string            // stdio
	Args    []string          // stdio
	Env     map[string]string // stdio
	URL     string            // http, sse
	Headers map[string]string // http, sse
}

var mcpServerKeys = set("type", "command", "args", "env", "url", "headers")

// parseAgentField reads one of agentNodeFields on an AI node.
func (p *parser) parseAgentField(n *Node, f field, v *yaml.Node) {
	switch f.name {
	case "allowed_tools":
		n.AllowedTools = p.toolList(f, v, nil)
	case "denied_tools":
		n.DeniedTools = p.toolList(f, v, &n.DeniedCalls)
	case "approve_tools":
		p.parseApproveTools(n, f, v)
	case "max_turns":
		if t, present, ok := p.integer(f, v); ok {
			if !present || t < 1 {
				p.errorf(f.line, f.node, f.name, CodeInvalidValue, "max_turns must be a positive whole number (leave the key out for the default, %d)", DefaultMaxTurns)
				return
			}
			n.MaxTurns = t
		}
	case "mcp":
		n.MCP = p.parseMCP(f, v)
	case "hooks":
		n.Hooks = p.parseHooks(f, v)
	case "skills":
		n.Skills = p.parseSkills(f, v)
	}
}

// toolList reads allowed_tools or denied_tools. The result is nil only
// when the list could not be read; `[]` gives an empty, non-nil slice.
// With calls set (denied_tools), entries in Claude Code's Tool(argument)
// form go there instead: the tool stays, the calls they match are refused.
func (p *parser) toolList(f field, v *yaml.Node, calls *[]graph.ToolPattern) []string {
	if isNull(v) {
		p.errorf(f.line, f.node, f.name, CodeInvalidValue, "%s has no value: write [] for no tools, or remove the key", f.name)
		return nil
	}
	names, lines, ok := p.strList(f, v)
	if !ok && len(names) == 0 {
		return nil
	}
	out := make([]string, 0, len(names))
	for i, name := range names {
		name = strings.TrimSpace(name)
		line := f.line
		if i < len(lines) {
			line = lines[i]
		}
		if strings.ContainsAny(name, "()") {
			if calls == nil {
				p.errorf(line, f.node, f.name, CodeInvalidValue, "%q: argument patterns like Bash(git push:*) are supported in denied_tools and approve_tools; list the tool name here", name)
				continue
			}
			tp, err := graph.ParseToolPattern(name)
			if err != nil {
				p.errorf(line, f.node, f.name, CodeInvalidValue, "%v", err)
				continue
			}
			*calls = append(*calls, tp)
			continue
		}
		if err := graph.CheckToolName(name); err != nil {
			p.errorf(line, f.node, f.name, CodeInvalidValue, "%q: %v", name, err)
			continue
		}
		if msg := unknownTool(name); msg != "" {
			p.warnf(line, f.node, f.name, CodeUnknownTool, "%s", msg)
		}
		out = append(out, name)
	}
	return out
}

func (p *parser) parseApproveTools(n *Node, f field, v *yaml.Node) {
	if isNull(v) {
		return
	}
	entries, lines, _ := p.strList(f, v)
	for i, s := range entries {
		line := f.line
		if i < len(lines) {
			line = lines[i]
		}
		tp, err := graph.ParseToolPattern(s)
		if err != nil {
			p.errorf(line, f.node, f.name, CodeInvalidValue, "%v", err)
			continue
		}
		if msg := unknownTool(tp.Name); msg != "" {
			p.warnf(line, f.node, f.name, CodeUnknownTool, "%s", msg)
		}
		n.ApproveTools = append(n.ApproveTools, tp)
	}
}

// parseMCP reads `mcp:`: a file path, or an inline map of servers (also
// accepted wrapped in the file format's `mcpServers:` key).
func (p *parser) parseMCP(f field, v *yaml.Node) *MCPConfig {
	m := deref(v)
	switch {
	case isNull(v):
		p.errorf(f.line, f.node, f.name, CodeInvalidMCP, "mcp has no value: give the path of an mcpServers JSON file, or a map of servers")
		return nil
	case m.Kind == yaml.ScalarNode:
		s := strings.TrimSpace(m.Value)
		if s == "" {
			p.errorf(f.line, f.node, f.name, CodeInvalidMCP, "mcp must not be empty: give the path of an mcpServers JSON file, or a map of servers")
			return nil
		}
		return &MCPConfig{File: s}
	case m.Kind != yaml.MappingNode:
		p.errorf(f.line, f.node, f.name, CodeInvalidMCP, "mcp must be a file path or a map of servers ({name: {command: ...}}), not %s", describe(m))
		return nil
	}
	ps := p.pairs(m, f.node, f.name)
	if len(ps) == 1 && ps[0].key == "mcpServers" {
		inner := deref(ps[0].val)
		if inner == nil || inner.Kind != yaml.MappingNode {
			p.errorf(ps[0].line, f.node, f.name+".mcpServers", CodeInvalidMCP, "mcpServers must be a map of servers, not %s", describe(inner))
			return nil
		}
		m, ps = inner, p.pairs(inner, f.node, f.name+".mcpServers")
	}
	raw, err := toValue(m, new(int(maxValueNodes)), 0)
	if err != nil {
		p.errorf(f.line, f.node, f.name, CodeInvalidMCP, "%v", err)
		return nil
	}
	cfg := &MCPConfig{Servers: map[string]MCPServer{}, Raw: raw.(map[string]any)}
	if len(ps) == 0 {
		p.errorf(f.line, f.node, f.name, CodeInvalidMCP, "mcp names no servers")
	}
	for _, e := range ps {
		if s, ok := p.parseMCPServer(f.node, f.name+"."+e.key, e); ok {
			cfg.Servers[e.key] = s
		}
	}
	return cfg
}

func (p *parser) parseMCPServer(nodeID, name string, e kv) (MCPServer, bool) {
	var s MCPServer
	m := deref(e.val)
	if m == nil || m.Kind != yaml.MappingNode {
		p.errorf(e.line, nodeID, name, CodeInvalidMCP, "server %q must be a mapping ({command: ..., args: [...]} or {type: http, url: ...}), not %s", e.key, describe(m))
		return s, false
	}
	if strings.TrimSpace(e.key) == "" {
		p.errorf(e.line, nodeID, name, CodeInvalidMCP, "a server needs a non-empty name")
		return s, false
	}
	ok := true
	bad := func(line int, sub, format string, args ...any) {
		fieldName := name
		if sub != "" {
			fieldName += "." + sub
		}
		p.errorf(line, nodeID, fieldName, CodeInvalidMCP, format, args...)
		ok = false
	}
	lines := map[string]int{}
	for _, kv := range p.pairs(m, nodeID, name) {
		sf := field{line: kv.line, node: nodeID, name: name + "." + kv.key}
		lines[kv.key] = kv.line
		switch kv.key {
		case "type":
			t, _ := p.str(sf, kv.val)
			s.Type = strings.TrimSpace(t)
		case "command":
			c, _ := p.str(sf, kv.val)
			s.Command = strings.TrimSpace(c)
			if s.Command == "" {
				bad(kv.line, kv.key, "command must not be empty")
			}
		case "args":
			s.Args, _, _ = p.strList(sf, kv.val)
		case "env":
			s.Env = p.stringMap(sf, kv.val)
		case "url":
			u, _ := p.str(sf, kv.val)
			s.URL = strings.TrimSpace(u)
			if s.URL == "" {
				bad(kv.line, kv.key, "url must not be empty")
			} else if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
				bad(kv.line, kv.key, "url must start with http:// or https://, not %q", s.URL)
			}
		case "headers":
			s.Headers = p.stringMap(sf, kv.val)
		default:
			msg := fmt.Sprintf("unknown field of MCP server %q; ignored", e.key)
			if sug := suggest(kv.key, keys(mcpServerKeys)); sug != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", sug)
			}
			p.warnf(kv.line, nodeID, sf.name, CodeUnknownField, "%s", msg)
		}
	}
	remote := s.Type == MCPTypeHTTP || s.Type == MCPTypeSSE
	switch {
	case s.Type != "" && s.Type != MCPTypeStdio && !remote:
		bad(lines["type"], "type", "type must be %q, %q or %q, not %q", MCPTypeStdio, MCPTypeHTTP, MCPTypeSSE, s.Type)
	case s.Command != "" && s.URL != "":
		bad(e.line, "", "server %q has both command and url: a server is either started (command) or reached (type: http, url)", e.key)
	case remote && lines["url"] == 0:
		bad(e.line, "url", "server %q of type %s needs a url", e.key, s.Type)
	case remote && lines["command"] > 0:
		bad(lines["command"], "command", "server %q of type %s is reached by url; command does not apply", e.key, s.Type)
	case !remote && lines["url"] > 0 && lines["command"] == 0:
		bad(lines["url"], "type", "server %q has a url but no `type: http` (or sse)", e.key)
	case !remote && lines["command"] == 0 && lines["url"] == 0:
		bad(e.line, "command", "server %q needs a command to start (or type: http and a url)", e.key)
	case !remote && (lines["headers"] > 0):
		bad(lines["headers"], "headers", "headers apply to http and sse servers only")
	case remote && (lines["args"] > 0 || lines["env"] > 0):
		bad(e.line, "", "args and env apply to servers started by command, not to %s servers", s.Type)
	}
	if ok && s.Type == "" {
		s.Type = MCPTypeStdio
	}
	return s, ok
}

// stringMap reads a map of names to scalar values (env, headers); numbers
// and booleans become their text.
func (p *parser) stringMap(f field, v *yaml.Node) map[string]string {
	m := deref(v)
	if isNull(v) {
		return nil
	}
	if m.Kind != yaml.MappingNode {
		p.errorf(f.line, f.node, f.name, CodeInvalidMCP, "must be a map of names to values, not %s", describe(m))
		return nil
	}
	out := map[string]string{}
	for _, e := range p.pairs(m, f.node, f.name) {
		val := deref(e.val)
		if val == nil || val.Kind != yaml.ScalarNode || val.Tag == tagNull {
			p.errorf(e.line, f.node, f.name+"."+e.key, CodeInvalidMCP, "must be a string, not %s", describe(val))
			continue
		}
		out[e.key] = val.Value
	}
	return out
}

// parseWorktree reads the workflow's `worktree:` block.
func (p *parser) parseWorktree(wf *Workflow, f field, v *yaml.Node) {
	m := deref(v)
	if isNull(v) {
		return
	}
	if m.Kind != yaml.MappingNode {
		p.errorf(f.line, "", f.name, CodeInvalidType, "worktree must be a mapping like {enabled: false}, not %s", describe(m))
		return
	}
	wt := &WorktreeConfig{}
	for _, e := range p.pairs(m, "", "worktree") {
		sf := field{line: e.line, name: "worktree." + e.key}
		switch e.key {
		case "enabled":
			if isNull(e.val) {
				continue
			}
			b := p.boolean(sf, e.val, true)
			wt.Enabled = &b
		default:
			msg := "unknown field in `worktree:`; ignored"
			if s := suggest(e.key, []string{"enabled"}); s != "" {
				msg += " (did you mean " + strconv.Quote(s) + "?)"
			}
			p.warnf(e.line, "", sf.name, CodeUnknownField, "%s", msg)
		}
	}
	wf.Worktree = wt
}

// parseSkills reads `skills:`, names of Claude Code skills (folders with a
// SKILL.md) that the engine loads into the node's system prompt.
func (p *parser) parseSkills(f field, v *yaml.Node) []string {
	names, lines, _ := p.strList(f, v)
	var out []string
	for i, name := range names {
		line := f.line
		if i < len(lines) {
			line = lines[i]
		}
		name = strings.TrimSpace(name)
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\") {
			p.errorf(line, f.node, f.name, CodeInvalidValue, "skill %q: a skill is named by its folder (remotion-best-practices), without slashes", name)
			continue
		}
		out = append(out, name)
	}
	return out
}
