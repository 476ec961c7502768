package engine

import (
	"context"
	"testing"
	"time"
)

// TestSaveDeadlineShared: checkpoints share one deadline context with at
// least two thirds of saveTimeout left; one with less is replaced (and
// cancelled); after release each gets its own, and the shared one is
// cancelled so its timer does not outlive the runner.
func TestSaveDeadlineShared(t *testing.T) {
	t.Parallel()
	var d saveDeadline
	c1, done1 := d.ctx()
	done1()
	c2, done2 := d.ctx()
	done2()
	if c1 != c2 || c1.Err() != nil {
		t.Fatalf("two checkpoints in a row: contexts %p and %p (err %v), want one shared and live", c1, c2, c1.Err())
	}
	if dl, ok := c1.Deadline(); !ok || time.Until(dl) < saveTimeout*2/3 || time.Until(dl) > saveTimeout {
		t.Fatalf("deadline %v from now, want between 2/3 of %v and it", time.Until(dl), saveTimeout)
	}
	d.mu.Lock()
	d.until = time.Now().Add(saveTimeout / 2) // as if 15 s had passed
	d.mu.Unlock()
	c3, done3 := d.ctx()
	done3()
	if c3 == c1 || c1.Err() != context.Canceled || c3.Err() != nil {
		t.Fatalf("with less than 2/3 left: new %v (old err %v, new err %v), want a new one and the old cancelled", c3 != c1, c1.Err(), c3.Err())
	}
	d.release()
	if c3.Err() != context.Canceled {
		t.Fatalf("after release the shared context: %v, want cancelled", c3.Err())
	}
	c4, done4 := d.ctx()
	if c4 == c3 || c4.Err() != nil {
		t.Fatalf("after release: %v, %v; want a fresh live context", c4 == c3, c4.Err())
	}
	done4()
	if c4.Err() != context.Canceled {
		t.Fatalf("after release, a checkpoint's own context outlives it: %v", c4.Err())
	}
}
