package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/switchyard/switchyard/yamldir"
)

// writeAtomically replaces a file the way editors and git do (a new file
// renamed over it): the watcher never sees it half written.
func writeAtomically(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// nextWorkflowChanged reads GET /api/ws messages until a workflow_changed
// one (run statuses are skipped), checking its shape against the OpenAPI
// document's WorkflowChangedMessage.
func nextWorkflowChanged(t *testing.T, c *websocket.Conn) workflowChangedMsg {
	t.Helper()
	for {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, raw, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("no workflow_changed message: %v", err)
		}
		var probe struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(raw, &probe) != nil || probe.Type != MsgWorkflowChanged {
			continue
		}
		var m workflowChangedMsg
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields() // the schema is closed
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if m.ID == "" || m.Path == "" || (m.Hash == "") != m.Deleted {
			t.Fatalf("malformed workflow_changed: %s", raw)
		}
		return m
	}
}

// TestYAMLWorkflowChangedPushed: a client of GET /api/ws (a real
// websocket on loopback) learns of every change of the workflows folder:
// a file changed on disk, a save through the API (announced once, with
// the hash the save answered: the watcher seeing the same text later
// sends nothing more), a file created through the API, one created on
// disk, and one deleted.
func TestYAMLWorkflowChangedPushed(t *testing.T) {
	t.Parallel()
	const text1 = "name: a\ndescription: d\nnodes:\n  - id: x\n    bash: echo 1\n"
	v, _, dir := newYAMLEnv(t, map[string]string{"a.yaml": text1})
	c := v.mustDial("/api/ws")
	waitFor(t, "the status subscriber", func() bool { _, n := v.srv.hub.subscriberCounts(); return n == 1 })
	id := YAMLWorkflowID("a.yaml")
	hash := func(s string) string { return yamldir.Hash([]byte(s)) }

	// Changed on disk.
	text2 := "name: a\ndescription: d\nnodes:\n  - id: x\n    bash: echo 2\n"
	writeAtomically(t, filepath.Join(dir, "a.yaml"), text2)
	if m := nextWorkflowChanged(t, c); m.ID != id || m.Hash != hash(text2) || m.Deleted || m.Path != "a.yaml" {
		t.Fatalf("disk change: %+v", m)
	}

	// Saved through the API: announced with the answer's hash.
	text3 := "name: a\ndescription: d\nnodes:\n  - id: x\n    bash: echo 3\n"
	var saved struct {
		SourceHash string `json:"sourceHash"`
	}
	v.must(http.StatusOK, "PUT", "/api/workflows/"+id, map[string]any{"source": text3, "baseHash": hash(text2)}, &saved)
	if m := nextWorkflowChanged(t, c); m.ID != id || m.Hash != saved.SourceHash || m.Hash != hash(text3) {
		t.Fatalf("API save: %+v (answer's hash %s)", m, saved.SourceHash)
	}
	// The next change on disk is the next message: the save is not
	// announced a second time when the watcher sees it.
	text4 := "name: a\ndescription: d\nnodes:\n  - id: x\n    bash: echo 4\n"
	writeAtomically(t, filepath.Join(dir, "a.yaml"), text4)
	if m := nextWorkflowChanged(t, c); m.ID != id || m.Hash != hash(text4) {
		t.Fatalf("after the save, the disk change: %+v", m)
	}

	// A file created through the API, then one created on disk.
	v.must(http.StatusCreated, "POST", "/api/workflows/yaml", map[string]any{"path": "b.yaml", "source": text1}, nil)
	if m := nextWorkflowChanged(t, c); m.ID != YAMLWorkflowID("b.yaml") || m.Hash != hash(text1) {
		t.Fatalf("API create: %+v", m)
	}
	writeAtomically(t, filepath.Join(dir, "sub", "c.yml"), text1)
	if m := nextWorkflowChanged(t, c); m.ID != YAMLWorkflowID("sub/c.yml") || m.Hash != hash(text1) || m.Path != "sub/c.yml" {
		t.Fatalf("disk create: %+v", m)
	}

	// Deleted on disk.
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	if m := nextWorkflowChanged(t, c); m.ID != id || !m.Deleted || m.Hash != "" {
		t.Fatalf("delete: %+v", m)
	}
}

// TestYAMLWatcherStopsOnShutdown: Shutdown waits for the folder watcher,
// which ends with it.
func TestYAMLWatcherStopsOnShutdown(t *testing.T) {
	t.Parallel()
	v, _, _ := newYAMLEnv(t, map[string]string{"a.yaml": "name: a\ndescription: d\nnodes:\n  - id: x\n    bash: echo\n"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := v.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { v.srv.bgWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the watcher still runs after Shutdown")
	}
}
