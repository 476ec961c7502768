package tools

import "slices"

// builtins are the built-in tools, in Claude Code's order.
var builtins = []Tool{readTool{}, writeTool{}, editTool{}, globTool{}, grepTool{}, bashTool{}, lsTool{}}

// Builtins returns the built-in tools: Read, Write, Edit, Glob, Grep, Bash,
// LS (a fresh slice; the tools are stateless values).
func Builtins() []Tool { return slices.Clone(builtins) }

// Lookup finds a built-in tool by its exact name.
func Lookup(name string) (Tool, bool) {
	for _, t := range builtins {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}

// Names lists the built-in tools' names, in Builtins' order.
func Names() []string {
	out := make([]string, len(builtins))
	for i, t := range builtins {
		out[i] = t.Name()
	}
	return out
}

// Mutating reports whether the named built-in tool writes files or runs
// code (Write, Edit, Bash): what a read-only agent must not be given.
func Mutating(name string) bool {
	switch name {
	case "Write", "Edit", "Bash":
		return true
	}
	return false
}
