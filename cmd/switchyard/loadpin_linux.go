package main

import (
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// startPinned starts cmd on the given CPUs (none: wherever this process
// runs). A child inherits the CPU mask of the thread that forks it, so the
// fork happens on a locked thread given that mask; the thread is thrown
// away afterwards (its goroutine exits still locked) rather than restored.
// Pinning at the start means every thread the child's runtime makes is on
// those CPUs, which taskset -p on a running Go process would not achieve.
func startPinned(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			errc <- fmt.Errorf("pin to CPUs %v: %w", cpus, err)
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}
