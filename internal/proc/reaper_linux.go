package proc

// The reaper: a step's whole process group dies with its driver.
//
// The parent-death signal reaches only the process the driver forked: a
// step's bash died with a SIGKILLed driver, but its background children
// and the command a multi-line script was running lived on, until a
// takeover found and killed the group (after their side effects landed,
// and the step ran again).
//
// So each process that runs steps has a reaper: the running binary itself,
// executed again (/proc/self/exe) with reaperEnv set, which package proc's
// init turns into the reaper before anything else of the program runs. Its
// stdin is a pipe whose write end only the driver holds. The driver writes
// a line per process group it starts ("+ PGID START") and ends ("- PGID").
// When the driver dies, however it dies, the kernel closes the pipe: the
// reaper reads EOF and SIGKILLs every group still registered, at once,
// then exits. A group is named by its id and its leader's start time
// (Group), so a reused id is never killed (KillGroups checks).
//
// One reaper serves the whole process (started with its first step), not
// one per step: a step costs two small writes, not a process start. A
// group registers before its command runs: the leader waits behind a
// start gate until then (gate_linux.go), and keeps its parent-death
// signal. A reaper that died (killed by someone) is started again before
// the next step starts (or on the next write), and told every live group.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// reaperEnv, set to "1", makes the binary a reaper (see above).
const reaperEnv = "SWITCHYARD_STEP_REAPER"

func init() {
	if os.Getenv(reaperEnv) == "1" {
		os.Exit(reap(os.Stdin))
	}
	runGate()
	runSandbox()
}

// reap keeps the registry the driver writes to r and, when r ends (the
// driver is gone), kills the groups left in it.
func reap(r io.Reader) int {
	setName("switchyard-reap")
	// A signal sent to the driver's process group (a ^C in its terminal)
	// must not end the reaper before the driver: caught and dropped.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	go func() {
		for range sigs {
		}
	}()
	live := map[int]uint64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		id, err := strconv.Atoi(f[1])
		if err != nil || id <= 1 {
			continue
		}
		switch {
		case f[0] == "+" && len(f) == 3:
			if st, err := strconv.ParseUint(f[2], 10, 64); err == nil {
				live[id] = st
			}
		case f[0] == "-":
			delete(live, id)
		}
	}
	// The driver is gone.
	gs := make([]Group, 0, len(live))
	for id, st := range live {
		gs = append(gs, Group{ID: id, Start: st})
	}
	if len(gs) > 0 {
		if _, err := KillGroups(gs, 30*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, "switchyard reaper:", err)
			return 1
		}
	}
	return 0
}

// setName sets this process's name (/proc/self/comm, 15 bytes at most),
// as ps shows it.
func setName(name string) {
	b := append([]byte(name), 0)
	const prSetName = 15
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetName, uintptr(unsafe.Pointer(&b[0])), 0)
}

// reaperClient is the driver's side: the registry and the pipe to the
// reaper.
type reaperClient struct {
	mu     sync.Mutex
	w      *os.File       // nil until started, or after the reaper died
	pid    int            // the reaper's (tests)
	gone   chan struct{}  // closed once the reaper has been reaped
	live   map[int]uint64 // the registered groups, to tell a new reaper
	broken bool           // the reaper cannot run here: steps go without one
}

var reaper = &reaperClient{live: map[int]uint64{}}

// add registers a group the driver just started.
func (c *reaperClient) add(g Group) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live[g.ID] = g.Start
	c.send(fmt.Sprintf("+ %d %d\n", g.ID, g.Start))
}

// remove unregisters a group the driver has killed and reaped.
func (c *reaperClient) remove(id int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.live[id]; !ok {
		return
	}
	delete(c.live, id)
	c.send(fmt.Sprintf("- %d\n", id))
}

// send writes line to the reaper, starting one (and telling it every live
// group) when there is none or the last one died. Callers hold mu.
func (c *reaperClient) send(line string) {
	if c.w != nil {
		select {
		case <-c.gone:
			// Reaped. A write could still have succeeded: a killed
			// reaper's main thread shows as a zombie while its other
			// threads still hold the pipe, and what is written then is
			// lost; the groups are told again to the next reaper.
		default:
			if _, err := c.w.WriteString(line); err == nil {
				return
			}
		}
		c.w.Close() // the reaper died: start another
		c.w = nil
	}
	if c.broken || !c.start() {
		return
	}
	var b strings.Builder
	for id, st := range c.live {
		fmt.Fprintf(&b, "+ %d %d\n", id, st)
	}
	if _, err := c.w.WriteString(b.String()); err != nil {
		c.w.Close()
		c.w = nil
	}
}

// start starts a reaper. Callers hold mu.
func (c *reaperClient) start() bool {
	fi, err := os.Stat("/proc/self/exe")
	if err != nil || !fi.Mode().IsRegular() {
		c.broken = true
		return false
	}
	r, w, err := os.Pipe()
	if err != nil {
		return false
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args[0] = "switchyard-reap"
	// Only its own switch: the reaper lives as long as nodes run, and a
	// node could read its environment (/proc/PID/environ), which must not
	// hold the server's keys.
	cmd.Env = []string{reaperEnv + "=1"}
	cmd.Stdin = r // stdout and stderr: /dev/null (it holds no pipe of ours)
	// Its own group: a signal to the driver's group (a ^C) does not reach
	// it. No parent-death signal: it must outlive the driver to do its job.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		c.broken = true
		return false
	}
	gone := make(chan struct{})
	go func() { _ = cmd.Wait(); close(gone) }() // it exits when the pipe closes: reap it
	c.w, c.pid, c.gone = w, cmd.Process.Pid, gone
	return true
}

// ready makes sure a reaper runs before a step starts, so that registering
// the step is one write and the step is held (see hold_linux.go) no longer
// than that: when the last reaper had died, the next registration started
// a new one first, a fork and exec. A blank line is the probe: the reaper
// ignores it, and a dead reaper's pipe refuses it.
func (c *reaperClient) ready() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.send("\n")
}

// readyReaper: see reaperClient.ready.
func readyReaper() { reaper.ready() }

func registerGroup(g Group) { reaper.add(g) }

func unregisterGroup(id int) { reaper.remove(id) }
