package server

import (
	"encoding/json"
	"testing"
)

func TestParseEventData(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want eventData
	}{
		{"empty", ``, eventData{}},
		{"step_start", `{"type":"agent","visit":1}`, eventData{Type: "agent"}},
		{"step_end", `{"durationMs":12,"output":"x \"status\":\"failed\", \"durationMs\":9","status":"completed","visit":1}`,
			eventData{Status: "completed", DurationMs: ptr(int64(12))}},
		{"escaped model", `{"model":"a\"b","systemPrompt":"s"}`, eventData{Model: `a"b`}},
		{"final error", `{"callId":"c1","final":true}`, eventData{Final: true}},
		{"not final", `{"attempt":2,"final":false}`, eventData{}},
		{"spaces", `{"durationMs": 7 , "status": "failed"}`, eventData{Status: "failed", DurationMs: ptr(int64(7))}},
		{"truncated", `{"status":"compl`, eventData{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseEventData([]byte(tc.data))
			if !sameEventData(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzParseEventData: on the flat objects the engine writes, the fast
// reader agrees with encoding/json whatever the strings hold.
func FuzzParseEventData(f *testing.F) {
	f.Add("agent", "completed", int64(5), "gpt-x", `out "status":"failed"`)
	f.Add("", "", int64(-1), `m\"`, "\x00\\")
	f.Fuzz(func(t *testing.T, typ, status string, dur int64, model, output string) {
		b, err := json.Marshal(map[string]any{"type": typ, "status": status, "durationMs": dur,
			"model": model, "output": output, "final": dur%2 == 0})
		if err != nil {
			t.Skip()
		}
		var want struct {
			Type, Status, Model string
			DurationMs          int64
			Final               bool
		}
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		got := parseEventData(b)
		if got.Type != want.Type || got.Status != want.Status || got.Model != want.Model ||
			got.DurationMs == nil || *got.DurationMs != want.DurationMs || got.Final != want.Final {
			t.Fatalf("%s: got %+v, want %+v", b, got, want)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func sameEventData(a, b eventData) bool {
	if (a.DurationMs == nil) != (b.DurationMs == nil) || a.DurationMs != nil && *a.DurationMs != *b.DurationMs {
		return false
	}
	return a.Type == b.Type && a.Status == b.Status && a.Model == b.Model && a.Final == b.Final
}
