package tools

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		in     string
		cut    bool
		prefix string
	}{
		{"short", "hello", false, "hello"},
		{"exactly MaxResult", strings.Repeat("a", MaxResult), false, "aaa"},
		{"one over", strings.Repeat("a", MaxResult+1), true, "aaa"},
		{"multibyte at the cut", strings.Repeat("é", MaxResult), true, "éé"},
		{"four-byte runes", strings.Repeat("😀", MaxResult/2), true, "😀"},
		{"invalid UTF-8 replaced", "a\xffb", false, "a\uFFFDb"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Fit(c.in, true)
			if !r.IsError {
				t.Fatal("IsError lost")
			}
			if len(r.Output) > MaxResult || !utf8.ValidString(r.Output) {
				t.Fatalf("output %d bytes, valid UTF-8 %v", len(r.Output), utf8.ValidString(r.Output))
			}
			if r.Cut != c.cut || !strings.HasPrefix(r.Output, c.prefix) {
				t.Fatalf("Cut=%v (want %v), output starts %q", r.Cut, c.cut, r.Output[:min(20, len(r.Output))])
			}
			if !c.cut {
				if r.FullSize != 0 || strings.Contains(r.Output, "output cut") {
					t.Fatalf("uncut result has FullSize %d / note", r.FullSize)
				}
				return
			}
			if r.FullSize != len(c.in) {
				t.Fatalf("FullSize = %d, want %d", r.FullSize, len(c.in))
			}
			body, note, ok := strings.Cut(r.Output, "\n... [output cut: ")
			if !ok {
				t.Fatalf("no cut note in %q", r.Output[len(r.Output)-80:])
			}
			if want := fmt.Sprintf("%d of %d bytes shown]", len(body), len(c.in)); note != want {
				t.Fatalf("note %q, want %q", note, want)
			}
			if len(r.Output) < MaxResult-8 {
				t.Fatalf("cut too much: %d bytes", len(r.Output))
			}
		})
	}
}

// TestFitKeepsTrailer: a cut never removes the trailer (how a call ended).
func TestFitKeepsTrailer(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("x", 3*MaxResult)
	r := fit(body, "\nExit code 2", len(body), true)
	if !r.Cut || !strings.HasSuffix(r.Output, "bytes shown]\nExit code 2") || len(r.Output) > MaxResult {
		t.Fatalf("cut=%v len=%d tail %q", r.Cut, len(r.Output), r.Output[len(r.Output)-60:])
	}
	if r.FullSize != len(body)+len("\nExit code 2") {
		t.Fatalf("FullSize %d", r.FullSize)
	}
	// A capture that stopped keeping text still reports the true size.
	var c capture
	for range 1000 {
		c.WriteString(strings.Repeat("y", 1000))
	}
	r = c.result("", false)
	if r.FullSize != 1000*1000 || !strings.Contains(r.Output, "of 1000000 bytes shown]") {
		t.Fatalf("FullSize %d, tail %q", r.FullSize, r.Output[len(r.Output)-60:])
	}
}
