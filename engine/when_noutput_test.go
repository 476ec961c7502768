package engine

import (
	"strings"
	"testing"
)

// TestWhenFieldOfUnfinishedProducerFails: a field of a producer that did
// not complete (failed under trigger_rule all_done, or skipped under
// one_success) has no value. Substitution fails the consuming node for it;
// `when:` fails it too, with the same message, instead of reading "" and
// skipping it. The whole output of such a node still reads as "".
func TestWhenFieldOfUnfinishedProducerFails(t *testing.T) {
	t.Parallel()
	failed := `
  - id: bad
    bash: echo '{"x":"y"}'; exit 1
  - id: x
    depends_on: [bad]
    trigger_rule: all_done
`
	skipped := `
  - id: src
    bash: echo go
  - id: sk
    depends_on: [src]
    when: "$src.output == 'stop'"
    bash: echo '{"x":"y"}'
  - id: x
    depends_on: [sk, src]
    trigger_rule: one_success
`
	cases := []struct {
		name, nodes, msg string
		status           NodeStatus
	}{
		{"failed producer, field in when", failed + `    when: "$bad.output.x == 'y'"
    bash: echo ran
`, `field not found: node "bad" has no output (failed)`, NodeFailed},
		{"failed producer, field substituted", failed + `    bash: echo $bad.output.x
`, `field not found: node "bad" has no output (failed)`, NodeFailed},
		{"failed producer, field in when after ||", failed + `    when: "'a' == 'b' || $bad.output.x != 'y'"
    bash: echo ran
`, `field not found: node "bad" has no output (failed)`, NodeFailed},
		{"failed producer, whole output in when", failed + `    when: "$bad.output == 'y'"
    bash: echo ran
`, "", NodeSkipped},
		{"skipped producer, field in when", skipped + `    when: "$sk.output.x == 'y'"
    bash: echo ran
`, `field not found: node "sk" has no output (skipped)`, NodeFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, _ := yamlEngine(t)
			_, ns := runYAMLT(t, e, wf(tc.nodes), "")
			x := ns["x"]
			if x == nil || x.Status != tc.status || !strings.Contains(x.Error, tc.msg) {
				t.Fatalf("x: %+v, want %s with an error containing %q", x, tc.status, tc.msg)
			}
		})
	}
}
