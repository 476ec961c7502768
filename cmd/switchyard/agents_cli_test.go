package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRefusesBadMCPConfig: a config that does not parse stops serve
// at start, naming the file, the line and the field.
func TestServeRefusesBadMCPConfig(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(f, []byte("{\"mcpServers\": {\n  \"gh\": {\"command\": 7}\n}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "serve", "--addr", "127.0.0.1:0", "--data", dir, "--mcp-config", f)
	if code != exitUsage || !strings.Contains(stderr, "mcp.json:2") || !strings.Contains(stderr, "mcpServers.gh.command") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = run(t, "serve", "--addr", "127.0.0.1:0", "--data", dir, "--workdir", f)
	if code != exitUsage || !strings.Contains(stderr, "--workdir") {
		t.Errorf("--workdir naming a file: exit %d, stderr %q", code, stderr)
	}
}

// TestWorktreesPrune: prune with no worktrees says so; anything else
// is a usage error.
func TestWorktreesPrune(t *testing.T) {
	dir := t.TempDir()
	code, stdout, _ := run(t, "worktrees", "prune", "--data", dir)
	if code != exitOK || !strings.Contains(stdout, "no worktrees") {
		t.Errorf("exit %d, stdout %q", code, stdout)
	}
	if code, _, _ := run(t, "worktrees", "list"); code != exitUsage {
		t.Errorf("worktrees list: exit %d, want usage", code)
	}
}

// TestHelpHidesTheDatabasePassword: -h shows $SWITCHYARD_DB's default
// without its password.
func TestHelpHidesTheDatabasePassword(t *testing.T) {
	t.Setenv("SWITCHYARD_DB", "postgres://sy:hunter2-secret@db.internal/sy")
	_, _, stderr := run(t, "runs", "-h")
	if strings.Contains(stderr, "hunter2") || !strings.Contains(stderr, "db.internal") {
		t.Errorf("help: %q", stderr)
	}
}

// TestRunFromNode: `run --from RUN:NODE` forks a run that ended: the
// upstream node keeps its output (or the --pin text) and the rest runs
// again; refusals are usage errors.
func TestRunFromNode(t *testing.T) {
	t.Parallel()
	file := writeYAML(t, `
  - id: a
    bash: printf 'A-%s' "$ARGUMENTS"
  - id: b
    depends_on: [a]
    bash: printf 'B-%s' $a.output
`)
	data := t.TempDir()
	code, stdout, stderr := run(t, "run", file, "--input", "x", "--data", data)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	parent := decodeResult(t, stdout)
	code, stdout, stderr = run(t, "run", "--from", parent.RunID+":b", "--pin", "a=pinned", "--data", data)
	if code != exitOK {
		t.Fatalf("fork: exit %d\n%s", code, stderr)
	}
	if res := decodeResult(t, stdout); res.Outputs["b"] != "B-pinned" || res.RunID == parent.RunID {
		t.Errorf("fork result %+v", res)
	}
	if code, _, stderr := run(t, "run", "--from", parent.RunID+":nope", "--data", data); code != exitUsage || !strings.Contains(stderr, "nope") {
		t.Errorf("unknown node: exit %d %q", code, stderr)
	}
	if code, _, _ := run(t, "run", "--from", "garbage", "--data", data); code != exitUsage {
		t.Errorf("bad --from: exit %d", code)
	}
}
