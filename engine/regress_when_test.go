package engine

import (
	"strings"
	"testing"
)

// issue13WhenYAML is the reproduction from issue #13: conditions and every
// trigger rule, with one node failing. Before the fix about half its runs
// ended "failed" with nfmos and done still pending.
const issue13WhenYAML = `name: when
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

// TestRegressIssue13WhenRepro runs the issue's workflow 50 times with real
// bash: every node must end decided, whatever order the processes finish in.
func TestRegressIssue13WhenRepro(t *testing.T) {
	want := map[string]NodeStatus{
		"a": NodeCompleted, "gt": NodeCompleted, "lt": NodeSkipped, "short": NodeCompleted,
		"orr": NodeCompleted, "garbage": NodeSkipped, "one": NodeCompleted, "all": NodeSkipped,
		"boom": NodeFailed, "nfmos": NodeSkipped, "done": NodeCompleted,
	}
	e, _ := yamlEngine(t)
	bad := 0
	for k := range 50 {
		run, ns := runYAMLT(t, e, issue13WhenYAML, "")
		var wrong []string
		if run.Status != StatusFailed || !strings.Contains(run.Error, `"boom"`) {
			wrong = append(wrong, "run "+string(run.Status)+" ("+run.Error+")")
		}
		for id, st := range want {
			if ns[id] == nil || ns[id].Status != st {
				got := NodeStatus("missing")
				if ns[id] != nil {
					got = ns[id].Status
				}
				wrong = append(wrong, id+"="+string(got)+" (want "+string(st)+")")
			}
		}
		if len(wrong) > 0 {
			bad++
			t.Errorf("run %d of 50: %s", k+1, strings.Join(wrong, ", "))
		}
	}
	if bad > 0 {
		t.Logf("%d of 50 runs ended wrong", bad)
	}
}
