package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
)

// Contract tests of the compatibility routes: they pin the shapes that
// AgentFlow's web client (CodeSignal/learn_bespoke-agentflow) reads. The
// field lists come from its code:
//   - packages/types/src/index.ts: WorkflowGraph {nodes, connections},
//     WorkflowNode {id, type, x, y, data?}, WorkflowConnection {source,
//     target, sourceHandle?, targetHandle?}, WorkflowRunResult {runId,
//     status, logs, state, waitingForInput, currentNodeId, workflow?},
//     WorkflowLogEntry {timestamp, nodeId, type, content}.
//   - apps/web/src/services/api.ts: errors are new Error(payload.error ||
//     payload.details || payload.message); the run-stream messages are
//     {type: start|log|done|error, entry?, result?, message?}.
//   - apps/web/src/app/workflow-editor.ts: loadDefaultWorkflow/loadWorkflow
//     read graph.nodes and graph.connections (x/y drawn as is, data.agentName
//     as the label, data.collapsed for the width); loadConfig reads
//     cfg.providers[].enabled and .models[].{id, reasoningEfforts}, and the
//     agent form selects the first reasoning effort (it must not be empty).

// afClientGraph is a graph as AgentFlow's editor posts it (runWorkflow:
// {nodes: this.nodes, connections: this.connections}): node_<n> ids,
// collapsed flags, tools {web_search} and a field Switchyard does not know.
const afClientGraph = `{
  "nodes": [
    {"id": "node_1", "type": "start", "x": 370, "y": 310, "data": {"collapsed": true, "initialInput": "a haiku"}},
    {"id": "node_2", "type": "agent", "x": 620.5, "y": 280, "data": {"agentName": "Poet", "systemPrompt": "You write haiku.",
      "userPrompt": "{{PREVIOUS_OUTPUT}}", "model": "gpt-5", "reasoningEffort": "low", "tools": {"web_search": false},
      "collapsed": false, "label": "kept"}},
    {"id": "node_3", "type": "approval", "x": 1100, "y": 300, "data": {"prompt": "Publish?", "collapsed": true}},
    {"id": "node_4", "type": "agent", "x": 1400, "y": 240, "data": {"agentName": "Publisher", "userPrompt": "{{PREVIOUS_OUTPUT}}",
      "model": "gpt-5", "reasoningEffort": "low", "tools": {"web_search": false}, "collapsed": true}}
  ],
  "connections": [
    {"source": "node_1", "target": "node_2", "sourceHandle": "output", "targetHandle": "input"},
    {"source": "node_2", "target": "node_3", "sourceHandle": "output", "targetHandle": "input"},
    {"source": "node_3", "target": "node_4", "sourceHandle": "approve", "targetHandle": "input"}
  ]
}`

type jsonObj = map[string]json.RawMessage

func decodeObj(t testing.TB, what string, raw []byte) jsonObj {
	t.Helper()
	var o jsonObj
	if err := json.Unmarshal(raw, &o); err != nil || o == nil {
		t.Fatalf("%s is not a JSON object: %v: %s", what, err, raw)
	}
	return o
}

// checkKeys fails unless o has every required key and no key outside
// required and optional.
func checkKeys(t testing.TB, what string, o jsonObj, required, optional []string) {
	t.Helper()
	allowed := map[string]bool{}
	for _, k := range append(append([]string{}, required...), optional...) {
		allowed[k] = true
	}
	var keys []string
	for k := range o {
		keys = append(keys, k)
		if !allowed[k] {
			t.Errorf("%s has key %q, not in AgentFlow's shape (want %v, optional %v)", what, k, required, optional)
		}
	}
	for _, k := range required {
		if _, ok := o[k]; !ok {
			sort.Strings(keys)
			t.Errorf("%s lacks key %q (has %v)", what, k, keys)
		}
	}
}

// jsonKind is the JSON type of a raw value: object, array, string, number,
// bool or null.
func jsonKind(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return ""
	}
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

func checkKind(t testing.TB, what string, raw json.RawMessage, kinds ...string) {
	t.Helper()
	k := jsonKind(raw)
	for _, want := range kinds {
		if k == want {
			return
		}
	}
	t.Errorf("%s is %s (%s), want %v", what, k, raw, kinds)
}

