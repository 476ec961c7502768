//go:build !linux

package proc

import "fmt"

// probeSandbox: no sandbox outside Linux.
func probeSandbox(*Sandbox) error {
	return fmt.Errorf("%w: it needs Linux's user and mount namespaces", ErrNoSandbox)
}
