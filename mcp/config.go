package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Transport types a server entry may name in "type".
const (
	TypeStdio = "stdio"
	TypeHTTP  = "http" // streamable HTTP; "streamable-http" is read as this
	TypeSSE   = "sse"  // the older HTTP+SSE transport
)

// MaxServerName bounds a server name, so that mcp__<server>__<tool> keeps
// room for the tool's name within the 64 characters a model API accepts.
const MaxServerName = 40

// Config is a set of MCP servers by name, as one file (or one inline map)
// declares them.
type Config struct {
	// Source is where the config came from (a file name), for messages.
	Source  string
	Servers map[string]ServerConfig
}

// Names are the server names, sorted.
func (c Config) Names() []string {
	names := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ServerConfig is one server entry. Strings may hold ${VAR} references,
// kept as written: Expand (which Connect calls) resolves them.
type ServerConfig struct {
	// Type is TypeStdio, TypeHTTP or TypeSSE; ParseConfig fills it in from
	// command (stdio) or url (http) when the entry does not say.
	Type string
	// Stdio: the command, its arguments and the variables added to the
	// environment it starts with (Options.BaseEnv).
	Command string
	Args    []string
	Env     map[string]string
	// HTTP and SSE: the endpoint and the headers sent with every request.
	URL     string
	Headers map[string]string
	// Source and Line locate the entry, for messages.
	Source string
	Line   int
}

// ConfigError is one problem in a config: where (file, line, the JSON path
// of the field) and what.
type ConfigError struct {
	Source string // file name; empty for inline data
	Line   int    // 1-based; 0 when unknown
	Field  string // e.g. mcpServers.github.command
	Msg    string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	switch {
	case e.Source != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.Source, e.Line)
	case e.Source != "":
		b.WriteString(e.Source + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// LoadConfigFile reads and parses a config file (see ParseConfig); errors
// name the file.
func LoadConfigFile(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("mcp config: %w", err)
	}
	return ParseConfig(data, path)
}

var serverNameRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
var envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseConfig parses a config in the mcpServers JSON shape of Claude
// Code's .mcp.json:
//
//	{"mcpServers": {
//	  "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
//	             "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}},
//	  "docs":   {"type": "http", "url": "https://example.com/mcp",
//	             "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}}}
//
// or the bare map of servers without the "mcpServers" wrapper (Archon's
// .archon/mcp/*.json files and inline mcp: maps). With the wrapper, other
// top-level keys are ignored (they are other settings of the same file).
// source names the data in errors (a file name, or "" for inline data).
// Every problem found is reported, each a *ConfigError with the line and
// the field's JSON path, joined with errors.Join.
func ParseConfig(data []byte, source string) (Config, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 BOM has no newline: lines stay right
	lines := newLineIndex(data)
	p := &configParser{source: source, lines: lines}
	cfg := Config{Source: source, Servers: map[string]ServerConfig{}}
	if len(bytes.TrimSpace(data)) == 0 {
		return cfg, &ConfigError{Source: source, Line: 1, Msg: "empty config: want a JSON object of servers"}
	}
	root, err := parseJSON(data)
	if err != nil {
		var se *syntaxError
		if errors.As(err, &se) {
			return cfg, &ConfigError{Source: source, Line: lines.line(se.off), Msg: "invalid JSON: " + se.msg}
		}
		return cfg, &ConfigError{Source: source, Msg: "invalid JSON: " + err.Error()}
	}
	if root.kind != 'o' {
		return cfg, p.errAt(root, "", "must be a JSON object of servers, not %s", root.kindName())
	}
	servers, prefix := root, ""
	for _, m := range root.keys {
		if m.name == "mcpServers" {
			servers, prefix = m.val, "mcpServers"
		}
	}
	if servers.kind != 'o' {
		p.errAt(servers, prefix, "must be an object of servers by name, not %s", servers.kindName())
		return cfg, p.result()
	}
	seen := map[string]bool{}
	for _, m := range servers.keys {
		field := join(prefix, m.name)
		switch {
		case !serverNameRe.MatchString(m.name):
			p.errAtOff(m.off, prefix, "server name %q: use only letters, digits, '_' and '-'", m.name)
			continue
		case len(m.name) > MaxServerName:
			p.errAtOff(m.off, prefix, "server name %q is longer than %d characters", m.name, MaxServerName)
			continue
		case seen[m.name]:
			p.errAtOff(m.off, prefix, "server %q is declared twice", m.name)
			continue
		}
		seen[m.name] = true
		if sc, ok := p.server(field, m.val); ok {
			sc.Source, sc.Line = source, lines.line(m.off)
			cfg.Servers[m.name] = sc
		}
	}
	return cfg, p.result()
}

// configParser collects the errors of one config.
type configParser struct {
	source string
	lines  lineIndex
	errs   []error
}

func (p *configParser) errAtOff(off int, field, format string, args ...any) error {
	e := &ConfigError{Source: p.source, Line: p.lines.line(off), Field: field, Msg: fmt.Sprintf(format, args...)}
	p.errs = append(p.errs, e)
	return e
}

func (p *configParser) errAt(n *jnode, field, format string, args ...any) error {
	return p.errAtOff(n.off, field, format, args...)
}

func (p *configParser) result() error {
	return errors.Join(p.errs...)
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// server reads one server entry; ok is false when it has errors.
func (p *configParser) server(field string, n *jnode) (ServerConfig, bool) {
	var sc ServerConfig
	if n.kind != 'o' {
		p.errAt(n, field, "must be an object, not %s", n.kindName())
		return sc, false
	}
	before := len(p.errs)
	fields := map[string]*jnode{}
	for _, m := range n.keys {
		f := join(field, m.name)
		if _, dup := fields[m.name]; dup {
			p.errAtOff(m.off, f, "declared twice")
			continue
		}
		fields[m.name] = m.val
		switch m.name {
		case "type":
			if s, ok := p.str(f, m.val); ok {
				switch s {
				case TypeStdio, TypeHTTP, TypeSSE:
					sc.Type = s
				case "streamable-http", "streamableHttp":
					sc.Type = TypeHTTP
				default:
					p.errAt(m.val, f, "unknown transport type %q (want %q, %q or %q)", s, TypeStdio, TypeHTTP, TypeSSE)
				}
			}
		case "command":
			if s, ok := p.str(f, m.val); ok {
				if strings.TrimSpace(s) == "" {
					p.errAt(m.val, f, "must not be empty")
				}
				p.refs(f, m.val)
				sc.Command = s
			}
		case "args":
			if m.val.kind != 'a' {
				p.errAt(m.val, f, "must be an array of strings, not %s", m.val.kindName())
				continue
			}
			sc.Args = []string{}
			for i, e := range m.val.elems {
				ef := fmt.Sprintf("%s[%d]", f, i)
				if s, ok := p.str(ef, e); ok {
					p.refs(ef, e)
					sc.Args = append(sc.Args, s)
				}
			}
		case "env":
			sc.Env = p.strMap(f, m.val, false, func(k string) string {
				if !envNameRe.MatchString(k) {
					return "not a valid environment variable name"
				}
				return ""
			})
		case "url":
			if s, ok := p.str(f, m.val); ok {
				p.refs(f, m.val)
				sc.URL = s
				if !strings.Contains(s, "${") { // a URL built from variables is checked once expanded
					if msg := checkURL(s); msg != "" {
						p.errAt(m.val, f, "%s", msg)
					}
				}
			}
		case "headers":
			sc.Headers = p.strMap(f, m.val, true, func(k string) string {
				if !validHeaderName(k) {
					return "not a valid HTTP header name"
				}
				return ""
			})
		default:
			p.errAtOff(m.off, f, "unknown field (a server takes type, command, args, env, url and headers)")
		}
	}
	if len(p.errs) > before {
		return sc, false
	}
	switch {
	case sc.Command != "" && sc.URL != "":
		p.errAt(n, field, "has both command and url: a server is either a command (stdio) or a url (http)")
	case sc.Command == "" && sc.URL == "" && sc.Type == "":
		p.errAt(n, field, "needs a command (stdio server) or a url (http server)")
	case sc.Type == "" && sc.Command != "":
		sc.Type = TypeStdio
	case sc.Type == "" && sc.URL != "":
		sc.Type = TypeHTTP
	}
	switch sc.Type {
	case TypeStdio:
		if sc.Command == "" {
			p.errAt(n, field, "a stdio server needs a command")
		}
		if fields["url"] != nil {
			p.errAt(fields["url"], join(field, "url"), "a stdio server takes no url")
		}
		if fields["headers"] != nil {
			p.errAt(fields["headers"], join(field, "headers"), "a stdio server takes no headers")
		}
	case TypeHTTP, TypeSSE:
		if sc.URL == "" {
			p.errAt(n, field, "an %s server needs a url", sc.Type)
		}
		for _, k := range []string{"command", "args", "env"} {
			if fields[k] != nil {
				p.errAt(fields[k], join(field, k), "an %s server takes no %s (it is not started by Switchyard)", sc.Type, k)
			}
		}
	}
	return sc, len(p.errs) == before
}

func (p *configParser) str(field string, n *jnode) (string, bool) {
	if n.kind != 's' {
		p.errAt(n, field, "must be a string, not %s", n.kindName())
		return "", false
	}
	return n.str, true
}

// strMap reads an object of strings; badKey says what is wrong with a key.
// Header values must fit on one line.
func (p *configParser) strMap(field string, n *jnode, headers bool, badKey func(string) string) map[string]string {
	if n.kind != 'o' {
		p.errAt(n, field, "must be an object of strings, not %s", n.kindName())
		return nil
	}
	m := map[string]string{}
	for _, k := range n.keys {
		f := join(field, k.name)
		if msg := badKey(k.name); msg != "" {
			p.errAtOff(k.off, f, "%s", msg)
			continue
		}
		if _, dup := m[k.name]; dup {
			p.errAtOff(k.off, f, "declared twice")
			continue
		}
		if s, ok := p.str(f, k.val); ok {
			if headers && strings.ContainsAny(s, "\r\n\x00") {
				p.errAt(k.val, f, "a header value cannot hold a line break or NUL")
				continue
			}
			p.refs(f, k.val)
			m[k.name] = s
		}
	}
	return m
}

// refs checks the ${VAR} references of a string value.
func (p *configParser) refs(field string, n *jnode) {
	if _, err := parseRefs(n.str); err != nil {
		p.errAt(n, field, "%v", err)
	}
}

func checkURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "not a valid URL: " + err.Error()
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Sprintf("URL %q: want an http:// or https:// URL", s)
	}
	if u.Host == "" {
		return fmt.Sprintf("URL %q has no host", s)
	}
	return ""
}

// validHeaderName: an RFC 7230 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
