package jsonw

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendString: any string is written as encoding/json writes it.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c\n\t\b\f\r<>&", "\u2028\u2029\xff\x00\x1f\x7f", "🙂é日本", "\xe2\x82", "\xc3("} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
		if got := AppendString([]byte("x"), s); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("%q appended to x: got %s", s, got)
		}
	})
}
