//go:build linux

package faults

// Crash tests of the CLI (issue 4): real `switchyard run`/`resume`
// processes, killed with SIGKILL at random moments, restarted, and checked
// against what they printed. The fake LLM runs in this test process with a
// random latency per request, so kills land before, during and after node
// executions. (They lived in cmd/switchyard; they share this package's
// process harness.)

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// crashLeaseTTL is short so that a restarted process takes over the runs of
// a killed one quickly.
const crashLeaseTTL = 500 * time.Millisecond

// crashHarness is a harness whose fake LLM answers "node=<id>\n..."
// prompts (the graphs of testdata/crash) with an output unique to the call.
type crashHarness struct {
	*harness
	t *testing.T

	mu      sync.Mutex
	n       int
	calls   map[string]int                  // LLM requests per node since the last reset
	latency func(node string) time.Duration // per request
}

func newCrashHarness(t *testing.T, latency func(node string) time.Duration) *crashHarness {
	t.Helper()
	h := &crashHarness{harness: newHarness(t), t: t, calls: map[string]int{}, latency: latency}
	// The last value of a variable wins.
	h.env = append(h.env, "SWITCHYARD_LEASE_TTL="+crashLeaseTTL.String())
	h.llm.srv.SetHandler(h.reply)
	return h
}

func (h *crashHarness) reply(req *fakeopenai.Request) fakeopenai.Reply {
	first, _, _ := strings.Cut(req.LastUserMessage(), "\n")
	node := strings.TrimPrefix(first, "node=")
	h.mu.Lock()
	h.n++
	n := h.n
	h.calls[node]++
	h.mu.Unlock()
	return fakeopenai.Reply{Text: fmt.Sprintf("out-%s-%d", node, n), Latency: h.latency(node)}
}

func (h *crashHarness) resetCalls() {
	h.mu.Lock()
	h.calls = map[string]int{}
	h.mu.Unlock()
}

func (h *crashHarness) callsOf(node string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[node]
}

