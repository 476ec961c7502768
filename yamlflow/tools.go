package yamlflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
)

// Tool access of AI nodes: allowed_tools, denied_tools and approve_tools.

// Built-in tool names (Claude Code's spelling, which the Archon format uses).
const (
	ToolRead  = "Read"
	ToolWrite = "Write"
	ToolEdit  = "Edit"
	ToolGlob  = "Glob"
	ToolGrep  = "Grep"
	ToolBash  = "Bash"
	ToolLS    = "LS"
)

// BuiltinTools lists the built-in tools an agent node can be given.
var BuiltinTools = []string{ToolRead, ToolWrite, ToolEdit, ToolGlob, ToolGrep, ToolBash, ToolLS}

// MCPToolPrefix starts the name of every MCP tool: mcp__<server>__<tool>.
const MCPToolPrefix = "mcp__"

// DefaultMaxTurns is the agent loop's turn limit when a node sets no
// max_turns. The engine applies it; the loader leaves Node.MaxTurns 0.
const DefaultMaxTurns = 50

// ErrInvalidToolPattern is wrapped by ParseToolPattern's errors.
var ErrInvalidToolPattern = errors.New("invalid tool pattern")

// toolArgField names, per built-in tool, the call argument a
// `Tool(argument)` pattern is matched against.
var toolArgField = map[string]string{
	ToolBash:  "command",
	ToolRead:  "file_path",
	ToolWrite: "file_path",
	ToolEdit:  "file_path",
}

// ToolPattern is one entry of approve_tools: a tool-name pattern,
// optionally narrowed to calls whose argument matches.
//
// The rule (Claude Code's permission syntax, as far as Switchyard
// implements it):
//
//   - Name is a tool name (Read, Bash, mcp__github__create_issue) or a
//     glob in which '*' matches any run of characters
//     (mcp__github__create_*, mcp__github__*, *). It matches the whole tool
//     name, case-sensitively.
//   - Tool(arg) narrows the pattern to calls of one built-in tool by one
//     argument: Bash by its "command", Read, Write and Edit by their
//     "file_path". Arg ending in ":*" (Bash(git push:*)) or "*" is a prefix:
//     the argument must start with what comes before it. Any other Arg must
//     equal the argument. Other '*' in Arg are literal.
//   - A Bash command is compared after collapsing runs of blanks to one
//     space, and piece by piece: the command is split at ;, &, |, newlines,
//     $( and backquotes, and the pattern matches when any piece (trimmed)
//     matches. So Bash(git push:*) also catches "make && git push". This is
//     a best effort for asking a person, not a sandbox: a command can
//     always be written so that no pattern sees it (sh -c "...").
//   - A file path is cleaned (path.Clean) before it is compared, so
//     "src/../etc/passwd" does not match Read(src/:*). Paths are compared as
//     the call gives them: the engine should pass paths relative to the
//     working directory when patterns are written that way.
//   - When the argument cannot be read (arguments not a JSON object, the
//     field missing or not a string), a pattern whose tool name matches
//     matches: for an approval list, asking is the safe side.
type ToolPattern struct {
	Raw    string // the entry as written
	Name   string // the tool-name pattern
	Arg    string // the argument pattern without its ":*" / "*" suffix; "" with HasArg false
	HasArg bool   // the entry had the Tool(arg) form
	Prefix bool   // Arg is a prefix (the entry ended in ":*" or "*")
}

// ParseToolPattern parses one approve_tools entry (see ToolPattern).
func ParseToolPattern(s string) (ToolPattern, error) {
	raw := s
	s = strings.TrimSpace(s)
	p := ToolPattern{Raw: raw}
	if s == "" {
		return p, fmt.Errorf("%w: empty", ErrInvalidToolPattern)
	}
	name := s
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			return p, fmt.Errorf("%w %q: an argument pattern is written Tool(argument), with a closing ')'", ErrInvalidToolPattern, s)
		}
		name = strings.TrimSpace(s[:i])
		arg := s[i+1 : len(s)-1]
		if strings.TrimSpace(arg) == "" {
			return p, fmt.Errorf("%w %q: empty argument pattern; write %s to match every call", ErrInvalidToolPattern, s, name)
		}
		if _, ok := toolArgField[name]; !ok {
			return p, fmt.Errorf("%w %q: argument patterns apply to Bash (its command) and Read, Write, Edit (their file_path), not to %q", ErrInvalidToolPattern, s, name)
		}
		p.HasArg = true
		switch {
		case strings.HasSuffix(arg, ":*"):
			p.Arg, p.Prefix = arg[:len(arg)-2], true
		case strings.HasSuffix(arg, "*"):
			p.Arg, p.Prefix = arg[:len(arg)-1], true
		default:
			p.Arg = arg
		}
		if name == ToolBash {
			p.Arg = normalizeCommand(p.Arg)
			if p.Prefix && p.Arg == "" {
				return p, fmt.Errorf("%w %q: the prefix is empty; write %s to match every call", ErrInvalidToolPattern, s, name)
			}
		}
	}
	if err := checkToolName(name); err != nil {
		return p, fmt.Errorf("%w %q: %v", ErrInvalidToolPattern, s, err)
	}
	p.Name = name
	return p, nil
}

