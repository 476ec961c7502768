package postgres

// A PostgreSQL restart under running workflows (hardening issue, item 13):
// no run fails because its database restarted. A short restart is waited
// out (the store runs a batch again once the database is back); a longer
// one makes the engine stop driving its runs, as after a lost lease, and
// recovery resumes them.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/internal/pgtest"
)

// chainYAML is a workflow of n bash nodes in a chain, each a short sleep:
// a run of it checkpoints all the time.
func chainYAML(n int) string {
	var b strings.Builder
	b.WriteString("name: chain\ndescription: saves all the time\nnodes:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - id: n%d\n    bash: \"sleep 0.03; echo %d\"\n", i, i)
		if i > 0 {
			fmt.Fprintf(&b, "    depends_on: [n%d]\n", i-1)
		}
	}
	return b.String()
}

const approvalYAML = `name: gate
description: an approval, then work
nodes:
  - id: gate
    approval: {message: "go?"}
  - id: work
    bash: "sleep 0.2; echo done"
    depends_on: [gate]
  - id: more
    bash: "sleep 0.2; echo more"
    depends_on: [work]
`

func restartEngine(t *testing.T, st *Store, ttl time.Duration) *engine.Engine {
	t.Helper()
	e, err := engine.New(engine.Config{Store: st, Owner: "p1", LeaseTTL: ttl,
		ArtifactsRoot: t.TempDir(), Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	e.KeepRecovering(true)
	return e
}

func startYAML(t *testing.T, e *engine.Engine, src string) string {
	t.Helper()
	dir := t.TempDir()
	r, err := e.StartYAML(context.Background(), filepath.Join(dir, "wf.yaml"), []byte(src), engine.StartOptions{WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// endedOnce waits until the run is terminal in the store with a log that
// ends with its one terminal run_status, and returns it.
func endedOnce(t *testing.T, st *Store, id string) *engine.Run {
	t.Helper()
	ctx := context.Background()
	var (
		r   *engine.Run
		evs []engine.Event
		err error
	)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		r, err = st.GetRun(ctx, id)
		mustOK(t, err, "GetRun")
		evs, err = st.Events(ctx, id, 0, 0)
		mustOK(t, err, "Events")
		n := len(evs)
		if r.Status.Terminal() && n > 0 && evs[n-1].Type == engine.EvRunStatus {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s two minutes after the restart", id, r.Status)
		}
	}
	var terminal []string
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Errorf("run %s: log gap at %d (seq %d)", id, i+1, ev.Seq)
			break
		}
		if ev.Type == engine.EvRunStatus && engine.RunStatus(ev.Content).Terminal() {
			terminal = append(terminal, ev.Content)
		}
	}
	if len(terminal) != 1 || terminal[0] != string(r.Status) {
		t.Errorf("run %s: terminal run_status events %v, stored status %s", id, terminal, r.Status)
	}
	return r
}

// TestRestartFailsNoRun restarts the database while runs save their
// progress and an approval was just accepted, twice: briefly, and for
// longer than a lease (the engine then stops driving the runs and recovery
// resumes them). Every run completes.
func TestRestartFailsNoRun(t *testing.T) {
	if os.Getenv("CI") != "true" && testing.Short() {
		t.Skip("PostgreSQL tests run in the full suite")
	}
	for _, long := range []bool{false, true} {
		name := "brief"
		if long {
			name = "longer than a lease"
		}
		t.Run(name, func(t *testing.T) {
			c := pgtest.StartT(t)
			ctx := testCtx(t)
			st := openDSN(t, c.NewDatabase(t))
			const ttl = 1500 * time.Millisecond
			e := restartEngine(t, st, ttl)
			var ids []string
			for range 4 {
				ids = append(ids, startYAML(t, e, chainYAML(40)))
			}
			gate := startYAML(t, e, approvalYAML)
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
				r, err := st.GetRun(ctx, gate)
				mustOK(t, err, "GetRun")
				if r.Status == engine.StatusPaused {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the approval run is %s, never paused", r.Status)
				}
			}
			if _, err := e.Resume(ctx, gate, "gate", engine.Decision{Decision: "approve"}); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, gate)
			errsBefore := st.Stats().WriteErrors
			retriesBefore := st.Stats().ConnRetries
			err := c.Restart(ctx, func() {
				// Down until the store noticed (a batch failed or waits to
				// run again) and, for the long restart, until the engine
				// let go of every run it drove.
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
					s := st.Stats()
					if s.WriteErrors > errsBefore || s.ConnRetries > retriesBefore {
						break
					}
					if time.Now().After(deadline) {
						t.Error("no write was tried while the database was down")
						break
					}
				}
				if long {
					wctx, cancel := context.WithTimeout(ctx, time.Minute)
					defer cancel()
					for _, id := range ids {
						// Wait reads the header from the (stopped) database
						// once the loop exited: only its own timeout counts.
						if _, err := e.Wait(wctx, id); errors.Is(err, context.DeadlineExceeded) {
							t.Errorf("the engine still drives run %s with the database down for a minute", id)
						}
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				if r := endedOnce(t, st, id); r.Status != engine.StatusCompleted {
					t.Errorf("run %s ended %s: %q", id, r.Status, r.Error)
				}
			}
		})
	}
}

// TestWriteWaitsOutARestart: a checkpoint handed to the store while the
// database restarts commits once it is back, instead of failing.
func TestWriteWaitsOutARestart(t *testing.T) {
	c := pgtest.StartT(t)
	ctx := testCtx(t)
	st := openDSN(t, c.NewDatabase(t))
	r := &engine.Run{ID: "run-restart", WorkflowID: "", Kind: engine.KindYAML, Definition: []byte(`{}`),
		Status: engine.StatusRunning, CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}
	mustOK(t, st.CreateRun(ctx, r, nil, nil), "CreateRun")
	errc := make(chan error, 1)
	err := c.Restart(ctx, func() {
		retries := st.Stats().ConnRetries
		cp := *r
		cp.CurrentNodeID = "during the restart"
		go func() {
			errc <- st.Checkpoint(ctx, &cp, []*engine.NodeState{{NodeID: "a", Status: engine.NodeCompleted, Output: "kept"}})
		}()
		for deadline := time.Now().Add(time.Minute); st.Stats().ConnRetries == retries; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Error("the store never tried the checkpoint again while the database was down")
				return
			}
		}
	})
	mustOK(t, err, "restart")
	mustOK(t, <-errc, "a checkpoint during the restart")
	got, ns, _, err := st.LoadRun(ctx, r.ID)
	mustOK(t, err, "LoadRun")
	if got.CurrentNodeID != "during the restart" || len(ns) != 1 || ns[0].Output != "kept" {
		t.Errorf("stored after the restart: %+v %+v", got, ns)
	}
	if n := st.Stats().WriteErrors; n != 0 {
		t.Errorf("%d write errors reported for a restart the store waited out", n)
	}
}
