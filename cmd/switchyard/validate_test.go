package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// binary is the switchyard binary built once by TestMain for the tests that
// run a real process.
var binary string

func TestMain(m *testing.M) {
	// The commands' tests choose their database themselves.
	os.Unsetenv("SWITCHYARD_DB")
	os.Unsetenv("SWITCHYARD_DATABASE_URL")
	// The sandbox is one per process (internal/proc), and commands run
	// in this process (run(t, ...)) in parallel tests each set it to hide
	// their own data folder: a step of one then started under another's,
	// whose folder its test had removed, and failed ("hidden from steps,
	// is gone": TestRunYAMLApprovalResume under load in CI). Off for
	// them and for the binary by default; the sandbox's own tests
	// (sandbox_test.go) turn it on explicitly.
	os.Setenv("SWITCHYARD_SANDBOX", "off")
	dir, err := os.MkdirTemp("", "switchyard-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "switchyard")
	if runtime.GOOS == "windows" {
		binary += ".exe"
	}
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Graph files the tests write.
const (
	validGraph = `{"nodes":[
  {"id":"s","type":"start","position":{"x":0,"y":0},"data":{"initialInput":"hi"}},
  {"id":"w","type":"agent","position":{"x":1,"y":0},"data":{"agentName":"Writer"}}],
 "edges":[{"id":"e1","source":"s","target":"w","sourceHandle":"output"}]}`
	// a start node without edges, an agent calling a subagent without the
	// tool, and an unreachable approval (a warning)
	brokenGraph = `{"nodes":[
  {"id":"s","type":"start","position":{"x":0,"y":0},"data":{}},
  {"id":"w","type":"agent","position":{"x":1,"y":0},"data":{"agentName":"Writer"}},
  {"id":"h","type":"agent","position":{"x":1,"y":0},"data":{"agentName":"Helper"}}],
 "edges":[{"id":"e1","source":"w","target":"h","sourceHandle":"subagent"}]}`
	warningGraph = `{"nodes":[
  {"id":"s","type":"start","position":{"x":0,"y":0},"data":{}},
  {"id":"w","type":"agent","position":{"x":1,"y":0},"data":{"agentName":"Writer"}},
  {"id":"lost","type":"agent","position":{"x":2,"y":0},"data":{"agentName":"Lost"}}],
 "edges":[{"id":"e1","source":"s","target":"w"}]}`
	malformedGraph = "{\n  \"nodes\": [\n    {\"id\": \"s\" \"type\": \"start\"}\n  ]\n}\n"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runMain(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestValidateText(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	valid := writeFile(t, dir, "valid.json", validGraph)
	broken := writeFile(t, dir, "broken.json", brokenGraph)
	warn := writeFile(t, dir, "warn.json", warningGraph)
	malformed := writeFile(t, dir, "malformed.json", malformedGraph)
	missing := filepath.Join(dir, "missing.json")

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    []string // exact lines, in order
		wantStderr []string // substrings
	}{
		{
			name:     "valid file",
			args:     []string{"validate", valid},
			wantCode: exitOK,
			wantOut:  []string{valid + ": ok"},
		},
		{
			name:     "legacy file is normalized before validation",
			args:     []string{"validate", "../../graph/testdata/legacy/legacy-input-node.json"},
			wantCode: exitOK,
			wantOut:  []string{"../../graph/testdata/legacy/legacy-input-node.json: ok"},
		},
		{
			name:     "errors exit 1, one line per problem, severity first",
			args:     []string{"validate", broken},
			wantCode: exitFailed,
			wantOut: []string{
				`error subagent_tool_disabled node=w edge=e1: subagent edge "e1" leaves agent node "w" (Writer), which does not have the subagents tool enabled`,
				`error start_no_outgoing node=s: start node "s" has no outgoing edge, so nothing would run`,
				`warning unreachable_node node=w: agent node "w" (Writer) cannot be reached from the start node and will never run`,
				`warning unreachable_node node=h: agent node "h" (Helper) cannot be reached from the start node and will never run`,
			},
		},
		{
			name:     "warnings alone exit 0",
			args:     []string{"validate", warn},
			wantCode: exitOK,
			wantOut:  []string{`warning unreachable_node node=lost: agent node "lost" (Lost) cannot be reached from the start node and will never run`},
		},
		{
			name:     "several files prefix each line",
			args:     []string{"validate", valid, warn},
			wantCode: exitOK,
			wantOut: []string{
				valid + ": ok",
				warn + `: warning unreachable_node node=lost: agent node "lost" (Lost) cannot be reached from the start node and will never run`,
			},
		},
		{
			name:       "malformed JSON exits 2 naming file, line and column",
			args:       []string{"validate", valid, malformed},
			wantCode:   exitUsage,
			wantOut:    []string{valid + ": ok"},
			wantStderr: []string{malformed + ": line 3, column 16: invalid character '\"'"},
		},
		{
			name:       "unreadable file exits 2 even when another has errors",
			args:       []string{"validate", broken, missing},
			wantCode:   exitUsage,
			wantStderr: []string{missing + ": cannot read: no such file or directory"},
		},
		{
			name:       "no file is a usage error",
			args:       []string{"validate"},
			wantCode:   exitUsage,
			wantStderr: []string{"usage: switchyard validate [--json] FILE..."},
		},
		{
			name:       "unknown flag is a usage error",
			args:       []string{"validate", "--yaml", valid},
			wantCode:   exitUsage,
			wantStderr: []string{"flag provided but not defined: -yaml"},
		},
		{
			name:       "-h prints usage and succeeds",
			args:       []string{"validate", "-h"},
			wantCode:   exitOK,
			wantStderr: []string{"usage: switchyard validate"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout, stderr)
			}
			if tt.wantOut != nil {
				if got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(tt.wantOut, "\n") {
					t.Errorf("stdout:\n%s\nwant:\n%s", stdout, strings.Join(tt.wantOut, "\n"))
				}
			}
			for _, s := range tt.wantStderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr %q does not contain %q", stderr, s)
				}
			}
		})
	}
}

