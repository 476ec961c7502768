package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/yamledit"
	"github.com/switchyard/switchyard/yamlflow"
)

// yamlNodes is a valid workflow of n bash nodes in a chain.
func yamlNodes(n int) string {
	var b strings.Builder
	b.WriteString("name: big\ndescription: d\nnodes:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - id: n%05d\n    bash: echo hi\n", i)
		if i > 0 {
			fmt.Fprintf(&b, "    depends_on: [n%05d]\n", i-1)
		}
	}
	return b.String()
}

// addNodes is n addNode edits.
func addNodes(n int) []yamledit.Edit {
	edits := make([]yamledit.Edit, n)
	for i := range edits {
		edits[i] = yamledit.Edit{Op: yamledit.OpAddNode, Node: fmt.Sprintf("added%d", i), Kind: "bash", Value: []byte(`"echo hi"`)}
	}
	return edits
}

// TestYAMLEditsAreCapped: thousands of edits in one save held the
// process-wide write lock for over a minute; a save takes at most
// MaxYAMLEdits (413 naming the limit) and leaves the file alone.
func TestYAMLEditsAreCapped(t *testing.T) {
	t.Parallel()
	v, _, dir := newYAMLEnv(t, map[string]string{"a.yaml": commentedYAML}, func(o *envOpts) { o.noLLM = true })
	r := v.request("PUT", "/api/workflows/yaml.a.yaml", map[string]any{"edits": addNodes(5000), "baseHash": sha(commentedYAML)})
	if r.status != http.StatusRequestEntityTooLarge || !strings.Contains(string(r.body), "5000 edits in one save; the limit is 500") {
		t.Fatalf("5,000 edits: %d %s", r.status, r.body)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.yaml")); string(b) != commentedYAML {
		t.Fatal("the file changed")
	}
	r = v.request("PUT", "/api/workflows/yaml.a.yaml", map[string]any{"edits": addNodes(MaxYAMLEdits + 1), "baseHash": sha(commentedYAML)})
	if r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("%d edits: %d %s", MaxYAMLEdits+1, r.status, r.body)
	}
	var w yamlWorkflowJSON
	v.must(http.StatusOK, "PUT", "/api/workflows/yaml.a.yaml", map[string]any{"edits": addNodes(20), "baseHash": sha(commentedYAML)}, &w)
	if len(w.Graph.Nodes) != 2+20 {
		t.Fatalf("after 20 edits: %d nodes", len(w.Graph.Nodes))
	}
}

