//go:build linux

package faults

// CLI processes (`switchyard run`, `resume`, `show`, ...) against a
// harness's data directory: started, read as they print, SIGKILLed at
// chosen moments and reaped. The SIGKILL tests of the CLI (crash_test.go)
// and of YAML runs through the CLI (kill_yaml_test.go) share them.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
)

// Exit codes of the switchyard command (cmd/switchyard/main.go).
const (
	exitOK        = 0
	exitPaused    = 3
	exitCancelled = 4
)

// printedEvent is an event line a CLI process wrote to its stdout.
type printedEvent struct {
	ev   engine.Event
	line string
	args string // the command that printed it
}

// cliProc is a running switchyard command whose --events output is read
// as it comes. Only complete lines count: a line cut by SIGKILL was never
// fully reported.
type cliProc struct {
	cmd    *exec.Cmd
	args   string
	stderr bytes.Buffer

	mu       sync.Mutex
	events   []printedEvent
	newLine  chan struct{}
	readDone chan struct{}
}

// startCLI starts a switchyard command against the harness's data
// directory.
func (h *harness) startCLI(t *testing.T, args ...string) *cliProc {
	t.Helper()
	c := &cliProc{args: strings.Join(args, " "), newLine: make(chan struct{}, 1), readDone: make(chan struct{})}
	c.cmd = exec.Command(binary, append(args, "--data", h.data)...)
	c.cmd.Env = h.env
	c.cmd.Dir = h.work
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go c.read(out)
	return c
}

func (c *cliProc) read(out io.Reader) {
	defer close(c.readDone)
	br := bufio.NewReader(out)
	for {
		line, err := br.ReadString('\n')
		if strings.HasSuffix(line, "\n") {
			var ev engine.Event
			if strings.HasPrefix(line, `{"seq":`) && json.Unmarshal([]byte(line), &ev) == nil {
				c.mu.Lock()
				c.events = append(c.events, printedEvent{ev: ev, line: line, args: c.args})
				c.mu.Unlock()
			}
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

func (c *cliProc) printed() []printedEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]printedEvent(nil), c.events...)
}

// waitPrinted waits until the process printed an event matching pred;
// false if it exited first or nothing came within d.
func (c *cliProc) waitPrinted(d time.Duration, pred func(engine.Event) bool) bool {
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

// cliResult is what one killed-or-not CLI process left behind.
type cliResult struct {
	code    int
	killed  bool
	stderr  string
	printed []printedEvent // complete event lines it printed (only durable ones are printed)
}

// events returns the printed events.
func (r cliResult) events() []engine.Event {
	out := make([]engine.Event, len(r.printed))
	for i, p := range r.printed {
		out[i] = p.ev
	}
	return out
}

// wait reaps the process; one still running after a minute is killed and
// reported as hung.
func (c *cliProc) wait(t *testing.T) cliResult {
	t.Helper()
	hung := time.AfterFunc(time.Minute, func() { _ = c.cmd.Process.Kill() })
	<-c.readDone
	err := c.cmd.Wait()
	if !hung.Stop() {
		t.Errorf("switchyard %s: still running after a minute; killed", c.args)
	}
	res := cliResult{stderr: c.stderr.String(), printed: c.printed()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.killed = true
		}
	case err != nil:
		t.Fatalf("switchyard %s: %v", c.args, err)
	}
	return res
}

// runCLI runs a switchyard command against the harness's data directory,
// SIGKILLed after killAfter (never if < 0).
func (h *harness) runCLI(t *testing.T, killAfter time.Duration, args ...string) cliResult {
	t.Helper()
	c := h.startCLI(t, args...)
	if killAfter >= 0 {
		timer := time.AfterFunc(killAfter, func() { _ = c.cmd.Process.Signal(syscall.SIGKILL) })
		defer timer.Stop()
	}
	return c.wait(t)
}

// execCLI runs a command to its end and returns its exit code and output.
func (h *harness) execCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary, append(args, "--data", h.data)...)
	cmd.Env = h.env
	cmd.Dir = h.work
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	} else if err != nil {
		t.Fatalf("switchyard %s: %v", strings.Join(args, " "), err)
	}
	return 0, out.String(), errb.String()
}

// cliShow is `switchyard show RUN --events`: the run, then its stored log.
type cliShow struct {
	RunID            string                   `json:"runId"`
	Status           engine.RunStatus         `json:"status"`
	Error            string                   `json:"error"`
	PendingApprovals []engine.PendingApproval `json:"pendingApprovals"`
	Outputs          map[string]string        `json:"outputs"`
	Nodes            []engine.NodeState       `json:"nodes"`
	Events           []engine.Event           `json:"-"`
}

func (s cliShow) node(id string) *engine.NodeState {
	for i := range s.Nodes {
		if s.Nodes[i].NodeID == id {
			return &s.Nodes[i]
		}
	}
	return nil
}

func (h *harness) show(t *testing.T, runID string) cliShow {
	t.Helper()
	code, out, errOut := h.execCLI(t, "show", runID, "--events")
	if code != 0 {
		t.Fatalf("show %s: exit %d: %s", runID, code, errOut)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	var s cliShow
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("show %s: %v\n%s", runID, err, out)
	}
	for {
		var ev engine.Event
		if err := dec.Decode(&ev); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("show %s: event log: %v", runID, err)
		}
		s.Events = append(s.Events, ev)
	}
	return s
}

// newRuns lists the ids of the runs in the database that are not in known.
func (h *harness) newRuns(t *testing.T, known map[string]bool) []string {
	t.Helper()
	code, out, errOut := h.execCLI(t, "runs", "--json", "--limit", "100000")
	if code != 0 {
		t.Fatalf("runs: exit %d: %s", code, errOut)
	}
	var runs []struct {
		RunID string `json:"runId"`
	}
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		t.Fatalf("runs --json: %v\n%s", err, out)
	}
	var ids []string
	for _, r := range runs {
		if !known[r.RunID] {
			ids = append(ids, r.RunID)
		}
	}
	return ids
}
