//go:build linux

package faults

// Reproductions of what TestChaosPostgres found, made deterministic: each
// stages the interleaving the chaos run hit by chance. Both failed before
// the engine checked which runs it still holds (Store.HeldRuns); they stay
// as regression tests (skipped under -short: they stop processes).

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
)

func requireRepro(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("stops and restarts processes: the full suite runs it")
	}
}

// holdCheckout takes the cross-process checkout lock of dir as another
// process would (see internal/dirlock): YAML steps there wait for it.
func holdCheckout(t *testing.T, dir string) (release func()) {
	t.Helper()
	p := filepath.Join(dir, ".switchyard", "checkout.lock")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	var done bool
	release = func() {
		if !done {
			done = true
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			f.Close()
		}
	}
	t.Cleanup(release)
	return release
}

// settle lets a driver's delayed checkpoint (engine.inFlightPersistDelay)
// land: a stalled driver with a write pending learns of the takeover when
// the write fails, and then stops properly; the bugs need one with none.
func settle() { time.Sleep(time.Second) }

// waitLog waits until the run's stored log has an event matching pred.
func waitLog(t *testing.T, p *proc, id, what string, pred func(engine.Event) bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		for _, ev := range p.events(t, id) {
			if pred(ev) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: no %s in the log within 2 minutes", id, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestChaosReproStaleDriverRunsStep: a driver whose bash step waits for
// the checkout lock loses the run (its process stalls past the lease);
// another process takes the run over and finishes it. When the stale
// driver gets the lock, it must not start the step: the step's side
// effect would happen a second time, after the run completed. The stale
// driver's events are fenced out of the log, but its process is not.
//
// Found by TestChaosPostgres (seed 1795698546232324160, under load, six
// database restarts): a b1 appended its line 10 s after the run had
// completed on another process.
func TestChaosReproStaleDriverRunsStep(t *testing.T) {
	requireRepro(t)
	t.Parallel()
	h, _, ps := pgServers(t, 2)
	a, b := ps[0], ps[1]
	side := filepath.Join(h.work, "stale-side")
	src := "name: stale\ndescription: one bash step with a side effect\nnodes:\n  - id: step\n    bash: \"echo S $$ >> " + side + "; echo done\"\n"
	if err := os.WriteFile(filepath.Join(h.workflows, "stale.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	release := holdCheckout(t, h.work)
	var rv runView
	a.must(t, http.MethodPost, "/api/runs", map[string]any{"workflowId": yamlWorkflowID(t, a, "stale")}, http.StatusCreated, &rv)
	id := rv.RunID
	waiting := func(ev engine.Event) bool {
		return ev.Type == engine.EvWarning && strings.Contains(ev.Content, "waiting for the working directory")
	}
	waitLog(t, b, id, "wait for the checkout (A)", waiting)
	settle()

	// A stalls past its lease; B takes the run over, and waits too.
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	t.Cleanup(func() {
		if stopped {
			_ = a.cmd.Process.Signal(syscall.SIGCONT)
		}
	})
	waitLog(t, b, id, "takeover by B", func(ev engine.Event) bool {
		return ev.Type == engine.EvStepStart && stepOf(ev.Data).Retry == "restart"
	})
	release()
	if got := b.waitRun(t, id, 2*time.Minute); got.Status != engine.StatusCompleted {
		t.Fatalf("run %s on B: %s %s", id, got.Status, got.Error)
	}
	if n := lineCount(t, side); n != 1 {
		t.Fatalf("after B completed the run the step ran %d times, want 1", n)
	}

	// A wakes up: its driver is stale, the checkout is free.
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	// Until A says it stops driving the run, or a second line comes.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && lineCount(t, side) < 2 &&
		!strings.Contains(grepLines(a.stderr.String(), id), "stopping here"); {
		time.Sleep(100 * time.Millisecond)
	}
	if n := lineCount(t, side); n != 1 {
		b, _ := os.ReadFile(side)
		t.Errorf("the step's side effect happened %d times (%q): the stale driver on A ran it after B completed the run\nA's log about the run:\n%s",
			n, b, grepLines(a.stderr.String(), id))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestChaosReproStaleRunnerRevived: A drives a run whose bash step waits
// for the checkout lock; A stalls past its lease and B takes the run over
// (logging its own restart), then B stalls and A's recovery claims the
// orphaned run. A still has its first driver of the run live (it never
// learned it lost the run: it only waited), and the claim hands the fresh
// lease to that stale driver: its events up to B's last seq are refused
// as duplicates, the later ones are stored. The log then mixes two
// drivers' histories: here the step's completion follows B's restart with
// no process of that attempt (A's process_start and output were refused).
//
// Found by TestChaosPostgres (seed 1795699360232930089, under load, six
// database restarts): a tool loop's log lost a turn (a tool_result with
// no tool_call), the agent's transcript rebuilt from it asked for the
// same call again, and its wait was answered twice (approve, then reject).
func TestChaosReproStaleRunnerRevived(t *testing.T) {
	requireRepro(t)
	t.Parallel()
	h, dsn, ps := pgServers(t, 2)
	a, b := ps[0], ps[1]
	side := filepath.Join(h.work, "revived-side")
	src := "name: revived\ndescription: one bash step with a side effect\nnodes:\n  - id: step\n    bash: \"echo S $$ >> " + side + "; echo done\"\n"
	if err := os.WriteFile(filepath.Join(h.workflows, "revived.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	release := holdCheckout(t, h.work)
	var rv runView
	a.must(t, http.MethodPost, "/api/runs", map[string]any{"workflowId": yamlWorkflowID(t, a, "revived")}, http.StatusCreated, &rv)
	id := rv.RunID
	waitLog(t, b, id, "wait for the checkout (A)", func(ev engine.Event) bool {
		return ev.Type == engine.EvWarning && strings.Contains(ev.Content, "waiting for the working directory")
	})
	settle()
	signal := func(p *proc, sig syscall.Signal) {
		t.Helper()
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = a.cmd.Process.Signal(syscall.SIGCONT); _ = b.cmd.Process.Signal(syscall.SIGCONT) })

	signal(a, syscall.SIGSTOP)
	waitLog(t, b, id, "takeover by B", func(ev engine.Event) bool {
		return ev.Type == engine.EvStepStart && stepOf(ev.Data).Retry == "restart"
	})
	settle()
	signal(b, syscall.SIGSTOP)
	signal(a, syscall.SIGCONT)
	for deadline := time.Now().Add(2 * time.Minute); !ownedBy(runOwner(t, dsn, id), a); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("A never took the run back (owner %q)", runOwner(t, dsn, id))
		}
	}
	release()
	if got := a.waitRun(t, id, 2*time.Minute); got.Status != engine.StatusCompleted {
		t.Fatalf("run %s on A: %s %s", id, got.Status, got.Error)
	}
	b.kill() // its driver is stale too: TestChaosReproStaleDriverRunsStep
	// Judged once the stored log holds the run's end, which follows every
	// event of the run (GET's status once came from A's live driver ahead
	// of the store: see Engine.Snapshot).
	waitLog(t, a, id, "the run's end", func(ev engine.Event) bool {
		return ev.NodeID == engine.SystemNodeID && ev.Type == engine.EvRunStatus && ev.Content == string(engine.StatusCompleted)
	})

	// The attempt that completed must be in the log whole: after the last
	// step_start, its process and output, then its step_end. Its
	// process_start may be missing: a process that exits before its start
	// time is read is not recorded (proc.Spec.OnStart), and this one only
	// echoes.
	evs := a.events(t, id)
	checkGapless(t, id, evs)
	last := -1
	for i, ev := range evs {
		if ev.NodeID == "step" && ev.Type == engine.EvStepStart {
			last = i
		}
	}
	var after []string
	for _, ev := range evs[last+1:] {
		if ev.NodeID == "step" && ev.Type != engine.EvWarning {
			after = append(after, ev.Type)
		}
	}
	if got := strings.TrimPrefix(strings.Join(after, ","), "process_start,"); got != "output,step_end" {
		var all []string
		for _, ev := range evs {
			all = append(all, fmt.Sprintf("%d %s %s %s", ev.Seq, ev.NodeID, ev.Type, truncate(ev.Content, 60)))
		}
		t.Errorf("after the last step_start the log has %v, want the attempt's (process_start,) output and step_end: "+
			"the stale driver on A wrote into the log B had moved on\nlog:\n  %s\nA's log about the run:\n%s",
			after, strings.Join(all, "\n  "), grepLines(a.stderr.String(), id))
	}
	if n := lineCount(t, side); n != 1 {
		t.Errorf("the step ran %d times, want 1", n)
	}
}
