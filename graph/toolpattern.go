package graph

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
)

// Tool patterns: the entries of an approval list, a drawn agent's
// data.tools.approve as a YAML node's approve_tools. One parser and one
// matcher for both, so a pattern means the same wherever it is written.

// Built-in tool names (Claude Code's spelling, which the Archon format and
// approval patterns use).
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

// ToolPattern is one entry of an approval list: a tool-name pattern,
// optionally narrowed to calls whose argument matches.
//
// The rule (Claude Code's permission syntax, as far as Switchyard
// implements it):
//
//   - Name is a tool name (Read, Bash, mcp__github__create_issue) or a
//     glob in which '*' matches any run of characters
//     (mcp__github__create_*, mcp__github__*, *). It matches the whole tool
//     name, case-sensitively.
//   - Tool(arg) narrows the pattern to calls by one argument: Bash by its
//     "command", Read, Write and Edit by their "file_path". Arg ending in
//     ":*" (Bash(git push:*)) or "*" is a prefix: the argument must start
//     with what comes before it. Any other Arg must equal the argument.
//     Other '*' in Arg are literal.
//   - As in Claude Code, a file pattern covers every tool of its kind:
//     Write(...) and Edit(...) both catch Write and Edit calls, and
//     Read(...) also catches Grep calls whose path is in the pattern's
//     folder or above it (a search of the whole workspace reads that
//     folder's files too; Glob and LS, which see names only, are not
//     caught).
//   - A Bash command is split into the simple commands it runs: at ;, &,
//     |, newlines, parentheses, braces, $( and backquotes, with quotes and
//     backslashes removed and redirections left out; each is matched
//     after leading variable assignments and keywords (if, then, do, !),
//     as its program's base name (/usr/bin/git is git), and past wrappers
//     that run another command (env, command, exec, sudo, nohup, time,
//     timeout, nice, xargs, ...); the script of bash -c, sh -c and eval is
//     split the same way. So Bash(git push:*) catches "cd repo && git
//     push", "env X=1 git push" and bash -c "git push". This is a best
//     effort for asking a person, not a sandbox: a command can always be
//     written so that no pattern sees it (a script file, a variable
//     holding the name).
//   - A file path is cleaned (path.Clean) before it is compared, so
//     "src/../etc/passwd" does not match Read(src/:*), and an absolute path
//     in the run's working directory is also compared relative to it (as
//     patterns are usually written): Write(docs/*) catches
//     /work/run/docs/a.md when the run works in /work/run.
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

// ParseToolPattern parses one approval-list entry (see ToolPattern).
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
		} else {
			// "./docs/" means "docs/": arguments are compared cleaned.
			for strings.HasPrefix(p.Arg, "./") {
				p.Arg = p.Arg[2:]
			}
		}
	}
	if err := CheckToolName(name); err != nil {
		return p, fmt.Errorf("%w %q: %v", ErrInvalidToolPattern, s, err)
	}
	p.Name = name
	return p, nil
}

// String is the entry as written.
func (p ToolPattern) String() string { return p.Raw }