// TestYAMLEditsOutsideTheLock: edits are applied before the folder's write
// lock is taken, so another file's save does not wait for them, and a
// client that leaves stops them: nothing is written.
func TestYAMLEditsOutsideTheLock(t *testing.T) {
	v, _, dir := newYAMLEnv(t, map[string]string{"a.yaml": commentedYAML, "b.yaml": greeterYAML}, func(o *envOpts) { o.noLLM = true })
	inEdits := make(chan struct{})
	release := make(chan struct{})
	yamlEditHook = func(ctx context.Context, i int) {
		if i == 1 {
			close(inEdits)
			<-release
			// Then wait for the server to see the client leave.
			select {
			case <-ctx.Done():
			case <-time.After(30 * time.Second):
			}
		}
	}
	defer func() { yamlEditHook = nil }()

	ctx, cancel := context.WithCancel(context.Background())
	raw, _ := json.Marshal(map[string]any{"edits": addNodes(50), "baseHash": sha(commentedYAML)})
	req, _ := http.NewRequestWithContext(ctx, "PUT", v.url+"/api/workflows/yaml.a.yaml", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	bigDone := make(chan error, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		bigDone <- err
	}()
	select {
	case <-inEdits:
	case <-time.After(30 * time.Second):
		t.Fatal("the edits never started")
	}
	// Another file's save goes through while the edits are under way.
	saved := make(chan *response, 1)
	go func() {
		saved <- v.request("PUT", "/api/workflows/yaml.b.yaml", map[string]any{"source": greeterYAML + "# more\n", "baseHash": sha(greeterYAML)})
	}()
	select {
	case r := <-saved:
		if r.status != http.StatusOK {
			t.Fatalf("the other save: %d %s", r.status, r.body)
		}
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("another file's save waited for the edits")
	}
	// The client leaves: the edits stop, nothing is written.
	cancel()
	<-bigDone
	close(release)
	waitFor(t, "the abandoned save to end", func() bool {
		return strings.Contains(v.logs.String(), "method=PUT path=/api/workflows/yaml.a.yaml")
	})
	if b, _ := os.ReadFile(filepath.Join(dir, "a.yaml")); string(b) != commentedYAML {
		t.Fatalf("a save whose client left was written:\n%s", b)
	}
}

// TestYAMLLimits: YAML text gets the limits graphs have, on every route
// that takes it: over 4 MiB is 413 (saving one answered 500), over 10,000
// nodes is 413 naming the limit (validating 60,000 nodes cost 300 MB).
func TestYAMLLimits(t *testing.T) {
	t.Parallel()
	v, _, dir := newYAMLEnv(t, map[string]string{"a.yaml": commentedYAML}, func(o *envOpts) { o.noLLM = true })
	huge := "name: x\ndescription: d\n# " + strings.Repeat("x", 4<<20) + "\nnodes:\n  - id: a\n    bash: echo\n"
	many := yamlNodes(10_001)
	for _, tc := range []struct {
		name, method, path string
		body               map[string]any
		want               string
	}{
		{"validate, huge", "POST", "/api/yaml/validate", map[string]any{"source": huge}, "bytes; the limit is 4194304"},
		{"validate, many", "POST", "/api/yaml/validate", map[string]any{"source": many}, "it has 10001 nodes; the limit is 10000"},
		{"save, huge", "PUT", "/api/workflows/yaml.a.yaml", map[string]any{"source": huge, "baseHash": sha(commentedYAML)}, "the limit is 4194304"},
		{"save, many", "PUT", "/api/workflows/yaml.a.yaml", map[string]any{"source": many, "baseHash": sha(commentedYAML)}, "10001 nodes"},
		{"create, huge", "POST", "/api/workflows/yaml", map[string]any{"path": "h.yaml", "source": huge}, "the limit is 4194304"},
		{"create, many", "POST", "/api/workflows/yaml", map[string]any{"path": "m.yaml", "source": many}, "10001 nodes"},
		{"long id", "POST", "/api/yaml/validate", map[string]any{"source": "name: x\ndescription: d\nnodes:\n  - id: " + strings.Repeat("i", 300) + "\n    bash: echo\n"}, "its id is 300 bytes"},
	} {
		r := v.request(tc.method, tc.path, tc.body)
		if r.status != http.StatusRequestEntityTooLarge || r.errCode(t) != CodePayloadTooLarge || !strings.Contains(string(r.body), tc.want) {
			t.Errorf("%s: %d %s", tc.name, r.status, truncate(string(r.body), 300))
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.yaml")); string(b) != commentedYAML {
		t.Error("an over-limit save was written")
	}
	for _, f := range []string{"h.yaml", "m.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("an over-limit create wrote %s", f)
		}
	}
}

// TestCheckYAMLLimits: the limits' boundaries, on parsed workflows.
func TestCheckYAMLLimits(t *testing.T) {
	t.Parallel()
	nodes := func(n, deps int, id string) *yamlflow.Workflow {
		wf := &yamlflow.Workflow{}
		for i := 0; i < n; i++ {
			nd := &yamlflow.Node{ID: fmt.Sprintf("n%d", i)}
			for j := 0; j < deps; j++ {
				nd.DependsOn = append(nd.DependsOn, fmt.Sprintf("n%d", j))
			}
			wf.Nodes = append(wf.Nodes, nd)
		}
		if id != "" {
			wf.Nodes[0].ID = id
		}
		return wf
	}
	for _, tc := range []struct {
		name string
		wf   *yamlflow.Workflow
		want string
	}{
		{"nil", nil, ""},
		{"at the node limit", nodes(graph.MaxNodes, 0, ""), ""},
		{"over the node limit", nodes(graph.MaxNodes+1, 0, ""), "10001 nodes"},
		{"at the edge limit", nodes(10, graph.MaxEdges/10, ""), ""},
		{"over the edge limit", nodes(11, graph.MaxEdges/10, ""), "55000 dependencies"},
		{"long id", nodes(1, 0, strings.Repeat("i", graph.MaxIDLength+1)), "257 bytes"},
	} {
		err := checkYAMLLimits(tc.wf)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestYAMLDecodesAreBounded: YAML text takes the graphs' decode slots.
// (Not parallel: it holds the package's decode slots.)
func TestYAMLDecodesAreBounded(t *testing.T) {
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	old := decodeWait
	decodeWait = 100 * time.Millisecond
	defer func() { decodeWait = old }()
	for i := 0; i < cap(decodeSlots); i++ {
		decodeSlots <- struct{}{}
	}
	held := true
	drain := func() {
		if held {
			for i := 0; i < cap(decodeSlots); i++ {
				<-decodeSlots
			}
			held = false
		}
	}
	defer drain() // a failed request must not leave every slot taken
	r := v.request("POST", "/api/yaml/validate", map[string]any{"source": greeterYAML})
	drain()
	if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "too many graphs") {
		t.Fatalf("with every slot taken: %d %s", r.status, r.body)
	}
	v.must(http.StatusOK, "POST", "/api/yaml/validate", map[string]any{"source": greeterYAML}, nil)
}
