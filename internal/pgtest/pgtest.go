// Package pgtest runs a private PostgreSQL cluster for tests: initdb in a
// temporary directory, pg_ctl start on a free loopback port, one database
// per test, and a stop by the cluster's own postmaster PID.
//
// A package starts one cluster in TestMain and every test asks it for a
// fresh database, so tests run in parallel against one server:
//
//	var pg *pgtest.Cluster
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pg)) }
//
//	func TestX(t *testing.T) { dsn := pg.NewDatabase(t); ... }
//
// When no server can be started the tests skip, except under CI=true where
// they fail: CI must never go green on a suite that did not run.
//
// The cluster runs in /dev/shm with fsync off unless PGTEST_DURABLE=1,
// which keeps PostgreSQL's durable defaults on disk (for benchmarks).
package pgtest

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoPostgres means no PostgreSQL binaries were found.
var ErrNoPostgres = errors.New("pgtest: no PostgreSQL binaries found (install postgresql)")

// Cluster is a running private PostgreSQL server.
type Cluster struct {
	dir  string // temporary root: data/ and the socket directory
	data string
	bin  string
	port int
	pid  int
	cred *syscall.Credential // set when running as root: the postgres OS user

	startErr error     // why the cluster is not running, when it is not
	watchdog *exec.Cmd // stops the cluster if the test binary dies first
	dbs      atomic.Int64
}

// errShort: -short runs no PostgreSQL tests (the full suite does).
var errShort = errors.New("pgtest: PostgreSQL tests run in the full suite, not with -short")

