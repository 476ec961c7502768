package yamlflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestIncludeErrors checks every include problem, each reported at the
// include node of the file being loaded.
func TestIncludeErrors(t *testing.T) {
	t.Parallel()
	checkWantFile(t, "testdata/include/errors-include.yaml")
}

func TestIncludeErrorMessages(t *testing.T) {
	t.Parallel()
	_, diags, _ := Load("testdata/include/errors-include.yaml")
	tests := []struct {
		node, code string
		contains   []string
	}{
		{"missing", CodeIncludeNotFound, []string{`"no-such-block"`, "no-such-block.yaml"}},
		{"self", CodeIncludeCycle, []string{"include cycle: errors-include -> errors-include"}},
		{"cycle", CodeIncludeCycle, []string{"in included workflow testdata/include/cycle-a.yaml:5: node \"b\"", "in included workflow testdata/include/cycle-b.yaml:5", "include cycle: errors-include -> cycle-a -> cycle-b -> cycle-a"}},
		{"deep", CodeIncludeTooDeep, []string{"more than 3 levels deep: errors-include -> deep-1 -> deep-2 -> deep-3 -> deep-4"}},
		{"bad", CodeEmptyBash, []string{"errors-include.yaml:15:", `node "bad": field "include": in included workflow`, "bad-block.yaml:5:", `node "empty"`, "must not be empty"}},
		{"review", CodeDuplicateID, []string{`"review__start"`, `collides with node "review__start" (line 22)`}},
		{"gate", CodeBadWhen, []string{"||", `included node "gate" ("$gate.output == 'x' || $gate.output == 'y'")`}},
		{"owned", CodeFieldIgnored, []string{"interactive, pass_env"}},
	}
	for _, tc := range tests {
		found := false
		for _, d := range diags {
			if d.NodeID != tc.node || d.Code != tc.code {
				continue
			}
			found = true
			for _, c := range tc.contains {
				if !strings.Contains(d.Error(), c) {
					t.Errorf("node %s: %q does not contain %q", tc.node, d.Error(), c)
				}
			}
		}
		if !found {
			t.Errorf("no %s diagnostic for node %s", tc.code, tc.node)
		}
	}
}

