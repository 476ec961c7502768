package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/internal/bashref"
	"github.com/switchyard/switchyard/internal/bashref/bashreftest"
)

// outputVars is a VarSource with one node, x, whose output is fixed.
type outputVars struct{ out string }

func (o outputVars) Var(string) (string, bool, error) { return "", false, nil }
func (o outputVars) NodeOutput(id string) (string, bool) {
	if id == "x" {
		return o.out, true
	}
	return "", false
}
func (o outputVars) NodeFieldAllowed(string, string) error { return nil }

// substituteBash runs the bash substitution path (Substitute with value
// tokens, then renderBash) on a script referencing $x.output.
func substituteBash(script, out string) (string, []string, error) {
	var refs []string
	text, _, err := Substitute(script, "", outputVars{out}, func(v string) string {
		refs = append(refs, v)
		return bashref.Token(len(refs) - 1)
	})
	if err != nil {
		return "", nil, err
	}
	r, err := bashref.Render(text, refs)
	return r, refs, err
}

// FuzzBashQuoting checks that any output substituted into bash prints
// exactly itself, in every quoting context, and never runs as code.
func FuzzBashQuoting(f *testing.F) {
	for _, s := range []string{"", "plain", "it's", "$(id)", "`id`", "a\nb\n", "'\"'\"", "\\", "EOF", "$'\\n'", "%s%d", "-e", "\xff\xfe",
		"7", "-3", "a[$(echo INJ''ECTED >&2)]", "END)\n$(echo INJ''ECTED >&2)\n$(cat <<'END'", "X)\n$(echo INJ''ECTED >&2)\n$(cat <<'X'"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		v = strings.ReplaceAll(v, "\x00", "") // no NUL in the environment or in bash strings
		// Every context in one bash run, separated by NUL bytes.
		var parts []string
		var wants []string
		for _, c := range bashreftest.Contexts {
			if c.Refuses != nil && c.Refuses(v) {
				continue // TestRenderBashContexts checks the refusal
			}
			parts = append(parts, strings.ReplaceAll(c.Script, "@V@", "$x.output"))
			wants = append(wants, c.Want(v))
		}
		script := strings.Join(parts, "\nprintf '\\0'\n")
		rendered, refs, err := substituteBash(script, v)
		if err != nil {
			t.Fatalf("render: %v", err)
		}
		env := make([]string, len(refs))
		for i, r := range refs {
			env[i] = bashref.EnvName(i) + "=" + r
		}
		got, stderr := bashreftest.RunBash(t, rendered, env...)
		if strings.Contains(stderr, "INJECTED") && !strings.Contains(v, "INJECTED") {
			t.Fatalf("value %q ran as code:\nscript %q\nstderr %s", v, rendered, stderr)
		}
		outs := strings.Split(got, "\x00")
		if len(outs) != len(wants) {
			t.Fatalf("value %q: %d outputs, want %d\nstderr %s", v, len(outs), len(wants), stderr)
		}
		for i := range wants {
			if outs[i] != wants[i] {
				t.Errorf("value %q, script %q:\n got %q\nwant %q\nstderr %s", v, parts[i], outs[i], wants[i], stderr)
			}
		}
	})
}

func TestDropFieldRefs(t *testing.T) {
	drop := func(id string) bool { return id == "s" }
	cases := map[string]string{
		"$s.output.a $t.output.b":         "$s.output $t.output.b",
		"{{PREVIOUS_OUTPUT}}$s.output.x-": "{{PREVIOUS_OUTPUT}}$s.output-",
		"$s.outputs.x $s.output":          "$s.outputs.x $s.output",
		"$$s.output.f.g":                  "$$s.output.g",
		"plain":                           "plain",
	}
	for in, want := range cases {
		if got := dropFieldRefs(in, drop); got != want {
			t.Errorf("dropFieldRefs(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestYAMLBashArithmeticRefusesNonIntegers: a step's output used where
// bash evaluates arithmetic ([[ -gt ]] here) fails the step that uses it,
// naming why, when it is not an integer; nothing it holds runs. An
// integer goes through.
func TestYAMLBashArithmeticRefusesNonIntegers(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	e, _ := yamlEngine(t)
	src := wf(`
  - id: score
    bash: printf '%s' "$ARGUMENTS"
  - id: gate
    depends_on: [score]
    bash: |
      if [[ $score.output -gt 5 ]]; then echo big; else echo small; fi
`)
	run, ns := runYAMLT(t, e, src, "a[$(touch "+marker+")]")
	if run.Status != StatusFailed || ns["gate"].Status != NodeFailed {
		t.Fatalf("run %s, gate %+v", run.Status, ns["gate"])
	}
	if err := ns["gate"].Error; !strings.Contains(err, "numeric comparison") || !strings.Contains(err, "must be an integer") {
		t.Errorf("gate error %q: want it to say the value must be an integer in a numeric comparison", err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the value ran as code: %v", err)
	}
	run, ns = runYAMLT(t, e, src, "7")
	if run.Status != StatusCompleted || ns["gate"].Output != "big" {
		t.Fatalf("with 7: run %s (%s), gate %+v", run.Status, run.Error, ns["gate"])
	}
}
