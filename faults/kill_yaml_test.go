//go:build linux

package faults

// YAML workflows under SIGKILL through the CLI: `switchyard run wf.yaml`
// and `switchyard resume` processes, killed at random moments, against the
// same database file the server uses.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
)

// cliResult is what one killed-or-not CLI process left behind.
type cliResult struct {
	code    int
	killed  bool
	stderr  string
	printed []engine.Event // complete event lines it printed (only durable ones are printed)
}

// runCLI runs a switchyard command against the harness's data directory,
// SIGKILLed after killAfter (never if < 0).
func (h *harness) runCLI(t *testing.T, killAfter time.Duration, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(binary, append(args, "--data", h.data)...)
	cmd.Env = h.env
	cmd.Dir = h.work
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var res cliResult
	var mu sync.Mutex
	read := make(chan struct{})
	go func() {
		defer close(read)
		br := bufio.NewReader(out)
		for {
			line, err := br.ReadString('\n')
			// A line cut by SIGKILL was never fully reported.
			if strings.HasSuffix(line, "\n") && strings.HasPrefix(line, `{"seq":`) {
				var ev engine.Event
				if json.Unmarshal([]byte(line), &ev) == nil {
					mu.Lock()
					res.printed = append(res.printed, ev)
					mu.Unlock()
				}
			}
			if err != nil {
				return
			}
		}
	}()
	if killAfter >= 0 {
		timer := time.AfterFunc(killAfter, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
		defer timer.Stop()
	}
	hung := time.AfterFunc(time.Minute, func() { _ = cmd.Process.Kill() })
	<-read
	err = cmd.Wait()
	if !hung.Stop() {
		t.Errorf("switchyard %s: still running after a minute; killed", strings.Join(args, " "))
	}
	res.stderr = stderr.String()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.killed = true
		}
	case err != nil:
		t.Fatalf("switchyard %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// cliShow is `switchyard show RUN --events`: the run, then its stored log.
type cliShow struct {
	Status           engine.RunStatus         `json:"status"`
	Error            string                   `json:"error"`
	PendingApprovals []engine.PendingApproval `json:"pendingApprovals"`
	Outputs          map[string]string        `json:"outputs"`
	events           []engine.Event
}

func (h *harness) show(t *testing.T, runID string) cliShow {
	t.Helper()
	cmd := exec.Command(binary, "show", runID, "--events", "--data", h.data)
	cmd.Env = h.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("show %s: %v: %s", runID, err, errb.String())
	}
	dec := json.NewDecoder(&out)
	var s cliShow
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("show %s: %v", runID, err)
	}
	for {
		var ev engine.Event
		if err := dec.Decode(&ev); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("show %s: event: %v", runID, err)
		}
		s.events = append(s.events, ev)
	}
	return s
}