// Match reports whether a call of toolName with the given JSON arguments
// matches the pattern (see ToolPattern for the rule); dir is the run's
// working directory ("" when unknown), against which absolute paths are
// also compared.
func (p ToolPattern) Match(toolName string, argsJSON []byte, dir string) bool {
	if !p.HasArg {
		return MatchToolName(p.Name, toolName)
	}
	field, search := p.argField(toolName)
	if field == "" {
		return false
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(argsJSON, &args); err != nil || args == nil {
		return true
	}
	raw, ok := args[field]
	if !ok {
		return true // (Grep without a path searches the whole workspace)
	}
	var val string
	if err := json.Unmarshal(raw, &val); err != nil {
		return true
	}
	if p.Name == ToolBash {
		return p.matchCommand(val)
	}
	for _, c := range pathCandidates(val, dir) {
		if p.matchArg(c) || (search && pathAbove(c, p.Arg)) {
			return true
		}
	}
	return false
}

// argField is the argument of a toolName call that the pattern compares,
// "" when the pattern does not cover that tool; search is set for Grep
// under a Read pattern (it reads the files of a whole folder).
func (p ToolPattern) argField(toolName string) (field string, search bool) {
	switch {
	case p.Name == toolName:
		return toolArgField[toolName], false
	case (p.Name == ToolWrite || p.Name == ToolEdit) && (toolName == ToolWrite || toolName == ToolEdit):
		return "file_path", false
	case p.Name == ToolRead && toolName == ToolGrep:
		return "path", true
	}
	return "", false
}

func (p ToolPattern) matchArg(v string) bool {
	if p.Prefix {
		return strings.HasPrefix(v, p.Arg)
	}
	return v == p.Arg
}

// pathAbove reports whether the folder dir contains the prefix pattern
// prefix: a search of dir reaches what the pattern names.
func pathAbove(dir, prefix string) bool {
	if dir == "." || dir == "" {
		return true
	}
	if dir == "/" {
		return strings.HasPrefix(prefix, "/")
	}
	return strings.HasPrefix(prefix, dir+"/") || prefix == dir
}

// pathCandidates are the spellings of a file argument a pattern may be
// written against: cleaned, and relative to (or joined with) the run's
// working directory.
func pathCandidates(v, dir string) []string {
	c := path.Clean(v)
	out := []string{c}
	if dir == "" {
		return out
	}
	dir = path.Clean(dir)
	if path.IsAbs(c) {
		if rel, ok := strings.CutPrefix(c, dir+"/"); ok {
			out = append(out, rel)
		} else if c == dir {
			out = append(out, ".")
		}
	} else if path.IsAbs(dir) {
		out = append(out, path.Join(dir, c))
	}
	return out
}

// normalizeCommand trims a command and collapses each run of blanks to one
// space.
func normalizeCommand(s string) string { return strings.Join(strings.Fields(s), " ") }

// commandBudget bounds the spellings matched for one simple command of a
// line (wrappers and nested scripts multiply them); one that needs more is
// treated as a match.
const commandBudget = 512

// matchCommand matches a Bash command (see ToolPattern).
func (p ToolPattern) matchCommand(cmd string) bool {
	return eachCommand(cmd, 0, nil, p.matchArg)
}

// rawSeparators split a command line where another command may start,
// quotes or not: the pieces as written are matched too, which catches
// what the lexer below reads differently from a shell.
var rawSeparators = strings.NewReplacer(";", "\n", "&", "\n", "|", "\n", "$(", "\n", "`", "\n", "(", "\n", ")", "\n")

// eachCommand calls f with each spelling of cmd: the whole line and its
// pieces as written, then each simple command's (see commandSpellings),
// until f returns true or a budget is spent (which counts as true). At
// depth 0 each simple command gets a budget of its own (budget is nil).
func eachCommand(cmd string, depth int, budget *int, f func(string) bool) bool {
	if f(normalizeCommand(cmd)) {
		return true
	}
	for _, piece := range strings.Split(rawSeparators.Replace(cmd), "\n") {
		if n := normalizeCommand(piece); n != "" && f(n) {
			return true
		}
	}
	for _, words := range shellCommands(cmd) {
		b := budget
		if depth == 0 {
			fresh := commandBudget
			b = &fresh
		}
		if commandSpellings(words, depth, b, f) {
			return true
		}
	}
	return false
}

// wrappers run the command their arguments name.
var wrappers = map[string]bool{
	"env": true, "command": true, "builtin": true, "exec": true, "nohup": true, "time": true,
	"sudo": true, "doas": true, "nice": true, "ionice": true, "timeout": true, "xargs": true,
	"stdbuf": true, "setsid": true, "chronic": true, "unbuffer": true, "flock": true, "watch": true,
	"strace": true, "ltrace": true, "taskset": true, "chrt": true, "caffeinate": true,
}

// keywords may start a simple command without being its program.
var keywords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "do": true, "while": true,
	"until": true, "!": true, "{": true, "}": true,
}

var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "ash": true, "mksh": true}

func commandSpellings(words []string, depth int, budget *int, f func(string) bool) bool {
	for len(words) > 0 && (isAssignment(words[0]) || keywords[words[0]]) {
		words = words[1:]
	}
	if len(words) == 0 {
		return false
	}
	// Wrappers and nested scripts multiply the spellings: they spend the
	// simple command's budget (the line's own commands are as many as its
	// lines, a heredoc of a thousand lines a thousand, and cost nothing).
	if depth > 0 {
		if *budget--; *budget < 0 || depth > 8 {
			*budget = -1
			return true
		}
	}
	base := path.Base(words[0])
	rest := strings.Join(words[1:], " ")
	if f(strings.TrimSpace(words[0] + " " + rest)) {
		return true
	}
	if base != words[0] && f(strings.TrimSpace(base+" "+rest)) {
		return true
	}
	switch {
	case wrappers[base]:
		// Options of their own come first (sudo -u bob, timeout 5s):
		// every later word may start the command run.
		for k := 1; k < len(words) && k <= 8; k++ {
			if commandSpellings(words[k:], depth+1, budget, f) {
				return true
			}
		}
	case shells[base]:
		for k := 1; k+1 < len(words); k++ {
			if w := words[k]; strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") && strings.Contains(w, "c") {
				return eachCommand(words[k+1], depth+1, budget, f)
			}
		}
	case base == "eval":
		return eachCommand(rest, depth+1, budget, f)
	}
	return false
}

