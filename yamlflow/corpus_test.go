package yamlflow

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
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

func corpusFiles(t testing.TB) []string {
	t.Helper()
	root := filepath.Join(sharedDir(t), "fixtures", "archon", "workflows")
	var files []string
	for _, pattern := range []string{"defaults/*", "test-workflows/*", "dag-workflow-example.yaml"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			if IsYAMLFile(f) {
				files = append(files, f)
			}
		}
	}
	if len(files) == 0 {
		t.Fatalf("no workflows under %s", root)
	}
	return files
}

// TestCorpusLoads loads every workflow of the real corpus: none may have an
// error, and every field the corpus uses is either implemented or reported
// as not implemented (no unknown_field warnings).
func TestCorpusLoads(t *testing.T) {
	t.Parallel()
	notImpl := map[string]bool{}
	unshipped := map[string]bool{}
	kinds := map[Kind]int{}
	for _, file := range corpusFiles(t) {
		wf, diags, err := Load(file)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if wf.Name == "" || wf.Description == "" || len(wf.Nodes) == 0 {
			t.Errorf("%s: empty workflow %+v", file, wf)
		}
		for _, d := range diags {
			switch d.Code {
			case CodeNotImplemented:
				notImpl[d.Field] = true
			case CodeUnknownOutputRef:
				// The corpus mentions $nodeId.output in prose and comments.
			case CodeUnsupportedProvider:
				unshipped[filepath.Base(file)] = true // pi, codex, copilot: load, cannot run
			default:
				t.Errorf("unexpected diagnostic: %s %s", d.Code, d)
			}
		}
		if got := TopoOrder(wf); len(got) != len(wf.Nodes) {
			t.Errorf("%s: TopoOrder has %d of %d nodes", file, len(got), len(wf.Nodes))
		}
		for _, n := range wf.Nodes {
			kinds[n.Kind]++
			if n.When != "" && n.WhenExpr == nil {
				t.Errorf("%s: node %s: when %q did not parse", file, n.ID, n.When)
			}
		}
	}
	got := keys(notImpl)
	sort.Strings(got)
	var want []string
	if !slices.Equal(got, want) {
		t.Errorf("not-implemented corpus fields = %v, want %v", got, want)
	}
	// The corpus's pi, codex and copilot workflows (11 files) load with the
	// unsupported_provider warning.
	if len(unshipped) != 11 {
		t.Errorf("%d corpus workflows warn of an unshipped provider, want 11: %v", len(unshipped), keys(unshipped))
	}
	for _, k := range []Kind{KindCommand, KindPrompt, KindBash, KindScript, KindLoop, KindApproval} {
		if kinds[k] == 0 {
			t.Errorf("corpus has no %s node: the loader missed them", k)
		}
	}
}

func TestCorpusDeterministic(t *testing.T) {
	t.Parallel()
	file := filepath.Join(sharedDir(t), "fixtures", "archon", "workflows", "test-workflows", "e2e-deterministic.yaml")
	wf, diags, err := Load(file)
	if err != nil || len(diags) != 0 {
		t.Fatalf("Load: %v %v", err, diags)
	}
	want := []string{"bash-echo", "script-bun", "script-python", "bash-read-output", "branch-true", "branch-false", "merge-node", "verify-all"}
	if got := TopoOrder(wf); !slices.Equal(got, want) {
		t.Errorf("TopoOrder = %v", got)
	}
	if n := wf.Node("script-bun"); n.Kind != KindScript || !n.ScriptNamed || n.Script != "echo-args" || n.Runtime != RuntimeBun || n.TimeoutMS != 30000 {
		t.Errorf("script-bun = %+v", n)
	}
	if n := wf.Node("script-python"); !n.ScriptNamed || n.Script != "echo-py" || n.Runtime != RuntimeUV {
		t.Errorf("script-python = %+v", n)
	}
	if n := wf.Node("merge-node"); n.TriggerRule != TriggerOneSuccess || !slices.Equal(n.DependsOn, []string{"branch-true", "branch-false"}) {
		t.Errorf("merge-node = %+v", n)
	}
	run := outputs{"bash-echo": `{"status":"ok","value":42}`}
	for id, want := range map[string]bool{"branch-true": true, "branch-false": false} {
		ok, err := wf.Node(id).WhenExpr.Eval(run.lookup)
		if err != nil || ok != want {
			t.Errorf("%s when = %v, %v; want %v", id, ok, err, want)
		}
	}
}

func TestCorpusNesting(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(sharedDir(t), "fixtures", "archon", "workflows", "defaults")
	wf, _, err := Load(filepath.Join(dir, "archon-interactive-prd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	g := wf.Node("foundation-gate")
	if !wf.Interactive || g.Kind != KindApproval || g.Approval == nil || !g.Approval.CaptureResponse || g.Approval.Message == "" {
		t.Errorf("foundation-gate = %+v", g)
	}
	wf, _, err = Load(filepath.Join(dir, "archon-piv-loop.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	interactive := 0
	for _, n := range wf.Nodes {
		if n.Kind == KindLoop && n.Loop.Interactive {
			interactive++
			if n.Loop.GateMessage == "" || n.Loop.Until == "" || n.Loop.MaxIterations < 1 || n.Loop.Prompt == "" {
				t.Errorf("loop %s = %+v", n.ID, n.Loop)
			}
		}
	}
	if interactive != 3 {
		t.Errorf("found %d interactive loops, want 3", interactive)
	}
	wf, _, err = Load(filepath.Join(dir, "archon-adversarial-dev.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range wf.Nodes {
		found = found || (n.Loop != nil && n.Loop.UntilBash != "" && n.Loop.FreshContext)
	}
	if !found {
		t.Error("no loop with until_bash and fresh_context in archon-adversarial-dev")
	}
}
