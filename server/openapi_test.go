package server

import (
	"encoding/json"
	"net/http"
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