// crashGraph is the absolute path of a graph of testdata/crash (the CLI
// processes run in the harness's work directory).
func crashGraph(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "crash", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// crashStats summarizes what a crash test went through.
type crashStats struct {
	processes, kills, leaseWaits int
	exits                        map[string]int // non-zero exits of processes that were not killed
}

func (st *crashStats) count(res cliResult) {
	st.processes++
	switch {
	case res.killed:
		st.kills++
	case res.code != exitOK && res.code != exitPaused:
		msg := strings.TrimSpace(res.stderr)
		// Keep the kind of message, not the run id or owner in it.
		for _, k := range []string{"driven elsewhere", "not waiting", "not paused", "answer its approval", "already ended"} {
			if strings.Contains(msg, k) {
				msg = k
			}
		}
		st.exits[fmt.Sprintf("exit %d: %s", res.code, msg)]++
		if strings.Contains(msg, "driven elsewhere") {
			st.leaseWaits++
		}
	}
}

func randKill(rng *rand.Rand) time.Duration { return time.Duration(rng.IntN(600)) * time.Millisecond }

// drive takes an existing run to completed: it looks at the stored status,
// starts the process that moves it on (answer the approval, or continue a
// run whose process died) and, when kill is true, SIGKILLs most of those
// processes at a random moment. It returns the event lines printed.
func (h *crashHarness) drive(runID string, rng *rand.Rand, kill bool, st *crashStats) []printedEvent {
	t := h.t
	t.Helper()
	var printed []printedEvent
	for step := 0; ; step++ {
		if step > 300 {
			t.Fatalf("run %s: not completed after %d processes", runID, step)
		}
		s := h.show(t, runID)
		var args []string
		switch s.Status {
		case engine.StatusCompleted:
			return printed
		case engine.StatusPaused:
			// Listed as paused means resumable: the approval is pending.
			if len(s.PendingApprovals) != 1 || s.PendingApprovals[0].NodeID != "ok" {
				t.Errorf("run %s is paused with pending approvals %+v", runID, s.PendingApprovals)
			}
			args = []string{"resume", runID, "--decision", "approve", "--events"}
		case engine.StatusRunning, engine.StatusPending, engine.StatusInterrupted:
			args = []string{"resume", runID, "--events"}
		default:
			t.Errorf("run %s ended %s: %s", runID, s.Status, s.Error)
			return printed
		}
		after := time.Duration(-1)
		if kill && rng.IntN(10) < 7 {
			// A resume reaches its next pause or the end sooner than a fresh
			// run: a shorter window makes its kills land mid-work.
			after = time.Duration(rng.IntN(400)) * time.Millisecond
		}
		res := h.runCLI(t, after, args...)
		st.count(res)
		printed = append(printed, res.printed...)
		if !res.killed && strings.Contains(res.stderr, "driven elsewhere") {
			time.Sleep(crashLeaseTTL / 5) // the dead owner's lease has not run out yet
		}
	}
}

// startRun runs graphFile, SIGKILLed after killAfter (never if < 0), and
// finds the new run's id even when the process died before printing it.
// It retries if the process died before the run was created; every third
// retry is not killed, as drive leaves some processes alone: on a loaded
// machine a process can take longer to start than the kill window (up to
// 600 ms), and twenty killed tries in a row then created no run (a CI
// failure), which says nothing about crash safety.
func (h *crashHarness) startRun(graphFile string, killAfter func() time.Duration, known map[string]bool, st *crashStats) (string, []printedEvent) {
	t := h.t
	t.Helper()
	for try := 0; try < 20; try++ {
		after := killAfter()
		if try%3 == 2 {
			after = -1
		}
		res := h.runCLI(t, after, "run", graphFile, "--events")
		st.count(res)
		if !res.killed && res.code != exitPaused && res.code != exitOK {
			t.Fatalf("run: exit %d: %s", res.code, res.stderr)
		}
		ids := h.newRuns(t, known)
		if len(ids) > 1 {
			t.Fatalf("one run command created runs %v", ids)
		}
		if len(ids) == 1 {
			known[ids[0]] = true
			for _, p := range res.printed {
				if p.ev.RunID != ids[0] {
					t.Errorf("run %s printed an event of run %s", ids[0], p.ev.RunID)
				}
			}
			return ids[0], res.printed
		}
		if len(res.printed) > 0 {
			t.Fatalf("events printed for a run that does not exist: %+v", res.printed[0].ev)
		}
	}
	t.Fatal("no run created in 20 tries")
	return "", nil
}

// checkRun checks what must hold for a run after any number of kills: it
// completed; its log is gapless; every event a process printed is stored
// unchanged; no node completed twice in one visit or started again after
// its completion was logged; reruns are marked retry=restart (checkLog);
// the outputs are the last completions' outputs. It returns the stored run
// and how many reruns were marked as retries.
func (h *crashHarness) checkRun(runID string, printed []printedEvent, nodes []string, vs *violations) (cliShow, int) {
	t := h.t
	t.Helper()
	s := h.show(t, runID)
	if s.Status != engine.StatusCompleted {
		vs.add("run not completed", "run %s is %s (%s)", runID, s.Status, s.Error)
	}
	for i, ev := range s.Events {
		if ev.Seq != int64(i+1) {
			vs.add("gap in the event log", "run %s: stored event %d has seq %d", runID, i, ev.Seq)
			break
		}
	}
	stored := map[int64]engine.Event{}
	for _, ev := range s.Events {
		stored[ev.Seq] = ev
	}
	for _, p := range printed {
		got, ok := stored[p.ev.Seq]
		if ok && sameEvent(p.ev, got) {
			continue
		}
		was := "nothing"
		if ok {
			b, _ := json.Marshal(got)
			was = string(b)
		}
		vs.add("printed event not in the stored log", "run %s: `%s` printed\n    %s\n  stored with that seq: %s",
			runID, p.args, strings.TrimSpace(p.line), was)
	}
	restarts := checkLog(vs, runID, s.Events)
	lastOut := map[string]string{}
	for _, ev := range s.Events {
		if d := stepOf(ev.Data); ev.Type == engine.EvStepEnd && d.Status == string(engine.NodeCompleted) {
			lastOut[ev.NodeID] = d.Output
		}
	}
	for _, n := range nodes {
		out, ok := s.Outputs[n]
		if !ok {
			vs.add("node without output", "run %s ended %s without an output for node %s", runID, s.Status, n)
			continue
		}
		if out != lastOut[n] {
			vs.add("output differs from the last reported", "run %s: node %s output %q, its last step_end reported %q", runID, n, out, lastOut[n])
		}
	}
	return s, restarts
}

var fanoutNodes = []string{"s", "a1", "a2", "a3", "j", "ok", "f"}

func crashSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SWITCHYARD_CRASH_SEED"); v != "" {
		fmt.Sscan(v, &seed)
	}
	t.Logf("seed %d (SWITCHYARD_CRASH_SEED reproduces the kill times)", seed)
	return seed
}