// TestIncludeExpansion checks the shape of an expanded workflow: ids,
// wiring, conditions, references, provider and origin.
func TestIncludeExpansion(t *testing.T) {
	t.Parallel()
	wf, diags, err := Load("testdata/include/parent.yaml")
	if err != nil || len(diags) != 0 {
		t.Fatalf("Load: %v %v", err, diags)
	}
	var ids []string
	for _, n := range wf.Nodes {
		ids = append(ids, n.ID)
	}
	want := []string{"first", "review__start", "review__mid", "review__end", "review__side",
		"again__start", "again__mid", "again__end", "again__side", "after"}
	if !slices.Equal(ids, want) {
		t.Fatalf("ids = %v, want %v", ids, want)
	}
	type shape struct {
		deps    []string
		when    string
		trigger string
		from    string
	}
	shapes := map[string]shape{
		// Entries take the include's depends_on, when and trigger_rule.
		"review__start": {[]string{"first"}, "$first.output == 'hi'", TriggerAllDone, "review"},
		"review__mid":   {[]string{"review__start"}, "", TriggerAllSuccess, "review"},
		"review__end":   {[]string{"review__mid"}, "$review__mid.output.ok == 'yes'", TriggerAllSuccess, "review"},
		"review__side":  {[]string{"review__start"}, "", TriggerAllSuccess, "review"},
		// depends_on: [review] waits for every sink of the block.
		"again__start": {[]string{"review__end", "review__side"}, "", TriggerAllSuccess, "again"},
		"after":        {[]string{"review__end", "review__side", "again__end", "again__side"}, "$review__end.output != '' && $first.output == 'hi' && $again__end.verdict != 'no'", TriggerAllSuccess, ""},
	}
	for id, s := range shapes {
		n := wf.Node(id)
		if !slices.Equal(n.DependsOn, s.deps) || n.When != s.when || n.TriggerRule != s.trigger || n.IncludedFrom != s.from {
			t.Errorf("%s: deps %v when %q trigger %s from %q, want %+v", id, n.DependsOn, n.When, n.TriggerRule, n.IncludedFrom, s)
		}
		if n.When != "" && (n.WhenExpr == nil || n.WhenExpr.Source() != n.When) {
			t.Errorf("%s: WhenExpr %v does not match when %q", id, n.WhenExpr, n.When)
		}
	}
	// $x.output in the block names the namespaced node; $review.output the
	// primary sink (the first sink in the block's order).
	if got := wf.Node("review__mid").Prompt; got != "continue from $review__start.output" {
		t.Errorf("review__mid prompt = %q", got)
	}
	if got := wf.Node("again__end").Bash; got != `echo "$again__mid.output.verdict"` {
		t.Errorf("again__end bash = %q", got)
	}
	if got := wf.Node("after").Prompt; got != "summary: $review__end.output and $again__end.output.verdict" {
		t.Errorf("after prompt = %q", got)
	}
	// The block's provider and model go to its AI nodes that set none.
	if n := wf.Node("review__mid"); n.Provider != ProviderOpenAI || n.Model != "block-model" {
		t.Errorf("review__mid provider/model = %q/%q", n.Provider, n.Model)
	}
	if n := wf.Node("review__side"); n.Provider != ProviderClaude || n.Model != "sonnet" {
		t.Errorf("review__side provider/model = %q/%q", n.Provider, n.Model)
	}
	if o := wf.Node("again__side").Origin; o == nil || o.Workflow != "block.yaml" || o.ID != "side" || o.Line != 15 ||
		filepath.Base(o.File) != "block.yaml" {
		t.Errorf("again__side origin = %+v", o)
	}
	if len(wf.Includes) != 2 || wf.Includes[0].Name != "block" || wf.Includes[1].Name != "block.yaml" ||
		!strings.Contains(wf.Includes[0].Source, "a reusable block") {
		t.Errorf("Includes = %+v", wf.Includes)
	}
	if got := TopoOrder(wf); len(got) != len(wf.Nodes) {
		t.Errorf("TopoOrder = %v", got)
	}
	// Text loaded at run time (a command file) is rewritten the same way.
	if got := wf.Node("review__side").RewriteOutputRefs("$mid.output $start.output.x $first.output"); got != "$review__mid.output $review__start.output.x $first.output" {
		t.Errorf("RewriteOutputRefs in the block = %q", got)
	}
	if got := wf.Node("after").RewriteOutputRefs("$review.output $first.output"); got != "$review__end.output $first.output" {
		t.Errorf("RewriteOutputRefs in the parent = %q", got)
	}
}

func TestIncludeNested(t *testing.T) {
	t.Parallel()
	wf, diags, err := Load("testdata/include/outer.yaml")
	if err != nil || len(diags) != 0 {
		t.Fatalf("Load: %v %v", err, diags)
	}
	var ids []string
	for _, n := range wf.Nodes {
		ids = append(ids, n.ID)
		if n.ID != "last" && n.IncludedFrom != "m" {
			t.Errorf("%s: IncludedFrom = %q, want the outermost include m", n.ID, n.IncludedFrom)
		}
	}
	want := []string{"m__pre", "m__inner__start", "m__inner__mid", "m__inner__end", "m__inner__side", "m__post", "last"}
	if !slices.Equal(ids, want) {
		t.Fatalf("ids = %v, want %v", ids, want)
	}
	if n := wf.Node("m__inner__start"); !slices.Equal(n.DependsOn, []string{"m__pre"}) || n.Origin.Workflow != "block" || n.Origin.ID != "start" {
		t.Errorf("m__inner__start = deps %v origin %+v", n.DependsOn, n.Origin)
	}
	if n := wf.Node("m__post"); !slices.Equal(n.DependsOn, []string{"m__inner__end", "m__inner__side"}) || n.Prompt != "got $m__inner__end.output" {
		t.Errorf("m__post = deps %v prompt %q", n.DependsOn, n.Prompt)
	}
	if n := wf.Node("last"); !slices.Equal(n.DependsOn, []string{"m__post"}) || n.Bash != `echo "$m__post.output"` {
		t.Errorf("last = deps %v bash %q", n.DependsOn, n.Bash)
	}
	if got := wf.Node("m__inner__end").RewriteOutputRefs("$mid.output"); got != "$m__inner__mid.output" {
		t.Errorf("nested RewriteOutputRefs = %q", got)
	}
	if got := wf.Node("m__post").RewriteOutputRefs("$inner.output $pre.output"); got != "$m__inner__end.output $m__pre.output" {
		t.Errorf("RewriteOutputRefs of a block that includes = %q", got)
	}
	if len(wf.Includes) != 2 || wf.Includes[0].Name != "midblock" || wf.Includes[1].Name != "block" {
		t.Errorf("Includes = %+v", wf.Includes)
	}
}

