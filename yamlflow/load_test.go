package yamlflow

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// want is one expected diagnostic, written in a testdata file as a
// trailing comment on the line it must point at:
//
//	bash: ""   # want: error empty_bash nodeid
//
// Several expectations on one line are separated by ';'.
type want struct {
	Severity, Code, NodeID string
	Line                   int
}

func (w want) String() string {
	return fmt.Sprintf("%d: %s %s node=%q", w.Line, w.Severity, w.Code, w.NodeID)
}

func readWants(t *testing.T, path string) []want {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []want
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		_, spec, ok := strings.Cut(sc.Text(), "# want:")
		if !ok {
			continue
		}
		for _, one := range strings.Split(spec, ";") {
			fs := strings.Fields(one)
			if len(fs) < 2 || len(fs) > 3 {
				t.Fatalf("%s:%d: bad want %q", path, line, one)
			}
			w := want{Severity: fs[0], Code: fs[1], Line: line}
			if len(fs) == 3 {
				w.NodeID = fs[2]
			}
			out = append(out, w)
		}
	}
	return out
}

// TestLoaderErrors loads every testdata/errors file and checks that the
// diagnostics are exactly the ones its want comments list: same severity,
// code, node id and line, nothing missing and nothing extra.
func TestLoaderErrors(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/errors/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { checkWantFile(t, file) })
	}
}

// checkWantFile loads file and checks that its diagnostics are exactly the
// ones its want comments list.
func checkWantFile(t *testing.T, file string) {
	t.Helper()
	wants := readWants(t, file)
	if len(wants) == 0 {
		t.Fatal("testdata file has no want comments")
	}
	_, diags, err := Load(file)
	var got []want
	for _, d := range diags {
		got = append(got, want{d.Severity, d.Code, d.NodeID, d.Line})
		if d.File != file {
			t.Errorf("diagnostic file = %q, want %q", d.File, file)
		}
		if !strings.HasPrefix(d.Error(), file+":"+strconv.Itoa(d.Line)+": ") {
			t.Errorf("diagnostic %q does not start with file:line", d.Error())
		}
	}
	sortWants(got)
	sortWants(wants)
	if !reflect.DeepEqual(got, wants) {
		t.Errorf("diagnostics differ\n got: %v\nwant: %v", got, wants)
		for _, d := range diags {
			t.Logf("  %s %s", d.Severity, d)
		}
	}
	hasErr := slices.ContainsFunc(wants, func(w want) bool { return w.Severity == SeverityError })
	if hasErr != (err != nil) {
		t.Errorf("err = %v, want error: %v", err, hasErr)
	}
	if err != nil {
		var le *LoadError
		if !errors.As(err, &le) || !errors.Is(err, ErrInvalidWorkflow) {
			t.Fatalf("err %T is not a *LoadError matching ErrInvalidWorkflow", err)
		}
		if len(le.Diagnostics) != len(Errors(diags)) {
			t.Errorf("LoadError holds %d diagnostics, want the %d errors", len(le.Diagnostics), len(Errors(diags)))
		}
		var d Diagnostic
		if !errors.As(err, &d) || d != le.Diagnostics[0] {
			t.Errorf("errors.As(err, &Diagnostic) = %v, want the first error", d)
		}
	}
}

func sortWants(ws []want) {
	slices.SortFunc(ws, func(a, b want) int {
		return strings.Compare(a.String(), b.String())
	})
}

// TestLoaderMessages checks the wording the spec asks for.
func TestLoaderMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file, code string
		contains   []string
	}{
		{"missing_name.yaml", CodeMissingName, []string{"testdata/errors/missing_name.yaml", "name"}},
		{"two_types.yaml", CodeMutuallyExclusiveTypes, []string{`"prompt"`, `"bash"`, "mutually exclusive", `node "b"`}},
		{"no_type.yaml", CodeNoType, []string{"command, prompt, bash, script, loop, approval, cancel"}},
		{"cycle.yaml", CodeDependencyCycle, []string{"a -> b -> a"}},
		{"cycle.yaml", CodeDependencyCycle, []string{"self -> self"}},
		{"unknown_dependency.yaml", CodeUnknownDependency, []string{`"biuld"`, `did you mean "build"`}},
		{"unknown_fields.yaml", CodeUnknownField, []string{`field "depend_on"`, `did you mean "depends_on"`}},
		{"unknown_fields.yaml", CodeNotImplemented, []string{`node "a": field "agents": not implemented`}},
		{"unknown_fields.yaml", CodeUnknownOutputRef, []string{"$ghost.output"}},
		{"empty_bodies.yaml", CodeEmptyBash, []string{`node "b": field "bash": must not be empty`}},
		{"when.yaml", CodeBadWhen, []string{`"$classify.output = 'bug'"`, "use =="}},
		{"when.yaml", CodeUnknownWhenRef, []string{`"clasify"`, `did you mean "classify"`}},
		{"output_format.yaml", CodeBadOutputFormat, []string{`node "extref"`, "external $ref"}},
		{"duplicate_id.yaml", CodeDuplicateID, []string{"first defined at line 4"}},
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+tt.code, func(t *testing.T) {
			_, diags, _ := Load(filepath.Join("testdata/errors", tt.file))
			var msgs []string
			for _, d := range diags {
				if d.Code != tt.code {
					continue
				}
				msgs = append(msgs, d.Error())
				all := true
				for _, c := range tt.contains {
					all = all && strings.Contains(d.Error(), c)
				}
				if all {
					return
				}
			}
			t.Errorf("no %s diagnostic contains all of %q; got %q", tt.code, tt.contains, msgs)
		})
	}
}

func TestDiagnosticFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d    Diagnostic
		want string
	}{
		{Diagnostic{File: "wf.yaml", Line: 12, NodeID: "build", Field: "bash", Message: "must not be empty"},
			`wf.yaml:12: node "build": field "bash": must not be empty`},
		{Diagnostic{File: "wf.yaml", Line: 1, Field: "name", Message: "required"}, `wf.yaml:1: field "name": required`},
		{Diagnostic{File: "wf.yaml", Message: "empty"}, `wf.yaml: empty`},
	}
	for _, tt := range tests {
		if got := tt.d.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if got := tt.d.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestYAMLSyntaxError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		line      int
	}{
		{"unclosed flow", "name: x\ndescription: d\nnodes: [\n  {id: a, bash: echo\n", 4},
		{"unclosed list deep inside", "name: x\ndescription: d\nnodes:\n  - id: a\n    bash: echo\n    x: [a, b\n  - id: b\n    bash: echo\n", 6},
		{"bad indentation", "name: x\ndescription: d\nnodes:\n  - id: a\n    bash: echo\n   prompt: x\n", 6},
		{"tab", "name: x\ndescription: d\nnodes:\n\t- id: a\n", 4},
		{"unterminated quote", "name: x\ndescription: \"d\nnodes: []\n", 2},
		{"invalid utf8", "name: x\ndescription: d\nnodes:\n  - id: \xff\n", 4},
		{"second document broken", "name: x\ndescription: d\nnodes:\n  - id: a\n    bash: e\n---\n: : :\n  - [\n", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wf, diags, err := Parse("bad.yaml", []byte(tt.src))
			if err == nil || wf != nil {
				t.Fatalf("Parse = %v, %v; want a syntax error and no workflow", wf, err)
			}
			if len(diags) != 1 || diags[0].Code != CodeYAMLSyntax || !diags[0].IsError() {
				t.Fatalf("diags = %v, want one yaml_syntax error", diags)
			}
			if diags[0].Line != tt.line {
				t.Errorf("line = %d, want %d (%s)", diags[0].Line, tt.line, diags[0])
			}
			if !strings.HasPrefix(err.Error(), "bad.yaml:"+strconv.Itoa(tt.line)+": ") {
				t.Errorf("error %q does not start with the file and line", err)
			}
		})
	}
}

