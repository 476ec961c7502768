package engine

import (
	"testing"
)

// The repro of issue #13: conditions and trigger rules over bash nodes. A
// skip propagating while another join waited could drop that join from the
// pending set, so the run ended with undecided nodes (about half the time).
const whenTriggerRepro = `name: when
description: conditions and trigger rules
nodes:
  - id: a
    bash: "echo '{\"n\": 10, \"kind\": \"bug\"}'"
  - {id: gt, bash: echo gt, depends_on: [a], when: "$a.output.n > 5"}
  - {id: lt, bash: echo lt, depends_on: [a], when: "$a.output.n < 5"}
  - {id: short, bash: echo short, depends_on: [a], when: "$a.kind == 'bug' && $a.output.n >= 10"}
  - {id: orr, bash: echo orr, depends_on: [a], when: "$a.output.kind == 'feature' || $a.output.n == '10'"}
  - {id: garbage, bash: echo garbage, depends_on: [a], when: "a is big"}
  - {id: one, bash: echo one, depends_on: [gt, lt], trigger_rule: one_success}
  - {id: all, bash: echo all, depends_on: [gt, lt]}
  - {id: boom, bash: exit 3}
  - {id: nfmos, bash: echo nfmos, depends_on: [gt, boom], trigger_rule: none_failed_min_one_success}
  - {id: done, bash: echo done, depends_on: [boom, lt], trigger_rule: all_done}
`

func TestRegressWhenTriggerRulesAllDecided(t *testing.T) {
	t.Parallel()
	runs := 50
	if testing.Short() {
		runs = 10
	}
	want := map[string]NodeStatus{
		"a": NodeCompleted, "gt": NodeCompleted, "lt": NodeSkipped, "short": NodeCompleted,
		"orr": NodeCompleted, "garbage": NodeSkipped, "one": NodeCompleted, "all": NodeSkipped,
		"boom": NodeFailed, "nfmos": NodeSkipped, "done": NodeCompleted,
	}
	e, _ := yamlEngine(t)
	for i := 0; i < runs; i++ {
		run, ns := runYAMLT(t, e, whenTriggerRepro, "")
		if run.Status != StatusFailed {
			t.Fatalf("run %d: status %s, want failed", i, run.Status)
		}
		for id, st := range want {
			if got := ns[id].Status; got != st {
				t.Fatalf("run %d: node %s is %s, want %s", i, id, got, st)
			}
		}
	}
}
