//go:build !linux

package proc

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// ErrNoProcess: no such process.
var ErrNoProcess = errors.New("no such process")

// SysProcAttr: no parent-death signal outside Linux; steps may outlive a
// killed driver there.
func SysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// StartLocked starts cmd and reaps it into waitCh; the start time is not
// known outside Linux (0).
func StartLocked(cmd *exec.Cmd, waitCh chan<- error) (uint64, error) {
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	go func() { waitCh <- cmd.Wait() }()
	return 0, nil
}

// StartLockedExposing is StartLocked: there is no sandbox outside Linux.
func StartLockedExposing(cmd *exec.Cmd, waitCh chan<- error, _ []string) (uint64, error) {
	return StartLocked(cmd, waitCh)
}

// StartTime is not known outside Linux.
func StartTime(int) (uint64, error) { return 0, errors.ErrUnsupported }

// Group names a process group Run started.
type Group struct {
	ID    int    `json:"pgid"`
	Start uint64 `json:"start"`
}

// KillGroups does nothing outside Linux: a group cannot be told from a
// reused pid there.
func KillGroups([]Group, time.Duration) ([]Group, error) { return nil, nil }

// No reaper outside Linux: steps may outlive a killed driver there.
func registerGroup(Group) {}

func unregisterGroup(int) {}

// UntrackGroup: no reaper outside Linux.
func UntrackGroup(int) {}
