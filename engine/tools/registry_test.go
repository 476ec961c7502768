package tools

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func TestBuiltinsNamesLookup(t *testing.T) {
	t.Parallel()
	want := []string{"Read", "Write", "Edit", "Glob", "Grep", "Bash", "LS"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	b := Builtins()
	for i, tool := range b {
		if tool.Name() != want[i] {
			t.Fatalf("Builtins()[%d] = %s, want %s", i, tool.Name(), want[i])
		}
		got, ok := Lookup(want[i])
		if !ok || got.Name() != want[i] {
			t.Fatalf("Lookup(%q) = %v, %v", want[i], got, ok)
		}
		if tool.Description() == "" {
			t.Fatalf("%s has no description", tool.Name())
		}
	}
	b[0] = nil // a caller's slice is its own
	if Builtins()[0] == nil {
		t.Fatal("Builtins shares its slice")
	}
	for _, n := range []string{"read", "NotATool", ""} {
		if _, ok := Lookup(n); ok {
			t.Fatalf("Lookup(%q) found a tool", n)
		}
	}
}

func TestMutating(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"Read": false, "Write": true, "Edit": true, "Glob": false, "Grep": false, "Bash": true, "LS": false, "Other": false,
	} {
		if got := Mutating(name); got != want {
			t.Errorf("Mutating(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestParametersAreSchemas: each tool's Parameters is a JSON schema that
// compiles, closes its object, requires only fields it declares, and holds
// Claude Code's field names.
func TestParametersAreSchemas(t *testing.T) {
	t.Parallel()
	fields := map[string][]string{
		"Read":  {"file_path", "limit", "offset"},
		"Write": {"content", "file_path"},
		"Edit":  {"file_path", "new_string", "old_string", "replace_all"},
		"Glob":  {"path", "pattern"},
		"Grep":  {"-A", "-B", "-C", "-i", "-n", "glob", "head_limit", "multiline", "offset", "output_mode", "path", "pattern", "type"},
		"Bash":  {"command", "description", "timeout"},
		"LS":    {"ignore", "path"},
	}
	for _, tool := range Builtins() {
		p := tool.Parameters()
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("%s: %v", tool.Name(), err)
		}
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
		if err != nil {
			t.Fatalf("%s: %v", tool.Name(), err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("tool.json", doc); err != nil {
			t.Fatalf("%s: %v", tool.Name(), err)
		}
		if _, err := c.Compile("tool.json"); err != nil {
			t.Fatalf("%s: schema does not compile: %v", tool.Name(), err)
		}
		if p["type"] != "object" || p["additionalProperties"] != false {
			t.Fatalf("%s: not a closed object schema: %s", tool.Name(), b)
		}
		props := p["properties"].(map[string]any)
		var names []string
		for k := range props {
			names = append(names, k)
		}
		slices.Sort(names)
		if !slices.Equal(names, fields[tool.Name()]) {
			t.Fatalf("%s fields = %v, want %v", tool.Name(), names, fields[tool.Name()])
		}
		for _, r := range p["required"].([]string) {
			if _, ok := props[r]; !ok {
				t.Fatalf("%s requires undeclared %q", tool.Name(), r)
			}
		}
	}
}
