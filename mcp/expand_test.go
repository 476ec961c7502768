package mcp

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

func lookupIn(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestExpand(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"TOKEN": "t0k", "HOST": "example.com", "EMPTY": "",
		"OPENAI_API_KEY": "sk-live", "ANTHROPIC_API_KEY": "sk-ant", "SWITCHYARD_TOKEN": "srv", "GH_ADMIN": "admin",
	}
	cases := []struct {
		name    string
		in      string
		want    string
		wantErr string // "" for none
	}{
		{"plain", "abc", "abc", ""},
		{"one variable", "Bearer ${TOKEN}", "Bearer t0k", ""},
		{"two variables", "${HOST}/${TOKEN}", "example.com/t0k", ""},
		{"dollar without braces stays", "$TOKEN and $", "$TOKEN and $", ""},
		{"default when unset", "${NOPE:-fallback}", "fallback", ""},
		{"default when empty", "${EMPTY:-fallback}", "fallback", ""},
		{"default not used when set", "${TOKEN:-fallback}", "t0k", ""},
		{"empty variable", "[${EMPTY}]", "[]", ""},
		{"unset variable", "x${NOPE}y", "xy", "${NOPE} is not set"},
		{"openai key", "${OPENAI_API_KEY}", "", "${OPENAI_API_KEY} is one of Switchyard's own secrets"},
		{"anthropic key", "k=${ANTHROPIC_API_KEY}", "k=", "${ANTHROPIC_API_KEY} is one of Switchyard's own secrets"},
		{"switchyard variable", "${SWITCHYARD_TOKEN}", "", "${SWITCHYARD_TOKEN} is one of Switchyard's own secrets"},
		{"caller's secret", "${GH_ADMIN}", "", "${GH_ADMIN} is one of Switchyard's own secrets"},
		{"secret with a default", "${OPENAI_API_KEY:-x}", "", "${OPENAI_API_KEY} is one of"},
		{"malformed", "${TOKEN", "", "without its closing }"},
	}
	opts := Options{LookupEnv: lookupIn(env), Secrets: []string{"GH_ADMIN"}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The same string in every field that expands.
			sc := ServerConfig{Command: tc.in, Args: []string{"a", tc.in}, Env: map[string]string{"V": tc.in},
				Headers: map[string]string{"X-V": tc.in}}
			got, err := Expand("srv", sc, opts)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Expand: %v", err)
				}
			} else {
				if err == nil {
					t.Fatalf("no error; got %#v", got)
				}
				for _, field := range []string{"command", "args[1]", "env.V", "headers.X-V"} {
					if !strings.Contains(err.Error(), `mcp server "srv": `+field+": ") {
						t.Errorf("error does not name field %s: %v", field, err)
					}
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %q lacks %q", err, tc.wantErr)
				}
			}
			if tc.wantErr != "" && strings.Contains(tc.wantErr, "closing") {
				return
			}
			want := ServerConfig{Command: tc.want, Args: []string{"a", tc.want}, Env: map[string]string{"V": tc.want},
				Headers: map[string]string{"X-V": tc.want}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %#v\nwant %#v", got, want)
			}
			for _, secret := range []string{"sk-live", "sk-ant", "srv", "admin"} {
				if strings.Contains(got.Command, secret) {
					t.Errorf("a secret's value leaked: %q", got.Command)
				}
			}
		})
	}
}

// TestExpandURL: a URL built from variables is checked once expanded.
func TestExpandURL(t *testing.T) {
	t.Parallel()
	opts := Options{LookupEnv: lookupIn(map[string]string{"BASE": "https://mcp.example.com", "BAD": "ftp://x"})}
	cfg, err := ParseConfig([]byte(`{"a": {"url": "${BASE}/mcp"}, "b": {"url": "${BAD}/mcp"}}`), "m.json")
	if err != nil {
		t.Fatal(err)
	}
	a, err := Expand("a", cfg.Servers["a"], opts)
	if err != nil || a.URL != "https://mcp.example.com/mcp" {
		t.Fatalf("a: %q, %v", a.URL, err)
	}
	_, err = Expand("b", cfg.Servers["b"], opts)
	if err == nil || !strings.Contains(err.Error(), `mcp server "b" (m.json:1): url: URL "ftp://x/mcp": want an http:// or https:// URL`) {
		t.Fatalf("b: %v", err)
	}
}

// TestConnectRefusesSecrets: a config naming a secret starts nothing.
func TestConnectRefusesSecrets(t *testing.T) {
	t.Parallel()
	started := false
	sc := ServerConfig{Command: "true", Env: map[string]string{"KEY": "${OPENAI_API_KEY}"}}
	_, err := Connect(context.Background(), "leaky", sc, Options{
		LookupEnv: lookupIn(map[string]string{"OPENAI_API_KEY": "sk-live"}),
		OnStart:   func(string, int, uint64) { started = true },
	})
	if err == nil || !strings.Contains(err.Error(), `mcp server "leaky": env.KEY: ${OPENAI_API_KEY} is one of Switchyard's own secrets`) {
		t.Fatalf("Connect: %v", err)
	}
	if started {
		t.Fatal("the server was started")
	}
}
