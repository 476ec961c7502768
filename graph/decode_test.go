package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		in        string
		line, col int
		want      string // substring of Error()
		wantCause error  // checked with errors.Is when set
	}{
		{
			name: "syntax error on line 3",
			in:   "{\n  \"nodes\": [\n    {\"id\": \"a\",, \"type\": \"start\"}\n  ]\n}",
			line: 3, col: 16, want: "line 3, column 16: invalid character ','",
		},
		{name: "empty input", in: "", line: 1, col: 1, want: "unexpected end of JSON input"},
		{name: "truncated", in: "{\"nodes\": [", line: 1, col: 11, want: "unexpected end of JSON input"},
		{name: "top-level array", in: "[1, 2]", line: 1, col: 1, want: "must be a JSON object", wantCause: ErrNotObject},
		{name: "top-level null", in: "  null", line: 1, col: 3, want: "must be a JSON object", wantCause: ErrNotObject},
		{name: "top-level string", in: `"graph"`, line: 1, col: 1, wantCause: ErrNotObject},
		{
			name: "id is a number",
			in:   "{\"nodes\": [\n  {\"id\": 42, \"type\": \"start\"}\n]}",
			line: 2, col: 10, want: "nodes.id: got number, want a string",
		},
		{
			name: "nodes is an object",
			in:   `{"nodes": {"a": 1}}`,
			line: 1, col: 11, want: "nodes: got object, want an array",
		},
		{
			// NodeData has its own UnmarshalJSON; the position must still be
			// counted from the start of the document.
			name: "type error inside data",
			in:   "{\"nodes\": [\n  {\"id\": \"a\", \"type\": \"agent\",\n   \"data\": {\"agentName\": \"W\", \"tools\": \"yes\"}}\n]}",
			line: 3, col: 40, want: "nodes.data.tools: got string, want an object",
		},
		{
			name: "multibyte characters count as one column",
			in:   "{\"nodes\": [{\"id\": \"é€\", \"type\": 7}]}",
			line: 1, col: 33, want: "nodes.type: got number, want a string",
		},
		{
			name: "escaped quotes inside a wrongly typed string",
			in:   `{"nodes": [{"id": "a", "position": {"x": "say \"hi\"\\"}}]}`,
			line: 1, col: 42, want: "nodes.position.x: got string, want a number",
		},
		{
			name: "number out of range",
			in:   `{"nodes": [{"id": "a", "position": {"x": 1e999}}]}`,
			line: 1, col: 42, want: "nodes.position.x: number 1e999 does not fit float64",
		},
		{
			name: "edge field of wrong type",
			in:   "{\"nodes\": [],\n\"connections\": [{\"source\": true}]}",
			line: 2, col: 28, want: "connections.source: got bool, want a string",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, ps, err := Decode([]byte(tt.in))
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode error = %v (graph %v, problems %v), want *DecodeError", err, g, ps)
			}
			if de.Line != tt.line || de.Column != tt.col {
				t.Errorf("position = line %d, column %d; want line %d, column %d (%v)", de.Line, de.Column, tt.line, tt.col, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Error() = %q, want it to contain %q", err.Error(), tt.want)
			}
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Errorf("Error() = %q, want it to start with the line", err.Error())
			}
			if tt.wantCause != nil && !errors.Is(err, tt.wantCause) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.wantCause)
			}
		})
	}
}

func TestDecodeUnwrapsJSONErrors(t *testing.T) {
	t.Parallel()
	_, _, err := Decode([]byte(`{"nodes": [}`))
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("errors.As(%v, *json.SyntaxError) = false", err)
	}
}

func TestDecodeShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		in        string
		wantNodes []Node
		wantEdges []Edge
	}{
		{
			name:      "empty object gives empty lists",
			in:        `{}`,
			wantNodes: []Node{},
			wantEdges: []Edge{},
		},
		{
			name:      "null nodes and edges give empty lists",
			in:        `{"nodes": null, "edges": null}`,
			wantNodes: []Node{},
			wantEdges: []Edge{},
		},
		{
			name: "current shape is kept",
			in: `{"nodes":[{"id":"s","type":"start","position":{"x":1.5,"y":-2},"data":{"initialInput":"hi"}}],
			      "edges":[{"id":"e1","source":"s","target":"s","sourceHandle":"output","targetHandle":"input"}]}`,
			wantNodes: []Node{{ID: "s", Type: TypeStart, Position: Position{1.5, -2}, Data: NodeData{InitialInput: "hi"}}},
			wantEdges: []Edge{{ID: "e1", Source: "s", Target: "s", SourceHandle: "output", TargetHandle: "input"}},
		},
		{
			name:      "legacy x and y become position",
			in:        `{"nodes":[{"id":"s","type":"start","x":10,"y":20}]}`,
			wantNodes: []Node{{ID: "s", Type: TypeStart, Position: Position{10, 20}}},
			wantEdges: []Edge{},
		},
		{
			name:      "position wins over x and y",
			in:        `{"nodes":[{"id":"s","type":"start","x":10,"y":20,"position":{"x":1,"y":2}}]}`,
			wantNodes: []Node{{ID: "s", Type: TypeStart, Position: Position{1, 2}}},
			wantEdges: []Edge{},
		},
		{
			name: "edges and connections are merged, edges first",
			in: `{"nodes":[],
			      "connections":[{"source":"a","target":"b"}],
			      "edges":[{"id":"x","source":"b","target":"c","sourceHandle":"output"}]}`,
			wantNodes: []Node{},
			wantEdges: []Edge{
				{ID: "x", Source: "b", Target: "c", SourceHandle: "output"},
				{ID: "e-a-output-b", Source: "a", Target: "b", SourceHandle: "output"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, ps, err := Decode([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) != 0 {
				t.Errorf("problems = %v, want none", ps)
			}
			assertJSONEqual(t, "nodes", g.Nodes, tt.wantNodes)
			assertJSONEqual(t, "edges", g.Edges, tt.wantEdges)
			if g.Nodes == nil || g.Edges == nil {
				t.Errorf("nodes or edges is nil; want empty slices")
			}
		})
	}
}

func TestDecodeKeepsExtraData(t *testing.T) {
	t.Parallel()
	in := `{"nodes":[{"id":"w","type":"agent","position":{"x":0,"y":0},
	  "data":{"agentName":"W","label":"Writer <b>","ui":{"collapsed":true,"n":[1,2]}}}],"edges":[]}`
	g, _, err := Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	extra := g.Nodes[0].Data.Extra
	if string(extra["label"]) != `"Writer <b>"` || !strings.Contains(string(extra["ui"]), `"collapsed":true`) {
		t.Fatalf("Extra = %s", extra)
	}
	out, err := Encode(g)
	if err != nil {
		t.Fatal(err)
	}
	// The editor's own fields survive, and prompts stay readable.
	if !strings.Contains(string(out), `"label": "Writer <b>"`) || !strings.Contains(string(out), `"collapsed": true`) {
		t.Errorf("Encode lost or escaped extra data:\n%s", out)
	}
	g2, _, err := Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	out2, err := Encode(g2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, out2) {
		t.Errorf("round trip changed the graph:\n%s\n---\n%s", out, out2)
	}
}

// encoding/json matches keys case-insensitively; a key that only looks like
// a known field must stay in Extra and must not fill the field, or a round
// trip would change the node.
func TestDecodeCaseVariantKeys(t *testing.T) {
	t.Parallel()
	in := `{"nodes":[{"id":"c","type":"if","position":{"x":0,"y":0},
	  "data":{"agentName":"A","agentname":"B","Condition":"x","TOOLS":7}}],"edges":[]}`
	g, ps, err := Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	d := g.Nodes[0].Data
	if d.AgentName != "A" || d.Condition != "" || len(d.Conditions) != 0 || d.Tools != nil || len(ps) != 0 {
		t.Errorf("data = %+v, problems %v; want only the exact keys decoded", d, ps)
	}
	for _, k := range []string{"agentname", "Condition", "TOOLS"} {
		if _, ok := d.Extra[k]; !ok {
			t.Errorf("Extra lacks %q: %s", k, d.Extra)
		}
	}
	out := mustEncode(t, g)
	g2, ps2, err := Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	if out2 := mustEncode(t, g2); !bytes.Equal(out, out2) || len(ps2) != 0 {
		t.Errorf("round trip changed the graph (problems %v):\n%s\n---\n%s", ps2, out, out2)
	}
}

func TestEncodeEmptyGraph(t *testing.T) {
	t.Parallel()
	out, err := Encode(&Graph{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"nodes\": [],\n  \"edges\": []\n}\n"; string(out) != want {
		t.Errorf("Encode(empty) = %q, want %q", out, want)
	}
}

func assertJSONEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}