// Main starts a cluster into *c, runs the package's tests and stops it.
// It never fails by itself: a cluster that could not start is recorded,
// and NewDatabase skips (or fails under CI=true) each test that needs it.
func Main(m *testing.M, c **Cluster) int {
	flag.Parse() // for testing.Short
	if testing.Short() {
		// The inner loop (-short) leaves PostgreSQL to the full suite.
		*c = &Cluster{startErr: errShort}
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cl, err := Start(ctx)
	cancel()
	if err != nil {
		slog.Warn("pgtest: no PostgreSQL server for this package's tests", "err", err)
		cl = &Cluster{startErr: err}
	}
	*c = cl
	code := m.Run()
	if err := cl.Stop(); err != nil {
		slog.Error("pgtest: stop", "err", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// StartT starts a cluster for one test and stops it when the test ends,
// for a package with a single test that needs one; the test skips when no
// server can be started, or fails under CI=true.
func StartT(t testing.TB) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip(errShort.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx)
	if err != nil {
		(&Cluster{startErr: err}).Require(t)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return c
}

// Start creates and starts a cluster. The caller must Stop it.
func Start(ctx context.Context) (*Cluster, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin}
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("pgtest: running as root needs the postgres OS user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	// /dev/shm when there is one: a cluster in memory makes fsync-heavy
	// tests fast, and it is thrown away anyway. A durable cluster (for
	// benchmarks that should pay for real commits) lives on disk.
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && !durable() {
		base = "/dev/shm"
	}
	c.dir, err = os.MkdirTemp(base, "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: temp dir: %w", err)
	}
	if c.cred != nil {
		if err := os.Chown(c.dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			c.cleanup()
			return nil, fmt.Errorf("pgtest: chown %s: %w", c.dir, err)
		}
	}
	c.data = filepath.Join(c.dir, "data")
	if out, err := c.run(ctx, "initdb", "-D", c.data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		c.cleanup()
		return nil, fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	for try := 0; ; try++ {
		err = c.start(ctx)
		if err == nil {
			break
		}
		if try == 2 { // the free port may have been taken meanwhile: try another
			c.cleanup()
			return nil, err
		}
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return fmt.Errorf("pgtest: free port: %w", err)
	}
	return c.startOn(ctx, port)
}

// startOn starts the server of the cluster's data directory on port.
func (c *Cluster) startOn(ctx context.Context, port int) error {
	c.port = port
	args := []string{
		"-c listen_addresses=127.0.0.1",
		"-p " + strconv.Itoa(port),
		"-c unix_socket_directories=" + c.dir,
		"-c max_connections=300",
		"-c shared_buffers=64MB",
	}
	if !durable() {
		// The cluster lives for one test binary: durability buys nothing.
		args = append(args, "-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off")
	}
	opts := strings.Join(args, " ")
	out, err := c.run(ctx, "pg_ctl", "start", "-w", "-t", "60", "-D", c.data,
		"-l", filepath.Join(c.dir, "server.log"), "-o", opts)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		return fmt.Errorf("pgtest: pg_ctl start: %w\n%s\n%s", err, out, log)
	}
	pid, err := readPID(filepath.Join(c.data, "postmaster.pid"))
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	c.pid = pid
	c.startWatchdog()
	return nil
}

// watchdogScript waits for the test binary ($1) to exit, then stops the
// postmaster ($2) and removes the cluster ($3): a test binary killed by
// go test's timeout or a signal runs no cleanup of its own, and a
// leftover server in /dev/shm would hold memory until the machine reboots.
//
// The postmaster is not its child: once it exits, its pid may name
// another process. So each signal goes only to a process whose command
// line still names the cluster's directory, and the directory is removed
// once the server is gone (removed while a server still wrote to it, it
// was left behind).
//
// The test binary is this script's parent: it is gone once the script's
// parent pid is another (the orphan is handed to init or a subreaper).
// Waiting on the binary's pid instead would wait on whatever process
// reuses that pid next.
const watchdogScript = `pm=$2 dir=$3
ours() { tr '\0' ' ' < "/proc/$pm/cmdline" 2>/dev/null | grep -qF -- "$dir/"; }
parent() { read -r _ _ _ pp _ < /proc/$$/stat && echo "$pp"; }
while [ "$(parent)" = "$1" ]; do sleep 1; done
for sig in INT QUIT KILL; do
  ours || break
  kill -$sig "$pm" 2>/dev/null
  for _ in 1 2 3 4 5 6 7 8 9 10; do ours || break; sleep 1; done
done
rm -rf "$dir"`

func (c *Cluster) startWatchdog() {
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "pgtest-watchdog",
		strconv.Itoa(os.Getpid()), strconv.Itoa(c.pid), c.dir)
	// Its own session: a ^C to the test's process group must not end it
	// before it has stopped the server. No stdout/stderr of ours either,
	// or go test would wait for it to close them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		slog.Warn("pgtest: no watchdog: the cluster leaks if the test binary is killed", "err", err)
		return
	}
	c.watchdog = cmd
}

// durable reports whether PGTEST_DURABLE=1 asks for a cluster that
// fsyncs its commits (PostgreSQL's defaults), e.g. for benchmarks.
func durable() bool { return os.Getenv("PGTEST_DURABLE") == "1" }

// run runs a PostgreSQL program, as the postgres OS user when we are root.
func (c *Cluster) run(ctx context.Context, prog string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, prog), args...)
	cmd.Dir = c.dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	// pg_ctl leaves the server running with our stdout open otherwise,
	// and CombinedOutput would wait for it forever.
	cmd.WaitDelay = 5 * time.Second
	return cmd.CombinedOutput()
}

// findBin returns the newest /usr/lib/postgresql/*/bin with initdb, or the
// directory of an initdb on PATH.
func findBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return verOf(dirs[i]) > verOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", ErrNoPostgres
}

func verOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func readPID(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read postmaster pid: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, fmt.Errorf("read postmaster pid: %s is empty", path)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("read postmaster pid from %s: %q", path, sc.Text())
	}
	return pid, nil
}

// DSN is the connection string of database db as the superuser.
func (c *Cluster) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// Err is why the cluster is not running; nil when it is.
func (c *Cluster) Err() error { return c.startErr }

