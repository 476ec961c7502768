package engine_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
)

// TestForkReusesUpstreamResults: forking a completed chain a -> b -> c at b
// reuses a's result (a is not called again), runs b and c anew; pinning
// b's output when forking at c feeds c the edited text; the fork's first
// event names its parent.
func TestForkReusesUpstreamResults(t *testing.T) {
	ctx := context.Background()
	h := newDurHarness(t)
	st := h.openStore()
	e := h.process("A", 0, st)
	parent, err := e.StartGraph(ctx, chain3(), engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := waitDone(t, e, parent.ID); r.Status != engine.StatusCompleted {
		t.Fatalf("parent %s %s", r.Status, r.Error)
	}
	ps := loadStored(t, st, parent.ID)

	fork, err := e.Fork(ctx, parent.ID, "b", engine.ForkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := waitDone(t, e, fork.ID); r.Status != engine.StatusCompleted {
		t.Fatalf("fork %s %s", r.Status, r.Error)
	}
	fs := loadStored(t, st, fork.ID)
	if got := h.script.callsOf("a"); len(got) != 1 {
		t.Errorf("a called %d times: a fork must reuse it", len(got))
	}
	if got := h.script.callsOf("b"); len(got) != 2 {
		t.Errorf("b called %d times, want 2 (parent and fork)", len(got))
	}
	if fs.nodes["a"].Output != ps.nodes["a"].Output || fs.nodes["b"].Input != ps.nodes["a"].Output {
		t.Errorf("fork a=%q b.input=%q, parent a=%q", fs.nodes["a"].Output, fs.nodes["b"].Input, ps.nodes["a"].Output)
	}
	if fs.nodes["c"].Output == ps.nodes["c"].Output {
		t.Errorf("c was not run again: %q", fs.nodes["c"].Output)
	}
	if p, n := engine.ForkOf(fs.events); p != parent.ID || n != "b" || fs.events[0].Type != engine.EvRunForked {
		t.Errorf("fork of %q at %q; first event %s", p, n, fs.events[0].Type)
	}
	fs.checkLog(t)

	pinned, err := e.Fork(ctx, parent.ID, "c", engine.ForkOptions{Pinned: map[string]string{"b": "node=c\nEDITED"}})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, e, pinned.ID)
	pst := loadStored(t, st, pinned.ID)
	if pst.nodes["c"].Input != "node=c\nEDITED" || pst.nodes["b"].Output != "node=c\nEDITED" {
		t.Errorf("pinned: b=%q c.input=%q", pst.nodes["b"].Output, pst.nodes["c"].Input)
	}
	if got := h.script.callsOf("b"); len(got) != 2 {
		t.Errorf("b called again by a fork that pinned it: %d calls", len(got))
	}
}

// TestForkRefusals: a run that has not ended, an unknown node, and a
// pinned node that is not upstream are refused.
func TestForkRefusals(t *testing.T) {
	ctx := context.Background()
	h := newDurHarness(t)
	st := h.openStore()
	e := h.process("A", 0, st)
	paused, err := e.StartGraph(ctx, pauseGraph(), engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, e, paused.ID)
	if _, err := e.Fork(ctx, paused.ID, "a", engine.ForkOptions{}); !errors.Is(err, engine.ErrNotForkable) {
		t.Errorf("fork of a paused run: %v", err)
	}
	done, _ := e.StartGraph(ctx, chain3(), engine.StartOptions{})
	waitDone(t, e, done.ID)
	if _, err := e.Fork(ctx, done.ID, "nope", engine.ForkOptions{}); !errors.Is(err, engine.ErrNotForkable) {
		t.Errorf("unknown node: %v", err)
	}
	if _, err := e.Fork(ctx, done.ID, "b", engine.ForkOptions{Pinned: map[string]string{"c": "x"}}); !errors.Is(err, engine.ErrNotForkable) {
		t.Errorf("pinning a downstream node: %v", err)
	}
}

// TestForkSurvivesACrash: the process driving a fork dies while c is in
// flight; the process that takes it over still reuses a and b.
func TestForkSurvivesACrash(t *testing.T) {
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	h := newDurHarness(t)
	stA := &crashStore{Store: h.openStore()}
	a := h.process("A", ttl, stA)
	parent, _ := a.StartGraph(ctx, chain3(), engine.StartOptions{})
	waitDone(t, a, parent.ID)
	h.script.setHang("c", 1)
	fork, err := a.Fork(ctx, parent.ID, "c", engine.ForkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "c in flight in the fork", func() bool { return len(h.script.callsOf("c")) == 2 })
	stA.kill()
	a.Close()

	stB := h.openStore()
	b := h.process("B", ttl, stB)
	time.Sleep(2 * ttl)
	if _, err := b.Recover(ctx, true); err != nil {
		t.Fatal(err)
	}
	if r := waitDone(t, b, fork.ID); r.Status != engine.StatusCompleted {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	if got := h.script.callsOf("a"); !slices.Equal(got, []string{"A"}) {
		t.Errorf("a called by %v", got)
	}
	if got := h.script.callsOf("b"); !slices.Equal(got, []string{"A"}) {
		t.Errorf("b called by %v: the fork must reuse it, after the crash too", got)
	}
	if got := h.script.callsOf("c"); !slices.Equal(got, []string{"A", "A", "B"}) {
		t.Errorf("c called by %v", got)
	}
}
