package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/switchyard/switchyard/internal/proc"
)

// runProc runs one subprocess of a bash or script node (see internal/proc),
// streaming its output as output events of x (none when x is nil). A
// missing executable or oversized output will not get better on a retry.
func runProc(ctx context.Context, x *Exec, ps proc.Spec) (string, string, error) {
	if x != nil {
		// A driver that stalled past its lease starts nothing: the process
		// that took the run over runs this step.
		if err := x.Engine().holdsRun(ctx, x.r); err != nil {
			return "", "", err
		}
		// In the sandbox (proc.SetSandbox: the data folder hidden) the
		// step keeps its run's $ARTIFACTS_DIR, which lies in that folder.
		if dir, err := x.ArtifactsDir(); err == nil {
			ps.Expose = append(ps.Expose, dir)
		}
		if ps.Output == nil { // (a hook's command passes its own: its JSON is not log output)
			ps.Output = func(stream, text string, cut bool) {
				x.Emit(EvOutput, text, map[string]any{"stream": stream})
				if cut {
					x.Emit(EvWarning, fmt.Sprintf("output beyond %d KiB is not streamed to the log (the node's output keeps all of stdout)",
						proc.MaxStreamed>>10), nil)
				}
			}
		}
		ps.OnStart = func(pgid int, start uint64) {
			x.Emit(EvProcessStart, fmt.Sprintf("%s started (process group %d)", ps.Name, pgid),
				processStart{Group: proc.Group{ID: pgid, Start: start}, Host: hostname()})
		}
	}
	out, errText, err := proc.Run(ctx, ps)
	if errors.Is(err, proc.ErrNotFound) || errors.Is(err, proc.ErrOutputTooLarge) {
		err = permanent(err)
	}
	return out, errText, err
}

// processStart is the data of an EvProcessStart event.
type processStart struct {
	proc.Group
	Host string `json:"host"`
}

var hostname = sync.OnceValue(func() string { h, _ := os.Hostname(); return h })

// leftoverWait bounds the wait for killed leftover processes to be gone.
const leftoverWait = 10 * time.Second

// killLeftovers kills the process groups of this run's nodes that a dead
// driver left running (its parent-death signal reaches only each group's
// leader, and not at all where it cannot fire), so a node is never run
// twice at once in one working directory. Only groups started on this
// host, and still the same groups, are touched.
func (e *Engine) killLeftovers(runID string, evs []Event) {
	var gs []proc.Group
	seen := map[proc.Group]bool{}
	for _, ev := range evs {
		if ev.Type != EvProcessStart {
			continue
		}
		var d processStart
		if json.Unmarshal(ev.Data, &d) != nil || d.Host != hostname() || seen[d.Group] {
			continue
		}
		seen[d.Group] = true
		gs = append(gs, d.Group)
	}
	if len(gs) == 0 {
		return
	}
	killed, err := proc.KillGroups(gs, leftoverWait)
	if len(killed) > 0 {
		e.log.Warn("killed processes a dead driver left running", "run", runID, "groups", killed)
	}
	if err != nil {
		e.log.Error("kill leftover processes", "run", runID, "err", err)
	}
}
