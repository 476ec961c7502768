package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
)

// TestUITemplatesValidate: every template the editor's gallery offers
// (web/src/graph/templates) is a graph the server accepts with no problem
// at all, and the YAML one parses as a workflow with no diagnostics.
func TestUITemplatesValidate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "web", "src", "graph", "templates")
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		t.Skip("web/ is absent")
	}
	if err != nil {
		t.Fatal(err)
	}
	var jsons, yamls int
	for _, e := range entries {
		name := e.Name()
		src, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasSuffix(name, ".json"):
			jsons++
			g, norm, err := graph.Decode(src)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if len(norm) > 0 {
				t.Errorf("%s: normalized: %v", name, norm)
			}
			if probs := graph.Validate(g); len(probs) > 0 {
				t.Errorf("%s: problems: %v", name, probs)
			}
		case strings.HasSuffix(name, ".yaml"):
			yamls++
			wf, probs, err := engine.ParseYAMLWorkflow(name, src)
			if err != nil || wf == nil || len(probs) > 0 {
				t.Errorf("%s: %v %v", name, err, probs)
			}
		}
	}
	if jsons < 3 || yamls < 1 {
		t.Fatalf("%d graph and %d YAML templates in %s, want at least 3 and 1", jsons, yamls, dir)
	}
}
