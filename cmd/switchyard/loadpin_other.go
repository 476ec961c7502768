//go:build !linux

package main

import (
	"errors"
	"os/exec"
)

// startPinned starts cmd; pinning to CPUs needs Linux.
func startPinned(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) > 0 {
		return errors.New("pinning to CPUs (--cores, --server-cpus, --fake-cpus) needs Linux; use GOMAXPROCS")
	}
	return cmd.Start()
}
