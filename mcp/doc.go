// Package mcp is Switchyard's client for MCP (Model Context Protocol)
// servers: it reads their config, starts or reaches them, and lists and
// calls their tools for an agent, on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// # Config
//
// ParseConfig and LoadConfigFile read the mcpServers JSON shape of Claude
// Code's .mcp.json, or the bare servers map of Archon's .archon/mcp/*.json
// files and inline mcp: maps:
//
//	{"mcpServers": {
//	  "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
//	             "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}},
//	  "docs":   {"type": "http", "url": "https://example.com/mcp",
//	             "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}}}
//
// A server is a command (type "stdio", the default with command) or a URL
// (type "http", streamable HTTP, the default with url; or "sse", the older
// HTTP+SSE transport). Server names are [A-Za-z0-9_-], at most 40
// characters. Unknown fields, unknown types, a server with both command
// and url, and values of the wrong kind are errors naming the file, the
// line and the field ("f.json:4: mcpServers.github.command: must be a
// string, not a number").
//
// # Variables
//
// command, args, env values, url and header values may hold ${NAME} or
// ${NAME:-default} (the default when NAME is unset or empty), expanded from
// the Switchyard process's environment when the server is connected (see
// Expand). A variable that is unset, without a default, is an error.
// Switchyard's own secrets never expand: OPENAI_API_KEY,
// ANTHROPIC_API_KEY, every SWITCHYARD_* variable and the names the caller
// gives in Options.Secrets. A reference to one expands to nothing and is an
// error naming the variable, and the server is not started, so that a
// shared or downloaded config cannot hand Switchyard's keys to a
// third-party server. A value written literally in env or headers is
// passed as written.
//
// # Environment of stdio servers
//
// A stdio server starts with Options.BaseEnv (the caller's allowlist, as
// for bash nodes) plus its entry's env, never with the Switchyard
// process's environment. Its command is looked up in that environment's
// PATH. It runs in its own process group (SIGKILLed by the kernel if
// Switchyard dies, on Linux); Close closes its stdin, then SIGTERMs and
// SIGKILLs the group. Each line it writes to stderr goes to
// Options.Stderr, and the last lines are quoted in errors.
//
// # Tools and calls
//
// Session.Tools names each tool mcp__<server>__<tool>, as Claude Code does
// (see QualifiedName), and normalizes its input schema into one that model
// APIs accept (see NormalizeSchema). Session.Call joins the text blocks of
// a result, describes images and resources in a line each, and cuts text
// past Options.MaxResultBytes with a note. A tool's own failure is a
// Result with IsError; a server that exits, a call past CallTimeout or a
// protocol error is an error naming the server and the tool (ErrTimeout,
// ErrServerExited and ErrClosed tell them apart).
//
// Pool keeps one session per server, connected on first use, for one run.
package mcp
