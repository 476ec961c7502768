//go:build linux

package faults

// Disk full and database locked during a run (issue 8): the run fails
// cleanly (its error says why) or waits, the database is never corrupted,
// the server reports the write errors on /metrics and stays healthy, and
// once the fault clears new runs complete.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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

const (
	writeErrors   = "switchyard_store_write_errors_total"
	eventsDropped = "switchyard_store_events_dropped_total"
)

// waitCalled waits until node of run key made its first LLM call.
func waitCalled(t *testing.T, h *harness, key, node string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for len(h.llm.callsOf(key, node)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s of run %s never called the LLM", node, key)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// afterFault checks what must hold once a storage fault cleared: the run
// ended (as want says), its log is gapless, the file is intact, the
// server counted the write errors, is healthy and completes new runs.
func afterFault(t *testing.T, h *harness, p *proc, id string, errsBefore float64, causes []string) runView {
	t.Helper()
	var rv runView
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		rv = p.getRun(t, id)
		if rv.Status.Terminal() || rv.Status == engine.StatusPaused || time.Now().After(deadline) {
			break
		}
	}
	switch rv.Status {
	case engine.StatusCompleted:
		t.Logf("the run waited out the fault and completed")
	case engine.StatusFailed:
		t.Logf("the run failed: %s", rv.Error)
		if !containsAny(rv.Error, causes) {
			t.Errorf("run error %q names none of the causes %q", rv.Error, causes)
		}
	default:
		t.Errorf("run is %s a minute after the fault cleared (error %q): nobody drives it any more; in the database: %s",
			rv.Status, rv.Error, leaseOf(t, h.data, id))
	}
	// The store may still be retrying the last writes: give it time to
	// make the end durable.
	var evs []engine.Event
	ended := func() bool {
		n := len(evs)
		return n > 0 && evs[n-1].Type == engine.EvRunStatus && engine.RunStatus(evs[n-1].Content).Terminal()
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if evs = p.events(t, id); ended() || time.Now().After(deadline) {
			break
		}
	}
	checkGapless(t, id, evs)
	t.Logf("stored log: %s", summarize(evs))
	if !ended() {
		t.Errorf("the stored log does not end with the run's terminal status (%d events); in the database: %s",
			len(evs), leaseOf(t, h.data, id))
	} else if last := engine.RunStatus(evs[len(evs)-1].Content); rv.Status.Terminal() && last != rv.Status {
		t.Errorf("the log ends with status %s, the API says %s", last, rv.Status)
	} else {
		// The stored header agrees with the log (give its retries time too).
		var row string
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			if row = leaseOf(t, h.data, id); strings.HasPrefix(row, "status "+string(last)+",") || time.Now().After(deadline) {
				break
			}
		}
		if !strings.HasPrefix(row, "status "+string(last)+",") {
			t.Errorf("the log ends with status %s, the database row says %s", last, row)
		}
	}
	integrityCheck(t, h.data)
	m := p.metrics(t)
	if m[writeErrors] <= errsBefore {
		t.Errorf("/metrics %s = %v (was %v): the failed writes are not reported", writeErrors, m[writeErrors], errsBefore)
	}
	t.Logf("/metrics: %s %v, events dropped %v", writeErrors, m[writeErrors], m[eventsDropped])
	p.healthy(t)
	var next runView
	code, body, err := p.do(http.MethodPost, "/api/runs", map[string]any{"graph": chainGraph("next", "a")})
	if err != nil || code != http.StatusCreated || json.Unmarshal(body, &next) != nil {
		t.Errorf("starting a run after the fault cleared: %d %v %s", code, err, truncate(string(body), 300))
	} else if rv := p.waitRun(t, next.RunID, time.Minute); rv.Status != engine.StatusCompleted {
		t.Errorf("a run after the fault cleared: %s (%s)", rv.Status, rv.Error)
	}
	if t.Failed() {
		t.Logf("server log (tail):\n%s", tail(p.stderr.String(), 3000))
	}
	return rv
}

