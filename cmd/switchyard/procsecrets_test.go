package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// leakYAML is a node that looks for secrets in every ancestor's
// /proc/PID/environ and cmdline, from its parent up to pid 1.
const leakYAML = `name: Leak
description: reads its ancestors' environment and arguments
nodes:
  - id: peek
    bash: |
      p=$PPID
      while [ "$p" -gt 1 ]; do
        echo "== $p"
        tr '\0' '\n' < /proc/$p/environ 2>&1
        echo
        tr '\0' ' ' < /proc/$p/cmdline 2>&1
        echo
        p=$(awk '/^PPid:/ {print $2}' /proc/$p/status)
      done
      echo done
`

// Secrets a node must never see: in the environment and on the command line.
const (
	envKey      = "sk-env-SECRET-0f9a8b7c6d"
	envClaude   = "sk-ant-SECRET-1e2d3c4b5a"
	argToken    = "tk-cmdline-SECRET-0123456789abcdef"
	argNotify   = "HOOKSECRET-9z8y7x"
	envTokenVal = "tk-env-SECRET-0123456789abcdef"
)

// TestSecretsHiddenFromNodes: a node read the server's keys from
// /proc/$PPID/environ and --token, --notify-url from /proc/$PPID/cmdline.
// Neither shows them now, for serve and for the run command, whichever
// ancestor the node looks at.
func TestSecretsHiddenFromNodes(t *testing.T) {
	t.Parallel()
	secrets := []string{envKey, envClaude, argToken, argNotify, envTokenVal}
	check := func(t *testing.T, what, out string, pid int) {
		t.Helper()
		if !strings.Contains(out, "== "+strconv.Itoa(pid)+"\n") || !strings.Contains(out, "done") {
			t.Fatalf("%s: the node did not reach pid %d:\n%s", what, pid, out)
		}
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s: the node read %q:\n%s", what, s, out)
			}
		}
	}

	t.Run("serve", func(t *testing.T) {
		t.Parallel()
		folder := t.TempDir()
		writeWorkflowFiles(t, folder, map[string]string{"leak.yaml": leakYAML})
		p := startServeDir(t, t.TempDir(), []string{"OPENAI_API_KEY=" + envKey, "ANTHROPIC_API_KEY=" + envClaude},
			"--addr", "127.0.0.1:0", "--data", t.TempDir(), "--workflows", folder,
			"--token", argToken, "--notify-url", "http://127.0.0.1:9/services/"+argNotify)
		p.token = argToken
		outputs := runToEnd(t, p, "yaml.leak.yaml", time.Minute).Outputs
		check(t, "serve", outputs["peek"], p.cmd.Process.Pid)
		// The server still has what it read: the token works.
		if status, _, _ := p.get(t, "/api/config", argToken); status != http.StatusOK {
			t.Errorf("the token no longer works: %d", status)
		}
		if strings.Contains(p.log(), argNotify) {
			t.Errorf("the log shows the notify URL:\n%s", p.log())
		}
		p.stop(t)
	})

	t.Run("run", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		file := filepath.Join(dir, "leak.yaml")
		if err := os.WriteFile(file, []byte(leakYAML), 0o644); err != nil {
			t.Fatal(err)
		}
		outputs, pid := runCLI(t, dir, []string{"OPENAI_API_KEY=" + envKey, "ANTHROPIC_API_KEY=" + envClaude, "SWITCHYARD_TOKEN=" + envTokenVal},
			file, "--data", t.TempDir())
		check(t, "run", outputs["peek"], pid)
	})
}

// runCLI runs `switchyard run ARGS` in dir (where the run works and locks
// its checkout) with env added to this process's: the run's outputs and
// the process's pid.
func runCLI(t *testing.T, dir string, env []string, args ...string) (map[string]string, int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"run"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	var res struct {
		Outputs map[string]string `json:"outputs"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	return res.Outputs, cmd.Process.Pid
}

// endedRun is a run as GET /api/runs/ID shows it once it ended.
type endedRun struct {
	RunID   string            `json:"runId"`
	Status  string            `json:"status"`
	Error   string            `json:"error"`
	Outputs map[string]string `json:"outputs"`
}

// runToEnd starts workflow id on p and waits up to within for it to end
// (completed, failed or cancelled); a run still going then fails the test.
func runToEnd(t *testing.T, p *serverProc, id string, within time.Duration) endedRun {
	t.Helper()
	status, body := p.post(t, "/api/runs", map[string]any{"workflowId": id})
	if status != http.StatusCreated {
		t.Fatalf("start %s: %d %s", id, status, body)
	}
	var run endedRun
	if err := json.Unmarshal(body, &run); err != nil {
		t.Fatalf("start %s: %v: %s", id, err, body)
	}
	deadline := time.Now().Add(within)
	for run.Status != "completed" && run.Status != "failed" && run.Status != "cancelled" {
		if time.Now().After(deadline) {
			t.Fatalf("run %s of %s still %s after %s\n%s", run.RunID, id, run.Status, within, p.log())
		}
		time.Sleep(20 * time.Millisecond)
		getJSON(t, p, "/api/runs/"+run.RunID, &run)
	}
	return run
}

// TestSecretSpans: which bytes of the argument and environment blocks are
// overwritten.
func TestSecretSpans(t *testing.T) {
	t.Parallel()
	tok, db := "tk", "postgres://u:pw@h/d"
	flags := []secretFlag{{"token", &tok}, {"db", &db}, {"notify-url", nil}}
	args := []byte("switchyard\x00serve\x00--token\x00SECRET1\x00-db=postgres://me:PASS@host/x\x00--notify-url=http://h/HOOK\x00--data\x00/tmp/SECRET1\x00")
	masked := apply(args, argSpans(args, flags))
	want := "switchyard\x00serve\x00--token\x00*******\x00-db=postgres://me:****@host/x\x00--notify-url=*************\x00--data\x00/tmp/SECRET1\x00"
	if string(masked) != want {
		t.Errorf("args\n got %q\nwant %q", masked, want)
	}
	env := []byte("PATH=/bin\x00OPENAI_API_KEY=sk-1\x00SWITCHYARD_DB=host=h password=PW user=u\x00HOME=/root\x00SWITCHYARD_TOKEN_FILE=/run/tok\x00SWITCHYARD_DB_X=keep\x00")
	masked = apply(env, envSpans(env))
	want = "PATH=/bin\x00OPENAI_API_KEY=****\x00SWITCHYARD_DB=host=h password=** user=u\x00HOME=/root\x00SWITCHYARD_TOKEN_FILE=********\x00SWITCHYARD_DB_X=keep\x00"
	if string(masked) != want {
		t.Errorf("env\n got %q\nwant %q", masked, want)
	}
	if secretPart("db", "postgres://u@h/d") != "" || secretPart("db", "postgres://u:@h/d") != "" {
		t.Error("a URL without a password has nothing to hide")
	}
}

func apply(b []byte, spans []span) []byte {
	out := bytes.Clone(b)
	for _, s := range spans {
		copy(out[s.off:], masked(s.n))
	}
	return out
}
