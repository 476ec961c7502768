package graph

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// sharedAgentflow is the shared legacy fixture folder, seen from this package.
const sharedAgentflow = "../../shared/fixtures/agentflow"

func TestNormalizeRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		in, want  Graph
		wantCodes []string // warnings, in order
	}{
		{
			name: "type input becomes approval",
			in:   Graph{Nodes: []Node{{ID: "q", Type: "input", Data: NodeData{Prompt: "ok?"}}}},
			want: Graph{Nodes: []Node{{ID: "q", Type: TypeApproval, Data: NodeData{Prompt: "ok?"}}}},
		},
		{
			name: "legacy condition becomes a contains condition",
			in:   Graph{Nodes: []Node{{ID: "c", Type: TypeIf, Data: NodeData{Condition: "failed"}}}},
			want: Graph{Nodes: []Node{{ID: "c", Type: TypeIf, Data: NodeData{Conditions: []Condition{{OpContains, "failed"}}}}}},
		},
		{
			name: "legacy condition fills an empty conditions list",
			in:   Graph{Nodes: []Node{{ID: "c", Type: TypeIf, Data: NodeData{Condition: "x", Conditions: []Condition{}}}}},
			want: Graph{Nodes: []Node{{ID: "c", Type: TypeIf, Data: NodeData{Conditions: []Condition{{OpContains, "x"}}}}}},
		},
		{
			name:      "legacy condition beside conditions is dropped with a warning",
			in:        Graph{Nodes: []Node{{ID: "c", Type: TypeIf, Data: NodeData{Condition: "x", Conditions: []Condition{{OpEqual, "y"}}}}}},
			want:      Graph{Nodes: []Node{{ID: "c", Type: TypeIf, Data: NodeData{Conditions: []Condition{{OpEqual, "y"}}}}}},
			wantCodes: []string{CodeLegacyConditionDropped},
		},
		{
			name: "legacy condition on a non-if node is left alone",
			in:   Graph{Nodes: []Node{{ID: "a", Type: TypeAgent, Data: NodeData{Condition: "x"}}}},
			want: Graph{Nodes: []Node{{ID: "a", Type: TypeAgent, Data: NodeData{Condition: "x"}}}},
		},
		{
			name: "condition without operator gets equal",
			in:   Graph{Nodes: []Node{{ID: "c", Type: TypeIf, Data: NodeData{Conditions: []Condition{{"", "a"}, {OpContains, "b"}}}}}},
			want: Graph{Nodes: []Node{{ID: "c", Type: TypeIf, Data: NodeData{Conditions: []Condition{{OpEqual, "a"}, {OpContains, "b"}}}}}},
		},
		{
			name: "handle true out of an if node becomes condition-0",
			in: Graph{
				Nodes: []Node{{ID: "c", Type: TypeIf}, {ID: "a", Type: TypeAgent}},
				Edges: []Edge{{ID: "e1", Source: "c", Target: "a", SourceHandle: "true"}, {ID: "e2", Source: "a", Target: "c", SourceHandle: "true"}},
			},
			want: Graph{
				Nodes: []Node{{ID: "c", Type: TypeIf}, {ID: "a", Type: TypeAgent}},
				Edges: []Edge{{ID: "e1", Source: "c", Target: "a", SourceHandle: "condition-0"}, {ID: "e2", Source: "a", Target: "c", SourceHandle: "true"}},
			},
		},
		{
			name: "missing source handle becomes output",
			in:   Graph{Edges: []Edge{{ID: "e1", Source: "a", Target: "b"}, {ID: "e2", Source: "a", Target: "b", SourceHandle: "subagent"}}},
			want: Graph{Edges: []Edge{{ID: "e1", Source: "a", Target: "b", SourceHandle: "output"}, {ID: "e2", Source: "a", Target: "b", SourceHandle: "subagent"}}},
		},
		{
			name: "missing edge ids are generated and de-duplicated",
			in: Graph{Edges: []Edge{
				{Source: "a", Target: "b"},
				{ID: "e-a-output-b", Source: "x", Target: "y", SourceHandle: "output"},
				{Source: "a", Target: "b", TargetHandle: "input"},
				{Source: "a", Target: "b", SourceHandle: "subagent"},
			}},
			want: Graph{Edges: []Edge{
				{ID: "e-a-output-b-2", Source: "a", Target: "b", SourceHandle: "output"},
				{ID: "e-a-output-b", Source: "x", Target: "y", SourceHandle: "output"},
				{ID: "e-a-output-b-3", Source: "a", Target: "b", SourceHandle: "output", TargetHandle: "input"},
				{ID: "e-a-subagent-b", Source: "a", Target: "b", SourceHandle: "subagent"},
			}},
		},
		{
			name: "end nodes and their edges are removed with a warning",
			in: Graph{
				Nodes: []Node{{ID: "s", Type: TypeStart}, {ID: "end1", Type: "end"}, {ID: "a", Type: TypeAgent}, {ID: "end2", Type: "end"}},
				Edges: []Edge{
					{ID: "e1", Source: "s", Target: "a", SourceHandle: "output"},
					{ID: "e2", Source: "a", Target: "end1", SourceHandle: "output"},
					{ID: "e3", Source: "end1", Target: "a"},
				},
			},
			want: Graph{
				Nodes: []Node{{ID: "s", Type: TypeStart}, {ID: "a", Type: TypeAgent}},
				Edges: []Edge{{ID: "e1", Source: "s", Target: "a", SourceHandle: "output"}},
			},
			wantCodes: []string{CodeLegacyEndRemoved, CodeLegacyEndRemoved},
		},
		{
			name: "an end node sharing its id with a real node keeps the real node's edges",
			in: Graph{
				Nodes: []Node{{ID: "a", Type: TypeAgent}, {ID: "a", Type: "end"}},
				Edges: []Edge{{ID: "e1", Source: "a", Target: "a", SourceHandle: "output"}},
			},
			want: Graph{
				Nodes: []Node{{ID: "a", Type: TypeAgent}},
				Edges: []Edge{{ID: "e1", Source: "a", Target: "a", SourceHandle: "output"}},
			},
			wantCodes: []string{CodeLegacyEndRemoved},
		},
		{
			name: "extra data is never dropped",
			in: Graph{Nodes: []Node{{ID: "q", Type: "input", Data: NodeData{
				Extra: map[string]json.RawMessage{"label": json.RawMessage(`"Gate"`), "condition2": json.RawMessage(`[1]`)},
			}}}},
			want: Graph{Nodes: []Node{{ID: "q", Type: TypeApproval, Data: NodeData{
				Extra: map[string]json.RawMessage{"label": json.RawMessage(`"Gate"`), "condition2": json.RawMessage(`[1]`)},
			}}}},
		},
		{
			name: "nil lists become empty lists",
			in:   Graph{},
			want: Graph{Nodes: []Node{}, Edges: []Edge{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.in
			ps := Normalize(&g)
			assertGraphEqual(t, &g, &tt.want)
			if g.Nodes == nil || g.Edges == nil {
				t.Errorf("Normalize left a nil list: nodes %v, edges %v", g.Nodes, g.Edges)
			}
			if got := problemCodes(ps); strings.Join(got, ",") != strings.Join(tt.wantCodes, ",") {
				t.Errorf("warnings = %v, want codes %v", ps, tt.wantCodes)
			}
			for _, p := range ps {
				if p.Severity != SeverityWarning || p.NodeID == "" || !strings.Contains(p.Message, `"`+p.NodeID+`"`) {
					t.Errorf("warning %+v: want severity warning, a node id and a message naming the node", p)
				}
			}
			once := mustEncode(t, &g)
			if again := Normalize(&g); len(again) != 0 {
				t.Errorf("second Normalize warned again: %v", again)
			}
			if twice := mustEncode(t, &g); !bytes.Equal(once, twice) {
				t.Errorf("Normalize is not idempotent:\n%s\n---\n%s", once, twice)
			}
		})
	}
}

