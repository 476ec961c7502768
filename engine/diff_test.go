package engine

import (
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	cases := []struct{ before, after, want string }{
		{"a\nb\nc\n", "a\nB\nc\n", "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"", "new\n", "--- a/f\n+++ b/f\n@@ -1,0 +1,1 @@\n+new\n"},
		{"x\n", "x\n", ""},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "1\n2\n3\n4\n5\n6\n7\n8\n9\nten\n",
			"--- a/f\n+++ b/f\n@@ -7,4 +7,4 @@\n 7\n 8\n 9\n-10\n+ten\n"},
	}
	for _, c := range cases {
		if got := unifiedDiff("f", c.before, c.after); got != c.want {
			t.Errorf("diff(%q, %q) =\n%s\nwant\n%s", c.before, c.after, got, c.want)
		}
	}
	// Two changes far apart are two hunks.
	a := strings.Repeat("l\n", 20)
	b := "X\n" + strings.Repeat("l\n", 18) + "Y\n"
	if got := strings.Count(unifiedDiff("f", a, b), "@@ -"); got != 2 {
		t.Errorf("%d hunks:\n%s", got, unifiedDiff("f", a, b))
	}
}
