package jsonw

import (
	"encoding/json"
	"strings"
	"testing"
)

// validBySkip is json.Valid by SkipValue: one value, then nothing but
// white space.
func validBySkip(b []byte) bool {
	end, ok := SkipValue(b, 0)
	return ok && SkipSpace(b, end) == len(b)
}

var skipSeeds = []string{``, ` `, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `1e`, `1e+`, `1E-7`, `.5`, `+1`, `1.5e3x`,
	`"`, `"a`, `"a"`, `"\u00e9\n\"\\\/"`, `"\u12"`, `"\uZZZZ"`, `"\x"`, "\"\x01\"", "\"\xff\xfe\"", `"\ud800"`,
	`true`, `tru`, `false`, `nul`, `null `, `nullx`, `{}`, `{ }`, `{"a":1}`, `{"a" : [1, 2, {"b": null}] }`,
	`{"a":1,}`, `{,}`, `{"a"}`, `{"a":}`, `{1:2}`, `[]`, `[ ]`, `[1,]`, `[,1]`, `[1 2]`, `[[[]]]`, `]`, `}`,
	"{\"a\":\n\t[true,false,null,-1.25e+10,\"<&>\"]}\r\n", `{"a":1}{"b":2}`, `[1] 2`}

func TestSkipValueIsValid(t *testing.T) {
	t.Parallel()
	seeds := append(skipSeeds, strings.Repeat("[", 10000)+strings.Repeat("]", 10000),
		strings.Repeat("[", 10001)+strings.Repeat("]", 10001),
		strings.Repeat(`{"a":`, 10000)+"1"+strings.Repeat("}", 10000))
	for _, s := range seeds {
		if got, want := validBySkip([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("%.60q: SkipValue says valid %v, json.Valid %v", s, got, want)
		}
	}
}

// FuzzSkipValue: SkipValue judges validity as json.Valid does, and a
// valid value's end is where json.Decoder says it ends.
func FuzzSkipValue(f *testing.F) {
	for _, s := range skipSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validBySkip(b), json.Valid(b); got != want {
			t.Fatalf("%q: SkipValue says valid %v, json.Valid %v", b, got, want)
		}
		end, ok := SkipValue(b, 0)
		if !ok {
			return
		}
		var v json.RawMessage
		dec := json.NewDecoder(strings.NewReader(string(b)))
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%q: SkipValue ends a value at %d, json.Decoder: %v", b, end, err)
		}
		if int(dec.InputOffset()) != end {
			t.Fatalf("%q: SkipValue ends the value at %d, json.Decoder at %d", b, end, dec.InputOffset())
		}
	})
}