// checkAgentFlowGraph pins WorkflowGraph: {nodes: [{id, type, x, y, data}],
// connections: [{source, target, sourceHandle?, targetHandle?}]}, and no
// React Flow fields (edges, position, edge ids).
func checkAgentFlowGraph(t testing.TB, what string, raw json.RawMessage) {
	t.Helper()
	g := decodeObj(t, what, raw)
	checkKeys(t, what, g, []string{"nodes", "connections"}, nil)
	var nodes, conns []json.RawMessage
	if err := json.Unmarshal(g["nodes"], &nodes); err != nil || nodes == nil {
		t.Fatalf("%s.nodes is not an array: %s", what, g["nodes"])
	}
	if err := json.Unmarshal(g["connections"], &conns); err != nil || conns == nil {
		t.Fatalf("%s.connections is not an array: %s", what, g["connections"])
	}
	for _, n := range nodes {
		o := decodeObj(t, what+" node", n)
		checkKeys(t, what+" node", o, []string{"id", "type", "x", "y", "data"}, nil)
		checkKind(t, what+" node id", o["id"], "string")
		checkKind(t, what+" node type", o["type"], "string")
		checkKind(t, what+" node x", o["x"], "number")
		checkKind(t, what+" node y", o["y"], "number")
		checkKind(t, what+" node data", o["data"], "object")
	}
	for _, c := range conns {
		o := decodeObj(t, what+" connection", c)
		checkKeys(t, what+" connection", o, []string{"source", "target"}, []string{"sourceHandle", "targetHandle"})
		for k, v := range o {
			checkKind(t, what+" connection "+k, v, "string")
		}
	}
}

// checkRunResult pins WorkflowRunResult and returns its workflow. Besides
// AgentFlow's fields it may carry pendingApprovals and error (additions
// AgentFlow's client ignores).
func checkRunResult(t testing.TB, what string, raw json.RawMessage) json.RawMessage {
	t.Helper()
	o := decodeObj(t, what, raw)
	checkKeys(t, what, o, []string{"runId", "status", "logs", "state", "waitingForInput", "currentNodeId", "workflow"},
		[]string{"pendingApprovals", "error"})
	checkKind(t, what+".runId", o["runId"], "string")
	checkKind(t, what+".status", o["status"], "string")
	checkKind(t, what+".state", o["state"], "object")
	checkKind(t, what+".waitingForInput", o["waitingForInput"], "bool")
	checkKind(t, what+".currentNodeId", o["currentNodeId"], "string", "null")
	var logs []json.RawMessage
	if err := json.Unmarshal(o["logs"], &logs); err != nil || logs == nil {
		t.Fatalf("%s.logs is not an array: %s", what, o["logs"])
	}
	for _, l := range logs {
		checkLogEntry(t, what+" log entry", l)
	}
	checkAgentFlowGraph(t, what+".workflow", o["workflow"])
	return o["workflow"]
}

// checkLogEntry pins WorkflowLogEntry: four strings.
func checkLogEntry(t testing.TB, what string, raw json.RawMessage) {
	t.Helper()
	o := decodeObj(t, what, raw)
	checkKeys(t, what, o, []string{"timestamp", "nodeId", "type", "content"}, nil)
	for k, v := range o {
		checkKind(t, what+"."+k, v, "string")
	}
}

// checkSameGraph fails unless got (an answer's workflow) is the graph the
// client sent: the same nodes at the same places with every data field it
// sent, and the same connections.
func checkSameGraph(t testing.TB, what string, sent string, got json.RawMessage) {
	t.Helper()
	type node struct {
		ID   string         `json:"id"`
		Type string         `json:"type"`
		X    float64        `json:"x"`
		Y    float64        `json:"y"`
		Data map[string]any `json:"data"`
	}
	type g struct {
		Nodes       []node           `json:"nodes"`
		Connections []map[string]any `json:"connections"`
	}
	var want, have g
	if err := json.Unmarshal([]byte(sent), &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &have); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(have.Nodes) != len(want.Nodes) || !reflect.DeepEqual(have.Connections, want.Connections) {
		t.Fatalf("%s differs from the graph sent:\n%s", what, got)
	}
	for i, w := range want.Nodes {
		h := have.Nodes[i]
		if h.ID != w.ID || h.Type != w.Type || h.X != w.X || h.Y != w.Y {
			t.Fatalf("%s node %d is %+v, sent %+v", what, i, h, w)
		}
		for k, v := range w.Data {
			if k == "tools" { // Switchyard adds its own switch: {web_search, subagents: false}
				if h.Data[k].(map[string]any)["web_search"] != v.(map[string]any)["web_search"] {
					t.Fatalf("%s node %s tools %v, sent %v", what, w.ID, h.Data[k], v)
				}
				continue
			}
			if !reflect.DeepEqual(h.Data[k], v) {
				t.Fatalf("%s node %s data.%s = %v, sent %v", what, w.ID, k, h.Data[k], v)
			}
		}
	}
}

