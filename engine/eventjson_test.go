package engine

import (
	"encoding/json"
	"testing"
)

// TestEventJSONMatchesMarshal: the step events' own JSON is byte for byte
// json.Marshal's, for every field set or not and strings that need escaping.
func TestEventJSONMatchesMarshal(t *testing.T) {
	t.Parallel()
	strs := []string{"", "plain", `q"b\s`, "<a href='x'>&amp;</a>", "\b\f\n\r\t\x00\x01\x1f\x7f",
		"é ü 日本 😀", "\u2028\u2029", "bad \xff\xfe utf8 \xc3", "tail \xe2\x82"}
	rej := "no"
	empty := ""
	for _, s := range strs {
		for _, d := range []any{
			&stepStartData{Type: s, Visit: 3},
			&stepStartData{Retry: s, Reused: true, Type: "agent", Visit: -1},
			&stepEndData{Status: NodeCompleted, Output: s, Visit: 1, DurationMs: 12},
			&stepEndData{Decided: true, Handle: s, Output: s, Rejection: &rej, Status: NodeStatus(s)},
			&stepEndData{Decided: true, Rejection: &empty, Status: NodeFailed, DurationMs: -5},
			&stepEndData{CancelRun: s, Decided: true, Rejection: &rej, Status: NodeCompleted, Visit: 2},
			&stepEndData{CancelRun: s, Status: NodeCompleted, Output: s},
			&startPromptData{Model: s, SystemPrompt: s},
			&startPromptData{},
		} {
			want, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			got := d.(jsonAppender).appendJSON(nil)
			if string(got) != string(want) {
				t.Errorf("%#v:\n  got  %s\n  want %s", d, got, want)
			}
		}
	}
}
