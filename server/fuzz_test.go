package server

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var lineColRE = regexp.MustCompile(`line (\d+), column (\d+)`)

// FuzzDecodeJSON feeds arbitrary bodies to the request decoder: it never
// panics, and every error is a 400 whose line and column lie inside the body.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"graph": {"nodes": [], "edges": []}, "input": "x"}`,
		"{\n  \"workflowId\": 5\n}",
		`{"graph":`, ``, `   `, `{} {}`, `[1,2,3]`, "{\"input\": \"\xff\xfe\"}",
		"{\n\t\"graph\": {]\n}", `{"graph": {"nodes": "no"}}`, `"just a string"`, `null`,
		legacyGraph,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req createRunRequest
		err := decodeJSON(body, &req)
		if err == nil {
			if len(req.Graph) > 0 {
				_, _, _ = decodeGraph(req.Graph) // must not panic either
			}
			return
		}
		var ae *apiError
		if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != CodeBadRequest {
			t.Fatalf("error %v is not a 400 bad_request", err)
		}
		if m := lineColRE.FindStringSubmatch(ae.Message); m != nil {
			line, _ := strconv.Atoi(m[1])
			col, _ := strconv.Atoi(m[2])
			lines := strings.Split(string(body), "\n")
			if line < 1 || line > len(lines) || col < 1 || col > len([]rune(lines[line-1]))+1 {
				t.Fatalf("line %d column %d is outside the body (%d lines): %s", line, col, len(lines), ae.Message)
			}
		}
	})
}

// FuzzIDs: the id validators accept only what their charset allows.
func FuzzIDs(f *testing.F) {
	for _, s := range []string{"0b7c4e3a-1f2d-4c5b-9a8e-7d6c5b4a3f2e", "yaml.deploy", "", "../x", "a b", "\x00", strings.Repeat("a", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if validRunID(id) && strings.Trim(id, "0123456789abcdefABCDEF-") != "" {
			t.Fatalf("run id %q accepted", id)
		}
		if validWorkflowID(id) && (strings.ContainsAny(id, "/ \x00?#%") || strings.HasPrefix(id, ".")) {
			t.Fatalf("workflow id %q accepted", id)
		}
		if validNodeID(id) && strings.ContainsAny(id, "\x00\n\r") {
			t.Fatalf("node id %q accepted", id)
		}
	})
}
