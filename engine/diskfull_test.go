package engine_test

// A full disk in the middle of a run (hardening issue, item 8), against
// the real SQLite store capped with sqlite.WithMaxSize: whatever the run's
// driver did while nothing could be written, the run ends once, with one
// terminal status that the log and the database agree on, and no node is
// both skipped and run.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/sqlite"
)

// fullStore is an engine on an SQLite file capped at 4 MiB, with leases
// short enough that a fault outlasts one; it recovers orphaned runs, as
// serve does.
func fullStore(t *testing.T) (*engine.Engine, *sqlite.Store, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "switchyard.db"),
		sqlite.WithLogger(quietLog), sqlite.WithMaxSize(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e, err := engine.New(engine.Config{Store: st, Owner: "p1", LeaseTTL: 600 * time.Millisecond,
		ArtifactsRoot: t.TempDir(), Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	e.KeepRecovering(true)
	return e, st, dir
}

// fillDB saves workflows until the capped file is full, and returns a
// function that deletes them again.
func fillDB(t *testing.T, st *sqlite.Store) (free func()) {
	t.Helper()
	ctx := context.Background()
	def, _ := json.Marshal(map[string]string{"filler": strings.Repeat("f", 64<<10)})
	var ids []string
	for i := 0; ; i++ {
		w, err := st.CreateWorkflow(ctx, store.Workflow{Name: fmt.Sprintf("filler %d", i), Kind: engine.KindGraph, Definition: def})
		if errors.Is(err, engine.ErrStorageFull) {
			break
		}
		if err != nil {
			t.Fatalf("filling the database: %v", err)
		}
		if i > 1000 {
			t.Fatal("the capped database never filled")
		}
		ids = append(ids, w.ID)
	}
	return func() {
		for _, id := range ids {
			if err := st.DeleteWorkflow(ctx, id); err != nil {
				t.Errorf("freeing space: %v", err)
			}
		}
	}
}

// waitStored waits until the run's stored header is terminal and its
// stored log ends with a run_status (the writer may still be retrying).
func waitStored(t *testing.T, st *sqlite.Store, id string) (*engine.Run, []engine.Event) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		r, err := st.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := st.Events(ctx, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Terminal() && len(evs) > 0 && evs[len(evs)-1].Type == engine.EvRunStatus {
			return r, evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s a minute after the disk was freed; log: %s", id, r.Status, logSummary(evs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func logSummary(evs []engine.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%d:%s/%s(%s) ", ev.Seq, ev.NodeID, ev.Type, trunc(ev.Content, 40))
	}
	return b.String()
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// endsOnce checks that the stored log and header tell one story: one
// terminal run_status, the last event, equal to the header's; no node
// ended both skipped and completed; the seqs are gapless.
func endsOnce(t *testing.T, r *engine.Run, evs []engine.Event) {
	t.Helper()
	var terminal []string
	ends := map[string][]string{}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Errorf("log has a gap: event %d has seq %d", i+1, ev.Seq)
			break
		}
		switch ev.Type {
		case engine.EvRunStatus:
			if engine.RunStatus(ev.Content).Terminal() {
				terminal = append(terminal, ev.Content)
			}
		case engine.EvStepEnd:
			ends[ev.NodeID] = append(ends[ev.NodeID], ev.Content)
		}
	}
	if len(terminal) != 1 || terminal[0] != string(r.Status) {
		t.Errorf("terminal run_status events %v, stored status %s: want exactly one, equal to it\nlog: %s",
			terminal, r.Status, logSummary(evs))
	}
	for node, got := range ends {
		s := strings.Join(got, ",")
		if strings.Contains(s, "skipped") && strings.Contains(s, "completed") {
			t.Errorf("node %s ended %s: both skipped and completed\nlog: %s", node, s, logSummary(evs))
		}
	}
}

