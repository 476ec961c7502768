package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// TestOpenAPIMatchesRoutes checks every registered echo route against the
// OpenAPI document and every documented operation against the routes.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	v.must(http.StatusOK, "GET", "/api/openapi.json", nil, &doc)
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	param := regexp.MustCompile(`:([A-Za-z]+)`)
	routes := map[string]bool{}
	for _, r := range v.srv.echo.Routes() {
		if r.Method == echo.RouteNotFound {
			continue // fallbacks (JSON 404 for /api/*, the UI for the rest), not routes
		}
		routes[strings.ToLower(r.Method)+" "+param.ReplaceAllString(r.Path, "{$1}")] = true
	}
	documented := map[string]bool{}
	for p, ops := range doc.Paths {
		for m := range ops {
			if m == "parameters" {
				continue
			}
			documented[m+" "+p] = true
		}
	}
	var missing, extra []string
	for r := range routes {
		if !documented[r] {
			missing = append(missing, r)
		}
	}
	for d := range documented {
		if !routes[d] {
			extra = append(extra, d)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("routes missing from the OpenAPI document: %v", missing)
	}
	if len(extra) > 0 {
		t.Errorf("documented operations without a route: %v", extra)
	}
	if len(routes) < 30 {
		t.Errorf("only %d routes registered", len(routes))
	}
}

// TestOpenAPIParametersMatchPaths checks that every {param} of a documented
// path is declared, so generated clients work.
func TestOpenAPIParametersMatchPaths(t *testing.T) {
	t.Parallel()
	raw, err := buildOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	type param struct{ Name, In string }
	type operation struct {
		Parameters  []param                    `json:"parameters"`
		OperationID string                     `json:"operationId"`
		Responses   map[string]json.RawMessage `json:"responses"`
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for p, ops := range doc.Paths {
		declared := map[string]bool{}
		if raw, ok := ops["parameters"]; ok {
			var ps []param
			if err := json.Unmarshal(raw, &ps); err != nil {
				t.Fatal(err)
			}
			for _, prm := range ps {
				declared[prm.Name] = true
			}
		}
		for m, rawOp := range ops {
			if m == "parameters" {
				continue
			}
			var op operation
			if err := json.Unmarshal(rawOp, &op); err != nil {
				t.Fatal(err)
			}
			if op.OperationID == "" || len(op.Responses) == 0 {
				t.Errorf("%s %s: operationId and responses are required", m, p)
			}
			if prev, dup := ids[op.OperationID]; dup {
				t.Errorf("operationId %s used by %s and %s %s", op.OperationID, prev, m, p)
			}
			ids[op.OperationID] = m + " " + p
			all := map[string]bool{}
			for k := range declared {
				all[k] = true
			}
			for _, prm := range op.Parameters {
				if prm.In == "path" {
					all[prm.Name] = true
				}
			}
			for _, m := range regexp.MustCompile(`\{([^}]+)\}`).FindAllStringSubmatch(p, -1) {
				if !all[m[1]] {
					t.Errorf("%s: path parameter %s is not declared", p, m[1])
				}
			}
		}
	}
}

// The compatibility streams answer text/event-stream as documented; their
// answers count toward the document's coverage like any other.
func TestStreamsConformToOpenAPI(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	r := v.must(http.StatusOK, "POST", "/api/run-stream", map[string]any{"graph": approvalGraph()}, nil)
	first, _, _ := strings.Cut(string(r.body), "\n")
	var start struct {
		RunID string `json:"runId"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(first, "data: ")), &start); err != nil || start.RunID == "" {
		t.Fatalf("first message %q: %v", first, err)
	}
	v.must(http.StatusOK, "POST", "/api/resume-stream", map[string]any{"runId": start.RunID, "input": map[string]any{"decision": "approve"}}, nil)
}

// The conformance check catches answers that drift from the document: a
// real answer passes, and the same answer with a field of the wrong type,
// a required field missing or an undocumented status fails.
func TestOpenAPICatchesWrongResponses(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var run struct {
		RunID string `json:"runId"`
	}
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": noAgentGraph()}, &run)
	path := "/api/runs/" + run.RunID
	r := v.must(http.StatusOK, "GET", path, nil, nil)
	if err := specViolation("GET", path, 200, r.body); err != nil {
		t.Fatalf("the real answer fails: %v", err)
	}
	var body map[string]any
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	mutate := func(name string, f func(m map[string]any)) {
		m := map[string]any{}
		for k, val := range body {
			m[k] = val
		}
		f(m)
		raw, _ := json.Marshal(m)
		err := specViolation("GET", path, 200, raw)
		if err == nil {
			t.Errorf("%s: not caught", name)
			return
		}
		t.Logf("%s: caught: %.200s", name, err)
	}
	mutate("status as a number", func(m map[string]any) { m["status"] = 42 })
	mutate("runId missing", func(m map[string]any) { delete(m, "runId") })
	mutate("nodes as a string", func(m map[string]any) { m["nodes"] = "none" })
	if err := specViolation("GET", path, http.StatusTeapot, r.body); err == nil {
		t.Error("an undocumented status was not caught")
	}
}

// The OpenAPI document is checked in at web/src/api/openapi.json, from
// which tools/apigen generates the UI's API types (schema.gen.ts). This
// test fails when the two drift; SWITCHYARD_UPDATE_OPENAPI=1 rewrites the
// file (then run `npm run gen:api` for the types).
func TestOpenAPIFileIsCurrent(t *testing.T) {
	t.Parallel()
	raw, err := buildOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, raw, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	const file = "../web/src/api/openapi.json"
	if os.Getenv("SWITCHYARD_UPDATE_OPENAPI") != "" {
		if err := os.WriteFile(file, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run SWITCHYARD_UPDATE_OPENAPI=1 go test ./server -run TestOpenAPIFileIsCurrent)", err)
	}
	if !bytes.Equal(have, pretty.Bytes()) {
		t.Fatalf("%s is stale: run SWITCHYARD_UPDATE_OPENAPI=1 go test ./server -run TestOpenAPIFileIsCurrent, then npm run gen:api", file)
	}
}
