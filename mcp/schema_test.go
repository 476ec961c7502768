package mcp

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestQualifiedName(t *testing.T) {
	t.Parallel()
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	long := strings.Repeat("t", 80)
	cases := []struct{ server, tool, want string }{
		{"github", "create_issue", "mcp__github__create_issue"},
		{"everything", "get-sum", "mcp__everything__get-sum"},
		{"fs", "read.file/v2:x y", "mcp__fs__read_file_v2_x_y"},
		{"fs", "ünï", "mcp__fs____n__"}, // each byte of a multi-byte rune
	}
	for _, tc := range cases {
		if got := QualifiedName(tc.server, tc.tool); got != tc.want {
			t.Errorf("QualifiedName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
	}
	a, b := QualifiedName("srv", long), QualifiedName("srv", long+"x")
	if len(a) != MaxToolName || !valid.MatchString(a) || a == b || !strings.HasPrefix(a, "mcp__srv__ttt") {
		t.Errorf("long names: %q, %q", a, b)
	}
	if QualifiedName("srv", long) != a {
		t.Error("not deterministic")
	}
}

// TestQualifyAllCollisions: tools whose sanitized names collide all get
// distinct hashed names; the others keep their plain names.
func TestQualifyAllCollisions(t *testing.T) {
	t.Parallel()
	got := qualifyAll("s", []string{"a.b", "a_b", "a/b", "c"})
	seen := map[string]bool{}
	for i, q := range got[:3] {
		if !strings.HasPrefix(q, "mcp__s__a_b_") || len(q) != len("mcp__s__a_b_")+8 || seen[q] {
			t.Errorf("got[%d] = %q", i, q)
		}
		seen[q] = true
	}
	if got[3] != "mcp__s__c" {
		t.Errorf("got[3] = %q", got[3])
	}
}

func TestNormalizeSchema(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   any
		want string
	}{
		{"nil", nil, `{"properties":{},"type":"object"}`},
		{"empty object", map[string]any{}, `{"properties":{},"type":"object"}`},
		{"boolean schema", true, `{"properties":{},"type":"object"}`},
		{"missing type with properties", map[string]any{"properties": map[string]any{"a": map[string]any{"type": "string"}}},
			`{"properties":{"a":{"type":"string"}},"type":"object"}`},
		{"not an object", map[string]any{"type": "string", "description": "a name", "minLength": 1.0},
			`{"description":"a name","properties":{},"type":"object"}`},
		{"nullable object", map[string]any{"type": []any{"object", "null"}, "properties": map[string]any{}},
			`{"properties":{},"type":"object"}`},
		{"$schema dropped", map[string]any{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
			"properties": map[string]any{"x": map[string]any{"type": "number"}}, "required": []any{"x"}},
			`{"properties":{"x":{"type":"number"}},"required":["x"],"type":"object"}`},
		{"bad required dropped", map[string]any{"type": "object", "required": "x"}, `{"properties":{},"type":"object"}`},
		{"arrays get items", map[string]any{"type": "object", "properties": map[string]any{
			"tags":  map[string]any{"type": "array"},
			"enum":  map[string]any{"type": []any{"array", "null"}},
			"deep":  map[string]any{"type": "object", "properties": map[string]any{"list": map[string]any{"type": "array"}}},
			"typed": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"any":   map[string]any{"anyOf": []any{map[string]any{"type": "array"}, map[string]any{"type": "string"}}},
		}},
			`{"properties":{"any":{"anyOf":[{"items":{},"type":"array"},{"type":"string"}]},"deep":{"properties":{"list":{"items":{},"type":"array"}},"type":"object"},"enum":{"items":{},"type":["array","null"]},"tags":{"items":{},"type":"array"},"typed":{"items":{"type":"string"},"type":"array"}},"type":"object"}`},
		{"raw JSON", json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
			`{"properties":{"q":{"type":"string"}},"type":"object"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(NormalizeSchema(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestNormalizeSchemaCopies: the server's schema is not changed.
func TestNormalizeSchemaCopies(t *testing.T) {
	t.Parallel()
	in := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "array"}}}
	before, _ := json.Marshal(in)
	out := NormalizeSchema(in)
	out["properties"].(map[string]any)["b"] = true
	after, _ := json.Marshal(in)
	if !reflect.DeepEqual(before, after) {
		t.Errorf("input changed: %s -> %s", before, after)
	}
}
