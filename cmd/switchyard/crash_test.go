//go:build unix

package main

// Crash tests (issue 4): real switchyard processes, killed with SIGKILL at
// random moments, restarted, and checked against what they printed. The
// fake LLM runs in this test process with a random latency per request, so
// kills land before, during and after node executions.

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
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

// crashHarness is one data directory shared by every process of a test,
// and the fake LLM they all talk to.
type crashHarness struct {
	t    *testing.T
	data string
	env  []string
	fake *fakeopenai.Server

	mu      sync.Mutex
	n       int
	calls   map[string]int                  // LLM requests per node since the last reset
	latency func(node string) time.Duration // per request
}

func newCrashHarness(t *testing.T, latency func(node string) time.Duration) *crashHarness {
	t.Helper()
	h := &crashHarness{t: t, data: t.TempDir(), calls: map[string]int{}, latency: latency}
	h.fake = fakeopenai.StartT(t, fakeopenai.WithRequestLogLimit(0))
	h.fake.SetHandler(h.reply)
	h.env = append(os.Environ(), "SWITCHYARD_DATA=", "SWITCHYARD_MODEL=", "SWITCHYARD_LLM_API=",
		"OPENAI_BASE_URL="+h.fake.URL(), "OPENAI_API_KEY=test", "SWITCHYARD_LEASE_TTL="+crashLeaseTTL.String())
	return h
}

// reply answers "node=<id>\n..." prompts with an output unique to the call.
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

// printedEvent is an event line a child process wrote to its stdout.
type printedEvent struct {
	ev   engine.Event
	line string
	args string // the command that printed it
}

// crashChild is a running switchyard process whose --events output is read
// as it comes. Only complete lines count: a line cut by SIGKILL was never
// fully reported.
type crashChild struct {
	cmd    *exec.Cmd
	args   string
	stderr bytes.Buffer

	mu       sync.Mutex
	events   []printedEvent
	other    strings.Builder // the final result and anything else
	newLine  chan struct{}
	readDone chan struct{}
}

func (h *crashHarness) start(args ...string) *crashChild {
	h.t.Helper()
	c := &crashChild{args: strings.Join(args, " "), newLine: make(chan struct{}, 1), readDone: make(chan struct{})}
	c.cmd = exec.Command(binary, append(args, "--data", h.data)...)
	c.cmd.Env = h.env
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		h.t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	go c.read(out)
	return c
}

func (c *crashChild) read(out io.Reader) {
	defer close(c.readDone)
	br := bufio.NewReader(out)
	for {
		line, err := br.ReadString('\n')
		if strings.HasSuffix(line, "\n") {
			c.mu.Lock()
			var ev engine.Event
			if strings.HasPrefix(line, `{"seq":`) && json.Unmarshal([]byte(line), &ev) == nil {
				c.events = append(c.events, printedEvent{ev: ev, line: line, args: c.args})
			} else {
				c.other.WriteString(line)
			}
			c.mu.Unlock()
			select {
			case c.newLine <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

func (c *crashChild) printed() []printedEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]printedEvent(nil), c.events...)
}

// waitPrinted waits until the child printed an event matching pred; false
// if it exited first or nothing came within d.
func (c *crashChild) waitPrinted(d time.Duration, pred func(engine.Event) bool) bool {
	deadline := time.After(d)
	for {
		for _, p := range c.printed() {
			if pred(p.ev) {
				return true
			}
		}
		select {
		case <-c.newLine:
		case <-c.readDone:
			for _, p := range c.printed() {
				if pred(p.ev) {
					return true
				}
			}
			return false
		case <-deadline:
			return false
		}
	}
}

type childResult struct {
	code   int
	killed bool
	stderr string
	events []printedEvent
}

// wait reaps the child; a child still running after a minute is killed and
// reported as hung.
func (c *crashChild) wait(t *testing.T) childResult {
	t.Helper()
	hung := time.AfterFunc(time.Minute, func() { _ = c.cmd.Process.Kill() })
	<-c.readDone
	err := c.cmd.Wait()
	if !hung.Stop() {
		t.Errorf("%s: still running after a minute; killed", c.args)
	}
	res := childResult{stderr: c.stderr.String(), events: c.printed()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.killed = true
		}
	case err != nil:
		t.Fatalf("%s: %v", c.args, err)
	}
	return res
}

// runKill runs a command and SIGKILLs it after killAfter (never if < 0).
func (h *crashHarness) runKill(killAfter time.Duration, args ...string) childResult {
	h.t.Helper()
	c := h.start(args...)
	if killAfter >= 0 {
		timer := time.AfterFunc(killAfter, func() { _ = c.cmd.Process.Kill() })
		defer timer.Stop()
	}
	return c.wait(h.t)
}

