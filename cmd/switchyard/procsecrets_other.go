//go:build !linux

package main

// setNonDumpable has no equivalent here: nothing to do.
func setNonDumpable() error { return nil }

// scrubProc: other systems have no /proc/PID/environ of this kind.
func scrubProc([]secretFlag) error { return nil }
