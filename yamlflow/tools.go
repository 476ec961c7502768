package yamlflow

import (
	"fmt"
	"strings"

	"github.com/switchyard/switchyard/graph"
)

// Tool access of AI nodes: allowed_tools, denied_tools and approve_tools
// (whose patterns are graph.ToolPattern, as a drawn agent's are).

// DefaultMaxTurns is the agent loop's turn limit when a node sets no
// max_turns. The engine applies it; the loader leaves Node.MaxTurns 0.
const DefaultMaxTurns = 50

// ToolEnabled reports whether an AI node may use the tool named name:
// when AllowedTools is set (even empty) the name must match one of its
// entries, and it must match none of DeniedTools.
func (n *Node) ToolEnabled(name string) bool {
	if n.AllowedTools != nil && !matchAnyTool(n.AllowedTools, name) {
		return false
	}
	return !matchAnyTool(n.DeniedTools, name)
}

func matchAnyTool(patterns []string, name string) bool {
	for _, p := range patterns {
		if graph.MatchToolName(p, name) {
			return true
		}
	}
	return false
}

// unknownTool returns a message when name (a valid shape) names no tool
// Switchyard knows: not a built-in, not an MCP tool, not a pattern.
func unknownTool(name string) string {
	if strings.Contains(name, "*") || strings.HasPrefix(name, graph.MCPToolPrefix) {
		return ""
	}
	for _, b := range graph.BuiltinTools {
		if name == b {
			return ""
		}
	}
	msg := fmt.Sprintf("unknown tool %q", name)
	if s := suggestTool(name); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg + fmt.Sprintf("; the built-in tools are %s, and MCP tools are named mcp__<server>__<tool>", strings.Join(graph.BuiltinTools, ", "))
}

// suggestTool finds the built-in tool a misspelt name most likely meant,
// ignoring case first ("bash" -> "Bash").
func suggestTool(name string) string {
	for _, b := range graph.BuiltinTools {
		if strings.EqualFold(name, b) {
			return b
		}
	}
	return suggest(name, graph.BuiltinTools)
}
