package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Node subprocesses get an allowlisted environment: the server's secrets
// never reach a bash or script node (and so never its output, events or
// the websocket stream); variables named by the server or the workflow do.
func TestNodeEnvironmentKeepsSecretsOut(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-secret-key")
	t.Setenv("SWITCHYARD_TOKEN", "server-token")
	t.Setenv("ANTHROPIC_API_KEY", "anthropic-secret")
	t.Setenv("MY_SERVER_VAR", "from-server")
	t.Setenv("MY_WORKFLOW_VAR", "from-workflow")
	t.Setenv("LC_ALL", "C")
	t.Setenv(PassEnvVar, "MY_SERVER_VAR")
	e, _ := yamlEngine(t)
	// A workflow's pass_env naming Switchyard's own secrets passes none
	// of them: only serve --pass-env can.
	src := "name: t\ndescription: env\npass_env: [MY_WORKFLOW_VAR, OPENAI_API_KEY, ANTHROPIC_API_KEY, SWITCHYARD_TOKEN]\nnodes:\n" +
		"  - id: x\n    bash: env\n"
	run, ns := runYAMLT(t, e, src, "")
	if run.Status != StatusCompleted {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	out := ns["x"].Output
	for _, secret := range []string{"sk-secret-key", "server-token", "anthropic-secret", "OPENAI_API_KEY", "SWITCHYARD_TOKEN"} {
		if strings.Contains(out, secret) {
			t.Errorf("node environment leaks %q:\n%s", secret, out)
		}
	}
	for _, want := range []string{"PATH=", "HOME=", "LC_ALL=C", "MY_SERVER_VAR=from-server", "MY_WORKFLOW_VAR=from-workflow", "WORKFLOW_ID=" + run.ID} {
		if !strings.Contains(out, want) {
			t.Errorf("node environment lacks %q:\n%s", want, out)
		}
	}
}

// The git that finds $BASE_BRANCH gets the node environment too: it ran
// with the server's whole environment, API keys included, where any node
// of the same user could read them from /proc/PID/environ while it ran.
func TestBaseBranchGitKeepsSecretsOut(t *testing.T) {
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not on PATH")
	}
	repo, bin := t.TempDir(), t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "x"}} {
		cmd := exec.Command(realGit, args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	seen := filepath.Join(t.TempDir(), "env")
	wrapper := "#!/bin/sh\nenv >> '" + seen + "'\nexec '" + realGit + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("OPENAI_API_KEY", "sk-secret-key")
	t.Setenv("ANTHROPIC_API_KEY", "anthropic-secret")
	e, _ := yamlEngine(t)
	run := startYAMLIn(t, e, repo, wf("  - id: x\n    bash: echo $BASE_BRANCH\n"), "")
	waitRun(t, e, run.ID)
	if got := nodeStates(t, e, run.ID)["x"]; got.Output != "main" {
		t.Fatalf("BASE_BRANCH = %q (%s), want main", got.Output, got.Error)
	}
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("the wrapper git never ran: %v", err)
	}
	for _, secret := range []string{"sk-secret-key", "anthropic-secret"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("git ran with %q in its environment", secret)
		}
	}
}

// With nothing of the server's environment allowed through, the node
// environment is empty, not nil: exec.Cmd runs a nil one with the
// server's whole environment.
func TestAllowedEnvIsNeverNil(t *testing.T) {
	t.Parallel()
	for _, environ := range [][]string{nil, {"OPENAI_API_KEY=sk-secret-key"}} {
		if env := allowedEnv(environ, nil); env == nil || len(env) != 0 {
			t.Errorf("allowedEnv(%q) = %#v, want an empty, non-nil slice", environ, env)
		}
	}
	got := allowedEnv([]string{"PATH=/bin", "OPENAI_API_KEY=k", "MINE=1", "LC_ALL=C", PassEnvVar + "=MINE"}, nil)
	if want := []string{"PATH=/bin", "MINE=1", "LC_ALL=C"}; !slices.Equal(got, want) {
		t.Errorf("allowedEnv = %q, want %q", got, want)
	}
	// Switchyard's own secrets: never through a workflow's pass_env, only
	// through the operator's list.
	environ := []string{"OPENAI_API_KEY=k", "SWITCHYARD_NOTIFY_URL=u", "THEIRS=2"}
	wfPass := []string{"OPENAI_API_KEY", "SWITCHYARD_NOTIFY_URL", "THEIRS"}
	if got, want := allowedEnv(environ, wfPass), []string{"THEIRS=2"}; !slices.Equal(got, want) {
		t.Errorf("workflow pass_env: allowedEnv = %q, want %q", got, want)
	}
	environ = append(environ, PassEnvVar+"=OPENAI_API_KEY")
	if got, want := allowedEnv(environ, wfPass), []string{"OPENAI_API_KEY=k", "THEIRS=2"}; !slices.Equal(got, want) {
		t.Errorf("serve --pass-env OPENAI_API_KEY: allowedEnv = %q, want %q", got, want)
	}
}
