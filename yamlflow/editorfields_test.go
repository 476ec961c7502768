package yamlflow

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"testing"
)

// TestEditorCompletesEveryField: the web editor's field completion
// (web/src/editor/yaml.ts) offers exactly the keys this loader implements,
// so a field added here is completed there too.
func TestEditorCompletesEveryField(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../web/src/editor/yaml.ts")
	if err != nil {
		t.Skip("no web/ here:", err)
	}
	list := func(name string) []string {
		m := regexp.MustCompile(`(?s)export const ` + name + `: readonly \w+\[\] = \[(.*?)\];`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("%s not found in yaml.ts", name)
		}
		var out []string
		for _, q := range regexp.MustCompile(`'([a-z_A-Z]+)'`).FindAllSubmatch(m[1], -1) {
			out = append(out, string(q[1]))
		}
		if regexp.MustCompile(`\.\.\.NODE_KIND_FIELDS`).Match(m[1]) {
			for _, k := range Kinds {
				out = append(out, string(k))
			}
		}
		sort.Strings(out)
		return slices.Compact(out)
	}
	wantNode := keys(commonNodeFields, aiNodeFields, agentNodeFields, scriptNodeFields, set(includeKey))
	for _, k := range Kinds {
		wantNode = append(wantNode, string(k))
	}
	sort.Strings(wantNode)
	if got := list("NODE_FIELDS"); !slices.Equal(got, slices.Compact(wantNode)) {
		t.Errorf("editor NODE_FIELDS\n got %v\nwant %v", got, wantNode)
	}
	if got, want := list("TOP_LEVEL_FIELDS"), keys(topLevelFields); !slices.Equal(got, want) {
		t.Errorf("editor TOP_LEVEL_FIELDS\n got %v\nwant %v", got, want)
	}
}
