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
	sent  bool // an llm_delta was logged during the current model call
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
	if d := c.x.Engine().firstDelta; d > 0 {
		wait = d
	}
	if !c.last.IsZero() {
		wait = deltaInterval - time.Since(c.last)
	}
	if wait <= 0 {
		c.flushLocked()
		return
	}
	c.timer = time.AfterFunc(wait, c.flush) // also flushes the tail if the stream pauses
}

// settle ends a model call. A reply that arrived whole before its first
// llm_delta was due (firstDeltaDelay) is not logged as a delta at all: the
// llm_response or llm_turn logged next carries the same text, which is
// what a watcher shows either way, and the log is spared a row that
// repeats it (a quarter of an instant agent step's rows). Anything else
// (a call that failed, text the final answer does not repeat) is flushed
// as before.
func (c *coalescer) settle(final string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok && !c.sent && c.buf.Len() > 0 && c.buf.String() == final {
		if c.timer != nil {
			c.timer.Stop()
			c.timer = nil
		}
		c.buf.Reset()
	} else {
		c.flushLocked()
	}
	c.sent = false
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
	c.sent = true
}