// String is the entry as written.
func (p ToolPattern) String() string { return p.Raw }

// Match reports whether a call of toolName with the given JSON arguments
// matches the pattern (see ToolPattern for the rule).
func (p ToolPattern) Match(toolName string, argsJSON []byte) bool {
	if !MatchToolName(p.Name, toolName) {
		return false
	}
	if !p.HasArg {
		return true
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(argsJSON, &args); err != nil || args == nil {
		return true
	}
	raw, ok := args[toolArgField[toolName]]
	if !ok {
		return true
	}
	var val string
	if err := json.Unmarshal(raw, &val); err != nil {
		return true
	}
	if toolName == ToolBash {
		for _, piece := range commandPieces(val) {
			if p.matchArg(piece) {
				return true
			}
		}
		return false
	}
	return p.matchArg(path.Clean(val))
}

func (p ToolPattern) matchArg(v string) bool {
	if p.Prefix {
		return strings.HasPrefix(v, p.Arg)
	}
	return v == p.Arg
}

// normalizeCommand trims a command and collapses each run of blanks to one
// space.
func normalizeCommand(s string) string { return strings.Join(strings.Fields(s), " ") }

// commandPieces splits a shell command at the operators that start another
// command (; & | newline $( and backquotes) and normalizes each piece. The
// whole command comes first.
func commandPieces(cmd string) []string {
	out := []string{normalizeCommand(cmd)}
	seps := strings.NewReplacer(";", "\n", "&", "\n", "|", "\n", "$(", "\n", "`", "\n", "(", "\n", ")", "\n")
	for _, piece := range strings.Split(seps.Replace(cmd), "\n") {
		if n := normalizeCommand(piece); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// MatchToolName reports whether a tool name matches a pattern in which '*'
// matches any run of characters (and nothing else is special).
func MatchToolName(pattern, name string) bool {
	if !strings.Contains(pattern, "*") {
		return pattern == name
	}
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(name, part)
		if i < 0 {
			return false
		}
		name = name[i+len(part):]
	}
	return strings.HasSuffix(name, last)
}

// ToolEnabled reports whether an AI node may use the tool named name:
// when AllowedTools is set (even empty) the name must match one of its
// entries, and it must match none of DeniedTools.
func (n *Node) ToolEnabled(name string) bool {
	if n.AllowedTools != nil && !matchAnyTool(n.AllowedTools, name) {
		return false
	}
	return !matchAnyTool(n.DeniedTools, name)
}

// NeedsApproval reports whether a call of the tool needs a person's
// approval: it matches an approve_tools entry. The pattern matched is
// returned for messages.
func (n *Node) NeedsApproval(toolName string, argsJSON []byte) (ToolPattern, bool) {
	for _, p := range n.ApproveTools {
		if p.Match(toolName, argsJSON) {
			return p, true
		}
	}
	return ToolPattern{}, false
}

func matchAnyTool(patterns []string, name string) bool {
	for _, p := range patterns {
		if MatchToolName(p, name) {
			return true
		}
	}
	return false
}

// toolNameChar reports whether c may appear in a tool name or pattern.
func toolNameChar(c rune) bool {
	return c == '_' || c == '-' || c == '*' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// checkToolName checks the shape of a tool name or name pattern: the
// characters, and for an MCP name its mcp__<server>__<tool> parts. Whether
// a plain name is a known tool is a separate, softer check (unknownTool).
func checkToolName(name string) error {
	if name == "" {
		return errors.New("empty tool name")
	}
	for _, c := range name {
		if !toolNameChar(c) {
			return fmt.Errorf("%q is not allowed in a tool name (letters, digits, '_', '-', '.' and the wildcard '*')", c)
		}
	}
	if rest, ok := strings.CutPrefix(name, MCPToolPrefix); ok {
		server, tool, hasTool := strings.Cut(rest, "__")
		switch {
		case server == "":
			return errors.New("an MCP tool is named mcp__<server>__<tool> (the server is missing)")
		case hasTool && tool == "":
			return errors.New("an MCP tool is named mcp__<server>__<tool> (the tool is missing; write mcp__" + server + "__* for all of its tools)")
		}
	}
	return nil
}

// unknownTool returns a message when name (a valid shape) names no tool
// Switchyard knows: not a built-in, not an MCP tool, not a pattern.
func unknownTool(name string) string {
	if strings.Contains(name, "*") || strings.HasPrefix(name, MCPToolPrefix) {
		return ""
	}
	for _, b := range BuiltinTools {
		if name == b {
			return ""
		}
	}
	msg := fmt.Sprintf("unknown tool %q", name)
	if s := suggestTool(name); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg + fmt.Sprintf("; the built-in tools are %s, and MCP tools are named mcp__<server>__<tool>", strings.Join(BuiltinTools, ", "))
}

// suggestTool finds the built-in tool a misspelt name most likely meant,
// ignoring case first ("bash" -> "Bash").
func suggestTool(name string) string {
	for _, b := range BuiltinTools {
		if strings.EqualFold(name, b) {
			return b
		}
	}
	return suggest(name, BuiltinTools)
}