type jsonProblem struct {
	Code, Severity, Message, NodeID, EdgeID string
}

func TestValidateJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	valid := writeFile(t, dir, "valid.json", validGraph)
	broken := writeFile(t, dir, "broken.json", brokenGraph)
	missing := filepath.Join(dir, "missing.json")

	t.Run("one file", func(t *testing.T) {
		code, stdout, _ := run(t, "validate", broken, "--json") // flags may follow files
		if code != exitFailed {
			t.Errorf("exit code = %d, want %d", code, exitFailed)
		}
		var doc struct {
			Valid    *bool         `json:"valid"`
			Problems []jsonProblem `json:"problems"`
		}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		if doc.Valid == nil || *doc.Valid || len(doc.Problems) != 4 {
			t.Fatalf("got %s", stdout)
		}
		p := doc.Problems[0]
		if p.Code != "subagent_tool_disabled" || p.Severity != "error" || p.NodeID != "w" || p.EdgeID != "e1" || !strings.Contains(p.Message, "Writer") {
			t.Errorf("first problem = %+v", p)
		}
	})
	t.Run("valid file has an empty problem list", func(t *testing.T) {
		code, stdout, _ := run(t, "validate", "--json", valid)
		if code != exitOK {
			t.Errorf("exit code = %d", code)
		}
		if want := "{\n  \"valid\": true,\n  \"problems\": []\n}\n"; stdout != want {
			t.Errorf("stdout = %q, want %q", stdout, want)
		}
	})
	t.Run("several files give an array", func(t *testing.T) {
		code, stdout, stderr := run(t, "validate", "--json", valid, broken, missing)
		if code != exitUsage {
			t.Errorf("exit code = %d, want %d", code, exitUsage)
		}
		if !strings.Contains(stderr, missing) {
			t.Errorf("stderr %q does not name %s", stderr, missing)
		}
		var docs []struct {
			File     string        `json:"file"`
			Valid    bool          `json:"valid"`
			Problems []jsonProblem `json:"problems"`
			Error    string        `json:"error"`
		}
		if err := json.Unmarshal([]byte(stdout), &docs); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		if len(docs) != 3 || docs[0].File != valid || !docs[0].Valid || len(docs[0].Problems) != 0 ||
			docs[1].File != broken || docs[1].Valid || len(docs[1].Problems) != 4 ||
			docs[2].File != missing || docs[2].Valid || !strings.Contains(docs[2].Error, "cannot read") {
			t.Errorf("got %s", stdout)
		}
	})
}

func TestValidateYAMLIsDispatched(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Not JSON: the graph decoder would stop at "invalid character".
	path := writeFile(t, dir, "flow.yaml", "name: demo\ndescription: a YAML workflow\n")
	code, stdout, stderr := run(t, "validate", path)
	if strings.Contains(stderr, "invalid character") {
		t.Fatalf("a .yaml file went to the JSON decoder: %s", stderr)
	}
	if strings.Contains(stderr, "not supported yet") && (code != exitUsage || !strings.Contains(stderr, path)) {
		t.Errorf("placeholder loader: exit %d, stderr %q; want exit 2 naming the file", code, stderr)
	}
	t.Logf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	malformed := writeFile(t, dir, "malformed.json", malformedGraph)

	t.Run("legacy file prints the golden normalized graph", func(t *testing.T) {
		code, stdout, stderr := run(t, "normalize", "../../graph/testdata/legacy/legacy-if-condition.json")
		if code != exitOK || stderr != "" {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
		want, err := os.ReadFile("../../graph/testdata/golden/legacy-if-condition.json")
		if err != nil {
			t.Fatal(err)
		}
		if stdout != string(want) {
			t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
		}
	})
	t.Run("warnings go to stderr", func(t *testing.T) {
		code, stdout, stderr := run(t, "normalize", "../../graph/testdata/legacy/legacy-end-node.json")
		if code != exitOK {
			t.Errorf("exit %d", code)
		}
		if !strings.HasPrefix(stderr, `warning legacy_end_removed node=done: removed legacy end node "done"`) {
			t.Errorf("stderr = %q", stderr)
		}
		if strings.Contains(stdout, `"done"`) || !strings.Contains(stdout, `"position"`) {
			t.Errorf("stdout still has the end node or lacks positions:\n%s", stdout)
		}
	})
	for _, tt := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"malformed JSON", []string{"normalize", malformed}, malformed + ": line 3, column 16: invalid character"},
		{"unreadable file", []string{"normalize", filepath.Join(dir, "nope.json")}, "nope.json: cannot read"},
		{"no file", []string{"normalize"}, "usage: switchyard normalize FILE"},
		{"two files", []string{"normalize", malformed, malformed}, "usage: switchyard normalize FILE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tt.args...)
			if code != exitUsage || stdout != "" || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and stderr containing %q", code, stdout, stderr, tt.stderr)
			}
		})
	}
}

