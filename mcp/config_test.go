package mcp

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	data := `{
  "mcpServers": {
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}
    },
    "docs": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}},
    "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
    "inferred_http": {"url": "http://localhost:8051/mcp"},
    "stdio-typed": {"type": "stdio", "command": "/usr/bin/server"},
    "streamable": {"type": "streamable-http", "url": "https://x.test/mcp"}
  },
  "otherSetting": true
}`
	cfg, err := ParseConfig([]byte(data), ".mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ServerConfig{
		"github": {Type: TypeStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github"},
			Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}, Source: ".mcp.json", Line: 3},
		"docs": {Type: TypeHTTP, URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${DOCS_TOKEN}"},
			Source: ".mcp.json", Line: 8},
		"legacy":        {Type: TypeSSE, URL: "http://127.0.0.1:9/sse", Source: ".mcp.json", Line: 9},
		"inferred_http": {Type: TypeHTTP, URL: "http://localhost:8051/mcp", Source: ".mcp.json", Line: 10},
		"stdio-typed":   {Type: TypeStdio, Command: "/usr/bin/server", Source: ".mcp.json", Line: 11},
		"streamable":    {Type: TypeHTTP, URL: "https://x.test/mcp", Source: ".mcp.json", Line: 12},
	}
	if !reflect.DeepEqual(cfg.Servers, want) {
		t.Errorf("servers:\n got %#v\nwant %#v", cfg.Servers, want)
	}
	if got := cfg.Names(); !reflect.DeepEqual(got, []string{"docs", "github", "inferred_http", "legacy", "stdio-typed", "streamable"}) {
		t.Errorf("Names() = %v", got)
	}
}

