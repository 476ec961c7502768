package postgres

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/llm"
	"github.com/switchyard/switchyard/store/storetest"
)

// childDSN, in a child process's environment, is the database of the
// parent test it works for.
const childDSN = "SWITCHYARD_PGTEST_CHILD_DSN"

// TestCrashedProcessRunIsTakenOver: a real process drives a run through
// the PostgreSQL store and is killed (SIGKILL) halfway. Two other
// processes recover at once once its lease has expired by the database's
// clock: exactly one takes the run and completes it, without rerunning
// the nodes the dead process completed, and the run's log is gapless.
func TestCrashedProcessRunIsTakenOver(t *testing.T) {
	if dsn := os.Getenv(childDSN); dsn != "" {
		driveUntilKilled(t, dsn)
		return
	}
	pg.Require(t)
	t.Parallel()
	ctx := testCtx(t)
	dsn := pg.NewDatabase(t)
	const nodes = 8

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashedProcessRunIsTakenOver$")
	cmd.Env = append(os.Environ(), childDSN+"="+dsn)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	mustOK(t, err, "stdout pipe")
	mustOK(t, cmd.Start(), "start the driving process")
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill() // our own child, by its PID
			_ = cmd.Wait()
		}
	}()
	var runID string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "RUN "); ok {
			runID = id
			break
		}
	}
	if runID == "" {
		t.Fatal("the driving process did not start a run")
	}
	go func() { // drain: the child must never block on its stdout
		for sc.Scan() {
		}
	}()

	obs := openDSN(t, dsn)
	completed := func() int {
		_, ns, _, err := obs.LoadRun(ctx, runID)
		mustOK(t, err, "LoadRun")
		n := 0
		for _, s := range ns {
			if s.Status == engine.NodeCompleted {
				n++
			}
		}
		return n
	}
	waitFor(t, "the driver to complete a few nodes", func() bool { return completed() >= 3 })
	mustOK(t, cmd.Process.Kill(), "SIGKILL the driving process")
	_ = cmd.Wait() // killed: the exit status says so
	killed = true
	before := completed()
	t.Logf("nodes completed when the driver died: %d of %d", before, nodes+1)

	// Two recovering processes (two pools, two engines).
	b, c := openDSN(t, dsn), openDSN(t, dsn)
	eb, ec := newEngine(t, b, "proc-B", nil), newEngine(t, c, "proc-C", nil)
	waitFor(t, "the dead driver's lease to expire", func() bool {
		ids, err := b.ListOrphaned(ctx, time.Now())
		mustOK(t, err, "ListOrphaned")
		return len(ids) == 1 && ids[0] == runID
	})
	var took [2][]string
	var wg sync.WaitGroup
	for i, e := range []*engine.Engine{eb, ec} {
		wg.Go(func() {
			ids, err := e.Recover(ctx, true)
			mustOK(t, err, "Recover")
			took[i] = ids
		})
	}
	wg.Wait()
	if len(took[0])+len(took[1]) != 1 {
		t.Fatalf("recovered by B %v and by C %v: want the run taken exactly once", took[0], took[1])
	}
	winner := eb
	if len(took[1]) == 1 {
		winner = ec
	}
	r, err := winner.Wait(ctx, runID)
	mustOK(t, err, "Wait")
	if r.Status != engine.StatusCompleted {
		t.Fatalf("run after takeover: %s %s", r.Status, r.Error)
	}
	_, ns, last, err := obs.LoadRun(ctx, runID)
	mustOK(t, err, "LoadRun")
	rerun := 0
	for _, n := range ns {
		if n.Status != engine.NodeCompleted {
			t.Errorf("node %s is %s", n.NodeID, n.Status)
		}
		if n.Visits > 1 {
			rerun++
		}
	}
	if rerun > 1 { // at most the node in flight when the driver died
		t.Errorf("%d nodes ran twice: completed nodes were rerun", rerun)
	}
	evs, err := obs.Events(ctx, runID, 0, 0)
	mustOK(t, err, "Events")
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: the log has a gap", i, e.Seq)
		}
	}
	if int64(len(evs)) != last {
		t.Fatalf("%d events, highest seq %d", len(evs), last)
	}
}

// driveUntilKilled is the child's side: start a slow chain of agent
// nodes, report its id, and keep driving it until killed.
func driveUntilKilled(t *testing.T, dsn string) {
	ctx := context.Background()
	s, err := Open(ctx, dsn, WithLogger(slog.New(slog.DiscardHandler)))
	mustOK(t, err, "Open")
	fake := fakeopenai.New(fakeopenai.WithLatency(300 * time.Millisecond))
	e := newEngine(t, s, "proc-A", fake)
	run, err := e.StartGraph(ctx, storetest.Chain(8, graph.TypeAgent), engine.StartOptions{Input: "x"})
	mustOK(t, err, "StartGraph")
	fmt.Printf("RUN %s\n", run.ID)
	time.Sleep(2 * time.Minute) // the parent kills us long before
	t.Fatal("the driving process was not killed")
}

// newEngine is an engine on s whose leases last 2 s (renewed every 2/3 s),
// with the fake LLM (an instant one when nil).
func newEngine(t testing.TB, s *Store, owner string, fake *fakeopenai.Server) *engine.Engine {
	t.Helper()
	if fake == nil {
		fake = fakeopenai.New()
	}
	c, err := llm.New(llm.Config{BaseURL: "http://fake.invalid/v1", APIKey: "x",
		HTTPClient: &http.Client{Transport: fakeopenai.InProcess{H: fake.Handler()}}})
	mustOK(t, err, "llm.New")
	e, err := engine.New(engine.Config{Store: s, LLM: c, ArtifactsRoot: t.TempDir(), Owner: owner,
		LeaseTTL: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	mustOK(t, err, "engine.New")
	t.Cleanup(e.Close)
	return e
}