func TestParseValid(t *testing.T) {
	t.Parallel()
	wf, diags, err := Load("testdata/valid/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(diags) != 0 {
		t.Errorf("unexpected diagnostics: %v", diags)
	}
	abs, _ := filepath.Abs("testdata/valid")
	if wf.Name != "full" || wf.Description != "Exercises every node kind and field.\n" ||
		wf.Provider != "openai" || wf.Model != "gpt-5-mini" || !wf.Interactive || wf.MutatesCheckout ||
		!slices.Equal(wf.Tags, []string{"demo", "test"}) || wf.File != "testdata/valid/full.yaml" || wf.Dir != abs {
		t.Errorf("workflow fields wrong: %+v", wf)
	}
	if len(wf.Nodes) != 8 {
		t.Fatalf("got %d nodes", len(wf.Nodes))
	}

	fetch := wf.Node("fetch")
	if fetch.Kind != KindBash || fetch.Line != 12 || fetch.TimeoutMS != 15000 || fetch.OutputType != "json" ||
		!fetch.AlwaysRun || fetch.TriggerRule != TriggerAllSuccess || fetch.Context != "" || fetch.Retry != nil {
		t.Errorf("fetch = %+v", fetch)
	}
	parse := wf.Node("parse")
	if parse.Kind != KindScript || parse.ScriptNamed || parse.Runtime != RuntimeBun ||
		!slices.Equal(parse.Deps, []string{"zod", "lodash"}) || !slices.Equal(parse.DependsOn, []string{"fetch"}) ||
		!strings.Contains(parse.Script, "JSON.stringify") {
		t.Errorf("parse = %+v", parse)
	}
	if named := wf.Node("named"); !named.ScriptNamed || named.Script != "echo-args" || named.Runtime != RuntimeUV {
		t.Errorf("named = %+v", named)
	}
	c := wf.Node("classify")
	if c.Kind != KindPrompt || c.Model != "haiku" || c.Provider != "anthropic" || c.SystemPrompt != "You are terse." ||
		c.Effort != "low" || c.Context != ContextShared || c.IdleTimeoutMS != 60000 ||
		!reflect.DeepEqual(c.Retry, &Retry{MaxAttempts: 3, DelayMS: 1500, OnError: RetryOnAll}) {
		t.Errorf("classify = %+v (retry %+v)", c, c.Retry)
	}
	if c.OutputFormat["type"] != "object" || c.OutputSchema() == nil {
		t.Fatalf("classify output format not compiled: %v", c.OutputFormat)
	}
	if err := c.OutputSchema().Validate(map[string]any{"kind": "bug"}); err != nil {
		t.Errorf("valid output rejected: %v", err)
	}
	if err := c.OutputSchema().Validate(map[string]any{"kind": "chore"}); err == nil {
		t.Error("invalid output accepted")
	}
	inv := wf.Node("investigate")
	if inv.Kind != KindCommand || inv.Command != "investigate-bug" || inv.TriggerRule != TriggerAllDone ||
		inv.Context != ContextFresh || inv.WhenExpr == nil ||
		!slices.Equal(inv.WhenExpr.Refs(), []Ref{{"classify", "kind"}, {"fetch", "score"}}) {
		t.Errorf("investigate = %+v", inv)
	}
	impl := wf.Node("implement")
	if impl.Kind != KindLoop || !reflect.DeepEqual(impl.Loop, &Loop{
		Prompt: "Implement. Say DONE when done.", Until: "DONE", MaxIterations: 5, FreshContext: true,
		Interactive: true, GateMessage: "Review and reply.", UntilBash: "test -f done.txt",
	}) || impl.TriggerRule != TriggerOneSuccess {
		t.Errorf("implement = %+v loop %+v", impl, impl.Loop)
	}
	gate := wf.Node("gate")
	if gate.Kind != KindApproval || !reflect.DeepEqual(gate.Approval, &Approval{
		Message: "Ship it?", CaptureResponse: true,
		OnReject: &OnReject{Prompt: "Address the feedback.", MaxAttempts: DefaultOnRejectMaxAttempts},
	}) || gate.TriggerRule != TriggerNoneFailedMinOneSuccess {
		t.Errorf("gate = %+v approval %+v", gate, gate.Approval)
	}
	if stop := wf.Node("stop"); stop.Kind != KindCancel || stop.CancelReason != "Reviewer aborted the run" {
		t.Errorf("stop = %+v", stop)
	}
	if wf.Node("nope") != nil {
		t.Error("Node(unknown) != nil")
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	src := `
name: d
description: defaults
nodes:
  - id: p
    prompt: hi
    retry: {max_attempts: 1}
  - id: b
    bash: echo
`
	wf, diags, err := Parse("d.yaml", []byte(src))
	if err != nil || len(diags) != 0 {
		t.Fatalf("Parse: %v %v", err, diags)
	}
	if !wf.MutatesCheckout || wf.Interactive || wf.Dir != "." {
		t.Errorf("workflow defaults wrong: %+v", wf)
	}
	p := wf.Node("p")
	if p.TriggerRule != TriggerAllSuccess || p.Context != ContextFresh || p.TimeoutMS != 0 ||
		!reflect.DeepEqual(p.Retry, &Retry{MaxAttempts: 1, DelayMS: DefaultRetryDelayMS, OnError: RetryOnTransient}) {
		t.Errorf("p = %+v retry %+v", p, p.Retry)
	}
	if b := wf.Node("b"); b.Context != "" || b.Extra != nil || b.OutputSchema() != nil {
		t.Errorf("b = %+v", b)
	}
}

// TestExtraKept checks that fields we do not implement are kept, not dropped.
func TestExtraKept(t *testing.T) {
	t.Parallel()
	wf, _, err := Load("testdata/errors/unknown_fields.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(wf.Extra, map[string]any{"budget": int64(3), "colour": "blue"}) {
		t.Errorf("workflow Extra = %#v", wf.Extra)
	}
	a := wf.Node("a")
	want := map[string]any{
		"agents":    []any{"x"},
		"depend_on": []any{"b"},
	}
	if !reflect.DeepEqual(a.Extra, want) {
		t.Errorf("node Extra = %#v, want %#v", a.Extra, want)
	}
	// AI fields on a bash node are ignored, not applied.
	if b := wf.Node("b"); b.Model != "" || b.OutputFormat != nil || b.IdleTimeoutMS != 0 {
		t.Errorf("AI fields applied to a bash node: %+v", b)
	}
}

func TestAnchorsAndMerge(t *testing.T) {
	t.Parallel()
	src := `
name: anchors
description: anchors and merge keys
x-common: &common
  depends_on: [a]
  timeout: 500
nodes:
  - id: a
    bash: echo a
  - id: b
    <<: *common
    bash: echo b
  - id: c
    <<: *common
    timeout: 900
    bash: echo c
`
	wf, diags, err := Parse("m.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if b := wf.Node("b"); !slices.Equal(b.DependsOn, []string{"a"}) || b.TimeoutMS != 500 {
		t.Errorf("b = %+v", b)
	}
	if c := wf.Node("c"); c.TimeoutMS != 900 {
		t.Errorf("explicit key must win over merged: c = %+v", c)
	}
	if len(diags) != 1 || diags[0].Code != CodeUnknownField || diags[0].Field != "x-common" {
		t.Errorf("diags = %v, want one unknown_field for x-common", diags)
	}
}

// TestAliasBomb makes sure alias expansion is bounded.
func TestAliasBomb(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("name: bomb\ndescription: d\nnodes:\n  - id: a\n    bash: echo\n    junk:\n      a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "      a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	_, diags, err := Parse("bomb.yaml", []byte(b.String()))
	if err == nil {
		t.Fatal("alias bomb loaded without error")
	}
	found := false
	for _, d := range diags {
		found = found || (d.Code == CodeInvalidValue && strings.Contains(d.Message, "too large"))
	}
	if !found {
		t.Errorf("no too-large diagnostic: %v", diags)
	}
}

func TestMultipleDocuments(t *testing.T) {
	t.Parallel()
	src := "name: x\ndescription: d\nnodes:\n  - id: a\n    bash: echo\n---\nname: y\n"
	wf, diags, err := Parse("m.yaml", []byte(src))
	if err != nil || wf.Name != "x" {
		t.Fatalf("Parse: %v %v", wf, err)
	}
	if len(diags) != 1 || diags[0].Code != CodeMultipleDocuments || diags[0].Line != 6 {
		t.Errorf("diags = %v", diags)
	}
}

func TestFileTooLarge(t *testing.T) {
	t.Parallel()
	data := make([]byte, MaxFileSize+1)
	_, diags, err := Parse("big.yaml", data)
	if err == nil || len(diags) != 1 || diags[0].Code != CodeFileTooLarge {
		t.Fatalf("diags = %v, err = %v", diags, err)
	}
}

func TestLoadUnreadable(t *testing.T) {
	t.Parallel()
	_, _, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want os.ErrNotExist", err)
	}
	var le *LoadError
	if errors.As(err, &le) {
		t.Error("an unreadable file must not be a *LoadError")
	}
}

func TestIsYAMLFile(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{
		"a.yaml": true, "b.yml": true, "C.YAML": true, "dir/x.Yml": true,
		"a.json": false, "yaml": false, "a.yaml.bak": false, "": false,
	} {
		if got := IsYAMLFile(path); got != want {
			t.Errorf("IsYAMLFile(%q) = %v", path, got)
		}
	}
}

func TestValidCommandName(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{
		"archon-assist": true, "e2e-echo-command": true, "a.b": true, "x_1": true,
		"": false, "a/b": false, `a\b`: false, "..": false, "a..b": false, ".hidden": false, "../x": false,
	} {
		err := ValidCommandName(name)
		if (err == nil) != ok {
			t.Errorf("ValidCommandName(%q) = %v", name, err)
		}
		if err != nil && !errors.Is(err, ErrInvalidCommandName) {
			t.Errorf("error %v does not wrap ErrInvalidCommandName", err)
		}
	}
}

func TestIsNamedScript(t *testing.T) {
	t.Parallel()
	for s, named := range map[string]bool{
		"echo-args": true, "echo_py": true, "extract.ts": true, "  echo-args\n": true,
		"console.log(1)": false, "print('x')": false, "a b": false, "line1\nline2": false,
		"../x": false, "a/b": false, ".hidden": false, "const x = $a.output;": false, "": false,
	} {
		if got := IsNamedScript(s); got != named {
			t.Errorf("IsNamedScript(%q) = %v, want %v", s, got, named)
		}
	}
}

func TestTopoOrder(t *testing.T) {
	t.Parallel()
	src := `
name: t
description: topo
nodes:
  - id: d
    bash: echo
    depends_on: [b, c]
  - id: c
    bash: echo
    depends_on: [a]
  - id: b
    bash: echo
    depends_on: [a]
  - id: a
    bash: echo
  - id: e
    bash: echo
`
	wf, _, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	// a and e are ready at the start and a is written first; once a is
	// done, c and b are ready and c is written before b.
	want := []string{"a", "c", "b", "d", "e"}
	if got := TopoOrder(wf); !slices.Equal(got, want) {
		t.Errorf("TopoOrder = %v, want %v", got, want)
	}

	wf, _, _ = Load("testdata/errors/cycle.yaml")
	got := TopoOrder(wf)
	if !slices.Equal(got, []string{"a", "b", "self", "ok"}) {
		t.Errorf("TopoOrder with cycles = %v", got)
	}
	if TopoOrder(nil) != nil {
		t.Error("TopoOrder(nil) != nil")
	}
}

// Providers: Switchyard's (openai, claude) load quietly; Archon's others
// load with a warning; unknown ones are errors with a did-you-mean.
func TestProviders(t *testing.T) {
	t.Parallel()
	cases := []struct {
		provider, code, sev, msg string
	}{
		{"openai", "", "", ""},
		{"claude", "", "", ""},
		{"Claude", "", "", ""},
		{"pi", CodeUnsupportedProvider, SeverityWarning, "cannot run"},
		{"codex", CodeUnsupportedProvider, SeverityWarning, "cannot run"},
		{"copilot", CodeUnsupportedProvider, SeverityWarning, "cannot run"},
		{"claud", CodeUnknownProvider, SeverityError, `did you mean "claude"`},
		{"gemini", CodeUnknownProvider, SeverityError, "unknown provider"},
	}
	for _, c := range cases {
		for _, where := range []string{"top", "node"} {
			src := "name: p\ndescription: d\nprovider: " + c.provider + "\nnodes:\n  - id: a\n    prompt: hi\n"
			if where == "node" {
				src = "name: p\ndescription: d\nnodes:\n  - id: a\n    provider: " + c.provider + "\n    prompt: hi\n"
			}
			_, diags, _ := Parse("p.yaml", []byte(src))
			var got []Diagnostic
			for _, d := range diags {
				if d.Field == "provider" {
					got = append(got, d)
				}
			}
			if c.code == "" {
				if len(got) != 0 {
					t.Errorf("%s (%s): %v", c.provider, where, got)
				}
				continue
			}
			if len(got) != 1 || got[0].Code != c.code || got[0].Severity != c.sev || !strings.Contains(got[0].Message, c.msg) ||
				got[0].Line == 0 || (where == "node") != (got[0].NodeID == "a") {
				t.Errorf("%s (%s): %+v, want %s %s containing %q", c.provider, where, got, c.sev, c.code, c.msg)
			}
		}
	}
}

func TestProviderFor(t *testing.T) {
	t.Parallel()
	cases := []struct{ wfProvider, wfModel, provider, model, want string }{
		{"", "", "", "", ""},
		{"", "", "", "gpt-5-mini", ""},
		{"", "", "", "sonnet", ProviderClaude},
		{"", "", "", "claude-haiku-4-5", ProviderClaude},
		{"", "", "", "anthropic/claude-haiku-4-5", ProviderClaude},
		{"claude", "", "", "", ProviderClaude},
		{"claude", "", "openai", "", ProviderOpenAI},
		{"", "haiku", "", "", ProviderClaude},
		{"pi", "", "", "", "pi"},
	}
	for _, c := range cases {
		wf := &Workflow{Provider: c.wfProvider, Model: c.wfModel}
		if got := ProviderFor(wf, &Node{Provider: c.provider, Model: c.model}); got != c.want {
			t.Errorf("%+v: %q", c, got)
		}
	}
	for in, want := range map[string]string{"haiku": "claude-haiku-4-5", "large": "claude-opus-4-1", "anthropic/claude-x": "claude-x", "claude-sonnet-4-5": "claude-sonnet-4-5", "": ""} {
		if got := ClaudeModel(in); got != want {
			t.Errorf("ClaudeModel(%q) = %q, want %q", in, got, want)
		}
	}
}
