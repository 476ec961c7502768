//go:build !linux

package proc

import "fmt"

// probeSandbox: no sandbox outside Linux.
func probeSandbox(*Sandbox) error {
	return fmt.Errorf("%w: it needs Linux's user and mount namespaces", ErrNoSandbox)
}

// folderIDs: nothing to record outside Linux.
func folderIDs([]string) map[string][2]uint64 { return nil }
