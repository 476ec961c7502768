package yamledit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/yamlflow"
)

// sharedDir finds the read-only shared fixtures: $SWITCHYARD_SHARED, or
// ../shared from the repository root. Tests skip when it is absent.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("SWITCHYARD_SHARED")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared")
	}
	if _, err := os.Stat(filepath.Join(dir, "fixtures", "archon", "workflows")); err != nil {
		t.Skipf("shared fixtures not found at %s (set SWITCHYARD_SHARED): %v", dir, err)
	}
	return dir
}

// corpusFiles lists every workflow of the shared corpus (**/*.yaml).
func corpusFiles(t testing.TB) []string {
	t.Helper()
	root := filepath.Join(sharedDir(t), "fixtures", "archon", "workflows")
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && yamlflow.IsYAMLFile(p) {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no workflows under %s", root)
	}
	sort.Strings(files)
	return files
}

// lineDiff compares two texts line by line (longest common subsequence):
// the 1-based lines of a that were removed and of b that were added.
func lineDiff(a, b string) (removed, added []int) {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	n, m := len(x), len(y)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case x[i] == y[j]:
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			removed = append(removed, i+1)
			i++
		default:
			added = append(added, j+1)
			j++
		}
	}
	for ; i < n; i++ {
		removed = append(removed, i+1)
	}
	for ; j < m; j++ {
		added = append(added, j+1)
	}
	return removed, added
}

// nodeJSON is every node of wf as JSON by id (lines left out), the
// meaning of the workflow to compare after an edit.
func nodeJSON(t *testing.T, wf *yamlflow.Workflow) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range wf.Nodes {
		c := *n
		c.Line = 0
		c.WhenExpr = nil
		raw, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		out[n.ID] = string(raw)
	}
	return out
}

// diagKeys are the diagnostics without their lines, sorted.
func diagKeys(ds []yamlflow.Diagnostic) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Severity+" "+d.Code+" "+d.NodeID+" "+d.Field)
	}
	sort.Strings(out)
	return out
}

func mustParse(t *testing.T, name string, src []byte) (*yamlflow.Workflow, []yamlflow.Diagnostic) {
	t.Helper()
	wf, diags, err := yamlflow.Parse(name, src)
	if err != nil {
		t.Fatalf("%s does not load:\n%v\n%s", name, err, src)
	}
	return wf, diags
}

func commentLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	slices.Sort(out)
	return out
}
