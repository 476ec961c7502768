package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// peekYAML is a node that tries the server's files: the database, the
// data folder, the token file; and writes its own $ARTIFACTS_DIR.
func peekYAML(data, tokenFile string) string {
	return fmt.Sprintf(`name: Peek
description: tries the server's files
nodes:
  - id: peek
    bash: |
      head -c 16 %[1]q/switchyard.db 2>&1; echo
      echo "data: $(ls -A %[1]q | tr '\n' ' ')"
      echo "token: [$(cat %[2]q 2>&1)]"
      echo kept > "$ARTIFACTS_DIR/kept.txt" && echo "artifacts written"
      echo done
`, data, tokenFile)
}

// checkPeek fails t if the node's output shows what the sandbox hides.
func checkPeek(t *testing.T, what, out, data string) {
	t.Helper()
	if !strings.Contains(out, "done") {
		t.Fatalf("%s: the node did not finish:\n%s", what, out)
	}
	for _, leak := range []string{"SQLite format", "tk-file-SECRET"} {
		if strings.Contains(out, leak) {
			t.Errorf("%s: the node saw %q:\n%s", what, leak, out)
		}
	}
	// The run command reads no token file: its check is of a file in
	// the data folder.
	for _, want := range []string{"data: artifacts \n", "token: [", "artifacts written"} {
		if !strings.Contains(out, want) {
			t.Errorf("%s: missing %q in what the node saw:\n%s", what, want, out)
		}
	}
	kept, _ := filepath.Glob(filepath.Join(data, "artifacts", "*", "kept.txt"))
	if len(kept) != 1 {
		t.Errorf("%s: the file the node wrote in its $ARTIFACTS_DIR is not there: %q", what, kept)
	}
}

// TestNodesCannotReachTheDataFolder: what a node runs, under serve and
// under the run command, sees the data folder empty but for its own
// artifacts (no database, which it could otherwise read and write, and
// in which it could answer its own approvals) and the token file empty;
// what it writes in its $ARTIFACTS_DIR lands. --sandbox takes auto, on
// and off only.
func TestNodesCannotReachTheDataFolder(t *testing.T) {
	t.Parallel()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tk-file-SECRET-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("serve", func(t *testing.T) {
		t.Parallel()
		data, folder := t.TempDir(), t.TempDir()
		writeWorkflowFiles(t, folder, map[string]string{"peek.yaml": peekYAML(data, tokenFile)})
		p := startServeDir(t, t.TempDir(), nil, "--addr", "127.0.0.1:0", "--data", data, "--workflows", folder,
			"--token-file", tokenFile, "--sandbox", "on")
		p.token = "tk-file-SECRET-0123456789abcdef"
		outputs := runToEnd(t, p, "yaml.peek.yaml", time.Minute).Outputs
		checkPeek(t, "serve", outputs["peek"], data)
		if !strings.Contains(outputs["peek"], "token: []\n") {
			t.Errorf("serve: the token file did not read empty:\n%s", outputs["peek"])
		}
		p.stop(t)
	})

	t.Run("run", func(t *testing.T) {
		t.Parallel()
		dir, data := t.TempDir(), t.TempDir()
		file := filepath.Join(dir, "peek.yaml")
		if err := os.WriteFile(file, []byte(peekYAML(data, filepath.Join(data, "yaml-positions.json"))), 0o644); err != nil {
			t.Fatal(err)
		}
		outputs, _ := runCLI(t, dir, []string{"SWITCHYARD_SANDBOX=on"}, file, "--data", data)
		checkPeek(t, "run", outputs["peek"], data)
	})

	t.Run("bad mode", func(t *testing.T) {
		t.Parallel()
		cmd := exec.Command(binary, "serve", "--data", t.TempDir(), "--sandbox", "maybe")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(errb.String(), `--sandbox "maybe": want auto, on or off`) {
			t.Errorf("--sandbox maybe: %v\n%s", err, errb.String())
		}
	})
}
