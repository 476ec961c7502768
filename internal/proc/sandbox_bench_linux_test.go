package proc

import (
	"context"
	"os"
	"testing"
)

// BenchmarkStep is one short step (bash -c true) through Run, without and
// with the sandbox: the sandbox's price per step is an exec of this
// binary, which builds it.
func BenchmarkStep(b *testing.B) {
	f := newSandboxFixture(b)
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, c := range []struct {
		name string
		sb   *Sandbox
	}{{"plain", nil}, {"sandboxed", &Sandbox{Hide: []string{f.data, f.token}}}} {
		b.Run(c.name, func(b *testing.B) {
			if err := SetSandbox(c.sb); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = SetSandbox(nil) }()
			for b.Loop() {
				if _, _, err := Run(context.Background(), Spec{Name: "bash", Args: []string{"-c", "true"}, Env: env, Dir: f.work}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