// TestCrashRandomKills runs the fan-out graph many times through processes
// killed with SIGKILL at random moments.
func TestCrashRandomKills(t *testing.T) {
	t.Parallel()
	rounds := 25
	if testing.Short() {
		rounds = 5
	}
	rng := rand.New(rand.NewPCG(crashSeed(t), 1))
	h := newCrashHarness(t, func(string) time.Duration {
		return time.Duration(50+rand.IntN(101)) * time.Millisecond
	})
	graphFile := crashGraph(t, "fanout.json")
	known := map[string]bool{}
	st := &crashStats{exits: map[string]int{}}
	var restarts, calls, completions int
	vs := &violations{}
	start := time.Now()
	for round := 0; round < rounds; round++ {
		h.resetCalls()
		id, printed := h.startRun(graphFile, func() time.Duration { return randKill(rng) }, known, st)
		printed = append(printed, h.drive(id, rng, true, st)...)
		s, n := h.checkRun(id, printed, fanoutNodes, vs)
		restarts += n
		// Outputs reused after restarts still flow: j ran on the outputs the
		// fan-out nodes ended with, f on the approved j output.
		j, f := s.node("j"), s.node("f")
		for _, a := range []string{"a1", "a2", "a3"} {
			if j == nil || !strings.Contains(j.Input, s.Outputs[a]) {
				vs.add("join ran without one of its inputs", "run %s: j ran on %+v, lacking %s's output %q",
					id, j, a, s.Outputs[a])
			}
		}
		if f == nil || f.Input != s.Outputs["j"] {
			vs.add("approved output not passed on", "run %s: f ran on %+v, want j's output %q", id, f, s.Outputs["j"])
		}
		for _, a := range []string{"a1", "a2", "a3", "j", "f"} {
			if h.callsOf(a) == 0 {
				vs.add("output without an LLM call", "run %s: %s", id, a)
			}
			calls += h.callsOf(a)
			completions++
		}
	}
	vs.report(t)
	t.Logf("%d runs in %s: %d processes, %d SIGKILLs, %d waits for a dead owner's lease, %d node reruns marked retry=restart, "+
		"%d LLM calls for %d agent completions", rounds, time.Since(start).Round(time.Millisecond), st.processes, st.kills,
		st.leaseWaits, restarts, calls, completions)
	keys := make([]string, 0, len(st.exits))
	for k := range st.exits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("  %3d × %s", st.exits[k], k)
	}
}