// TestBinaryExitCodes runs the real binary, so the exit status a shell or CI
// sees is checked, not just runMain's return value.
func TestBinaryExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	valid := writeFile(t, dir, "valid.json", validGraph)
	broken := writeFile(t, dir, "broken.json", brokenGraph)
	malformed := writeFile(t, dir, "malformed.json", malformedGraph)
	for _, tt := range []struct {
		args   []string
		want   int
		stdout string
		stderr string
	}{
		{[]string{"validate", valid}, exitOK, valid + ": ok\n", ""},
		{[]string{"validate", broken}, exitFailed, "error subagent_tool_disabled node=w edge=e1", ""},
		{[]string{"validate", malformed}, exitUsage, "", "line 3, column 16"},
		{[]string{"validate"}, exitUsage, "", "usage:"},
		{[]string{"normalize", valid}, exitOK, `"sourceHandle": "output"`, ""},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd := exec.Command(binary, tt.args...)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.want {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.want, errOut.String())
			}
			if !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errOut.String(), tt.stderr) {
				t.Errorf("stdout %q, stderr %q; want them to contain %q and %q", out.String(), errOut.String(), tt.stdout, tt.stderr)
			}
		})
	}
}

// validate warns of Claude nodes when ANTHROPIC_API_KEY is not set (the
// file is valid: exit 0), and not once it is; an unshipped provider is a
// warning from the loader, an unknown one an error.
func TestValidateYAMLProviders(t *testing.T) {
	dir := t.TempDir()
	claude := writeFile(t, dir, "claude.yaml", "name: c\ndescription: d\nprovider: claude\nnodes:\n  - id: a\n    prompt: hi\n  - id: b\n    bash: echo\n")
	pi := writeFile(t, dir, "pi.yaml", "name: p\ndescription: d\nnodes:\n  - id: a\n    provider: pi\n    prompt: hi\n")
	typo := writeFile(t, dir, "typo.yaml", "name: t\ndescription: d\nnodes:\n  - id: a\n    provider: claud\n    prompt: hi\n")
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	code, stdout, stderr := run(t, "validate", claude)
	if code != exitOK || !strings.Contains(stdout+stderr, "provider_not_configured") || !strings.Contains(stdout+stderr, "ANTHROPIC_API_KEY") ||
		!strings.Contains(stdout+stderr, `node "a"`) || strings.Contains(stdout+stderr, `node "b"`) {
		t.Errorf("claude without key: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = run(t, "validate", pi)
	if code != exitOK || !strings.Contains(stdout+stderr, "unsupported_provider") {
		t.Errorf("pi: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = run(t, "validate", typo)
	if code == exitOK || !strings.Contains(stdout+stderr, `did you mean "claude"`) {
		t.Errorf("typo: exit %d\n%s%s", code, stdout, stderr)
	}
	t.Setenv("ANTHROPIC_API_KEY", "k")
	if code, stdout, stderr = run(t, "validate", claude); code != exitOK || strings.Contains(stdout+stderr, "provider_not_configured") {
		t.Errorf("claude with key: exit %d\n%s%s", code, stdout, stderr)
	}
}

// validate expands include: nodes from the file's folder; a missing block
// is an error naming the include node.
func TestValidateYAMLInclude(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "block.yaml", "name: block\ndescription: d\nnodes:\n  - id: x\n    bash: echo x\n")
	parent := writeFile(t, dir, "parent.yaml", "name: p\ndescription: d\nnodes:\n  - id: a\n    bash: echo\n  - id: review\n    include: block\n    depends_on: [a]\n")
	missing := writeFile(t, dir, "missing.yaml", "name: m\ndescription: d\nnodes:\n  - id: review\n    include: nope\n")
	if code, stdout, stderr := run(t, "validate", parent); code != exitOK || !strings.Contains(stdout, parent+": ok") {
		t.Errorf("parent: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr := run(t, "validate", missing)
	if code != exitFailed || !strings.Contains(stdout+stderr, "include_not_found") || !strings.Contains(stdout+stderr, `node "review"`) {
		t.Errorf("missing: exit %d\n%s%s", code, stdout, stderr)
	}
}
