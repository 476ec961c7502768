package faults

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// TestAgentBashCannotReachTheDatabase: serve as shipped (the sandbox on
// where the kernel allows it) runs an agent whose Bash call, talked into
// it, goes for the database: to read it, to overwrite it, to list the
// data folder. The call sees the folder empty but for its own artifacts,
// its write lands nowhere, the database is intact (serve restarts on it
// and still has the run), and what the call writes in its
// $ARTIFACTS_DIR is there.
func TestAgentBashCannotReachTheDatabase(t *testing.T) {
	t.Parallel()
	const key = "sandboxpeek"
	h := newHarness(t)
	db := filepath.Join(h.data, "switchyard.db")
	command := fmt.Sprintf(`head -c 16 %[1]q; echo; ls -A %[2]q | tr '\n' ' '; echo; `+
		`echo overwritten > %[1]q && echo "wrote the database"; echo kept > "$ARTIFACTS_DIR/kept.txt" && echo "artifacts written"`, db, h.data)
	args, err := json.Marshal(map[string]string{"command": command})
	if err != nil {
		t.Fatal(err)
	}
	h.llm.setFault(key, func(c llmCall, attempt int) (fakeopenai.Reply, bool) {
		if c.results >= 1 {
			return fakeopenai.Reply{Text: "looked"}, true
		}
		return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "Bash", Arguments: string(args)}}}, true
	})
	src := fmt.Sprintf("name: %[1]s\ndescription: one Bash call at the database\nnodes:\n  - id: agent\n    prompt: \"%[2]s look around\"\n    allowed_tools: [Bash]\n",
		key, marker(key, "agent"))
	if err := os.WriteFile(filepath.Join(h.workflows, key+".yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p := h.start()
	var rv runView
	p.must(t, http.MethodPost, "/api/runs", map[string]any{"workflowId": yamlWorkflowID(t, p, key)}, http.StatusCreated, &rv)
	final := p.waitRun(t, rv.RunID, 90*time.Second)
	if final.Status != engine.StatusCompleted {
		t.Fatalf("run %s: %s %s\n%s", rv.RunID, final.Status, final.Error, p.stderr)
	}
	_, results := toolEvents(p.events(t, rv.RunID))
	if len(results) != 1 {
		t.Fatalf("%d tool results, want 1", len(results))
	}
	out := results[0].Content + string(results[0].Data)
	if strings.Contains(out, "SQLite format") || strings.Contains(out, "wrote the database") {
		t.Errorf("the agent's Bash reached the database:\n%s", out)
	}
	if !strings.Contains(out, "\nartifacts \n") || !strings.Contains(out, "artifacts written") {
		t.Errorf("the agent's Bash did not see the data folder empty but for its artifacts:\n%s", out)
	}
	b, err := os.ReadFile(db)
	if err != nil || !strings.HasPrefix(string(b), "SQLite format 3") {
		t.Errorf("the database after the call: %.20q, %v", b, err)
	}
	kept, _ := filepath.Glob(filepath.Join(h.data, "artifacts", rv.RunID, "kept.txt"))
	if len(kept) != 1 {
		t.Errorf("the file written in $ARTIFACTS_DIR is not there")
	}
	p.stop(t)
	p2 := h.start()
	if again := p2.waitRun(t, rv.RunID, 30*time.Second); again.Status != engine.StatusCompleted {
		t.Errorf("after a restart on the database, the run is %s", again.Status)
	}
	p2.stop(t)
}
