package jsonw

import (
	"slices"
	"testing"
)

// TestMembers: the keys and raw values of one object, in order; false for
// anything that is not exactly one object with plain keys, or when the
// member reader refuses.
func TestMembers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want []string // key=value, in order
		ok   bool
	}{
		{`{}`, nil, true},
		{" \n{ } \t", nil, true},
		{`{"a":1,"b" : {"c":[2]} , "a":"x"}`, []string{"a=1", `b={"c":[2]}`, `a="x"`}, true},
		{`{"é":null}`, []string{"é=null"}, true},
		{`{"a\"b":1}`, nil, false},   // a key with an escape
		{"{\"\xff\":1}", nil, false}, // invalid UTF-8
		{`{"a":1,}`, []string{"a=1"}, false},
		{`{"a":1}x`, []string{"a=1"}, false},
		{`{"a" 1}`, nil, false},
		{`{"a":}`, nil, false},
		{`[]`, nil, false},
		{``, nil, false},
		{`{"a":1`, []string{"a=1"}, false},
		{`{"refuse":1}`, nil, false},
	} {
		var got []string
		ok := Members([]byte(c.in), func(key []byte, i int) (int, bool) {
			end, ok := SkipValue([]byte(c.in), i)
			if !ok || string(key) == "refuse" {
				return end, false
			}
			got = append(got, string(key)+"="+c.in[i:end])
			return end, true
		})
		if ok != c.ok || !slices.Equal(got, c.want) {
			t.Errorf("Members(%q) = %v %q, want %v %q", c.in, ok, got, c.ok, c.want)
		}
	}
}