// TestDatabaseLocked holds an exclusive transaction on the database file
// from another process (this one) while a run's node finishes: for longer
// than the store's busy timeout (5s), and for longer than two of them, so
// that the run's checkpoint itself gives up.
func TestDatabaseLocked(t *testing.T) {
	t.Parallel()
	holds := []time.Duration{7 * time.Second, 12 * time.Second}
	if testing.Short() {
		holds = holds[:1]
	}
	for _, hold := range holds {
		t.Run(hold.String(), func(t *testing.T) {
			t.Parallel() // each has its own server and database
			lockDuringRun(t, hold)
		})
	}
}

func lockDuringRun(t *testing.T, hold time.Duration) {
	h := newHarness(t)
	// a answers once the database is locked, so that its completion is
	// written into the lock however slowly this machine runs (a 300 ms
	// latency let a loaded machine finish the run before the lock).
	gate := make(chan struct{})
	var opened sync.Once
	open := func() { opened.Do(func() { close(gate) }) }
	t.Cleanup(open)
	h.llm.setFault("locked", func(c llmCall, _ int) (fakeReply, bool) {
		if c.node == "a" {
			<-gate
		}
		return fakeReply{}, false
	})
	p := h.start()
	base := p.baseline(t)
	errsBefore := p.metrics(t)[writeErrors]
	id := p.startGraph(t, chainGraph("locked", "a", "b"), "")
	waitCalled(t, h, "locked", "a")

	db := openDB(t, h.data, 5000)
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	locked := time.Now()
	open()
	// The server answers meanwhile: health, and reads of the run. The lock
	// is held for hold, and at least until a write failed on it (a busy
	// machine may reach the write late).
	for deadline := locked.Add(3 * time.Minute); time.Since(locked) < hold || p.metrics(t)[writeErrors] <= errsBefore; {
		if time.Now().After(deadline) {
			t.Errorf("no write failed in %s of holding the database (%s still %v)", time.Since(locked).Round(time.Second), writeErrors, errsBefore)
			break
		}
		p.healthy(t)
		if code, body, err := p.do(http.MethodGet, "/api/runs/"+id, nil); err != nil || code != http.StatusOK {
			t.Errorf("GET the run while the database is locked: %d %v %s", code, err, truncate(string(body), 200))
		}
		time.Sleep(500 * time.Millisecond)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	t.Logf("database held exclusively for %s", time.Since(locked).Round(time.Millisecond))
	afterFault(t, h, p, id, errsBefore, []string{"locked", "busy"})
	p.settled(t, base, "after the lock")
}

// mountTmpfs mounts a tmpfs of size bytes at dir (needs root); the test
// is skipped where it cannot.
func mountTmpfs(t *testing.T, dir string, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("disk full needs a small tmpfs: mounting one needs root")
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a tmpfs to simulate a full disk: %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// fill writes a file until the file system is full and returns its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			break
		}
	}
	// Small writes may still fit in the last partial page: take it too.
	for {
		if _, err := f.Write(chunk[:512]); err != nil {
			break
		}
	}
	return path
}

// tmpfsHarness keeps the server's data on a fresh 32 MiB tmpfs (returned
// as dir); node "a" of fault's graph answers with reply, once gate (if not
// nil) is closed.
func tmpfsHarness(t *testing.T, fault string, reply fakeReply, gate <-chan struct{}) (h *harness, dir string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	mountTmpfs(t, dir, "32m")
	h = newHarness(t)
	h.data = dir
	h.llm.setFault(fault, func(c llmCall, _ int) (fakeReply, bool) {
		if c.node == "a" {
			if gate != nil {
				<-gate
			}
			return reply, true
		}
		return fakeReply{}, false
	})
	return h, dir
}

// chunks is n streamed pieces of size bytes each (letter repeated, then a space).
func chunks(n, size int, letter string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strings.Repeat(letter, size-1) + " "
	}
	return out
}

