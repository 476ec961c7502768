package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An always_run node runs again when an interrupted run is resumed; the
// other completed nodes are kept.
func TestYAMLAlwaysRunRunsAgainOnResume(t *testing.T) {
	st := NewMemStore()
	e1, _ := newTestEngine(t, Config{Store: st})
	dir := t.TempDir()
	run := startYAMLIn(t, e1, dir, wf(`
  - id: setup
    bash: echo setup >> trace
    always_run: true
  - id: once
    depends_on: [setup]
    bash: echo once >> trace
  - id: slow
    depends_on: [once]
    bash: echo slow >> trace; sleep 2
`), "")
	trace := filepath.Join(dir, "trace")
	waitFor(t, func() bool { b, _ := os.ReadFile(trace); return strings.Contains(string(b), "slow") }, "slow started")
	e1.Close()
	e2, _ := newTestEngine(t, Config{Store: st})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e2.Continue(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	if r := waitRun(t, e2, run.ID); r.Status != StatusCompleted {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	b, _ := os.ReadFile(trace)
	count := map[string]int{}
	for _, w := range strings.Fields(string(b)) {
		count[w]++
	}
	// setup (always_run) and slow (in flight) run again, concurrently; once is kept.
	if count["setup"] != 2 || count["once"] != 1 || count["slow"] != 2 {
		t.Fatalf("trace %q: want setup twice, once once, slow twice", b)
	}
}
