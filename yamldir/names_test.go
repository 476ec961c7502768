package yamldir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCreateRefusesMisleadingNames: a new file's name may not hold a
// newline or other control character, bidirectional text controls, a byte
// order mark or other invisible characters, nor start with '-'. Nothing is
// written for them.
func TestCreateRefusesMisleadingNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	f, err := New(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ rel, reason string }{
		{"a\nb.yaml", "control characters"},
		{"tab\there.yaml", "control characters"},
		{"sub\r/x.yaml", "control characters"},
		{"evil\u202Elmay.yaml", "bidirectional"},
		{"iso\u2066late.yaml", "bidirectional"},
		{"mark\u200F.yaml", "bidirectional"},
		{"\uFEFFflow.yaml", "byte order mark"},
		{"zero\u200Bwidth.yaml", "invisible"},
		{"-rf.yaml", "'-'"},
		{"sub/--help.yaml", "'-'"},
		{"-sub/x.yaml", "'-'"},
		{"bad\xffutf8.yaml", "UTF-8"},
	} {
		_, err := f.Create(ctx, tc.rel, []byte(flow))
		var pe *PathError
		if !errors.As(err, &pe) || !strings.Contains(pe.Reason, tc.reason) {
			t.Errorf("Create(%q): %v, want a path error saying %q", tc.rel, err, tc.reason)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("written for refused names: %v", ents)
	}
	for _, ok := range []string{"flow.yaml", "sub/my-flow_2.yml", "née/ünïcode.yaml", "a-b.yaml"} {
		if _, err := f.Create(ctx, ok, []byte(flow)); err != nil {
			t.Errorf("Create(%q): %v", ok, err)
		}
	}
}

// TestListSaysWhenCut: a folder with more than MaxWorkflows files lists
// the first MaxWorkflows and says it was cut; at exactly MaxWorkflows it
// is not.
func TestListSaysWhenCut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	f, err := New(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range MaxWorkflows {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d.yaml", i)), []byte(flow), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, cut, err := f.ListTruncated(ctx)
	if err != nil || cut || len(ws) != MaxWorkflows {
		t.Fatalf("%d files: %d listed, cut %t, %v", MaxWorkflows, len(ws), cut, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "zzz.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, cut, err = f.ListTruncated(ctx)
	if err != nil || !cut || len(ws) != MaxWorkflows {
		t.Fatalf("%d files: %d listed, cut %t, %v", MaxWorkflows+1, len(ws), cut, err)
	}
	if ws[len(ws)-1].ID != WorkflowID("f0999.yaml") {
		t.Errorf("the listing is not the first files in path order: ends with %s", ws[len(ws)-1].ID)
	}
}