// exec runs a command to its end and returns its exit code and output.
func (h *crashHarness) exec(args ...string) (int, string, string) {
	h.t.Helper()
	cmd := exec.Command(binary, append(args, "--data", h.data)...)
	cmd.Env = h.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	} else if err != nil {
		h.t.Fatalf("%v: %v", args, err)
	}
	return 0, out.String(), errb.String()
}

// crashShow is what `switchyard show RUN --events` prints: the run, then
// its stored event log.
type crashShow struct {
	RunID            string                   `json:"runId"`
	Status           engine.RunStatus         `json:"status"`
	Outputs          map[string]string        `json:"outputs"`
	PendingApprovals []engine.PendingApproval `json:"pendingApprovals"`
	Error            string                   `json:"error"`
	Nodes            []engine.NodeState       `json:"nodes"`
	Events           []engine.Event           `json:"-"`
}

func (h *crashHarness) show(runID string) crashShow {
	h.t.Helper()
	code, out, errOut := h.exec("show", runID, "--events")
	if code != 0 {
		h.t.Fatalf("show %s: exit %d: %s", runID, code, errOut)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	var s crashShow
	if err := dec.Decode(&s); err != nil {
		h.t.Fatalf("show %s: %v\n%s", runID, err, out)
	}
	for {
		var ev engine.Event
		if err := dec.Decode(&ev); err == io.EOF {
			break
		} else if err != nil {
			h.t.Fatalf("show %s: event log: %v", runID, err)
		}
		s.Events = append(s.Events, ev)
	}
	return s
}

func (s crashShow) node(id string) *engine.NodeState {
	for i := range s.Nodes {
		if s.Nodes[i].NodeID == id {
			return &s.Nodes[i]
		}
	}
	return nil
}

// newRuns lists the ids of runs not in known.
func (h *crashHarness) newRuns(known map[string]bool) []string {
	h.t.Helper()
	code, out, errOut := h.exec("runs", "--json", "--limit", "100000")
	if code != 0 {
		h.t.Fatalf("runs: exit %d: %s", code, errOut)
	}
	var runs []struct {
		RunID string `json:"runId"`
	}
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		h.t.Fatalf("runs --json: %v\n%s", err, out)
	}
	var ids []string
	for _, r := range runs {
		if !known[r.RunID] {
			ids = append(ids, r.RunID)
		}
	}
	return ids
}

// crashStats summarizes what a crash test went through.
type crashStats struct {
	processes, kills, leaseWaits int
	exits                        map[string]int // non-zero exits of processes that were not killed
}

func (st *crashStats) count(res childResult) {
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
	h.t.Helper()
	var printed []printedEvent
	for step := 0; ; step++ {
		if step > 300 {
			h.t.Fatalf("run %s: not completed after %d processes", runID, step)
		}
		s := h.show(runID)
		var args []string
		switch s.Status {
		case engine.StatusCompleted:
			return printed
		case engine.StatusPaused:
			// Listed as paused means resumable: the approval is pending.
			if len(s.PendingApprovals) != 1 || s.PendingApprovals[0].NodeID != "ok" {
				h.t.Errorf("run %s is paused with pending approvals %+v", runID, s.PendingApprovals)
			}
			args = []string{"resume", runID, "--decision", "approve", "--events"}
		case engine.StatusRunning, engine.StatusPending, engine.StatusInterrupted:
			args = []string{"resume", runID, "--events"}
		default:
			h.t.Errorf("run %s ended %s: %s", runID, s.Status, s.Error)
			return printed
		}
		after := time.Duration(-1)
		if kill && rng.IntN(10) < 7 {
			// A resume reaches its next pause or the end sooner than a fresh
			// run: a shorter window makes its kills land mid-work.
			after = time.Duration(rng.IntN(400)) * time.Millisecond
		}
		res := h.runKill(after, args...)
		st.count(res)
		printed = append(printed, res.events...)
		if !res.killed && strings.Contains(res.stderr, "driven elsewhere") {
			time.Sleep(crashLeaseTTL / 5) // the dead owner's lease has not run out yet
		}
	}
}

