package yamlflow

import "sort"

// Field tables. They decide, for each key a node or file may have, whether
// Switchyard implements it, knows it but does not implement it (a warning
// that keeps the value in Extra), or does not know it at all.

// commonNodeFields apply to every node kind.
var commonNodeFields = set("id", "depends_on", "when", "trigger_rule", "retry", "timeout", "output_type", "always_run")

// aiNodeFields apply to command, prompt and loop nodes only.
var aiNodeFields = set("model", "provider", "systemPrompt", "effort", "output_format", "context", "idle_timeout")

// scriptNodeFields apply to script nodes only.
var scriptNodeFields = set("runtime", "deps")

// rejectedTypeKeys are node-type keys of the upstream format (or a wrong
// way of naming a type) that Switchyard does not run. Silently treating
// them as unknown fields would run a different workflow than the author
// wrote, so they are errors.
var rejectedTypeKeys = set("loop_group", "workflow", "type")

// includeKey makes a node an include node; includeNodeFields are the
// fields such a node takes (`with:` is reported as not implemented).
const includeKey = "include"

var includeNodeFields = set("id", includeKey, "depends_on", "when", "trigger_rule")

// notImplementedNodeFields are node fields of the upstream format that
// Switchyard accepts but does not act on.
var notImplementedNodeFields = set(
	"agents", "pi",
	"thinking", "maxBudgetUsd", "fallbackModel", "betas", "sandbox",
	"persist_session", "description",
	// sub-run fields, only meaningful with the rejected `workflow:` type
	"input", "isolation", "fan_out", "with",
)

// Keys that belong inside a node's loop: or approval: block, for hints.
var loopKeys = set("prompt", "until", "max_iterations", "fresh_context", "interactive", "gate_message", "until_bash")
var approvalKeys = set("message", "capture_response", "on_reject")
var onRejectKeys = set("prompt", "max_attempts")

// topLevelFields are the workflow keys Switchyard implements.
var topLevelFields = set("name", "description", "nodes", "provider", "model", "interactive", "mutates_checkout", "tags", "pass_env", "worktree")

// notImplementedTopLevel are upstream workflow keys Switchyard accepts but
// does not act on.
var notImplementedTopLevel = set(
	"modelReasoningEffort", "webSearchMode", "effort", "thinking",
	"fallbackModel", "betas", "sandbox", "container", "evidence_policy", "budget",
	"persist_sessions", "requires", "inputs", "returns", "outcome_field",
	"additionalDirectories",
)

func set(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

func keys(ms ...map[string]bool) []string {
	var out []string
	for _, m := range ms {
		for k := range m {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// suggest returns the known name closest to an unknown one, if it is close
// enough to be a likely typo.
func suggest(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(name, k); d < bestD && d < len(k) {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