// TestCompatContractDefaultWorkflow: GET /api/default-workflow is a
// WorkflowGraph that AgentFlow's loadWorkflow takes (it silently drops
// anything without nodes and connections), and a valid graph.
func TestCompatContractDefaultWorkflow(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	r := v.must(http.StatusOK, "GET", "/api/default-workflow", nil, nil)
	checkAgentFlowGraph(t, "default workflow", r.body)
	var g afGraph
	r.decode(t, &g)
	if len(g.Nodes) < 4 || len(g.Connections) < 3 {
		t.Fatalf("default workflow %s", r.body)
	}
	for _, n := range g.Nodes {
		// Collapsed as AgentFlow adds nodes: expanded ones are 420px wide.
		if string(n.Data.Extra["collapsed"]) != "true" {
			t.Errorf("node %s is not collapsed: %s", n.ID, r.body)
		}
		if n.Type == graph.TypeAgent && (n.Data.AgentName == "" || n.Data.Model == "" || n.Data.ReasoningEffort == "") {
			t.Errorf("agent node %s lacks the fields AgentFlow's form shows: %+v", n.ID, n.Data)
		}
	}
	for _, c := range g.Connections {
		if c.SourceHandle == "" || c.TargetHandle == "" {
			t.Errorf("connection %+v lacks its handles", c)
		}
	}
	dg, _, err := graph.Decode(r.body)
	if err != nil {
		t.Fatal(err)
	}
	if probs := graph.Validate(dg); len(probs) > 0 {
		t.Fatalf("default workflow has problems: %+v", probs)
	}
}

