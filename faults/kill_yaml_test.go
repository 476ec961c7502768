//go:build linux

package faults

// YAML workflows under SIGKILL through the CLI: `switchyard run wf.yaml`
// and `switchyard resume` processes, killed at random moments, against the
// same database file the server uses.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
)

// TestKillYAMLRunsCLI runs YAML workflows with every YAML node type (bash,
// prompt, loop, approval, cancel) through `run` and `resume` processes
// SIGKILLed at random moments.
func TestKillYAMLRunsCLI(t *testing.T) {
	t.Parallel()
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
			// Start it; a process killed before creating the run is retried,
			// every third retry unkilled (a loaded machine can take longer
			// to start a process than the kill window: see startRun).
			var r *trackedRun
			for try := 0; r == nil; try++ {
				if try == 20 {
					t.Fatal("no run created in 20 tries")
				}
				after := time.Duration(50+rng.IntN(700)) * time.Millisecond
				if try%3 == 2 {
					after = -1
				}
				res := h.runCLI(t, after, "run", file, "--events")
				processes++
				if !res.killed && res.code != exitOK && res.code != exitPaused && res.code != exitCancelled {
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
					printed[r.id] = append(printed[r.id], res.events()...)
				} else if len(res.printed) > 0 {
					t.Fatalf("events printed for a run that does not exist: %+v", res.printed[0].ev)
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
				printed[r.id] = append(printed[r.id], res.events()...)
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
		for i, ev := range s.Events {
			if ev.Seq != int64(i+1) {
				vs.add("gap in the stored event log", "run %s: event %d has seq %d", r.id, i+1, ev.Seq)
				break
			}
		}
		stored := map[int64]engine.Event{}
		for _, ev := range s.Events {
			stored[ev.Seq] = ev
		}
		for _, ev := range printed[r.id] {
			if got, ok := stored[ev.Seq]; !ok || !sameEvent(ev, got) {
				b, _ := json.Marshal(ev)
				vs.add("printed event not in the stored log", "run %s: %s", r.id, b)
			}
		}
		restarts += checkLog(vs, r.id, s.Events)
	}
	checkFrozen(h, runs, frozen, vs)
	checkTrace(t, trace, frozenTrace, vs)
	vs.report(t)
	integrityCheck(t, h.data)
	t.Logf("%d YAML runs through %d processes, %d SIGKILLs, %d node reruns (retry=restart), %d LLM calls, in %s",
		len(runs), processes, kills, restarts, h.llm.total(), time.Since(start).Round(time.Millisecond))
}
