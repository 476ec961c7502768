package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// SysProcAttr puts the child in its own process group and has the kernel
// SIGKILL it when its parent dies, so a SIGKILLed driver does not leave
// its steps running beside the process that takes its runs over.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// StartLocked starts cmd and reaps it into waitCh, on one goroutine locked
// to its OS thread for the child's whole life. Why: Pdeathsig fires when
// the thread that forked the child exits, not the process, and the Go
// runtime retires a thread when a goroutine exits while locked to it; a
// thread held by this goroutine until the child is reaped cannot be
// retired under a live child.
//
// The child's process group (its pid) is registered with the reaper
// before the command runs: the child is held until then, stopped by
// ptrace at its exec or behind a start gate (hold_linux.go,
// gate_linux.go). Call UntrackGroup(pid) once the group is killed and
// reaped. A group of unknown start time (0: see below) is not registered.
//
// It returns the child's start time (see StartTime), read before the child
// can be reaped: a child that already exited is a zombie until Wait, and
// its pid names it alone until then. (Read after the start, a fast command
// such as `true` was often reaped already: it went unregistered with the
// reaper and without a process_start event, one start in nine.) 0 when it
// cannot be read.
func StartLocked(cmd *exec.Cmd, waitCh chan<- error) (uint64, error) {
	return StartLockedExposing(cmd, waitCh, nil)
}

// StartLockedExposing is StartLocked for a command that needs the folders
// of expose, besides its Dir, when it starts in the sandbox (SetSandbox):
// those inside a hidden folder are mounted back for it.
func StartLockedExposing(cmd *exec.Cmd, waitCh chan<- error, expose []string) (uint64, error) {
	readyReaper()
	how := holdFor(cmd)
	var gateR, gateW *os.File
	if how == holdGate {
		var err error
		if gateR, gateW, err = gated(cmd); err != nil {
			return 0, err
		}
	}
	if gateR != nil || startable(cmd) {
		if err := sandboxed(cmd, expose, gateR != nil); err != nil {
			if gateR != nil {
				gateR.Close()
				gateW.Close()
			}
			return 0, fmt.Errorf("sandbox: %w", err)
		}
	}
	type result struct {
		start   uint64
		stopped bool // held by ptrace: detach once registered
		err     error
	}
	started := make(chan result, 1)
	registered := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if how == holdTrace {
			trace(cmd)
		}
		if err := cmd.Start(); err != nil {
			started <- result{err: err}
			return
		}
		pid := cmd.Process.Pid
		stopped := false
		if how == holdTrace {
			// Stopped, or not known to be dead: the detach below lets it
			// go (and fails harmlessly on a child that is not stopped).
			alive, err := awaitExecStop(pid)
			stopped = alive || err != nil
		}
		st, _ := childStartTime(pid)
		started <- result{start: st, stopped: stopped}
		if stopped {
			// Only this thread, the tracer, may let it go.
			<-registered
			_ = syscall.PtraceDetach(pid)
		}
		waitCh <- cmd.Wait()
	}()
	r := <-started
	if gateR != nil {
		gateR.Close() // the child holds its own copy
	}
	if r.err != nil {
		if gateW != nil {
			gateW.Close()
		}
		return 0, r.err
	}
	if startedHook != nil {
		startedHook(cmd.Process.Pid)
	}
	if r.start != 0 {
		registerGroup(Group{ID: cmd.Process.Pid, Start: r.start})
	}
	// Registered: let the command run.
	close(registered)
	if gateW != nil {
		// A gate that died meanwhile refuses the byte; its wait reports
		// how it died.
		_, _ = gateW.Write([]byte{1})
		gateW.Close()
	}
	return r.start, nil
}

// startedHook, when set (tests), runs between a child's start and its
// registration: a driver descheduled there, or killed.
var startedHook func(pid int)

// UntrackGroup tells the reaper that process group pgid, which
// StartLocked started, is killed and reaped: no longer its to kill.
func UntrackGroup(pgid int) { unregisterGroup(pgid) }

// childStartTime is StartTime of a child not yet reaped, zombie or not.
func childStartTime(pid int) (uint64, error) {
	_, start, err := readStat(strconv.Itoa(pid), true)
	return start, err
}

// StartTime is when process pid started, in clock ticks since boot (field
// 22 of /proc/PID/stat): with the pid, it names one process for good, as
// pids are reused. ErrNoProcess if pid does not exist.
func StartTime(pid int) (uint64, error) {
	_, start, err := statOf(strconv.Itoa(pid))
	return start, err
}

// ErrNoProcess: no such process.
var ErrNoProcess = errors.New("no such process")

// statOf reads the process group and start time of /proc/<pid>/stat. A
// zombie counts as gone (ErrNoProcess): it runs nothing, and whoever
// reaps it is not ours to wait for.
func statOf(pid string) (pgrp int, start uint64, err error) { return readStat(pid, false) }

// readStat is statOf, for a zombie too when zombies is set.
func readStat(pid string, zombies bool) (pgrp int, start uint64, err error) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return 0, 0, ErrNoProcess
		}
		return 0, 0, err
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields that follow start after its last ')'.
	k := bytes.LastIndexByte(b, ')')
	if k < 0 {
		return 0, 0, fmt.Errorf("parse /proc/%s/stat", pid)
	}
	f := bytes.Fields(b[k+1:])
	if len(f) < 20 { // f[0] is field 3 (state): field 5 is f[2], 22 is f[19]
		return 0, 0, fmt.Errorf("parse /proc/%s/stat", pid)
	}
	if string(f[0]) == "X" || (string(f[0]) == "Z" && !zombies) {
		return 0, 0, ErrNoProcess
	}
	pgrp, err = strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, fmt.Errorf("parse /proc/%s/stat: %w", pid, err)
	}
	start, err = strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("parse /proc/%s/stat: %w", pid, err)
	}
	return pgrp, start, nil
}

// Group names a process group Run started: its id and its leader's start
// time, as OnStart heard them.
type Group struct {
	ID    int    `json:"pgid"`
	Start uint64 `json:"start"`
}

// groups maps the process groups of the live processes to the start times
// of their members.
func groups() map[int][]uint64 {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	m := map[int][]uint64{}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if pg, st, err := statOf(e.Name()); err == nil {
			m[pg] = append(m[pg], st)
		}
	}
	return m
}

// alive lists the gs that still have members, telling them from reused
// ids: a leader alive with another start time is a reused pid; with the
// leader gone, its group id cannot be reused while any member lives, so
// members that started no earlier than the leader are its own.
func alive(gs []Group) []Group {
	m := groups()
	var out []Group
	for _, g := range gs {
		if g.ID <= 1 {
			continue
		}
		if _, st, err := statOf(strconv.Itoa(g.ID)); err == nil && st != g.Start {
			continue // the pid was reused: not our group
		}
		for _, st := range m[g.ID] {
			if st >= g.Start {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// KillGroups kills what is left of process groups that Run started in a
// process that has since died, and waits up to wait for them to be gone.
// Groups that are gone, or whose id now names someone else's, are left
// alone. It returns the groups it killed.
func KillGroups(gs []Group, wait time.Duration) ([]Group, error) {
	left := alive(gs)
	if len(left) == 0 {
		return nil, nil
	}
	for _, g := range left {
		if err := syscall.Kill(-g.ID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return left, fmt.Errorf("kill process group %d: %w", g.ID, err)
		}
	}
	deadline := time.Now().Add(wait)
	for len(alive(left)) > 0 {
		if time.Now().After(deadline) {
			return left, fmt.Errorf("process groups %v still alive %s after SIGKILL", left, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return left, nil
}