// TestParseConfigBareMap: Archon's .archon/mcp/*.json files (and inline
// mcp: maps) are the servers map without the mcpServers wrapper.
func TestParseConfigBareMap(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(`{"ntfy": {"command": "uvx", "args": ["ntfy-mcp"]}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	sc, ok := cfg.Servers["ntfy"]
	if !ok || sc.Command != "uvx" || !reflect.DeepEqual(sc.Args, []string{"ntfy-mcp"}) || sc.Type != TypeStdio || sc.Line != 1 {
		t.Fatalf("servers = %#v", cfg.Servers)
	}
	empty, err := ParseConfig([]byte(`{"mcpServers": {}}`), "")
	if err != nil || len(empty.Servers) != 0 {
		t.Fatalf("empty config: %v, %#v", err, empty)
	}
}

func TestParseConfigErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, data string
		want       []string // each must appear in the error
	}{
		{"command not a string", "{\n  \"mcpServers\": {\n    \"github\": {\n      \"command\": 5\n    }\n  }\n}",
			[]string{"f.json:4: mcpServers.github.command: must be a string, not a number"}},
		{"unknown transport type", "{\"mcpServers\": {\n\"ws\": {\"type\": \"websocket\", \"url\": \"ws://x\"}}}",
			[]string{"f.json:2: mcpServers.ws.type: unknown transport type \"websocket\""}},
		{"command and url", "{\"s\": {\n\"command\": \"x\",\n\"url\": \"http://a\"}}",
			[]string{"f.json:1: s: has both command and url"}},
		{"name with a space", "{\"mcpServers\": {\n\n\"my server\": {\"command\": \"x\"}}}",
			[]string{"f.json:3: mcpServers: server name \"my server\": use only letters, digits"}},
		{"name with a dot", `{"a.b": {"command": "x"}}`, []string{`server name "a.b"`}},
		{"name too long", `{"` + strings.Repeat("n", MaxServerName+1) + `": {"command": "x"}}`, []string{"longer than 40 characters"}},
		{"duplicate server", "{\"s\": {\"command\": \"x\"},\n\"s\": {\"command\": \"y\"}}", []string{"f.json:2: server \"s\" is declared twice"}},
		{"args not an array", `{"s": {"command": "x", "args": "-y"}}`, []string{"s.args: must be an array of strings, not a string"}},
		{"arg not a string", "{\"s\": {\"command\": \"x\", \"args\": [\"a\",\n 2]}}", []string{"f.json:2: s.args[1]: must be a string, not a number"}},
		{"env value not a string", "{\"s\": {\"command\": \"x\",\n \"env\": {\"PORT\": 8080}}}", []string{"f.json:2: s.env.PORT: must be a string, not a number"}},
		{"env name", `{"s": {"command": "x", "env": {"A-B": "1"}}}`, []string{"s.env.A-B: not a valid environment variable name"}},
		{"env not an object", `{"s": {"command": "x", "env": ["A=1"]}}`, []string{"s.env: must be an object of strings, not an array"}},
		{"unknown field", "{\"s\": {\"command\": \"x\",\n\"cmd\": \"y\"}}", []string{"f.json:2: s.cmd: unknown field"}},
		{"no command or url", `{"s": {"args": ["x"]}}`, []string{"s: needs a command (stdio server) or a url (http server)"}},
		{"stdio without command", `{"s": {"type": "stdio"}}`, []string{"s: a stdio server needs a command"}},
		{"http without url", `{"s": {"type": "http"}}`, []string{"s: an http server needs a url"}},
		{"stdio with headers", `{"s": {"command": "x", "headers": {"A": "b"}}}`, []string{"s.headers: a stdio server takes no headers"}},
		{"http with args", `{"s": {"url": "http://a", "args": ["x"]}}`, []string{"s.args: an http server takes no args"}},
		{"empty command", `{"s": {"command": " "}}`, []string{"s.command: must not be empty"}},
		{"bad url scheme", `{"s": {"url": "ftp://a/b"}}`, []string{`s.url: URL "ftp://a/b": want an http:// or https:// URL`}},
		{"url without host", `{"s": {"url": "http:///x"}}`, []string{"has no host"}},
		{"header name", `{"s": {"url": "http://a", "headers": {"Bad Name": "x"}}}`, []string{"s.headers.Bad Name: not a valid HTTP header name"}},
		{"header value newline", `{"s": {"url": "http://a", "headers": {"X": "a\nb"}}}`, []string{"s.headers.X: a header value cannot hold a line break"}},
		{"unterminated reference", "{\"s\": {\"command\": \"x\",\n\"env\": {\"T\": \"${TOKEN\"}}}", []string{"f.json:2: s.env.T:", "without its closing }"}},
		{"bad variable name", `{"s": {"command": "x", "args": ["${1X}"]}}`, []string{`s.args[0]: ${1X}: "1X" is not a variable name`}},
		{"syntax error", "{\"s\": {\"command\": \"x\"\n\"args\": []}}", []string{"f.json:2: invalid JSON"}},
		{"truncated", "{\"s\": {\"command\": \"x\",\n", []string{"f.json:2: invalid JSON: unexpected end of JSON input"}},
		{"trailing data", "{\"s\": {\"command\": \"x\"}}\n{}", []string{"f.json:2: invalid JSON: unexpected data after the top-level value"}},
		{"top level array", `[{"command": "x"}]`, []string{"f.json:1: must be a JSON object of servers, not an array"}},
		{"mcpServers not an object", "{\n\"mcpServers\": [1]}", []string{"f.json:2: mcpServers: must be an object of servers by name, not an array"}},
		{"server not an object", `{"s": "npx server"}`, []string{"s: must be an object, not a string"}},
		{"empty", "  \n", []string{"f.json:1: empty config"}},
		{"field twice", `{"s": {"command": "x", "command": "y"}}`, []string{"s.command: declared twice"}},
		{"too deep", `{"s": {"command": "x", "env": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}`, []string{"nested deeper than 64 levels"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig([]byte(tc.data), "f.json")
			if err == nil {
				t.Fatalf("no error for %s", tc.data)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Errorf("error %T is not a *ConfigError", err)
			}
		})
	}
}

// TestParseConfigReportsEveryError: one pass reports each bad server,
// each with its own line.
func TestParseConfigReportsEveryError(t *testing.T) {
	t.Parallel()
	data := "{\n\"a\": {\"command\": 1},\n\"ok\": {\"command\": \"x\"},\n\"b\": {\"type\": \"grpc\", \"url\": \"http://x\"}\n}"
	cfg, err := ParseConfig([]byte(data), "f.json")
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{"f.json:2: a.command: must be a string", `f.json:4: b.type: unknown transport type "grpc"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if _, ok := cfg.Servers["ok"]; !ok {
		t.Errorf("the good server is kept beside the errors: %#v", cfg.Servers)
	}
}

func TestLoadConfigFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "ntfy.json")
	if err := os.WriteFile(good, []byte("\xef\xbb\xbf{\"ntfy\": {\"command\": \"uvx\"}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfigFile(good)
	if err != nil || cfg.Source != good || cfg.Servers["ntfy"].Source != good {
		t.Fatalf("LoadConfigFile = %#v, %v", cfg, err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{\n\"s\": {\"command\": true}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfigFile(bad); err == nil || !strings.Contains(err.Error(), bad+":2: s.command: must be a string, not a boolean") {
		t.Fatalf("bad file: %v", err)
	}
	missing := filepath.Join(dir, "missing.json")
	if _, err := LoadConfigFile(missing); err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}
