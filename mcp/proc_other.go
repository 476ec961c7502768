//go:build !linux

package mcp

import (
	"os/exec"
	"syscall"
)

// sysProcAttr: no parent-death signal outside Linux; a stdio server may
// outlive a killed Switchyard there.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func startLocked(cmd *exec.Cmd, waitCh chan<- error) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { waitCh <- cmd.Wait() }()
	return nil
}
