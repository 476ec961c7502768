package yamledit

import (
	"slices"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/yamlflow"
)

func gnode(id, typ string, d graph.NodeData) graph.Node {
	return graph.Node{ID: id, Type: typ, Data: d}
}

func gedge(src, dst, handle string) graph.Edge {
	return graph.Edge{ID: src + "-" + dst + "-" + handle, Source: src, Target: dst, SourceHandle: handle, TargetHandle: graph.HandleInput}
}

func TestFromGraph(t *testing.T) {
	start := gnode("s", graph.TypeStart, graph.NodeData{})
	agent := func(id, name, prompt string) graph.Node {
		return gnode(id, graph.TypeAgent, graph.NodeData{AgentName: name, UserPrompt: prompt})
	}
	type want struct {
		deps, when, trigger string
	}
	cases := []struct {
		name   string
		g      graph.Graph
		nodes  map[string]want   // yaml id -> dependencies (comma-separated), when, trigger rule
		kinds  map[string]string // yaml id -> kind
		unconv map[string]string // graph node -> reason substring
		check  func(*testing.T, *yamlflow.Workflow)
	}{
		{
			name: "agent then approval",
			g: graph.Graph{Nodes: []graph.Node{start,
				gnode("a", graph.TypeAgent, graph.NodeData{AgentName: "Writer", UserPrompt: "Write\nabout $ARGUMENTS", SystemPrompt: "Be terse", Model: "gpt-5", ReasoningEffort: "low"}),
				gnode("ok", graph.TypeApproval, graph.NodeData{Prompt: "Ship it?"})},
				Edges: []graph.Edge{gedge("s", "a", "output"), gedge("a", "ok", "output")}},
			nodes: map[string]want{"Writer": {}, "ok": {deps: "Writer"}},
			kinds: map[string]string{"Writer": "prompt", "ok": "approval"},
			check: func(t *testing.T, wf *yamlflow.Workflow) {
				n := wf.Node("Writer")
				if n.Prompt != "Write\nabout $ARGUMENTS" || n.SystemPrompt != "Be terse" || n.Model != "gpt-5" || n.Effort != "low" {
					t.Fatalf("%+v", n)
				}
				if wf.Node("ok").Approval.Message != "Ship it?" {
					t.Fatal(wf.Node("ok").Approval)
				}
			},
		},
		{
			name: "if branches become when conditions",
			g: graph.Graph{Nodes: []graph.Node{start, agent("a", "triage", "Classify: $ARGUMENTS"),
				gnode("if", graph.TypeIf, graph.NodeData{Conditions: []graph.Condition{{Operator: "equal", Value: " Bug "}, {Operator: "equal", Value: "it's"}}}),
				agent("b", "fix", "Fix it"), agent("c", "answer", "Answer"), agent("d", "other", "Other"), agent("m", "merge", "Merge")},
				Edges: []graph.Edge{gedge("s", "a", "output"), gedge("a", "if", "output"),
					gedge("if", "b", "condition-0"), gedge("if", "c", "condition-1"), gedge("if", "d", "false"),
					gedge("b", "m", "output"), gedge("c", "m", "output")}},
			nodes: map[string]want{
				"triage": {},
				"fix":    {deps: "triage", when: "$triage.output == 'bug'"},
				"answer": {deps: "triage", when: `$triage.output == 'it\'s'`},
				"other":  {deps: "triage", when: `$triage.output != 'bug' && $triage.output != 'it\'s'`},
				"merge":  {deps: "fix,answer", trigger: "none_failed_min_one_success"},
			},
			unconv: map[string]string{"if": "case-insensitively"},
		},
		{
			name: "contains, subagents, loops and rejects are listed",
			g: graph.Graph{Nodes: []graph.Node{start, agent("a", "", ""),
				gnode("if", graph.TypeIf, graph.NodeData{Conditions: []graph.Condition{{Operator: "contains", Value: "done"}}}),
				agent("b", "b", "B"), agent("sub", "helper", "Help"),
				gnode("ap", graph.TypeApproval, graph.NodeData{}),
				gnode("x", "robot", graph.NodeData{})},
				Edges: []graph.Edge{gedge("s", "a", "output"), gedge("a", "if", "output"), gedge("if", "b", "condition-0"),
					gedge("b", "a", "output"), gedge("a", "sub", "subagent"), gedge("b", "ap", "output"), gedge("ap", "a", "reject")}},
			nodes: map[string]want{"a": {}, "b": {deps: "a"}, "helper": {}, "ap": {deps: "b"}},
			unconv: map[string]string{
				"if": "no contains operator", "a": "subagent", "ap": "reject branch", "x": `node type "robot"`,
			},
			check: func(t *testing.T, wf *yamlflow.Workflow) {
				if wf.Node("a").Prompt != "$ARGUMENTS" || wf.Node("ap").Approval.Message != "Approve?" {
					t.Fatalf("%+v", wf.Node("a"))
				}
			},
		},
		{
			name: "a loop back edge",
			g: graph.Graph{Nodes: []graph.Node{start, agent("a", "draft", "Draft"), agent("b", "review", "")},
				Edges: []graph.Edge{gedge("s", "a", "output"), gedge("a", "b", "output"), gedge("b", "a", "output")}},
			nodes:  map[string]want{"draft": {}, "review": {deps: "draft"}},
			unconv: map[string]string{"a": "closes a loop", "b": "no user prompt"},
			check: func(t *testing.T, wf *yamlflow.Workflow) {
				if wf.Node("review").Prompt != "$draft.output" {
					t.Fatal(wf.Node("review").Prompt)
				}
			},
		},
		{
			name: "same names, an if on the run input, initial input",
			g: graph.Graph{Nodes: []graph.Node{gnode("s", graph.TypeStart, graph.NodeData{InitialInput: "hi"}),
				gnode("if", graph.TypeIf, graph.NodeData{Conditions: []graph.Condition{{Operator: "equal", Value: "x"}}}),
				agent("a", "Step 1", "One"), agent("b", "Step 1", "Two")},
				Edges: []graph.Edge{gedge("s", "if", "output"), gedge("if", "a", "condition-0"), gedge("if", "b", "false")}},
			nodes:  map[string]want{"Step_1": {}, "Step_1_2": {}},
			unconv: map[string]string{"s": "initial input", "if": "run's input"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src, unconv := FromGraph("Flow", "", &tc.g)
			wf, diags, err := yamlflow.Parse("flow.yaml", src)
			if err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			_ = diags
			if len(wf.Nodes) != len(tc.nodes) {
				t.Fatalf("%d nodes, want %d:\n%s", len(wf.Nodes), len(tc.nodes), src)
			}
			for id, w := range tc.nodes {
				n := wf.Node(id)
				if n == nil {
					t.Fatalf("no node %q:\n%s", id, src)
				}
				var deps []string
				if w.deps != "" {
					deps = strings.Split(w.deps, ",")
				}
				trig := w.trigger
				if trig == "" {
					trig = yamlflow.TriggerAllSuccess
				}
				if !slices.Equal(n.DependsOn, deps) || n.When != w.when || n.TriggerRule != trig {
					t.Fatalf("node %s: deps %v when %q trigger %q, want %+v\n%s", id, n.DependsOn, n.When, n.TriggerRule, w, src)
				}
				if k := tc.kinds[id]; k != "" && string(n.Kind) != k {
					t.Fatalf("node %s is %s", id, n.Kind)
				}
			}
			got := map[string]string{}
			for _, u := range unconv {
				got[u.Node] += u.Reason + "; "
			}
			for node, reason := range tc.unconv {
				if !strings.Contains(got[node], reason) {
					t.Fatalf("unconverted %q: %q, want %q (all: %+v)", node, got[node], reason, unconv)
				}
			}
			for node := range got {
				if _, ok := tc.unconv[node]; !ok {
					t.Fatalf("unexpected unconverted %q: %s", node, got[node])
				}
			}
			if tc.check != nil {
				tc.check(t, wf)
			}
		})
	}

	src, unconv := FromGraph("", "", &graph.Graph{})
	if len(unconv) != 1 || unconv[0].Node != "" || !strings.Contains(string(src), "nodes: []") {
		t.Fatalf("%s %+v", src, unconv)
	}
	if FileName("My Flow: v2!") != "my-flow-v2.yaml" || FileName("???") != "workflow.yaml" {
		t.Fatal(FileName("My Flow: v2!"))
	}
}
