package proc

// The start gate: a step runs nothing before its group is registered with
// the reaper.
//
// A group used to register right after its leader was forked. Nothing held
// the leader back meanwhile, so on a loaded machine a driver descheduled
// between the fork and the registration had its step's bash exec, run its
// script and fork children; a driver SIGKILLed then left those children
// running (bash itself died of its parent-death signal). faults'
// TestKilledRunTakesItsStepGroup failed about once in 50 runs with six
// busy loops on two cores (hardening issue 23, item 14).
//
// So StartLocked forks the binary itself (/proc/self/exe) with gateEnv
// naming an inherited pipe, the real command's path and its argv. package
// proc's init turns that process into the gate before anything else of
// the program runs: it blocks reading the pipe. The driver registers the
// gate's pid and start time (exec keeps both, and the process group) and
// only then writes one byte; the gate closes the pipe, drops gateEnv from
// the environment and execs the real command in place. A driver that dies
// before writing closes the pipe (and the parent-death signal kills the
// gate anyway): the gate exits having run nothing.
//
// The cost is one exec of this binary per step, before the step's own.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// gateEnv, set to the number of an inherited file descriptor, makes the
// binary a start gate (see above). Its argv is [label, path, argv...].
const gateEnv = "SWITCHYARD_STEP_GATE"

// gateExit is the gate's status when its driver died before releasing it:
// the command never ran.
const gateExit = 125

// gate waits on fd, then execs path with argv and env (gateEnv removed).
// It returns only when it cannot: the exit status to end with.
func gate(fd int, path string, argv []string) int {
	var b [1]byte
	for {
		n, err := syscall.Read(fd, b[:])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if n != 1 {
			return gateExit // EOF or an error: the driver is gone
		}
		break
	}
	_ = syscall.Close(fd)
	// In a sandbox (sandbox_linux.go) it is built now, then the command
	// runs in it.
	return execIn(path, argv)
}

// resolvedPath is the file cmd execs: a relative Path is Dir's.
func resolvedPath(cmd *exec.Cmd) string {
	if !filepath.IsAbs(cmd.Path) && cmd.Dir != "" {
		return filepath.Join(cmd.Dir, cmd.Path)
	}
	return cmd.Path
}

// runGate is init's: the gate when this process is one (or traceWorks'
// probe, which exits at once).
func runGate() {
	if os.Getenv(traceProbeEnv) == "1" {
		os.Exit(0)
	}
	v, ok := os.LookupEnv(gateEnv)
	if !ok {
		return
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 || len(os.Args) < 3 {
		fmt.Fprintf(os.Stderr, "switchyard: bad start gate %q %q\n", v, os.Args)
		os.Exit(gateExit)
	}
	os.Exit(gate(fd, os.Args[1], os.Args[2:]))
}

// canGate reports whether this binary can be its own start gate:
// /proc/self/exe is there and a regular file.
var canGate = sync.OnceValue(func() bool {
	fi, err := os.Stat("/proc/self/exe")
	return err == nil && fi.Mode().IsRegular()
})

// startable reports whether cmd can be started through this binary (the
// start gate, the sandbox): it is there, and it names an executable file
// that Start would run. A command that cannot start is left as it is, so
// that Start reports the error as it always did instead of a gate or
// sandbox exiting 127.
func startable(cmd *exec.Cmd) bool {
	if !canGate() || cmd.Err != nil || cmd.Path == "" {
		return false
	}
	path := resolvedPath(cmd)
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && syscall.Access(path, 1) == nil
}

// gated rewrites cmd to start behind a gate and returns the write end of
// the gate's pipe (nil, untouched cmd when it cannot gate: see below) and
// the read end, which the caller closes once the child is started. A
// command that cannot start (not found, not executable, a bad lookup) is
// left ungated, so that Start reports the error as it always did instead
// of a gate exiting 127.
func gated(cmd *exec.Cmd) (r, w *os.File, err error) {
	if !startable(cmd) {
		return nil, nil, nil
	}
	r, w, err = os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	fd := 3 + len(cmd.ExtraFiles)
	env := append(cmd.Environ(), gateEnv+"="+strconv.Itoa(fd))
	args := append([]string{"switchyard-gate", cmd.Path}, cmd.Args...)
	cmd.ExtraFiles = append(cmd.ExtraFiles, r)
	cmd.Env = env
	cmd.Path = "/proc/self/exe"
	cmd.Args = args
	return r, w, nil
}