// TestIncludeSnapshot loads a workflow again from its recorded includes,
// with the files gone.
func TestIncludeSnapshot(t *testing.T) {
	t.Parallel()
	wf, _, err := Load("testdata/include/outer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("testdata/include/outer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Round-trip the snapshot through JSON, as a run definition would.
	raw, err := json.Marshal(wf.Includes)
	if err != nil {
		t.Fatal(err)
	}
	var includes []IncludedWorkflow
	if err := json.Unmarshal(raw, &includes); err != nil {
		t.Fatal(err)
	}
	again, diags, err := Parse(filepath.Join(t.TempDir(), "outer.yaml"), src, WithIncludeResolver(SnapshotIncludeResolver(includes)))
	if err != nil || len(diags) != 0 {
		t.Fatalf("Parse from snapshot: %v %v", err, diags)
	}
	if !slices.Equal(TopoOrder(again), TopoOrder(wf)) {
		t.Errorf("snapshot order %v, want %v", TopoOrder(again), TopoOrder(wf))
	}
}

func TestIncludeNeedsResolver(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("testdata/include/parent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wf, diags, err := Parse("parent.yaml", src)
	if err == nil {
		t.Fatal("Parse without a resolver expanded the includes")
	}
	if len(Errors(diags)) != 2 || diags[0].Code != CodeIncludeNotFound || !strings.Contains(diags[0].Message, "without a folder") {
		t.Errorf("diags = %v", diags)
	}
	// The partial workflow keeps the includes as nodes, for the canvas.
	c := CanvasOf(wf)
	if c.Nodes[1].ID != "review" || c.Nodes[1].Data.Kind != "include" || c.Nodes[1].Data.Detail != "include: block" {
		t.Errorf("canvas include node = %+v", c.Nodes[1])
	}
	// WithIncludeDir finds them.
	if _, _, err := Parse("parent.yaml", src, WithIncludeDir("testdata/include")); err != nil {
		t.Errorf("Parse WithIncludeDir: %v", err)
	}
}

func TestDirIncludeResolver(t *testing.T) {
	t.Parallel()
	r := DirIncludeResolver("testdata/include")
	for _, name := range []string{"block", "block.yaml"} {
		file, src, err := r(name)
		if err != nil || filepath.Base(file) != "block.yaml" || !strings.Contains(string(src), "reusable") {
			t.Errorf("%s: %s %v", name, file, err)
		}
	}
	for _, name := range []string{"../include/block", "/etc/passwd", ".hidden", "a\\b", ""} {
		if _, _, err := r(name); !errors.Is(err, ErrInvalidIncludeName) {
			t.Errorf("%q: err = %v, want ErrInvalidIncludeName", name, err)
		}
	}
	if _, _, err := r("nope"); !errors.Is(err, ErrIncludeNotFound) {
		t.Errorf("nope: err = %v", err)
	}
}

// TestIncludeCanvasGroup checks the projection: included nodes carry their
// group, and texts show as their file wrote them.
func TestIncludeCanvasGroup(t *testing.T) {
	t.Parallel()
	wf, _, err := Load("testdata/include/parent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := CanvasOf(wf)
	byID := map[string]CanvasNode{}
	for _, n := range c.Nodes {
		byID[n.ID] = n
	}
	if d := byID["review__mid"].Data; d.Group != "review" || d.GroupLabel != "block" || d.Detail != "continue from $start.output" {
		t.Errorf("review__mid = %+v", d)
	}
	if d := byID["again__end"].Data; d.Group != "again" || d.GroupLabel != "block.yaml" {
		t.Errorf("again__end = %+v", d)
	}
	if d := byID["after"].Data; d.Group != "" || d.Detail != "summary: $review.output and $again.output.verdict" || d.When != "$review.output != '' && $first.output == 'hi' && $again.verdict != 'no'" {
		t.Errorf("after = %+v", d)
	}
	edges := map[string]bool{}
	for _, e := range c.Edges {
		edges[e.ID] = true
	}
	for _, e := range []string{"first->review__start", "review__end->again__start", "review__side->again__start", "again__side->after"} {
		if !edges[e] {
			t.Errorf("missing edge %s in %v", e, edges)
		}
	}
	raw := string(CanvasJSON(wf))
	if !strings.Contains(raw, `"group":"review"`) || !strings.Contains(raw, `"groupLabel":"block"`) {
		t.Errorf("canvas JSON has no group: %s", raw)
	}
}

// TestArchonCurrentLoads loads the 21 default workflows of Archon's current
// release: none may have an error, and the three that include the review
// block get its ten nodes.
func TestArchonCurrentLoads(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(sharedDir(t), "fixtures", "archon-current", "workflows", "defaults")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("Archon's current workflows not found: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 21 {
		t.Fatalf("%d workflows in %s, want 21", len(files), dir)
	}
	including := 0
	for _, file := range files {
		wf, diags, err := Load(file)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(file), err)
			continue
		}
		for _, d := range diags {
			switch {
			case d.Code == CodeUnknownOutputRef || d.Code == CodeUnsupportedProvider:
			default:
				t.Errorf("unexpected diagnostic: %s", d)
			}
		}
		if got := TopoOrder(wf); len(got) != len(wf.Nodes) {
			t.Errorf("%s: TopoOrder has %d of %d nodes", file, len(got), len(wf.Nodes))
		}
		if len(wf.Includes) == 0 {
			continue
		}
		including++
		var block []string
		for _, n := range wf.Nodes {
			if n.IncludedFrom == "review" {
				block = append(block, n.ID)
			}
		}
		if len(block) != 10 || block[0] != "review__verify-pr-base" || block[9] != "review__implement-fixes" {
			t.Errorf("%s: review block = %v", filepath.Base(file), block)
		}
		// The node after the review waits for its terminal node.
		for _, n := range wf.Nodes {
			if n.IncludedFrom == "" && slices.Contains(n.DependsOn, "review__implement-fixes") {
				block = nil
			}
		}
		if block != nil {
			t.Errorf("%s: no node depends on review__implement-fixes", filepath.Base(file))
		}
	}
	if including != 3 {
		t.Errorf("%d workflows include the review block, want 3", including)
	}
	// Agent fields of the current release load into their fields.
	wf, _, err := Load(filepath.Join(dir, "archon-create-issue.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if n := wf.Node("classify"); n.AllowedTools == nil || len(n.AllowedTools) != 0 {
		t.Errorf("classify allowed_tools: [] = %#v, want empty, not nil", n.AllowedTools)
	}
	wf, _, err = Load(filepath.Join(dir, "archon-smart-pr-review.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if n := wf.Node("notify"); n.MCP == nil || n.MCP.File != ".archon/mcp/ntfy.json" {
		t.Errorf("notify mcp = %+v", n.MCP)
	}
	wf, _, err = Load(filepath.Join(dir, "archon-assist.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if wf.Worktree == nil || wf.Worktree.Enabled == nil || *wf.Worktree.Enabled {
		t.Errorf("assist worktree = %+v", wf.Worktree)
	}
}

// TestIncludeBounds: many includes of small files cannot make a load long.
func TestIncludeBounds(t *testing.T) {
	t.Parallel()
	// Each level includes the next one ten times: 10+100+1000 files to
	// read without the bound. Names differ per level, so no cycle stops it.
	level := func(next string) []byte {
		var b strings.Builder
		b.WriteString("name: fan\ndescription: d\nnodes:\n")
		for i := range 10 {
			fmt.Fprintf(&b, "  - id: i%d\n    include: %s\n", i, next)
		}
		return []byte(b.String())
	}
	reads := 0
	resolve := func(name string) (string, []byte, error) {
		reads++
		next := map[string]string{"fan1": "fan2", "fan2": "fan3"}[name]
		if next == "" {
			return name + ".yaml", []byte("name: leaf\ndescription: d\nnodes:\n  - id: x\n    bash: echo\n"), nil
		}
		return name + ".yaml", level(next), nil
	}
	_, diags, err := Parse("top.yaml", level("fan1"), WithIncludeResolver(resolve))
	if err == nil {
		t.Fatal("no error")
	}
	if reads > maxIncludeLoads {
		t.Errorf("%d files read, want at most %d", reads, maxIncludeLoads)
	}
	found := false
	for _, d := range diags {
		found = found || d.Code == CodeIncludeTooDeep && strings.Contains(d.Message, "more than 100 workflow files")
	}
	if !found {
		t.Errorf("no include_too_deep diagnostic about the number of files read: %v", diags)
	}
}
