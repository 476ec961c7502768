package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func writeYAML(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "wf.yaml")
	if err := os.WriteFile(p, []byte("name: t\ndescription: cli test\nnodes:\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func decodeResult(t *testing.T, stdout string) runResult {
	t.Helper()
	var res runResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, stdout)
	}
	return res
}

func TestRunYAMLCompletes(t *testing.T) {
	t.Parallel()
	file := writeYAML(t, `
  - id: a
    bash: printf '%s' "$ARGUMENTS"
  - id: b
    depends_on: [a]
    bash: printf 'got %s in %s' $a.output "$(basename "$PWD")"
`)
	cwd := t.TempDir()
	code, stdout, stderr := run(t, "run", file, "--input", "it's here", "--cwd", cwd, "--data", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	res := decodeResult(t, stdout)
	if want := "got it's here in " + filepath.Base(cwd); res.Status != "completed" || res.Outputs["b"] != want {
		t.Fatalf("result %+v, want b = %q", res, want)
	}
}

func TestRunYAMLEvents(t *testing.T) {
	t.Parallel()
	file := writeYAML(t, "  - id: a\n    bash: echo hi\n")
	code, stdout, stderr := run(t, "run", file, "--events", "--cwd", t.TempDir(), "--data", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, `"type":"output"`) || !strings.Contains(stdout, `"type":"step_end"`) {
		t.Fatalf("no event lines:\n%s", stdout)
	}
}

func TestRunYAMLExitCodes(t *testing.T) {
	cases := []struct {
		name, body string
		code       int
		status     string
		errSub     string
	}{
		{"failed node", "  - id: a\n    bash: exit 2\n", exitFailed, "failed", "exit status 2"},
		{"cancel node", "  - id: a\n    cancel: \"stopped: $ARGUMENTS\"\n", exitCancelled, "cancelled", "stopped: why"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1") // an LLM is configured, but never reached
			code, stdout, stderr := run(t, "run", writeYAML(t, tc.body), "--input", "why", "--cwd", t.TempDir(), "--data", t.TempDir())
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, stdout, stderr)
			}
			res := decodeResult(t, stdout)
			if string(res.Status) != tc.status || !strings.Contains(res.Error, tc.errSub) {
				t.Fatalf("result %+v", res)
			}
		})
	}
}

// TestRunYAMLProviderRefused: a provider that cannot run here is refused
// before a run exists (nothing to show later), with the reason.
func TestRunYAMLProviderRefused(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1") // an LLM is configured, but never reached
	t.Setenv("ANTHROPIC_API_KEY", "")
	for _, tc := range []struct{ provider, want string }{
		{"claude", "provider claude is not configured: set ANTHROPIC_API_KEY"},
		{"pi", `provider "pi" is not supported`},
	} {
		data := t.TempDir()
		code, stdout, stderr := run(t, "run", writeYAML(t, "  - id: a\n    provider: "+tc.provider+"\n    prompt: hi\n"), "--data", data, "--cwd", t.TempDir())
		if code != exitFailed || stdout != "" || !strings.Contains(stderr, `node "a"`) || !strings.Contains(stderr, tc.want) {
			t.Errorf("provider %s: exit %d, stdout %q, stderr %q", tc.provider, code, stdout, stderr)
		}
		if c, out, _ := run(t, "runs", "--data", data, "--json"); c != exitOK || strings.Contains(out, "runId") {
			t.Errorf("provider %s: a run was stored: %s", tc.provider, out)
		}
	}
}

func TestRunYAMLInvalid(t *testing.T) {
	t.Parallel()
	file := writeYAML(t, `
  - id: a
    bash: echo a
    allowed_tools: [Read]
  - id: b
    depends_on: [ghost]
    bash: echo b
`)
	code, stdout, stderr := run(t, "run", file, "--data", t.TempDir())
	if code != exitUsage {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "wf.yaml:7:") || !strings.Contains(stderr, "ghost") || !strings.Contains(stderr, "error:") {
		t.Errorf("error does not name file, line and dependency:\n%s", stderr)
	}
	if !strings.Contains(stderr, "warning:") || !strings.Contains(stderr, "allowed_tools") {
		t.Errorf("warnings not printed:\n%s", stderr)
	}
}

