package proc

// How a step is held until its group is registered with the reaper (see
// gate_linux.go for why it must be).
//
// The cheap way is a ptrace stop: the child is started with
// PTRACE_TRACEME, so the kernel stops it right after its exec, before the
// command's first instruction. The driver registers the group, then
// detaches (from the thread that forked it, which StartLocked holds); the
// command runs on untraced. A driver that dies while its child is stopped
// takes it along: the child's parent-death signal is a SIGKILL, delivered
// before the command can run. The stop costs microseconds where the start
// gate costs an exec of this binary (3–4 ms on a 2-core machine).
//
// Where ptrace is refused (Yama's ptrace_scope 2 or 3, a seccomp profile
// without it, a driver itself being traced), and for a set-user-ID or
// set-group-ID leader or one with file capabilities (a traced exec drops
// them), the start gate holds the child instead. A probe at the first
// step tells which works.

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hold is how a child waits for its registration.
type hold int

const (
	holdNone  hold = iota // not held: no way to hold it here, or it cannot start anyway
	holdTrace             // stopped by ptrace at its exec
	holdGate              // behind the start gate
)

// holdMode, when set (tests), replaces the choice below.
var holdMode hold = -1

// holdFor chooses how cmd's child is held.
func holdFor(cmd *exec.Cmd) hold {
	if holdMode >= 0 {
		return holdMode
	}
	if cmd.Err != nil || cmd.Path == "" {
		return holdNone
	}
	// 64-bit only: siginfoStatus knows that layout.
	if unsafe.Sizeof(uintptr(0)) != 8 || privileged(cmd) || !traceWorks() {
		return holdGate
	}
	return holdTrace
}

// privileged reports whether cmd's program gains privileges on exec
// (set-user-ID, set-group-ID, file capabilities), which a traced exec
// would drop.
func privileged(cmd *exec.Cmd) bool {
	path := resolvedPath(cmd)
	fi, err := os.Stat(path)
	if err != nil {
		return false // Start reports it
	}
	if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
		return true
	}
	n, err := unix.Getxattr(path, "security.capability", nil)
	return err == nil && n > 0
}

// traceWorks reports whether a child can be held by ptrace here, by
// holding one: this binary, which exits at once (traceProbeEnv).
var traceWorks = sync.OnceValue(func() bool {
	if !canGate() {
		return false
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = []string{traceProbeEnv + "=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	ok := make(chan bool, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ok <- func() bool {
			trace(cmd)
			if err := cmd.Start(); err != nil {
				return false
			}
			defer func() { _ = cmd.Wait() }()
			stopped, err := awaitExecStop(cmd.Process.Pid)
			if err != nil || !stopped {
				_ = cmd.Process.Kill()
				return false
			}
			if err := syscall.PtraceDetach(cmd.Process.Pid); err != nil {
				_ = cmd.Process.Kill()
				return false
			}
			return true
		}()
	}()
	return <-ok
})

// traceProbeEnv makes the binary exit at once (traceWorks' probe).
const traceProbeEnv = "SWITCHYARD_TRACE_PROBE"

// trace sets cmd to start traced (it stops after its exec). The caller
// runs on a locked OS thread: only the thread that forked the child may
// detach it.
func trace(cmd *exec.Cmd) {
	attr := syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		attr = *cmd.SysProcAttr
	}
	attr.Ptrace = true
	cmd.SysProcAttr = &attr
}

// awaitExecStop waits until the traced child pid stops at its exec (true)
// or dies first (false, left for Wait to reap). A signal that reached it
// first is delivered and the wait goes on.
func awaitExecStop(pid int) (bool, error) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WSTOPPED|unix.WNOWAIT|unix.WALL, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return false, err
		}
		if info.Code != cldTrapped {
			return false, nil // exited or killed: Wait reaps it
		}
		sig := syscall.Signal(siginfoStatus(&info))
		if sig == syscall.SIGTRAP {
			return true, nil
		}
		if err := syscall.PtraceCont(pid, int(sig)); err != nil && !errors.Is(err, syscall.ESRCH) {
			return false, err
		}
	}
}

// cldTrapped is si_code CLD_TRAPPED: a traced child stopped
// (<asm-generic/siginfo.h>).
const cldTrapped = 4

// siginfoStatus is si_status of a SIGCHLD siginfo: after si_pid and
// si_uid in the union that follows the three leading ints.
func siginfoStatus(info *unix.Siginfo) int32 {
	p := unsafe.Pointer(info)
	off := unsafe.Sizeof(*info) - 112 // where the union starts
	return *(*int32)(unsafe.Add(p, off+8))
}
