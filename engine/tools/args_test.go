package tools

import (
	"os"
	"path/filepath"
	"testing"
)

// TestArgumentErrors: bad arguments are error Results naming the tool and
// the field, never a panic or a partial action.
func TestArgumentErrors(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	put(t, filepath.Join(te.ws, "f.txt"), "one\n")
	cases := []struct {
		tool, args string
		want       []string
	}{
		{"Read", `{`, []string{"Read:", "not valid JSON"}},
		{"Read", `[1,2]`, []string{"Read:", "must be a JSON object"}},
		{"Read", `42`, []string{"must be a JSON object"}},
		{"Read", `{}`, []string{"Read:", `missing required field "file_path"`}},
		{"Read", `{"file_path":"f.txt","offset":"abc"}`, []string{`field "offset"`, "integer", "abc"}},
		{"Read", `{"file_path":"f.txt","offset":1.5}`, []string{`field "offset"`}},
		{"Read", `{"file_path":"f.txt","limit":[1]}`, []string{`field "limit"`}},
		{"Read", `{"file_path":5}`, []string{`field "file_path"`, "string"}},
		{"Read", `{"file_path":"f.txt","path":"x"}`, []string{`unknown field "path"`, "file_path"}},
		{"Read", `{"file_path":"f.txt","offset":-1}`, []string{"offset must be 1 or more"}},
		{"Read", `{"file_path":"f.txt","limit":0}`, []string{"limit must be 1 or more"}},
		{"Write", `{"file_path":"g.txt"}`, []string{"Write:", `missing required field "content"`}},
		{"Write", `{"file_path":"g.txt","content":7}`, []string{`field "content"`}},
		{"Edit", `{"file_path":"f.txt","old_string":"one"}`, []string{`missing required field "new_string"`}},
		{"Edit", `{"file_path":"f.txt","old_string":"one","new_string":"two","replace_all":"sometimes"}`, []string{`field "replace_all"`, "boolean"}},
		{"Glob", `{"path":"."}`, []string{`missing required field "pattern"`}},
		{"Glob", `{"pattern":"[","path":"."}`, []string{"Glob:", "syntax error in pattern"}},
		{"Glob", `{"pattern":"{a,b"}`, []string{"unmatched"}},
		{"Grep", `{"pattern":"x","-i":"maybe"}`, []string{`field "-i"`}},
		{"Grep", `{"pattern":"x","output_mode":"lines"}`, []string{`field "output_mode"`, `"lines"`}},
		{"Grep", `{"pattern":"x","head_limit":-1}`, []string{`"head_limit" must not be negative`}},
		{"Grep", `{"pattern":"x","-A":"two"}`, []string{`field "-A"`}},
		{"Grep", `{"pattern":"x","type":"cobol"}`, []string{`unknown file type "cobol"`, "go"}},
		{"Grep", `{"pattern":"(unclosed"}`, []string{"invalid pattern"}},
		{"Grep", `{"pattern":"x","context":3}`, []string{`unknown field "context"`}},
		{"Bash", `{"command":"true","timeout":"soon"}`, []string{`field "timeout"`}},
		{"Bash", `{"command":"true","timeout":-5}`, []string{`field "timeout" must be a positive`}},
		{"Bash", `{"command":"  "}`, []string{`field "command" is empty`}},
		{"Bash", `{"command":"true","run_in_background":true}`, []string{`unknown field "run_in_background"`}},
		{"LS", `{"path":".","ignore":5}`, []string{`field "ignore"`, "list of strings"}},
		{"LS", `{"path":".","ignore":["["]}`, []string{`field "ignore"`}},
		{"LS", `null`, []string{`missing required field "path"`}},
	}
	for _, c := range cases {
		t.Run(c.tool+" "+c.args, func(t *testing.T) {
			mustErr(t, call(t, te.Env, c.tool, c.args), c.want...)
		})
	}
	// Nothing was written by the failing calls.
	if _, err := os.Stat(filepath.Join(te.ws, "g.txt")); !os.IsNotExist(err) {
		t.Fatalf("g.txt: %v", err)
	}
	if got := readFile(t, filepath.Join(te.ws, "f.txt")); got != "one\n" {
		t.Fatalf("f.txt changed to %q", got)
	}
}

// TestArgumentLeniency: what models commonly send instead of the schema's
// exact types is read as meant.
func TestArgumentLeniency(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	put(t, filepath.Join(te.ws, "f.txt"), "one\ntwo\nthree\n")
	for _, args := range []string{
		`{"file_path":"f.txt","offset":"2","limit":"1"}`,       // numbers as strings
		`{"file_path":"f.txt","offset":2.0,"limit":1}`,         // a whole float
		`"{\"file_path\":\"f.txt\",\"offset\":2,\"limit\":1}"`, // encoded twice
	} {
		out := mustOK(t, call(t, te.Env, "Read", args))
		if out != "     2\ttwo\n... (more lines follow; read on with offset=3)" {
			t.Fatalf("%s: %q", args, out)
		}
	}
	// null is "not set", booleans as strings are booleans.
	mustOK(t, call(t, te.Env, "Read", `{"file_path":"f.txt","offset":null,"limit":null}`))
	out := mustOK(t, call(t, te.Env, "Grep", `{"pattern":"TWO","-i":"true","output_mode":"content","-n":"false"}`))
	if out != "f.txt:two" {
		t.Fatalf("Grep: %q", out)
	}
}