// TestKillYAMLRunsCLI runs YAML workflows with every YAML node type (bash,
// prompt, loop, approval, cancel) through `run` and `resume` processes
// SIGKILLed at random moments.
func TestKillYAMLRunsCLI(t *testing.T) {
	rounds := 2
	if testing.Short() {
		rounds = 1
	}
	rng := rand.New(rand.NewPCG(faultSeed(t), 10))
	h := newHarness(t)
	h.llm.setLatency(func(string, string) time.Duration { return time.Duration(80+rand.IntN(220)) * time.Millisecond })
	trace := filepath.Join(h.work, "trace")
	vs := &violations{}
	var runs []*trackedRun
	printed := map[string][]engine.Event{}
	frozen := map[string]map[string]int{}
	frozenTrace := map[string]int{}
	known := map[string]bool{}
	kills, processes, restarts := 0, 0, 0
	afterKill := func() {
		kills++
		freezeLLM(t, h, runs, nil, frozen)
		freezeTrace(t, h.data, trace, runs, frozenTrace)
	}
	start := time.Now()
	for round := 0; round < rounds; round++ {
		key := fmt.Sprintf("c%d", round)
		main, cancel := yamlKillWorkflows(key, trace)
		loopDone(h, key)
		for _, w := range []struct {
			src  string
			want engine.RunStatus
		}{{main, engine.StatusCompleted}, {cancel, engine.StatusCancelled}} {
			file := filepath.Join(h.work, fmt.Sprintf("%s-%s.yaml", key, w.want))
			if err := os.WriteFile(file, []byte(w.src), 0o644); err != nil {
				t.Fatal(err)
			}
			// Start it; a process killed before creating the run is retried.
			var r *trackedRun
			for try := 0; r == nil; try++ {
				if try == 20 {
					t.Fatal("no run created in 20 tries")
				}
				res := h.runCLI(t, time.Duration(50+rng.IntN(700))*time.Millisecond, "run", file, "--events")
				processes++
				if !res.killed && res.code != 0 && res.code != 3 && res.code != 4 {
					t.Fatalf("run %s: exit %d: %s", file, res.code, res.stderr)
				}
				status, _ := runStates(t, h.data)
				for id := range status {
					if !known[id] {
						known[id] = true
						r = &trackedRun{key: key, id: id, want: w.want}
						runs = append(runs, r)
					}
				}
				if r != nil {
					printed[r.id] = append(printed[r.id], res.printed...)
				} else if len(res.printed) > 0 {
					t.Fatalf("events printed for a run that does not exist: %+v", res.printed[0])
				}
				if res.killed {
					afterKill()
				}
			}
			// Drive it to its end: answer the approval, continue it after a
			// kill; most of these processes are killed too.
			for step := 0; ; step++ {
				if step > 200 {
					t.Fatalf("run %s not over after %d processes", r.id, step)
				}
				s := h.show(t, r.id)
				var args []string
				switch s.Status {
				case engine.StatusPaused:
					args = []string{"resume", r.id, "--decision", "approve", "--events"}
				case engine.StatusRunning, engine.StatusPending, engine.StatusInterrupted:
					args = []string{"resume", r.id, "--events"}
				}
				if args == nil {
					break
				}
				after := time.Duration(-1)
				if rng.IntN(10) < 7 {
					after = time.Duration(rng.IntN(400)) * time.Millisecond
				}
				res := h.runCLI(t, after, args...)
				processes++
				printed[r.id] = append(printed[r.id], res.printed...)
				if res.killed {
					afterKill()
				} else if strings.Contains(res.stderr, "driven elsewhere") {
					time.Sleep(leaseTTL / 5) // the dead owner's lease has not run out yet
				}
			}
		}
	}
	for _, r := range runs {
		s := h.show(t, r.id)
		if s.Status != r.want {
			vs.add("run did not end as expected", "run %s (%s) is %s, want %s: %s", r.id, r.key, s.Status, r.want, s.Error)
		}
		if r.want == engine.StatusCancelled && !strings.Contains(s.Error, "input was bad") {
			vs.add("cancelled run without the cancel node's reason", "run %s: error %q", r.id, s.Error)
		}
		for i, ev := range s.events {
			if ev.Seq != int64(i+1) {
				vs.add("gap in the stored event log", "run %s: event %d has seq %d", r.id, i+1, ev.Seq)
				break
			}
		}
		stored := map[int64]engine.Event{}
		for _, ev := range s.events {
			stored[ev.Seq] = ev
		}
		for _, ev := range printed[r.id] {
			if got, ok := stored[ev.Seq]; !ok || !sameEvent(ev, got) {
				b, _ := json.Marshal(ev)
				vs.add("printed event not in the stored log", "run %s: %s", r.id, b)
			}
		}
		restarts += checkLog(vs, r.id, s.events)
	}
	checkFrozen(h, runs, frozen, vs)
	checkTrace(t, trace, frozenTrace, vs)
	vs.report(t)
	integrityCheck(t, h.data)
	t.Logf("%d YAML runs through %d processes, %d SIGKILLs, %d node reruns (retry=restart), %d LLM calls, in %s",
		len(runs), processes, kills, restarts, h.llm.total(), time.Since(start).Round(time.Millisecond))
}