func TestRunYAMLApprovalResume(t *testing.T) {
	t.Parallel()
	file := writeYAML(t, `
  - id: prep
    bash: echo prepared
  - id: gate
    depends_on: [prep]
    approval:
      message: "Ship $prep.output?"
      capture_response: true
  - id: after
    depends_on: [gate]
    bash: printf '%s/%s' $prep.output $gate.output
`)
	data, cwd := t.TempDir(), t.TempDir()
	code, stdout, stderr := run(t, "run", file, "--cwd", cwd, "--data", data)
	if code != exitPaused {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	res := decodeResult(t, stdout)
	if len(res.PendingApprovals) != 1 || res.PendingApprovals[0].Prompt != "Ship prepared?" {
		t.Fatalf("pending %+v", res.PendingApprovals)
	}
	// A new process (engine and store) answers the gate.
	code, stdout, stderr = run(t, "resume", res.RunID, "--decision", "approve", "--note", "yes please", "--data", data)
	if code != exitOK {
		t.Fatalf("resume exit %d\n%s\n%s", code, stdout, stderr)
	}
	if res := decodeResult(t, stdout); res.Outputs["after"] != "prepared/yes please" {
		t.Fatalf("after resume: %+v", res)
	}
}

func TestRunYAMLE2EDeterministic(t *testing.T) {
	fx := filepath.Join("..", "..", "..", "shared", "fixtures", "archon")
	if _, err := os.Stat(fx); err != nil {
		t.Skipf("shared fixtures not found at %s (../shared is absent)", fx)
	}
	if _, err := exec.LookPath("bun"); err != nil {
		t.Skip("bun is not on PATH: install it with `npm install -g bun`")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH (the uv stand-in needs it)")
	}
	// uv cannot be installed here: put the engine's stand-in first on PATH.
	bin := t.TempDir()
	uv, err := os.ReadFile(filepath.Join("..", "..", "engine", "testdata", "yaml", "bin", "uv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "uv"), uv, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	scripts, _ := filepath.Abs(filepath.Join(fx, "scripts"))
	t.Setenv("SWITCHYARD_SCRIPTS_DIR", scripts)
	file := filepath.Join(fx, "workflows", "test-workflows", "e2e-deterministic.yaml")
	code, stdout, stderr := run(t, "run", file, "--cwd", t.TempDir(), "--data", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	res := decodeResult(t, stdout)
	if res.Status != "completed" || !strings.Contains(res.Outputs["verify-all"], "PASS") {
		t.Fatalf("result %+v", res)
	}
}

// TestCLIPrintsTextAsWritten: run, run --events and show print JSON whose
// strings read as written: "a && b > c", not "a \u0026\u0026 b \u003e c"
// (encoding/json's default, meant for HTML pages), which made a Bash
// command waiting for approval hard to read in the terminal.
func TestCLIPrintsTextAsWritten(t *testing.T) {
	t.Parallel()
	file := writeYAML(t, "  - id: a\n    bash: printf '%s' 'a && b > c <d>'\n")
	data := t.TempDir()
	code, stdout, stderr := run(t, "run", file, "--events", "--cwd", t.TempDir(), "--data", data)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	const want = `a && b > c <d>`
	var id string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var ev struct {
			RunID string `json:"runId"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.RunID != "" {
			id = ev.RunID
		}
	}
	if !strings.Contains(stdout, want) || strings.Contains(stdout, `\u0026`) {
		t.Errorf("run --events printed\n%s\nwant %q as written", stdout, want)
	}
	code, stdout, stderr = run(t, "show", id, "--events", "--data", data)
	if code != exitOK {
		t.Fatalf("show %q: exit %d\n%s", id, code, stderr)
	}
	if !strings.Contains(stdout, want) || strings.Contains(stdout, `\u0026`) {
		t.Errorf("show --events printed\n%s\nwant %q as written", stdout, want)
	}
}

func TestUnescapeHTML(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"a && b > c <d>", `back\slash \u0026 text`, `\\u0026`, "\u2028 & \\", `"quoted" <x>`, `\`, ""} {
		b, _ := json.Marshal(map[string]string{"s": s})
		got := unescapeHTML(b)
		var back map[string]string
		if err := json.Unmarshal(got, &back); err != nil || back["s"] != s {
			t.Errorf("%q: %s -> %s, decodes to %q (%v)", s, b, got, back["s"], err)
		}
		if strings.Contains(s, "&") && !strings.Contains(s, `\`) && strings.Contains(string(got), `\u0026`) {
			t.Errorf("%q: still escaped: %s", s, got)
		}
	}
}