// isAssignment reports whether w is a variable assignment (NAME=value).
func isAssignment(w string) bool {
	i := strings.IndexByte(w, '=')
	if i <= 0 {
		return false
	}
	for j, c := range w[:i] {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (j == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// shellCommands splits a shell command into the words of its simple
// commands: quotes and backslashes removed, split at ; & | ( ) newlines,
// $( and backquotes (inside double quotes too: a command substitution is
// a command of its own), redirections and their targets left out. It is
// a lexer for matching, not a shell: on what it does not understand it
// splits more, never less.
func shellCommands(cmd string) [][]string {
	var (
		cmds  [][]string
		words []string
		w     strings.Builder
		in    bool // a word is under way
		skip  bool // the next word is a redirection's target
	)
	endWord := func() {
		if in {
			if !skip {
				words = append(words, w.String())
			}
			skip = false
		}
		w.Reset()
		in = false
	}
	endCmd := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
		skip = false
	}
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch c {
		case '\\':
			if i+1 < len(cmd) && cmd[i+1] == '\n' {
				i++ // a line continuation: nothing
				continue
			}
			in = true
			if i+1 < len(cmd) {
				i++
				w.WriteByte(cmd[i])
			}
		case '\'':
			in = true
			j := strings.IndexByte(cmd[i+1:], '\'')
			if j < 0 {
				j = len(cmd) - i - 1
			}
			w.WriteString(cmd[i+1 : i+1+j])
			i += j + 1
		case '"':
			in = true
			j := i + 1
			for ; j < len(cmd) && cmd[j] != '"'; j++ {
				if cmd[j] == '\\' && j+1 < len(cmd) {
					j++
				}
			}
			body := cmd[i+1 : min(j, len(cmd))]
			w.WriteString(unescapeDouble(body))
			if strings.Contains(body, "$(") || strings.Contains(body, "`") {
				// The substitutions' commands run too.
				cmds = append(cmds, shellCommands(substitutions(body))...)
			}
			i = j
		case ' ', '\t', '\r':
			endWord()
		case ';', '&', '|', '\n', '(', ')', '`':
			endCmd()
		case '$':
			if i+1 < len(cmd) && cmd[i+1] == '(' {
				endCmd()
				i++
				continue
			}
			in = true
			w.WriteByte(c)
		case '<', '>':
			// A descriptor number before it (2>) is not a word.
			if in && isDigits(w.String()) {
				w.Reset()
				in = false
			}
			endWord()
			for i+1 < len(cmd) && (cmd[i+1] == '>' || cmd[i+1] == '<' || cmd[i+1] == '&' || cmd[i+1] == '|') {
				i++
			}
			skip = true
		default:
			in = true
			w.WriteByte(c)
		}
	}
	endCmd()
	return cmds
}

// substitutions is the text of a double-quoted string with its
// substitutions separated from the literal text around them, so that
// shellCommands sees their commands as commands of their own.
func substitutions(body string) string {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(body); i++ {
		switch {
		case strings.HasPrefix(body[i:], "$("):
			depth++
			b.WriteString("\n")
			i++
		case body[i] == ')' && depth > 0:
			depth--
			b.WriteString("\n")
		case body[i] == '`':
			b.WriteString("\n")
		case depth > 0:
			b.WriteByte(body[i])
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// unescapeDouble removes the backslashes that escape a character inside
// double quotes.
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
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

// MatchCall reports whether a call of the tool matches one of the patterns
// (an approval list, denied_tools' call patterns); the first it matches is
// returned, for messages. dir is the run's working directory (see
// ToolPattern.Match).
func MatchCall(patterns []ToolPattern, toolName string, argsJSON []byte, dir string) (ToolPattern, bool) {
	for _, p := range patterns {
		if p.Match(toolName, argsJSON, dir) {
			return p, true
		}
	}
	return ToolPattern{}, false
}

// toolNameChar reports whether c may appear in a tool name or pattern.
func toolNameChar(c rune) bool {
	return c == '_' || c == '-' || c == '*' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// CheckToolName checks the shape of a tool name or name pattern: the
// characters, and for an MCP name its mcp__<server>__<tool> parts. Whether
// a plain name is a known tool is a separate, softer check.
func CheckToolName(name string) error {
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
