package fakeopenai

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestSplitWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"hello", []string{"hello"}},
		{"Hello world!", []string{"Hello", " world!"}},
		{"  lead", []string{"  lead"}},
		{"a  b\nc ", []string{"a", "  b", "\nc", " "}},
		{"héllo wörld", []string{"héllo", " wörld"}},
	}
	for _, tt := range tests {
		got := splitWords(tt.in)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("splitWords(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if strings.Join(got, "") != tt.in {
			t.Errorf("splitWords(%q) loses text", tt.in)
		}
	}
}

func TestSplitN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		n    int
		want []string
	}{
		{"", 4, []string{""}},
		{"abcdefgh", 4, []string{"abcd", "efgh"}},
		{"abcdefghi", 4, []string{"abcd", "efgh", "i"}},
		{"aéé", 2, []string{"a", "é", "é"}}, // never splits a rune
	}
	for _, tt := range tests {
		if got := splitN(tt.in, tt.n); strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("splitN(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestSampleFromSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, want string
	}{
		{"empty", ``, `{"echo":"T"}`},
		{"not json", `{`, `{"echo":"T"}`},
		{"scalars", `{"type":"object","properties":{"s":{"type":"string"},"n":{"type":"number"},"b":{"type":"boolean"}},"required":["s","n","b"]}`, `{"b":false,"n":0,"s":"T"}`},
		{"enum and const", `{"type":"object","properties":{"e":{"enum":["x","y"]},"c":{"const":5}}}`, `{"c":5,"e":"x"}`},
		{"nested", `{"type":"object","properties":{"o":{"type":"object","properties":{"a":{"type":["string","null"]}},"required":["a"]}},"required":["o"]}`, `{"o":{"a":"T"}}`},
		{"anyOf", `{"anyOf":[{"type":"integer"},{"type":"string"}]}`, `0`},
		{"array", `{"type":"array"}`, `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(sampleFromSchema(json.RawMessage(tt.schema), "T", 0))
			if err != nil || string(b) != tt.want {
				t.Errorf("got %s (%v), want %s", b, err, tt.want)
			}
		})
	}
}

func FuzzParseRequest(f *testing.F) {
	seeds := []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}],"tools":[{"type":"function","function":{"name":"f"}}],"stream":true,"stream_options":{"include_usage":true},"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{"type":"object"}}}}`,
		`{"model":"m","input":"hello","instructions":"be nice","reasoning":{"effort":"low"},"tools":[{"type":"web_search"}]}`,
		`{"model":"m","input":[{"role":"user","content":"hey"},{"type":"function_call","call_id":"c","name":"g","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"out"}]},{"type":"reasoning","id":"r"}],"text":{"format":{"type":"json_schema","name":"x","schema":{}}}}`,
		`{"model":"m","input":[{"type":"function_call","arguments":7}]}`,
		`{"model":"m","instructions":[{"role":"developer","content":"x"}]}`,
		`null`, `[]`, `{"model":1}`, `{"model":"m","messages":[{"role":"user","content":{"a":1}}]}`,
	}
	for _, s := range seeds {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, body string, chat bool) {
		api := APIResponses
		if chat {
			api = APIChat
		}
		var req Request
		err := parseRequest(api, []byte(body), &req)
		if err != nil && !errors.Is(err, errBadRequest) {
			t.Fatalf("error does not wrap errBadRequest: %v", err)
		}
		if err == nil && req.Model == "" {
			t.Fatalf("accepted a request without model: %q", body)
		}
		if err == nil && chat && len(req.Messages) == 0 {
			t.Fatalf("accepted a chat request without messages: %q", body)
		}
	})
}