// TestCompatContractRun: POST /api/run, GET /api/run/{id} and POST
// /api/resume answer WorkflowRunResult with the workflow in AgentFlow's
// shape, as the client sent it. The workflow is read back from SQLite: a
// second engine and server on the same database (a fresh process, a fresh
// client) give the same one and resume the run.
func TestCompatContractRun(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	r := v.must(http.StatusOK, "POST", "/api/run", `{"graph":`+afClientGraph+`}`, nil)
	wf := checkRunResult(t, "run result", r.body)
	checkSameGraph(t, "run result workflow", afClientGraph, wf)
	var res compatJSON
	r.decode(t, &res)
	if res.Status != engine.StatusPaused || !res.WaitingForInput || res.CurrentNodeID == nil || *res.CurrentNodeID != "node_3" {
		t.Fatalf("run: %s", r.body)
	}

	e2, err := engine.New(engine.Config{Store: v.st, ArtifactsRoot: t.TempDir(), LLM: mustLLM(t, v.fake)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e2.Close)
	s2, err := New(Config{Engine: e2, Store: v.st, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	v2 := *v
	v2.e, v2.srv, v2.ts = e2, s2, nil
	v2.url = newTestHTTP(t, s2)

	again := v2.must(http.StatusOK, "GET", "/api/run/"+res.RunID, nil, nil)
	if wf2 := checkRunResult(t, "GET /api/run result", again.body); !bytes.Equal(wf2, wf) {
		t.Fatalf("GET /api/run workflow differs from the run's:\n%s\n%s", wf2, wf)
	}

	done := v2.must(http.StatusOK, "POST", "/api/resume", map[string]any{"runId": res.RunID,
		"input": map[string]any{"decision": "approve", "note": ""}}, nil)
	checkSameGraph(t, "resume result workflow", afClientGraph, checkRunResult(t, "resume result", done.body))
	var fin compatJSON
	done.decode(t, &fin)
	if fin.Status != engine.StatusCompleted || fin.WaitingForInput || fin.State.NodeStatuses["node_4"] != "completed" {
		t.Fatalf("resume: %s", done.body)
	}
}

// TestCompatContractStreams: /api/run-stream and /api/resume-stream send
// start, log entries and a done result whose workflow has AgentFlow's shape.
func TestCompatContractStreams(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	stream := func(path, body string) (string, json.RawMessage) {
		t.Helper()
		res, err := http.Post(v.url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %v %s", path, res.StatusCode, err, raw)
		}
		var runID string
		var result json.RawMessage
		for _, line := range strings.Split(string(raw), "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			m := decodeObj(t, path+" message", []byte(data))
			var typ string
			_ = json.Unmarshal(m["type"], &typ)
			switch typ {
			case "start":
				checkKeys(t, "start message", m, []string{"type", "runId"}, nil)
				_ = json.Unmarshal(m["runId"], &runID)
			case "log":
				checkKeys(t, "log message", m, []string{"type", "entry"}, nil)
				checkLogEntry(t, "streamed log entry", m["entry"])
			case "done":
				checkKeys(t, "done message", m, []string{"type", "result"}, nil)
				result = m["result"]
			default:
				t.Fatalf("%s: unexpected message %s", path, data)
			}
		}
		if runID == "" || result == nil {
			t.Fatalf("%s: no start or no done: %s", path, raw)
		}
		return runID, result
	}
	runID, result := stream("/api/run-stream", `{"graph":`+afClientGraph+`}`)
	checkSameGraph(t, "run-stream done workflow", afClientGraph, checkRunResult(t, "run-stream done result", result))
	_, result = stream("/api/resume-stream", `{"runId":"`+runID+`","input":{"decision":"approve"}}`)
	checkSameGraph(t, "resume-stream done workflow", afClientGraph, checkRunResult(t, "resume-stream done result", result))
}

// TestCompatContractErrors: every error of the compatibility routes is
// {error: message, code, problems?}: new Error(payload.error) shows the
// message, not "[object Object]". Switchyard's own routes keep
// {error: {code, message}}.
func TestCompatContractErrors(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	noLLM := newEnv(t, func(o *envOpts) { o.noLLM = true })
	locked := newEnv(t, func(o *envOpts) { o.token = testToken })
	locked.token = "" // requests without the token
	approve := map[string]any{"runId": newID(), "input": map[string]any{"decision": "approve"}}
	cases := []struct {
		name         string
		v            *env
		method, path string
		body         any
		status       int
		code         string
		message      string // a part of the message
	}{
		{"invalid graph", v, "POST", "/api/run", map[string]any{"graph": invalidGraph()}, 400, CodeInvalidGraph, "the graph has errors"},
		{"invalid graph, stream", v, "POST", "/api/run-stream", map[string]any{"graph": invalidGraph()}, 400, CodeInvalidGraph, "the graph has errors"},
		{"malformed", v, "POST", "/api/run", `{"graph": {"nodes": [}`, 400, CodeBadRequest, "line 1"},
		{"no graph", v, "POST", "/api/run", `{}`, 400, CodeBadRequest, "graph is required"},
		{"agents without LLM", noLLM, "POST", "/api/run", `{"graph":` + afClientGraph + `}`, 503, CodeNoLLM, "no LLM is configured"},
		{"agents without LLM, stream", noLLM, "POST", "/api/run-stream", `{"graph":` + afClientGraph + `}`, 503, CodeNoLLM, "no LLM is configured"},
		{"unknown run", v, "POST", "/api/resume", approve, 404, CodeNotFound, ""},
		{"unknown run, stream", v, "POST", "/api/resume-stream", approve, 404, CodeNotFound, ""},
		{"bad run id", v, "POST", "/api/resume", map[string]any{"runId": "x y", "input": map[string]any{"decision": "approve"}}, 400, CodeBadRequest, "invalid runId"},
		{"bad decision", v, "POST", "/api/resume", map[string]any{"runId": newID(), "input": map[string]any{"decision": "perhaps"}}, 400, CodeInvalidDecision, "input.decision"},
		{"GET unknown run", v, "GET", "/api/run/" + newID(), nil, 404, CodeNotFound, ""},
		{"GET bad run id", v, "GET", "/api/run/not-a-uuid!", nil, 400, CodeBadRequest, ""},
		{"without the token", locked, "GET", "/api/default-workflow", nil, 401, CodeUnauthorized, ""},
		{"without the token, run", locked, "POST", "/api/run", `{"graph":` + afClientGraph + `}`, 401, CodeUnauthorized, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.v.with(t).request(tc.method, tc.path, tc.body)
			if r.status != tc.status {
				t.Fatalf("%d %s, want %d", r.status, r.body, tc.status)
			}
			o := decodeObj(t, "error", r.body)
			checkKeys(t, "error", o, []string{"error", "code"}, []string{"problems"})
			var b compatErrorBody
			r.decode(t, &b)
			if jsonKind(o["error"]) != "string" || b.Error == "" || b.Code != tc.code || !strings.Contains(b.Error, tc.message) {
				t.Fatalf("error %s, want code %s and a message with %q", r.body, tc.code, tc.message)
			}
			if tc.code == CodeInvalidGraph && len(b.Problems) == 0 {
				t.Fatalf("invalid graph without problems: %s", r.body)
			}
		})
	}
	// Switchyard's own routes keep their shape.
	r := v.request("GET", "/api/runs/"+newID(), nil)
	var own errorBody
	r.decode(t, &own)
	if r.status != http.StatusNotFound || own.Error.Code != CodeNotFound || own.Error.Message == "" {
		t.Fatalf("GET /api/runs/{unknown}: %d %s", r.status, r.body)
	}
}

// TestCompatContractConfig: /api/config providers are
// [{id, enabled, models: [{id, reasoningEfforts: [...]}]}] as AgentFlow's
// loadConfig reads them; enabled follows whether an LLM is configured.
func TestCompatContractConfig(t *testing.T) {
	t.Parallel()
	for _, llmOK := range []bool{true, false} {
		v := newEnv(t, func(o *envOpts) { o.noLLM = !llmOK })
		r := v.must(http.StatusOK, "GET", "/api/config", nil, nil)
		var cfg struct {
			Providers []json.RawMessage `json:"providers"`
		}
		r.decode(t, &cfg)
		if len(cfg.Providers) == 0 {
			t.Fatalf("no providers: %s", r.body)
		}
		var models int
		for _, raw := range cfg.Providers {
			p := decodeObj(t, "provider", raw)
			checkKeys(t, "provider", p, []string{"id", "enabled", "models"}, nil)
			checkKind(t, "provider id", p["id"], "string")
			checkKind(t, "provider enabled", p["enabled"], "bool")
			var enabled bool
			_ = json.Unmarshal(p["enabled"], &enabled)
			if enabled != llmOK {
				t.Errorf("provider enabled %v with llm configured %v", enabled, llmOK)
			}
			var ms []json.RawMessage
			if err := json.Unmarshal(p["models"], &ms); err != nil {
				t.Fatal(err)
			}
			for _, mraw := range ms {
				m := decodeObj(t, "model", mraw)
				checkKeys(t, "model", m, []string{"id", "reasoningEfforts"}, nil)
				var efforts []string
				if err := json.Unmarshal(m["reasoningEfforts"], &efforts); err != nil || len(efforts) == 0 {
					t.Errorf("model %s: reasoningEfforts %s must be a non-empty list of strings", mraw, m["reasoningEfforts"])
				}
				models++
			}
		}
		if models != len(DefaultModels) {
			t.Errorf("%d models offered, want %d", models, len(DefaultModels))
		}
	}
}

// TestCompatJoinRunsOnce pins a deliberate difference from AgentFlow: a
// node with several incoming connections (a join) runs once with the
// inputs joined, where AgentFlow runs it once per incoming connection.
func TestCompatJoinRunsOnce(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	const join = `{"nodes": [
	  {"id": "node_1", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "go"}},
	  {"id": "node_2", "type": "agent", "x": 200, "y": -100, "data": {"agentName": "Left"}},
	  {"id": "node_3", "type": "agent", "x": 200, "y": 100, "data": {"agentName": "Right"}},
	  {"id": "node_4", "type": "agent", "x": 400, "y": 0, "data": {"agentName": "Join"}}],
	 "connections": [
	  {"source": "node_1", "target": "node_2", "sourceHandle": "output", "targetHandle": "input"},
	  {"source": "node_1", "target": "node_3", "sourceHandle": "output", "targetHandle": "input"},
	  {"source": "node_2", "target": "node_4", "sourceHandle": "output", "targetHandle": "input"},
	  {"source": "node_3", "target": "node_4", "sourceHandle": "output", "targetHandle": "input"}]}`
	r := v.must(http.StatusOK, "POST", "/api/run", `{"graph":`+join+`}`, nil)
	var res compatJSON
	r.decode(t, &res)
	if res.Status != engine.StatusCompleted {
		t.Fatalf("run: %s", r.body)
	}
	responses := 0
	for _, l := range res.Logs {
		if l["nodeId"] == "node_4" && l["type"] == engine.EvLLMResponse {
			responses++
		}
	}
	if responses != 1 {
		t.Fatalf("the join answered %d times, want once: %s", responses, r.body)
	}
}
