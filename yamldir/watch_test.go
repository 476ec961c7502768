package yamldir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"
)

// TestWatcherPoll drives a Watcher look by look: what each look reports
// after files are created, changed (also within the same second and at
// the same size), rewritten unchanged, renamed and deleted.
func TestWatcherPoll(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", flow)
	write("notes.txt", "not a workflow")
	f, err := New(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := f.NewWatcher()
	now := time.Now()
	w.now = func() time.Time { return now }
	poll := func() []Change {
		t.Helper()
		cs, err := w.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	path := func(rel string) string { return f.display(rel) }
	want := func(what string, got []Change, exp ...Change) {
		t.Helper()
		if len(exp) == 0 {
			exp = nil
		}
		if !reflect.DeepEqual(got, exp) {
			t.Fatalf("%s: got %+v, want %+v", what, got, exp)
		}
	}

	want("first look records", poll())
	want("nothing changed", poll())

	write("sub/b.yml", flow)
	want("created", poll(), Change{ID: WorkflowID("sub/b.yml"), Path: path("sub/b.yml"), Hash: Hash([]byte(flow))})

	// Same size, and (on a coarse clock) the same modification time: the
	// racy window reads it again.
	same := "name: q\ndescription: y\nnodes:\n  - id: a\n    bash: echo\n"
	fi, _ := os.Stat(filepath.Join(dir, "a.yaml"))
	write("a.yaml", same)
	_ = os.Chtimes(filepath.Join(dir, "a.yaml"), fi.ModTime(), fi.ModTime())
	want("changed at the same size and time", poll(), Change{ID: WorkflowID("a.yaml"), Path: path("a.yaml"), Hash: Hash([]byte(same))})

	write("a.yaml", same)
	want("rewritten with the same text", poll())

	write(".hidden/c.yaml", flow)
	write("notes.txt", "still not a workflow")
	want("hidden folders and other files", poll())

	// Long after the last write, an unchanged stat is not read again.
	now = now.Add(time.Hour)
	want("quiet", poll())

	// Empty just now: a writer between its truncate and its write. Not
	// reported until it is either written or stays empty.
	write("e.yaml", "")
	now = time.Now()
	want("just emptied", poll())
	write("e.yaml", flow)
	want("then written", poll(), Change{ID: WorkflowID("e.yaml"), Path: path("e.yaml"), Hash: Hash([]byte(flow))})
	write("e.yaml", "")
	want("emptied again", poll())
	now = now.Add(time.Hour)
	want("and it stays empty", poll(), Change{ID: WorkflowID("e.yaml"), Path: path("e.yaml"), Hash: Hash(nil)})
	if err := os.Remove(filepath.Join(dir, "e.yaml")); err != nil {
		t.Fatal(err)
	}
	want("e.yaml removed", poll(), Change{ID: WorkflowID("e.yaml"), Path: path("e.yaml"), Deleted: true})

	if err := os.Rename(filepath.Join(dir, "sub", "b.yml"), filepath.Join(dir, "sub", "c.yml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	want("renamed and deleted", poll(),
		Change{ID: WorkflowID("sub/c.yml"), Path: path("sub/c.yml"), Hash: Hash([]byte(flow))},
		Change{ID: WorkflowID("a.yaml"), Path: path("a.yaml"), Deleted: true},
		Change{ID: WorkflowID("sub/b.yml"), Path: path("sub/b.yml"), Deleted: true},
	)

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	want("the folder removed", poll(), Change{ID: WorkflowID("sub/c.yml"), Path: path("sub/c.yml"), Deleted: true})
}

// TestWatchCallsAndStops: Watch reports a change to fn and returns once
// its context ends.
func TestWatchCallsAndStops(t *testing.T) {
	dir := t.TempDir()
	f, err := New(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var got []Change
	primed := make(chan struct{})
	var once sync.Once
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Watch(ctx, 10*time.Millisecond, func(cs []Change) {
			mu.Lock()
			got = append(got, cs...)
			mu.Unlock()
		})
	}()
	// The first look may come before or after a write: write a new text
	// each time (renamed over, never half written) until one is reported.
	go func() {
		deadline := time.Now().Add(30 * time.Second)
		for k := 0; time.Now().Before(deadline); k++ {
			mu.Lock()
			n := len(got)
			mu.Unlock()
			if n > 0 {
				once.Do(func() { close(primed) })
				return
			}
			tmp := filepath.Join(dir, ".w.yaml")
			_ = os.WriteFile(tmp, fmt.Appendf(nil, "%s# %d\n", flow, k), 0o644)
			_ = os.Rename(tmp, filepath.Join(dir, "w.yaml"))
			time.Sleep(10 * time.Millisecond)
		}
	}()
	select {
	case <-primed:
	case <-time.After(30 * time.Second):
		t.Fatal("Watch reported no change in 30 s")
	}
	mu.Lock()
	if last := got[len(got)-1]; last.ID != WorkflowID("w.yaml") || last.Deleted {
		t.Fatalf("got %+v", got)
	}
	mu.Unlock()
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Watch did not return after its context ended")
	}
}
