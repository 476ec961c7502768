package engine

import (
	"errors"
	"strings"
	"testing"
)

type mapVars struct {
	vars    map[string]string
	outputs map[string]string
}

func (m mapVars) Var(name string) (string, bool, error) { v, ok := m.vars[name]; return v, ok, nil }
func (m mapVars) NodeOutput(id string) (string, bool)   { v, ok := m.outputs[id]; return v, ok }
func (m mapVars) NodeFieldAllowed(string, string) error { return nil }

func TestSubstitute(t *testing.T) {
	src := mapVars{
		vars:    map[string]string{"ARGUMENTS": "args $WORKFLOW_ID", "WORKFLOW_ID": "run-1", "REJECTION_REASON": ""},
		outputs: map[string]string{"a": "plain", "j": `{"s":"str","n":4.5,"b":true,"o":{"k":[1,2]},"arr":[1]}`, "my-node_2": "dash"},
	}
	tests := []struct {
		in, want string
		warns    int
		err      string
	}{
		{"no vars", "no vars", 0, ""},
		{"{{PREVIOUS_OUTPUT}}!", "PREV!", 0, ""},
		{"$ARGUMENTS", "args $WORKFLOW_ID", 0, ""}, // substituted values are not rescanned
		{"id=$WORKFLOW_ID.", "id=run-1.", 0, ""},
		{"$a.output", "plain", 0, ""},
		{"($a.output)", "(plain)", 0, ""},
		{"$a.output.", "plain.", 0, ""},
		{"$my-node_2.output-", "dash-", 0, ""},
		{"$j.output.s $j.output.n $j.output.b", "str 4.5 true", 0, ""},
		{"$j.output.o $j.output.arr", `{"k":[1,2]} [1]`, 0, ""},
		{"$j.output.missing|", "|", 0, ""},
		{"$nope.output", "", 1, ""},
		{"$a.output.field", "", 0, "not a JSON object"},
		{"$a.outputs", "$a.outputs", 0, ""},
		{"$HOME and $5 and $", "$HOME and $5 and $", 0, ""},
		{"$REJECTION_REASON|", "|", 0, ""},
	}
	for _, tc := range tests {
		got, warns, err := Substitute(tc.in, "PREV", src, nil)
		if tc.err != "" {
			var fe *FieldError
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &fe) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want || len(warns) != tc.warns {
			t.Errorf("%q -> %q (%d warnings, err %v), want %q (%d)", tc.in, got, len(warns), err, tc.want, tc.warns)
		}
	}
}

func TestSubstituteQuotesOutputs(t *testing.T) {
	src := mapVars{outputs: map[string]string{"a": `x'; rm -rf / #`}}
	got, _, err := Substitute("echo $a.output", "", src, quoteShell)
	if err != nil || got != `echo 'x'\''; rm -rf / #'` {
		t.Fatalf("%q %v", got, err)
	}
}

func FuzzSubstitute(f *testing.F) {
	for _, s := range []string{"$a.output.f", "{{PREVIOUS_OUTPUT}}", "$ARGUMENTS$", "$-.output", "$a.output.", "$$$", "{{", "$a.outputx"} {
		f.Add(s, `{"f":"v"}`)
	}
	f.Fuzz(func(t *testing.T, s, out string) {
		src := mapVars{vars: map[string]string{"ARGUMENTS": "A"}, outputs: map[string]string{"a": out}}
		got, _, err := Substitute(s, "P", src, nil)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			return
		}
		if !strings.ContainsAny(s, "${") && got != s {
			t.Fatalf("text without variables changed: %q -> %q", s, got)
		}
		// Quoted substitution always yields balanced single quotes.
		q, _, err := Substitute(s, "P", src, quoteShell)
		if err == nil && got != q && !strings.Contains(q, "'") {
			t.Fatalf("output not quoted: %q -> %q", s, q)
		}
	})
}
