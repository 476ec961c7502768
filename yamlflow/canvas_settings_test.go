package yamlflow

import (
	"reflect"
	"testing"
)

// TestCanvasSettings: the projection carries the step fields the inspector
// edits beside the main text, by dotted YAML name, as the file sets them.
func TestCanvasSettings(t *testing.T) {
	t.Parallel()
	src := `name: s
description: settings
nodes:
  - id: build
    bash: make
    timeout: 60000
    retry:
      max_attempts: 3
      delay_ms: 2000
  - id: polish
    depends_on: [build]
    loop:
      prompt: improve it
      until: DONE
      max_iterations: 4
  - id: review
    depends_on: [polish]
    approval:
      message: ok?
      on_reject:
        prompt: fix $REJECTION_REASON
        max_attempts: 2
  - id: plain
    depends_on: [review]
    bash: echo hi
  - id: flaky
    depends_on: [plain]
    bash: curl x
    retry:
      max_attempts: 2
`
	wf, diags, err := Parse("s.yaml", []byte(src))
	if err != nil || wf == nil {
		t.Fatalf("parse: %v %v", err, diags)
	}
	got := map[string]map[string]any{}
	for _, n := range CanvasOf(wf).Nodes {
		got[n.ID] = n.Data.Settings
	}
	want := map[string]map[string]any{
		"build":  {"timeout": 60000, "retry.max_attempts": 3, "retry.delay_ms": 2000},
		"polish": {"loop.until": "DONE", "loop.max_iterations": 4},
		"review": {"approval.on_reject.prompt": "fix $REJECTION_REASON", "approval.on_reject.max_attempts": 2},
		"plain":  nil,
		// The loader's default delay is not shown as if the file set it.
		"flaky": {"retry.max_attempts": 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("settings\n got %v\nwant %v", got, want)
	}
}
