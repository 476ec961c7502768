//go:build linux

package faults

// Issue 14, items 2 and 3: a driver killed with SIGKILL while a bash step
// runs. Its step must not go on beside the rerun (the parent-death signal
// and the takeover's kill of the recorded process group), and the next
// process on this machine must take the run over at once (owner locks),
// not after the 30 s lease.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
)

// ownerLeaseTTL is the default lease: a takeover must not wait it out.
const ownerLeaseTTL = 30 * time.Second

// onceWorkflow is a one-step YAML workflow whose bash step notes its start
// in starts, then (in a subshell: a process of the step's group that the
// parent-death signal of the step's leader does not reach) sleeps and
// appends a line to ends: the side effect that must happen exactly once.
func onceWorkflow(name, starts, ends string) string {
	return fmt.Sprintf(`name: %s
description: a step with a side effect at its end
nodes:
  - id: step
    bash: "echo start >> %s; (sleep 2; echo end >> %s); echo done"
`, name, starts, ends)
}

// lineCount is the number of lines of file p (0 if it does not exist).
func lineCount(t *testing.T, p string) int {
	t.Helper()
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// waitLines waits until file p has at least n lines.
func waitLines(t *testing.T, p string, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for lineCount(t, p) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: fewer than %d lines after %s", p, n, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processStarts returns the process_start events of a log.
func processStarts(evs []engine.Event) []engine.Event {
	var out []engine.Event
	for _, ev := range evs {
		if ev.Type == engine.EvProcessStart {
			out = append(out, ev)
		}
	}
	return out
}

// groupOf reads the pgid a process_start event recorded.
func groupOf(t *testing.T, ev engine.Event) int {
	t.Helper()
	var d struct {
		PGID int `json:"pgid"`
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil || d.PGID <= 1 {
		t.Fatalf("process_start without a process group: %s", ev.Data)
	}
	return d.PGID
}

// groupMembers lists the live (not zombie) processes of process group pgid.
func groupMembers(pgid int) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestServeKillBashStepRunsOnce SIGKILLs `switchyard serve` while a bash
// step runs and restarts it: the run completes within 5 s of the restart
// (no 30 s lease wait), the step's side effect happened exactly once (the
// killed process's step never reached it; the rerun did), and nothing of
// the killed step's process group is left.
func TestServeKillBashStepRunsOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.env = append(h.env, "SWITCHYARD_LEASE_TTL="+ownerLeaseTTL.String())
	dir := t.TempDir()
	starts, ends := filepath.Join(dir, "starts"), filepath.Join(dir, "ends")
	if err := os.WriteFile(filepath.Join(h.workflows, "once.yaml"), []byte(onceWorkflow("once", starts, ends)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := h.start()
	wf := yamlWorkflowID(t, p, "once")
	if wf == "" {
		t.Fatalf("GET /api/workflows does not list the YAML workflow once")
	}
	var rv runView
	p.must(t, http.MethodPost, "/api/runs", map[string]any{"workflowId": wf}, http.StatusCreated, &rv)
	waitLines(t, starts, 1, 60*time.Second)
	// The step's process group is recorded before the server dies.
	var first []engine.Event
	deadline := time.Now().Add(30 * time.Second)
	for first = processStarts(p.events(t, rv.RunID)); len(first) == 0; first = processStarts(p.events(t, rv.RunID)) {
		if time.Now().After(deadline) {
			t.Fatal("no process_start event 30 s after the step started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	pgid := groupOf(t, first[0])
	p.kill()
	killed := time.Now()
	if lineCount(t, ends) != 0 {
		t.Fatalf("the step ended before the kill: the test proves nothing")
	}

	p2 := h.start()
	final := p2.waitRun(t, rv.RunID, 60*time.Second)
	done := time.Now()
	if final.Status != engine.StatusCompleted {
		t.Fatalf("run %s is %s after the restart: %s\nserver log:\n%s", rv.RunID, final.Status, final.Error, p2.stderr)
	}
	evs := p2.events(t, rv.RunID)
	ps := processStarts(evs)
	if len(ps) != 2 {
		t.Fatalf("%d process_start events, want 2 (the killed step and its rerun)", len(ps))
	}
	takeover := ps[1].Timestamp.Sub(p2.started)
	total := done.Sub(p2.started)
	t.Logf("restart to rerun of the step: %s; restart to run completed: %s (step takes 2 s); kill to restart %s",
		takeover.Round(time.Millisecond), total.Round(time.Millisecond), p2.started.Sub(killed).Round(time.Millisecond))
	if total > 5*time.Second {
		t.Errorf("run completed %s after the restart, want within 5 s", total)
	}
	if n := lineCount(t, starts); n != 2 {
		t.Errorf("the step started %d times, want 2", n)
	}
	if n := lineCount(t, ends); n != 1 {
		t.Errorf("the step's side effect happened %d times, want exactly 1", n)
	}
	if m := groupMembers(pgid); len(m) > 0 {
		t.Errorf("processes %v of the killed step's group %d still run", m, pgid)
	}
	p2.stop(t)
}

// TestResumeRightAfterKilledRun SIGKILLs `switchyard run` during a bash
// step; `switchyard resume RUN` right after continues the run at once
// instead of exiting 2 "driven elsewhere" for the rest of the lease, and
// the step's side effect happens exactly once.
func TestResumeRightAfterKilledRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.env = append(h.env, "SWITCHYARD_LEASE_TTL="+ownerLeaseTTL.String())
	dir := t.TempDir()
	starts, ends := filepath.Join(dir, "starts"), filepath.Join(dir, "ends")
	file := filepath.Join(h.work, "once.yaml")
	if err := os.WriteFile(file, []byte(onceWorkflow("once", starts, ends)), 0o644); err != nil {
		t.Fatal(err)
	}
	c := h.startCLI(t, "run", file, "--events")
	if !c.waitPrinted(60*time.Second, func(ev engine.Event) bool { return ev.Type == engine.EvProcessStart }) {
		_ = c.cmd.Process.Kill()
		t.Fatalf("run printed no process_start: %s", c.wait(t).stderr)
	}
	runID := c.printed()[0].ev.RunID
	pgid := 0
	for _, pe := range c.printed() {
		if pe.ev.Type == engine.EvProcessStart {
			pgid = groupOf(t, pe.ev)
		}
	}
	waitLines(t, starts, 1, 60*time.Second)
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	if res := c.wait(t); !res.killed {
		t.Fatalf("run was not killed: exit %d: %s", res.code, res.stderr)
	}
	if lineCount(t, ends) != 0 {
		t.Fatalf("the step ended before the kill: the test proves nothing")
	}

	resumed := time.Now()
	r := h.startCLI(t, "resume", runID, "--events")
	rerun := r.waitPrinted(60*time.Second, func(ev engine.Event) bool { return ev.Type == engine.EvProcessStart })
	takeover := time.Since(resumed)
	res := r.wait(t)
	total := time.Since(resumed)
	if res.code != exitOK {
		t.Fatalf("resume right after the kill: exit %d: %s", res.code, res.stderr)
	}
	if !rerun {
		t.Fatalf("resume did not rerun the step")
	}
	t.Logf("resume to rerun of the step: %s; resume to exit: %s (step takes 2 s)",
		takeover.Round(time.Millisecond), total.Round(time.Millisecond))
	if takeover > 5*time.Second {
		t.Errorf("resume reran the step %s after it started, want within 5 s", takeover)
	}
	if n := lineCount(t, starts); n != 2 {
		t.Errorf("the step started %d times, want 2", n)
	}
	if n := lineCount(t, ends); n != 1 {
		t.Errorf("the step's side effect happened %d times, want exactly 1", n)
	}
	if m := groupMembers(pgid); len(m) > 0 {
		t.Errorf("processes %v of the killed step's group %d still run", m, pgid)
	}
	if s := h.show(t, runID); s.Status != engine.StatusCompleted {
		t.Errorf("run is %s, want completed", s.Status)
	}
}