// startRun runs graphFile, SIGKILLed after killAfter (never if < 0), and
// finds the new run's id even when the process died before printing it.
// It retries if the process died before the run was created.
func (h *crashHarness) startRun(graphFile string, killAfter func() time.Duration, known map[string]bool, st *crashStats) (string, []printedEvent) {
	h.t.Helper()
	for try := 0; try < 20; try++ {
		res := h.runKill(killAfter(), "run", graphFile, "--events")
		st.count(res)
		if !res.killed && res.code != exitPaused && res.code != exitOK {
			h.t.Fatalf("run: exit %d: %s", res.code, res.stderr)
		}
		ids := h.newRuns(known)
		if len(ids) > 1 {
			h.t.Fatalf("one run command created runs %v", ids)
		}
		if len(ids) == 1 {
			known[ids[0]] = true
			for _, p := range res.events {
				if p.ev.RunID != ids[0] {
					h.t.Errorf("run %s printed an event of run %s", ids[0], p.ev.RunID)
				}
			}
			return ids[0], res.events
		}
		if len(res.events) > 0 {
			h.t.Fatalf("events printed for a run that does not exist: %+v", res.events[0].ev)
		}
	}
	h.t.Fatal("no run created in 20 tries")
	return "", nil
}

type crashStep struct {
	Visit  int    `json:"visit"`
	Retry  string `json:"retry"`
	Status string `json:"status"`
	Output string `json:"output"`
}

func stepOf(ev engine.Event) crashStep {
	var d crashStep
	_ = json.Unmarshal(ev.Data, &d)
	return d
}

func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// sameEvent compares a printed event with the stored one; the store keeps
// timestamps to the microsecond.
func sameEvent(printed, stored engine.Event) bool {
	return printed.Seq == stored.Seq && printed.RunID == stored.RunID && printed.NodeID == stored.NodeID &&
		printed.Type == stored.Type && printed.Content == stored.Content && jsonEqual(printed.Data, stored.Data) &&
		printed.Timestamp.Truncate(time.Microsecond).Equal(stored.Timestamp.Truncate(time.Microsecond))
}

// violation is one broken durability promise, by kind.
type violation struct{ kind, msg string }

type violations []violation

func (vs *violations) add(kind, format string, args ...any) {
	*vs = append(*vs, violation{kind, fmt.Sprintf(format, args...)})
}

// report fails t once per kind of violation, with a count and examples, so
// a many-round test shows how often each promise broke.
func (vs violations) report(t *testing.T) {
	t.Helper()
	byKind := map[string][]string{}
	var kinds []string
	for _, v := range vs {
		if byKind[v.kind] == nil {
			kinds = append(kinds, v.kind)
		}
		byKind[v.kind] = append(byKind[v.kind], v.msg)
	}
	for _, k := range kinds {
		msgs := byKind[k]
		t.Errorf("%s: %d times, e.g.\n  %s", k, len(msgs), strings.Join(msgs[:min(3, len(msgs))], "\n  "))
	}
}

