package pgtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var pg *Cluster

func TestMain(m *testing.M) { os.Exit(Main(m, &pg)) }

// TestDatabasesAreSeparate: each test database is its own, reachable one.
func TestDatabasesAreSeparate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := pg.NewDatabase(t), pg.NewDatabase(t)
	if a == b {
		t.Fatalf("same DSN twice: %s", a)
	}
	ca, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(ctx)
	if _, err := ca.Exec(ctx, `CREATE TABLE only_in_a (x int)`); err != nil {
		t.Fatal(err)
	}
	cb, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(ctx)
	var n int
	if err := cb.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("table of database a seen from b: n=%d err=%v", n, err)
	}
}

// TestStartStopOwnCluster: a second cluster starts beside the package's
// and Stop ends exactly its postmaster, leaving the other running.
func TestStartStopOwnCluster(t *testing.T) {
	pg.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid, dir := c.pid, c.dir
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if postmasterOf(pid, dir) {
		t.Errorf("postmaster %d still running after Stop", pid)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cluster directory %s left behind (%v)", dir, err)
	}
	if !postmasterOf(pg.pid, pg.dir) {
		t.Errorf("the package's cluster (pid %d) was stopped too", pg.pid)
	}
}

// TestWatchdogStopsAnOrphanedCluster: when the process that started a
// cluster dies without stopping it, the watchdog stops the server and
// removes its directory.
func TestWatchdogStopsAnOrphanedCluster(t *testing.T) {
	pg.Require(t)
	if os.Getenv("PGTEST_CHILD") == "1" {
		// The child: start a cluster, report it, die without cleanup.
		c, err := Start(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("CLUSTER %d %s\n", c.pid, c.dir)
		os.Exit(0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestWatchdogStopsAnOrphanedCluster$")
	cmd.Env = append(os.Environ(), "PGTEST_CHILD=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var pid int
	var dir string
	for line := range strings.Lines(string(out)) {
		if _, err := fmt.Sscanf(line, "CLUSTER %d %s", &pid, &dir); err == nil {
			break
		}
	}
	if pid == 0 {
		t.Fatalf("child did not report its cluster:\n%s", out)
	}
	deadline := time.Now().Add(time.Minute)
	for postmasterOf(pid, dir) {
		if time.Now().After(deadline) {
			_ = stopPID(pid, dir)
			t.Fatalf("postmaster %d of the dead child still runs", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster directory %s left behind", dir)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRestart: a restarted cluster cuts its connections (SQLSTATE 57P01
// to a session that was open), has a new postmaster, keeps its data and
// answers on the same DSN.
func TestRestart(t *testing.T) {
	c := StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := c.NewDatabase(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	old := c.PID()
	var downErr error
	if err := c.Restart(ctx, func() { _, downErr = pgx.Connect(ctx, dsn) }); err != nil {
		t.Fatal(err)
	}
	if downErr == nil {
		t.Error("connected while the server was stopped")
	}
	if c.PID() == old || postmasterOf(old, c.dir) {
		t.Errorf("postmaster %d -> %d: the old one must be gone, a new one running", old, c.PID())
	}
	if _, err := conn.Exec(ctx, `SELECT 1`); err == nil {
		t.Error("a session from before the restart still works")
	} else {
		t.Logf("the old session: %v", err)
	}
	again, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect after the restart: %v", err)
	}
	defer again.Close(context.Background())
	var x int
	if err := again.QueryRow(ctx, `SELECT x FROM kept`).Scan(&x); err != nil || x != 42 {
		t.Errorf("data after the restart: %d, %v", x, err)
	}
}

// TestStopSignalsOnlyTheCluster: stopping goes only to a process whose
// command line names the cluster's directory. The postmaster is not our
// child: once it exits its pid may name any process (a loaded suite wraps
// pids), which the escalation to SIGQUIT and SIGKILL then hit.
func TestStopSignalsOnlyTheCluster(t *testing.T) {
	t.Parallel()
	other := exec.Command("sleep", "120")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	if err := stopPID(other.Process.Pid, "/dev/shm/pgtest-not-this-one"); err != nil {
		t.Fatal(err)
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("a process that is not the cluster's postmaster was signalled: %v", err)
	}
	var ws syscall.WaitStatus
	if pid, _ := syscall.Wait4(other.Process.Pid, &ws, syscall.WNOHANG, nil); pid != 0 {
		t.Errorf("a process that is not the cluster's postmaster ended: %v", ws)
	}
}

// TestWatchdogWaitsWhileItsTestBinaryLives: the watchdog knows its test
// binary by being its child, and leaves a live binary's cluster alone (a
// watchdog that took the binary for dead would stop the server at once,
// well within this wait).
func TestWatchdogWaitsWhileItsTestBinaryLives(t *testing.T) {
	pg.Require(t)
	c := StartT(t)
	time.Sleep(3 * time.Second) // what must not happen would happen in ~1 s
	if !postmasterOf(c.pid, c.dir) {
		t.Fatalf("postmaster %d stopped while its test binary runs", c.pid)
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.watchdog.Process.Pid))
	if err != nil {
		t.Fatalf("watchdog: %v", err)
	}
	if f := strings.Fields(string(st)); len(f) < 3 || f[2] == "Z" {
		t.Fatalf("watchdog exited while its test binary runs: %s", st)
	}
}