// TestGolden decodes every legacy graph in testdata/legacy and compares the
// normalized result with testdata/golden; -update rewrites the golden files.
func TestGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/legacy/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("found %d legacy graphs in testdata/legacy, want at least 4", len(files))
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			g, warnings, err := Decode(in)
			if err != nil {
				t.Fatal(err)
			}
			got := mustEncode(t, g)
			golden := filepath.Join("testdata", "golden", name)
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("normalized %s differs from %s:\n%s", path, golden, got)
			}
			// The golden file is in the current shape: decoding it changes nothing.
			g2, again, err := Decode(want)
			if err != nil {
				t.Fatal(err)
			}
			if len(again) != 0 {
				t.Errorf("decoding the golden file warned: %v", again)
			}
			if re := mustEncode(t, g2); !bytes.Equal(re, want) {
				t.Errorf("golden file is not a fixed point of Decode+Encode:\n%s", re)
			}
			if ps := Validate(g); HasErrors(ps) {
				t.Errorf("normalized %s has validation errors: %v", name, ps)
			}
			if name == "legacy-end-node.json" && strings.Join(problemCodes(warnings), ",") != CodeLegacyEndRemoved {
				t.Errorf("warnings = %v, want one legacy_end_removed", warnings)
			}
		})
	}
}

// TestSharedFixtures checks the shared legacy graphs themselves, so a
// change there is noticed, and that testdata holds the same bytes.
func TestSharedFixtures(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(sharedAgentflow, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skipf("shared fixtures not found at %s", sharedAgentflow)
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			g, _, err := Decode(in)
			if err != nil {
				t.Fatal(err)
			}
			ps := Validate(g)
			if HasErrors(ps) {
				t.Errorf("validation errors: %v", ps)
			}
			if name == "subagents-tree.json" && len(ps) != 0 {
				t.Errorf("subagents-tree.json: want no problems at all, got %v", ps)
			}
			copied, err := os.ReadFile(filepath.Join("testdata", "legacy", name))
			if err != nil {
				t.Fatalf("copy the fixture into testdata/legacy: %v", err)
			}
			if !bytes.Equal(in, copied) {
				t.Errorf("testdata/legacy/%s differs from the shared fixture; copy it again and run -update", name)
			}
		})
	}
}

func TestLegacyFixtureDetails(t *testing.T) {
	t.Parallel()
	in, err := os.ReadFile("testdata/legacy/legacy-input-node.json")
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	q := g.NodeByID("node_3")
	if q == nil || q.Type != TypeApproval || q.Data.Prompt != "Publish this poem?" || q.Position != (Position{560, 120}) {
		t.Errorf("node_3 = %+v, want an approval at (560,120) with its prompt", q)
	}
	if len(g.Edges) != 4 || g.Edges[2].ID != "e-node_3-approve-node_4" {
		t.Errorf("edges = %+v", g.Edges)
	}
}

func assertGraphEqual(t *testing.T, got, want *Graph) {
	t.Helper()
	g, w := mustEncode(t, got), mustEncode(t, want)
	if !bytes.Equal(g, w) {
		t.Errorf("graph:\n got %s\nwant %s", g, w)
	}
}

func mustEncode(t testing.TB, g *Graph) []byte {
	t.Helper()
	b, err := Encode(g)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func problemCodes(ps []Problem) []string {
	codes := make([]string, len(ps))
	for i, p := range ps {
		codes[i] = p.Code
	}
	return codes
}