// TestCrashPrintedEventsSurvive kills a process while the database is held
// by another writer: events the process generated meanwhile are not
// committed, so it must not have printed them. Whatever `--events` printed
// must be in the stored log after the restart.
func TestCrashPrintedEventsSurvive(t *testing.T) {
	t.Parallel()
	// a's first call is answered only once the database is locked.
	locked := make(chan struct{})
	var lockedOnce sync.Once
	h := newCrashHarness(t, func(node string) time.Duration {
		if node == "a" {
			<-locked
		}
		return 20 * time.Millisecond
	})
	unlock := func() { lockedOnce.Do(func() { close(locked) }) }
	t.Cleanup(unlock) // before the fake LLM closes
	st := &crashStats{exits: map[string]int{}}
	c := h.startCLI(t, "run", crashGraph(t, "chain.json"), "--events")
	t.Cleanup(func() { _ = c.cmd.Process.Kill() })
	if !c.waitPrinted(time.Minute, func(ev engine.Event) bool { return ev.NodeID == "a" && ev.Type == engine.EvStepStart }) {
		t.Fatalf("a never started: %s", c.stderr.String())
	}
	// Another process takes the write lock (a long transaction).
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(h.data, "switchyard.db")+"?_pragma=busy_timeout(30000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	// a answers while the lock is held; wait until the answer went out, and
	// give the process time to handle it (and to print it, if it prints
	// before committing).
	unlock()
	for deadline := time.Now().Add(time.Minute); h.callsOf("a") == 0 || h.llm.srv.InFlight() > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a's LLM call was not answered within a minute (%d calls, %d in flight)", h.callsOf("a"), h.llm.srv.InFlight())
		}
	}
	shown := c.waitPrinted(time.Second, func(ev engine.Event) bool { return ev.NodeID == "a" && ev.Type == engine.EvStepEnd })
	_ = c.cmd.Process.Kill()
	res := c.wait(t)
	st.count(res)
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	t.Logf("a's step_end printed before the commit it waited for: %v", shown)
	id := res.printed[0].ev.RunID
	printed := append(res.printed, h.drive(id, nil, false, st)...)
	vs := &violations{}
	h.checkRun(id, printed, []string{"s", "a", "b", "c"}, vs)
	vs.report(t)
}

// TestCrashSuspendedOwner suspends (SIGSTOP) the process driving a run for
// longer than its lease: another process takes the run over and finishes
// it. When the first one wakes up (SIGCONT) it must not drive the run any
// further: no run is ever driven by two processes.
func TestCrashSuspendedOwner(t *testing.T) {
	t.Parallel()
	// b's first call is answered only once its caller is stopped.
	stopped := make(chan struct{})
	var stoppedOnce sync.Once
	var mu sync.Mutex
	bCalls := 0
	h := newCrashHarness(t, func(node string) time.Duration {
		mu.Lock()
		first := false
		if node == "b" {
			bCalls++
			first = bCalls == 1
		}
		mu.Unlock()
		if first {
			<-stopped
		}
		return 20 * time.Millisecond
	})
	release := func() { stoppedOnce.Do(func() { close(stopped) }) }
	t.Cleanup(release) // before the fake LLM closes
	st := &crashStats{exits: map[string]int{}}
	a := h.startCLI(t, "run", crashGraph(t, "chain.json"), "--events")
	t.Cleanup(func() {
		_ = a.cmd.Process.Signal(syscall.SIGCONT)
		_ = a.cmd.Process.Kill()
	})
	if !a.waitPrinted(time.Minute, func(ev engine.Event) bool { return ev.NodeID == "b" && ev.Type == engine.EvStepStart }) {
		t.Fatalf("b never started: %s", a.stderr.String())
	}
	for deadline := time.Now().Add(time.Minute); h.callsOf("b") == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("b's LLM call never arrived")
		}
	}
	id := a.printed()[0].ev.RunID
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	release() // the answer reaches a stopped process
	// Another process continues the run once the stopped owner's lease ran out.
	printed := h.drive(id, nil, false, st)
	before := h.show(t, id)
	if before.Status != engine.StatusCompleted {
		t.Fatalf("the second process left the run %s", before.Status)
	}
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resA := a.wait(t)
	after := h.show(t, id)
	t.Logf("first owner exited %d after waking up; log %d -> %d events; c called %d times",
		resA.code, len(before.Events), len(after.Events), h.callsOf("c"))
	if n := h.callsOf("c"); n != 1 {
		t.Errorf("c called the LLM %d times: the run was driven by two processes", n)
	}
	if len(after.Events) != len(before.Events) || !reflect.DeepEqual(after.Outputs, before.Outputs) {
		t.Errorf("the woken owner changed the finished run:\n outputs %v\n  -> %v\n events %d -> %d",
			before.Outputs, after.Outputs, len(before.Events), len(after.Events))
	}
	printed = append(printed, a.printed()...)
	vs := &violations{}
	h.checkRun(id, printed, []string{"s", "a", "b", "c"}, vs)
	vs.report(t)
}
