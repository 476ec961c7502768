//go:build linux

package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// setNonDumpable refuses /proc/PID/environ, mem and fd, and ptrace, to
// the user's other processes (nodes included).
func setNonDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err)
	}
	return nil
}

// scrubProc overwrites the secrets in the argument and environment blocks
// the kernel shows as /proc/PID/cmdline and environ, through /proc/self/mem
// (the blocks' addresses are in /proc/self/stat).
func scrubProc(flags []secretFlag) error {
	st, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return err
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: field 3 (state) first; arg_start..env_end are fields 48-51.
	i := strings.LastIndexByte(string(st), ')')
	f := strings.Fields(string(st[i+1:]))
	if len(f) < 49 {
		return fmt.Errorf("/proc/self/stat has %d fields: no argument and environment addresses", len(f)+2)
	}
	var addr [4]int64
	for k := range addr {
		if addr[k], err = strconv.ParseInt(f[45+k], 10, 64); err != nil {
			return fmt.Errorf("/proc/self/stat field %d: %w", 48+k, err)
		}
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	blocks := []struct {
		start, end int64
		spans      func([]byte) []span
	}{
		{addr[0], addr[1], func(b []byte) []span { return argSpans(b, flags) }},
		{addr[2], addr[3], envSpans},
	}
	for _, b := range blocks {
		if b.end <= b.start || b.end-b.start > 1<<24 {
			continue
		}
		buf := make([]byte, b.end-b.start)
		if _, err := mem.ReadAt(buf, b.start); err != nil {
			return fmt.Errorf("read /proc/self/mem: %w", err)
		}
		for _, s := range b.spans(buf) {
			if _, err := mem.WriteAt(masked(s.n), b.start+int64(s.off)); err != nil {
				return fmt.Errorf("write /proc/self/mem: %w", err)
			}
		}
	}
	return nil
}
