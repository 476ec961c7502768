package engine

import (
	"strings"
	"sync"
	"time"
)

// coalescer batches streamed text into at most ~10 llm_delta events per
// second per node, so a fast stream does not flood the log.
type coalescer struct {
	x     *Exec
	mu    sync.Mutex
	buf   strings.Builder
	last  time.Time
	timer *time.Timer
}

const (
	deltaInterval = 100 * time.Millisecond
	// firstDeltaDelay holds the first text back briefly: too short to see,
	// long enough that a reply which streams in faster (a short answer, a
	// cached one) makes one llm_delta event instead of two.
	firstDeltaDelay = 20 * time.Millisecond
)

func newCoalescer(x *Exec) *coalescer { return &coalescer{x: x} }

func (c *coalescer) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.WriteString(s)
	if c.timer != nil {
		return // a flush is due
	}
	wait := firstDeltaDelay
	if !c.last.IsZero() {
		wait = deltaInterval - time.Since(c.last)
	}
	if wait <= 0 {
		c.flushLocked()
		return
	}
	c.timer = time.AfterFunc(wait, c.flush) // also flushes the tail if the stream pauses
}

func (c *coalescer) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked()
}

func (c *coalescer) flushLocked() {
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if c.buf.Len() == 0 {
		return
	}
	c.x.Emit(EvLLMDelta, c.buf.String(), nil)
	c.buf.Reset()
	c.last = time.Now()
}
