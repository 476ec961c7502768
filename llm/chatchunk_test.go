package llm

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestParseChatChunkMatchesUnmarshal: for chunks of every shape a provider
// sends (and some it should not), parseChatChunk gives what json.Unmarshal
// gives, or fails where it fails.
func TestParseChatChunkMatchesUnmarshal(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":null,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"content":"echo: hi \"q\" \u00e9 \ud83d\ude00 \n"},"logprobs":null,"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`,
		`{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10,"prompt_tokens_details":{"cached_tokens":0}}}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"Read","arguments":""}},{"index":1,"id":"b","function":{"name":"Bash","arguments":"{\"command\":\"go test\"}"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"more"}}]}}]}`,
		`{"choices":[{"delta":{"content":null,"tool_calls":null},"finish_reason":"tool_calls"}]}`,
		`{"error":{"message":"overloaded","type":"server_error"}}`,
		`{"error":null,"choices":null}`,
		`{"choices":[null,{"delta":null}]}`,
		`{"choices":[{"delta":{"content":"a"}}],"choices":[{"delta":{"content":"b"}}]}`,
		// A repeated key decodes into what the earlier one left: null
		// keeps a string, a shorter array keeps the fields of the
		// elements it reaches, and a longer one finds them again.
		`{"choices":[{"delta":{"content":"a","content":null},"finish_reason":"stop"}]}`,
		`{"choices":[{"finish_reason":"stop"},{"delta":{"content":"x"}}],"choices":[{"delta":{"content":"b"}}]}`,
		`{"choices":[{"finish_reason":"a"},{"finish_reason":"b"}],"choices":[{}],"choices":[{},{}]}`,
		`{"choices":[{"finish_reason":"a"}],"choices":[],"choices":[{}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":2,"id":"a"}],"tool_calls":[{"function":{"name":"n"}}]}}]}`,
		`{"usage":{"prompt_tokens":1},"usage":null,"usage":{"total_tokens":2}}`,
		`{"error":{"a":[1,2.5e-3,true,false,null,"\u00e9"]},"error":  "x" }`,
		` {"choices" : [ { "delta" : { "content" : "spaced" } } ] } ` + "\n",
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		`{"x":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":-0}]}}]}`,
		`{"k\u0041":1,"choi\u0063es":[{"delta":{"content":"esc key"}}]}`,
		"{\"choices\":[{\"delta\":{\"content\":\"日本語 \xed\xa0\x80 \\ud83d\\u0041\"}}]}",
		`null`,
		`{}`,
		// Refused by both.
		`{"choices":"x"}`,
		`{"choices":[{"delta":{"content":5}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":1.5}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":"0"}]}}]}`,
		`{"usage":{"total_tokens":"3"}}`,
		`{"usage":[1]}`,
		`[1,2]`,
		`"s"`,
		`{"choices":[{"delta":{"content":"x"}}]`,
		`{"choices":[{"delta":{"content":"x"}}]} trailing`,
		`{"x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
		`{"usage":{"total_tokens":9223372036854775808}}`,
		`{"choices":[{"delta":{"content":"a\x"}}]}`,
		"{\"choices\":[{\"delta\":{\"content\":\"tab\there\"}}]}",
		`{"a":01}`,
		`{"a":1.}`,
		`{"a":-}`,
		`{"a":1e}`,
		`{"a":tru}`,
		`{"a":1,}`,
		`[1,]`,
		`{"a" 1}`,
		`{"choices":[{"delta":{"content":"x"}}`,
		`{"choices":"x","a":}`,
		``,
	} {
		var want, got chatChunk
		werr := json.Unmarshal([]byte(in), &want)
		gerr := parseChatChunk([]byte(in), &got)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%s:\n  parseChatChunk err %v, json.Unmarshal err %v", in, gerr, werr)
			continue
		}
		if werr == nil && !reflect.DeepEqual(normChunk(got), normChunk(want)) {
			t.Errorf("%s:\n  got  %+v\n  want %+v", in, got, want)
		}
	}
}

// normChunk treats an empty slice as nil and compacts the raw error: the
// two decoders may differ there without the stream decoder noticing.
func normChunk(c chatChunk) chatChunk {
	if len(c.Choices) == 0 {
		c.Choices = nil
	}
	for i := range c.Choices {
		if len(c.Choices[i].Delta.ToolCalls) == 0 {
			c.Choices[i].Delta.ToolCalls = nil
		}
	}
	if len(c.Error) == 0 {
		c.Error = nil
	}
	return c
}

func BenchmarkParseChatChunk(b *testing.B) {
	in := []byte(`{"id":"chatcmpl-fake1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-5-mini","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":"echo: hi"},"logprobs":null,"finish_reason":null}]}`)
	b.Run("hand-written", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c chatChunk
			if err := parseChatChunk(in, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c chatChunk
			if err := json.Unmarshal(in, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The stream decoder reuses its buffer for the next event, and
// parseChatChunk reads the chunk in place: nothing it returns may point
// into the bytes it was given. Overwritten after the call, they change
// nothing in the chunk.
func TestParseChatChunkKeepsNothingOfItsInput(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{"choices":[{"index":0,"delta":{"content":"echo: hi"},"finish_reason":"stop"}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"Read","arguments":"{\"path\":\"a\"}"}}]}}]}`,
		`{"error":{"message":"overloaded"}}`,
	} {
		buf := []byte(in)
		var got chatChunk
		if err := parseChatChunk(buf, &got); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		var want chatChunk
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		for i := range buf {
			buf[i] = 'X'
		}
		if !reflect.DeepEqual(normChunk(got), normChunk(want)) {
			t.Errorf("%s: after its bytes were overwritten the chunk reads\n  %+v\nwant\n  %+v", in, got, want)
		}
	}
}
