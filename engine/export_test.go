package engine

import "time"

// SetCancelWait shortens how long Cancel waits for another process to act
// on a cancel request; the returned func restores it.
func SetCancelWait(d time.Duration) (restore func()) {
	old := cancelWait
	cancelWait = d
	return func() { cancelWait = old }
}
