package commit

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
)

// TestApprovalsJSONIsMarshal: the fast paths write what json.Marshal
// writes, nil (null) and empty ([]) kept apart.
func TestApprovalsJSONIsMarshal(t *testing.T) {
	for _, pa := range [][]engine.PendingApproval{nil, {}, {{NodeID: "a<b>", Prompt: "ok?", Input: "x", Since: time.Unix(1, 5).UTC()}},
		{{NodeID: "a"}, {NodeID: "b", Tool: &engine.ToolApproval{}}}} {
		want, err := json.Marshal(pa)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ApprovalsJSON(pa)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("ApprovalsJSON(%#v) = %s, %v; want %s", pa, got, err, want)
		}
	}
}