// TestDiskFullMidRunEndsOnce: the disk fills while node a runs, so a's
// completion cannot be saved, and stays full for longer than a lease (the
// driver cannot renew it either). Once it is freed, recovery drives the run
// to its end: one terminal status, which stands.
func TestDiskFullMidRunEndsOnce(t *testing.T) {
	t.Parallel()
	e, st, dir := fullStore(t)
	gate := filepath.Join(dir, "go")
	src := "name: t\ndescription: disk full\nnodes:\n" +
		"  - id: a\n    bash: \"while [ ! -e " + gate + " ]; do sleep 0.02; done; head -c 300000 /dev/zero | tr '\\\\0' x\"\n" +
		"  - id: b\n    bash: echo b\n    depends_on: [a]\n" +
		"  - id: c\n    bash: echo c\n    depends_on: [b]\n"
	run, err := e.StartYAML(context.Background(), filepath.Join(dir, "wf.yaml"), []byte(src),
		engine.StartOptions{WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	waitNodeStatus(t, e, run.ID, "a", engine.NodeRunning)
	free := fillDB(t, st)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The disk stays full until the driver let go of the run (its lease
	// could not be renewed).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := e.Wait(ctx, run.ID); err != nil {
		t.Fatalf("the driver never let go of the run while the disk was full: %v", err)
	}
	free()
	got, evs := waitStored(t, st, run.ID)
	endsOnce(t, got, evs)
	if got.Status != engine.StatusCompleted {
		t.Errorf("run %s (%q): a full disk that cleared must not fail it", got.Status, got.Error)
	}
}

// TestDiskFullAtTheEndEndsOnce: the run's end (a failed node) is decided
// and logged, but the final save fails for longer than a lease. Recovery
// must keep that end, not run the failed node again (the second time it
// would succeed).
func TestDiskFullAtTheEndEndsOnce(t *testing.T) {
	t.Parallel()
	e, st, dir := fullStore(t)
	gate, second := filepath.Join(dir, "go"), filepath.Join(dir, "second")
	// a fails the first time it runs, with an answer too big for the full
	// disk; run again it would succeed.
	src := "name: t\ndescription: disk full at the end\nnodes:\n" +
		"  - id: a\n    bash: \"while [ ! -e " + gate + " ]; do sleep 0.02; done; if [ -e " + second + " ]; then echo ok; exit 0; fi; " +
		"touch " + second + "; head -c 300000 /dev/zero | tr '\\\\0' x; exit 1\"\n" +
		"  - id: b\n    bash: echo b\n    depends_on: [a]\n"
	run, err := e.StartYAML(context.Background(), filepath.Join(dir, "wf.yaml"), []byte(src),
		engine.StartOptions{WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	waitNodeStatus(t, e, run.ID, "a", engine.NodeRunning)
	free := fillDB(t, st)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := e.Wait(ctx, run.ID); err != nil {
		t.Fatalf("the driver never let go of the run while the disk was full: %v", err)
	}
	free()
	got, evs := waitStored(t, st, run.ID)
	endsOnce(t, got, evs)
	if got.Status != engine.StatusFailed {
		t.Errorf("run %s (%q), want failed: its end was decided before the disk filled", got.Status, got.Error)
	}
	if !strings.Contains(got.Error, "a") {
		t.Errorf("run error %q does not name node a", got.Error)
	}
	for _, ev := range evs {
		if ev.NodeID == "b" && ev.Type == engine.EvStepStart {
			t.Errorf("node b ran after a failed\nlog: %s", logSummary(evs))
		}
	}
}

// waitNodeStatus waits until the live run's node is in status s.
func waitNodeStatus(t *testing.T, e *engine.Engine, runID, node string, s engine.NodeStatus) {
	t.Helper()
	eventually(t, "node "+node+" "+string(s), func() bool {
		_, nodes, err := e.Snapshot(context.Background(), runID)
		if err != nil {
			return false
		}
		for _, n := range nodes {
			if n.NodeID == node && n.Status == s {
				return true
			}
		}
		return false
	})
}