// TestDiskFull runs the data directory on a 32 MiB tmpfs and fills it
// while a node whose answer is 1 MiB runs.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	// a answers once the disk is full: its events and checkpoint fail
	// however slow this machine is.
	full := make(chan struct{})
	var fullOnce sync.Once
	setFull := func() { fullOnce.Do(func() { close(full) }) }
	h, dir := tmpfsHarness(t, "full", fakeReply{Chunks: chunks(16, 64<<10, "x"), Latency: 500 * time.Millisecond}, full)
	t.Cleanup(setFull) // before the fake LLM closes
	p := h.start()
	base := p.baseline(t)
	errsBefore := p.metrics(t)[writeErrors]
	id := p.startGraph(t, chainGraph("full", "a", "b"), "")
	waitCalled(t, h, "full", "a")
	filler := fill(t, dir)
	setFull()
	var st syscall.Statfs_t
	_ = syscall.Statfs(dir, &st)
	t.Logf("disk full: %d bytes free", st.Bavail*uint64(st.Bsize))

	// Hold the disk full until the server reported a failed write (or a
	// minute: afterFault reports it then).
	deadline := time.Now().Add(time.Minute)
	for p.metrics(t)[writeErrors] <= errsBefore && time.Now().Before(deadline) {
		p.healthy(t)
		time.Sleep(100 * time.Millisecond)
	}
	p.healthy(t)
	rvFull := p.getRun(t, id)
	t.Logf("while the disk is full the run is %s (%s)", rvFull.Status, rvFull.Error)
	time.Sleep(5 * time.Second) // the store's retries of the failed batch happen now
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	afterFault(t, h, p, id, errsBefore, []string{"full"})
	p.settled(t, base, "after the disk was full")
}

// TestDiskFullBriefly fills the disk for about a second while a node
// streams its answer (events only, no checkpoint; 4.5s of it), then frees
// it before the node completes: the run goes on, and its log must still be
// gapless.
func TestDiskFullBriefly(t *testing.T) {
	t.Parallel()
	h, dir := tmpfsHarness(t, "brief", fakeReply{Chunks: chunks(30, 24<<10, "y"), ChunkDelay: 150 * time.Millisecond}, nil)
	p := h.start()
	base := p.baseline(t)
	errsBefore := p.metrics(t)[writeErrors]
	id := p.startGraph(t, chainGraph("brief", "a", "b"), "")
	waitCalled(t, h, "brief", "a")
	// The disk fills once the stream has begun to be stored.
	for deadline := time.Now().Add(time.Minute); !hasEvent(p.events(t, id), "a", engine.EvLLMDelta); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no streamed delta of a stored within a minute")
		}
	}
	droppedBefore := p.metrics(t)[eventsDropped]
	filler := fill(t, dir)
	full := time.Now()
	// Until the store gave up on an event (a few failed batches), at most 3s:
	// the node is still streaming then, and completes after the disk is free.
	for p.metrics(t)[eventsDropped] <= droppedBefore && time.Since(full) < 3*time.Second {
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	t.Logf("disk full for %s while node a streamed", time.Since(full).Round(time.Millisecond))
	afterFault(t, h, p, id, errsBefore, []string{"full"})
	p.settled(t, base, "after the disk was briefly full")
}

func hasEvent(evs []engine.Event, node, typ string) bool {
	for _, ev := range evs {
		if ev.NodeID == node && ev.Type == typ {
			return true
		}
	}
	return false
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// summarize lists a log as seq:node/type, e.g. "1:system/run_status ...".
func summarize(evs []engine.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%d:%s/%s ", ev.Seq, ev.NodeID, ev.Type)
	}
	return b.String()
}

// leaseOf describes a run's row: status, owner and lease.
func leaseOf(t *testing.T, data, id string) string {
	t.Helper()
	db := openDB(t, data, 5000)
	defer db.Close()
	var status, owner string
	var until int64
	if err := db.QueryRow(`SELECT status, owner, lease_until FROM runs WHERE id = ?`, id).Scan(&status, &owner, &until); err != nil {
		return err.Error()
	}
	lease := "no lease"
	if owner != "" {
		lease = fmt.Sprintf("leased by %s until %s from now", owner, time.Until(time.UnixMicro(until)).Round(time.Millisecond))
	}
	return fmt.Sprintf("status %s, %s", status, lease)
}
