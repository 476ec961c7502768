//go:build linux

package mcp

import (
	"os/exec"
	"runtime"
	"syscall"
)

// sysProcAttr puts a stdio server in its own process group (so Close can
// kill it with everything it started) and has the kernel SIGKILL it when
// Switchyard dies, as internal/proc does for bash and script nodes.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// startLocked starts cmd and reaps it into waitCh on one goroutine locked
// to its OS thread for the child's whole life: Pdeathsig fires when the
// thread that forked the child exits, and the Go runtime retires a thread
// when a goroutine exits while locked to it (see internal/proc).
func startLocked(cmd *exec.Cmd, waitCh chan<- error) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waitCh <- cmd.Wait()
	}()
	return <-started
}