// checkRun checks what must hold for a run after any number of kills: it
// completed; its log is gapless; every event a process printed is stored
// unchanged; no node completed twice in one visit or started again after
// its completion was logged; reruns are marked retry=restart; the outputs
// are the last completions' outputs. It returns the stored run and how many
// reruns were marked as retries.
func (h *crashHarness) checkRun(runID string, printed []printedEvent, nodes []string, vs *violations) (crashShow, int) {
	h.t.Helper()
	s := h.show(runID)
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
	type nodeVisit struct {
		node  string
		visit int
	}
	visit := map[string]int{}
	started := map[nodeVisit]int{}
	completed := map[nodeVisit]int{}
	lastOut := map[string]string{}
	restarts := 0
	for _, ev := range s.Events {
		switch ev.Type {
		case engine.EvStepStart:
			d := stepOf(ev)
			k := nodeVisit{ev.NodeID, d.Visit}
			visit[ev.NodeID] = d.Visit
			if completed[k] > 0 {
				vs.add("node started again after its completion was logged", "run %s: %s visit %d (seq %d)", runID, k.node, k.visit, ev.Seq)
			}
			if started[k] > 0 && d.Retry != "restart" {
				vs.add("rerun without retry=restart", "run %s: %s visit %d (seq %d) %s", runID, k.node, k.visit, ev.Seq, ev.Data)
			}
			if d.Retry == "restart" {
				restarts++
			}
			started[k]++
		case engine.EvStepEnd:
			d := stepOf(ev)
			if d.Status != string(engine.NodeCompleted) {
				continue
			}
			k := nodeVisit{ev.NodeID, visit[ev.NodeID]}
			if completed[k]++; completed[k] > 1 {
				vs.add("node completed twice in one visit", "run %s: %s visit %d (seq %d)", runID, k.node, k.visit, ev.Seq)
			}
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
	rounds := 25
	if testing.Short() {
		rounds = 5
	}
	rng := rand.New(rand.NewPCG(crashSeed(t), 1))
	h := newCrashHarness(t, func(string) time.Duration {
		return time.Duration(50+rand.IntN(101)) * time.Millisecond
	})
	graphFile := filepath.Join("testdata", "crash", "fanout.json")
	known := map[string]bool{}
	st := &crashStats{exits: map[string]int{}}
	var restarts, calls, completions int
	var vs violations
	start := time.Now()
	for round := 0; round < rounds; round++ {
		h.resetCalls()
		id, printed := h.startRun(graphFile, func() time.Duration { return randKill(rng) }, known, st)
		printed = append(printed, h.drive(id, rng, true, st)...)
		s, n := h.checkRun(id, printed, fanoutNodes, &vs)
		restarts += n
		// Outputs reused after restarts still flow: j ran on the outputs the
		// fan-out nodes ended with, f on the approved j output.
		j, f := s.node("j"), s.node("f")
		for _, a := range []string{"a1", "a2", "a3"} {
			if j == nil || !strings.Contains(j.Input, s.Outputs[a]) {
				vs.add("join ran without one of its inputs", "run %s: j ran on %q, lacking %s's output %q",
					id, j.Input, a, s.Outputs[a])
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
	h := newCrashHarness(t, func(node string) time.Duration {
		if node == "a" {
			return 300 * time.Millisecond
		}
		return 20 * time.Millisecond
	})
	st := &crashStats{exits: map[string]int{}}
	c := h.start("run", filepath.Join("testdata", "crash", "chain.json"), "--events")
	t.Cleanup(func() { _ = c.cmd.Process.Kill() })
	isStart := func(node string) func(engine.Event) bool {
		return func(ev engine.Event) bool { return ev.NodeID == node && ev.Type == engine.EvStepStart }
	}
	if !c.waitPrinted(20*time.Second, isStart("a")) {
		t.Fatalf("a never started: %s", c.stderr.String())
	}
	// Another process takes the write lock (a long transaction).
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(h.data, "switchyard.db")+"?_pragma=busy_timeout(5000)")
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
	// a answers while the lock is held; give the process time to handle the
	// answer (and to print it, if it prints before committing).
	deadline := time.Now().Add(10 * time.Second)
	for (h.callsOf("a") == 0 || h.fake.InFlight() > 0) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	shown := c.waitPrinted(time.Second, func(ev engine.Event) bool { return ev.NodeID == "a" && ev.Type == engine.EvStepEnd })
	_ = c.cmd.Process.Kill()
	res := c.wait(t)
	st.count(res)
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	t.Logf("a's step_end printed before the commit it waited for: %v", shown)
	id := res.events[0].ev.RunID
	printed := append(res.events, h.drive(id, nil, false, st)...)
	var vs violations
	h.checkRun(id, printed, []string{"s", "a", "b", "c"}, &vs)
	vs.report(t)
}

// TestCrashSuspendedOwner suspends (SIGSTOP) the process driving a run for
// longer than its lease: another process takes the run over and finishes
// it. When the first one wakes up (SIGCONT) it must not drive the run any
// further: no run is ever driven by two processes.
func TestCrashSuspendedOwner(t *testing.T) {
	var mu sync.Mutex
	bCalls := 0
	h := newCrashHarness(t, func(node string) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		if node == "b" {
			if bCalls++; bCalls == 1 {
				return 2 * time.Second // answered while the first owner is stopped
			}
		}
		return 20 * time.Millisecond
	})
	st := &crashStats{exits: map[string]int{}}
	a := h.start("run", filepath.Join("testdata", "crash", "chain.json"), "--events")
	t.Cleanup(func() {
		_ = a.cmd.Process.Signal(syscall.SIGCONT)
		_ = a.cmd.Process.Kill()
	})
	if !a.waitPrinted(20*time.Second, func(ev engine.Event) bool { return ev.NodeID == "b" && ev.Type == engine.EvStepStart }) {
		t.Fatalf("b never started: %s", a.stderr.String())
	}
	for deadline := time.Now().Add(10 * time.Second); h.callsOf("b") == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("b's LLM call never arrived")
		}
	}
	id := a.printed()[0].ev.RunID
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Another process continues the run once the stopped owner's lease ran out.
	printed := h.drive(id, nil, false, st)
	before := h.show(id)
	if before.Status != engine.StatusCompleted {
		t.Fatalf("the second process left the run %s", before.Status)
	}
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resA := a.wait(t)
	after := h.show(id)
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
	var vs violations
	h.checkRun(id, printed, []string{"s", "a", "b", "c"}, &vs)
	vs.report(t)
}
