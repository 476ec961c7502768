package proc

import (
	"context"
	"strings"
	"testing"
)

// A Spec without Env runs with an empty environment, never this
// process's: exec.Cmd inherits os.Environ() for a nil Env, and the
// server's environment holds its API keys.
func TestRunNeverInheritsTheEnvironment(t *testing.T) {
	t.Setenv("SWITCHYARD_PROC_TEST_SECRET", "sk-do-not-inherit")
	out, _, err := Run(context.Background(), Spec{Name: "/usr/bin/env"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "sk-do-not-inherit") {
		t.Fatalf("a nil Env inherited this process's environment:\n%s", out)
	}
	out, _, err = Run(context.Background(), Spec{Name: "/usr/bin/env", Env: []string{"A=1"}})
	if err != nil || out != "A=1" {
		t.Fatalf("Env A=1: %q %v", out, err)
	}
}
