package server

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/engine"
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
			eventData{Status: "completed", DurationMs: 12, HasDuration: true}},
		{"escaped model", `{"model":"a\"b","systemPrompt":"s"}`, eventData{Model: `a"b`}},
		{"final error", `{"callId":"c1","final":true}`, eventData{Final: true}},
		{"not final", `{"attempt":2,"final":false}`, eventData{}},
		{"spaces", `{"durationMs": 7 , "status": "failed"}`, eventData{Status: "failed", DurationMs: 7, HasDuration: true}},
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

// TestEmitReadsOnlyWhatItNeedsWithoutCopies: the metrics sink reads a
// step_end's status and duration without allocating once the status was
// seen (a copy of each field of each event was about 13 allocations a
// run), and skips fields an event type does not need.
func TestEmitReadsOnlyWhatItNeedsWithoutCopies(t *testing.T) {
	data := []byte(`{"durationMs":3,"output":"\"type\":\"x\" and more","status":"completed","type":"agent","visit":1}`)
	want := fieldsOf(engine.EvStepEnd)
	if d := parseEventFields(data, want); d != (eventData{Status: "completed", DurationMs: 3, HasDuration: true}) {
		t.Fatalf("step_end fields %+v", d)
	}
	if n := testing.AllocsPerRun(100, func() { parseEventFields(data, want) }); n != 0 {
		t.Errorf("%v allocations reading a step_end, want none", n)
	}
	if fieldsOf(engine.EvLLMResponse) != 0 || fieldsOf(engine.EvStepStart) != fieldType {
		t.Errorf("fields of llm_response %v, step_start %v", fieldsOf(engine.EvLLMResponse), fieldsOf(engine.EvStepStart))
	}
}

// TestInternerIsBounded: past internedMax distinct values, a value is
// returned as a copy and not kept.
func TestInternerIsBounded(t *testing.T) {
	t.Parallel()
	var in interner
	for i := range internedMax + 10 {
		v := "model-" + strconv.Itoa(i)
		if got := in.intern([]byte(v)); got != v {
			t.Fatalf("intern %q = %q", v, got)
		}
	}
	if n := len(*in.m.Load()); n != internedMax {
		t.Errorf("%d values kept, want %d", n, internedMax)
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
			!got.HasDuration || got.DurationMs != want.DurationMs || got.Final != want.Final {
			t.Fatalf("%s: got %+v, want %+v", b, got, want)
		}
	})
}

func sameEventData(a, b eventData) bool { return a == b }

// BenchmarkMetricsEmit: what the metrics sink costs for the step events
// of a start → agent → agent run (it runs for every event, on the engine's
// hot path).
func BenchmarkMetricsEmit(b *testing.B) {
	m := NewMetrics()
	out := strings.Repeat("an agent's answer ", 40)
	evs := []engine.Event{
		{Type: engine.EvStepStart, NodeID: "s", Data: json.RawMessage(`{"type":"start","visit":1}`)},
		{Type: engine.EvStepEnd, NodeID: "s", Data: json.RawMessage(`{"durationMs":0,"output":"x","status":"completed","visit":1}`)},
	}
	for _, id := range []string{"a1", "a2"} {
		evs = append(evs,
			engine.Event{Type: engine.EvStepStart, NodeID: id, Data: json.RawMessage(`{"type":"agent","visit":1}`)},
			engine.Event{Type: engine.EvStartPrompt, NodeID: id, Content: "hi", Data: json.RawMessage(`{"model":"gpt-4o-mini","systemPrompt":"You are helpful."}`)},
			engine.Event{Type: engine.EvLLMResponse, NodeID: id, Content: out, Data: json.RawMessage(`{"model":"gpt-4o-mini","usage":{"promptTokens":12,"completionTokens":40,"totalTokens":52}}`)},
			engine.Event{Type: engine.EvStepEnd, NodeID: id, Data: json.RawMessage(`{"durationMs":3,"output":"` + out + `","status":"completed","visit":1}`)})
	}
	evs = append(evs, engine.Event{Type: engine.EvRunStatus, Content: "completed"})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := "run-" + strconv.Itoa(i&1023)
		for k := range evs {
			ev := evs[k]
			ev.RunID = id
			m.Emit(&ev)
		}
	}
}