// Require skips t when the cluster is not running, or fails it under
// CI=true.
func (c *Cluster) Require(t testing.TB) {
	t.Helper()
	if c == nil {
		c = &Cluster{startErr: errors.New("pgtest: no cluster (TestMain did not call pgtest.Main)")}
	}
	if c.startErr == nil {
		return
	}
	if errors.Is(c.startErr, errShort) {
		t.Skip(errShort.Error())
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("PostgreSQL is required under CI=true: %v", c.startErr)
	}
	t.Skipf("no PostgreSQL server: %v", c.startErr)
}

// NewDatabase creates an empty database for t and returns its DSN; it is
// dropped when t ends.
func (c *Cluster) NewDatabase(t testing.TB) string {
	t.Helper()
	c.Require(t)
	name := fmt.Sprintf("t%03d", c.dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.admin(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// FORCE: a pool the test leaked must not keep the database.
		if err := c.admin(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return c.DSN(name)
}

func (c *Cluster) admin(ctx context.Context, stmt string) error {
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}

// Stop shuts the cluster down (fast shutdown, signalled to its own
// postmaster PID, escalating to immediate and then SIGKILL) and removes
// its directory. Stopping a cluster that never started is a no-op.
func (c *Cluster) Stop() error {
	if c == nil || c.dir == "" {
		return nil
	}
	var err error
	if c.pid > 0 {
		err = stopPID(c.pid, c.dir)
	}
	if c.watchdog != nil {
		_ = c.watchdog.Process.Kill() // our own child, by its PID
		_ = c.watchdog.Wait()         // killed: its exit status says so
	}
	c.cleanup()
	return err
}

// Restart stops the server as an operator's restart does (a fast
// shutdown, signalled to its postmaster PID: every connection is cut with
// SQLSTATE 57P01, and new ones are refused while it is down) and starts it
// again on the same port and data directory, so DSNs stay valid. down, if
// not nil, runs while the server is stopped. A cluster shared by a
// package's tests is restarted for all of them: a test that restarts
// should start its own (StartT).
func (c *Cluster) Restart(ctx context.Context, down func()) error {
	if c == nil || c.dir == "" || c.pid <= 0 {
		return errors.New("pgtest: restart: the cluster is not running")
	}
	if err := stopPID(c.pid, c.dir); err != nil {
		return err
	}
	c.pid = 0
	if c.watchdog != nil {
		// It watches the old postmaster; start gives the new one its own.
		_ = c.watchdog.Process.Kill() // our own child, by its PID
		_ = c.watchdog.Wait()
		c.watchdog = nil
	}
	if down != nil {
		down()
	}
	var err error
	for try := 0; try < 50; try++ {
		// The port may linger for a moment after the old server let go.
		if err = c.startOn(ctx, c.port); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgtest: restart: %w (last try: %w)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("pgtest: restart: %w", err)
}

// PID is the postmaster's process id (0 while stopped).
func (c *Cluster) PID() int { return c.pid }

// stopPID stops the postmaster pid of the cluster in dir: a fast
// shutdown, then immediate, then SIGKILL. The postmaster is not our child
// (pg_ctl's, reparented), so once it exits its pid may name another
// process: each signal goes only to a process whose command line still
// names dir (a suite starts thousands of processes; pids wrap).
func stopPID(pid int, dir string) error {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGKILL} {
		if !postmasterOf(pid, dir) {
			return nil
		}
		if err := syscall.Kill(pid, sig); err != nil {
			if errors.Is(err, syscall.ESRCH) {
				return nil
			}
			return fmt.Errorf("pgtest: signal postmaster %d: %w", pid, err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if !postmasterOf(pid, dir) {
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return fmt.Errorf("pgtest: postmaster %d did not stop", pid)
}

// postmasterOf reports whether process pid runs with dir in its command
// line (postgres -D dir/data ...).
func postmasterOf(pid int, dir string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return strings.Contains(string(b), dir+string(filepath.Separator))
}

func (c *Cluster) cleanup() {
	if c.dir != "" {
		_ = os.RemoveAll(c.dir) // best effort: a temp dir
		c.dir = ""
	}
}
