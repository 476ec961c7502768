package engine

import (
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
	src := "name: t\ndescription: env\npass_env: [MY_WORKFLOW_VAR]\nnodes:\n" +
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
