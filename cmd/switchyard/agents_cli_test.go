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
