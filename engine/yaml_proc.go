package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Limits of bash and script nodes.
const (
	// DefaultProcTimeout bounds a bash or script node without `timeout:`.
	DefaultProcTimeout = 120 * time.Second
	// procTermGrace is how long a process group gets between SIGTERM and SIGKILL.
	procTermGrace = 2 * time.Second
	// maxProcOutput bounds the stdout a node keeps as its output.
	maxProcOutput = 64 << 20
	// maxOutputEvents bounds the bytes of output events one process emits;
	// the node's output still keeps everything.
	maxOutputEvents = 256 << 10
	// maxStderrKept bounds the stderr quoted in errors and warnings.
	maxStderrKept = 16 << 10
)

// ProcError is a bash or script process that did not exit 0.
type ProcError struct {
	Timeout  time.Duration // > 0: killed because the node's timeout passed
	ExitCode int           // -1 when killed by a signal
	Signal   string        // the signal that ended it, if any
	Stderr   string        // tail of its stderr
}

func (e *ProcError) Error() string {
	var msg string
	switch {
	case e.Timeout > 0:
		msg = fmt.Sprintf("timed out after %s (process group killed)", e.Timeout)
	case e.Signal != "":
		msg = "killed by signal " + e.Signal
	default:
		msg = fmt.Sprintf("exit status %d", e.ExitCode)
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

// Transient reports failures worth retrying with on_error "transient":
// timeouts and kills by a signal, not ordinary non-zero exits.
func (e *ProcError) Transient() bool { return e.Timeout > 0 || e.Signal != "" }

// procSpec is one subprocess of a node.
type procSpec struct {
	name    string
	args    []string
	dir     string
	env     []string
	timeout time.Duration
	// stream names stdout in output events ("stdout" by default; until_bash
	// and dependency installs use their own names)
	stream string
}

// runProc runs a subprocess in its own process group and returns its
// stdout (one trailing newline removed) and stderr. The whole group is
// killed (SIGTERM, then SIGKILL) on timeout or when ctx ends, and whatever
// the leader leaves behind in its group is killed when it exits.
func runProc(ctx context.Context, x *Exec, ps procSpec) (string, string, error) {
	cmd := exec.Command(ps.name, ps.args...)
	cmd.Dir = ps.dir
	cmd.Env = ps.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	outR, outW, err := os.Pipe()
	if err != nil {
		return "", "", err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return "", "", err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	if err := ctx.Err(); err != nil {
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		return "", "", err
	}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return "", "", permanent(fmt.Errorf("%s: executable not found in PATH", ps.name))
		}
		return "", "", fmt.Errorf("start %s: %w", ps.name, err)
	}
	pid := cmd.Process.Pid
	budget := &atomic.Int64{}
	budget.Store(maxOutputEvents)
	stream := ps.stream
	if stream == "" {
		stream = "stdout"
	}
	var stdout, stderr capture
	stdout.limit = maxProcOutput
	stderr.limit = maxProcOutput
	outEm := newStreamEmitter(x, stream, budget)
	errEm := newStreamEmitter(x, "stderr", budget)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); pump(outR, &stdout, outEm) }()
	go func() { defer readers.Done(); pump(errR, &stderr, errEm) }()

	waitCh := make(chan error, 1)
	go func() { waitCh <- cmd.Wait() }()
	var timeoutC <-chan time.Time
	if ps.timeout > 0 {
		t := time.NewTimer(ps.timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	var waitErr error
	timedOut, cancelled := false, false
	select {
	case waitErr = <-waitCh:
	case <-timeoutC:
		timedOut = true
		waitErr = terminateGroup(pid, waitCh)
	case <-ctx.Done():
		cancelled = true
		waitErr = terminateGroup(pid, waitCh)
	}
	// The leader is gone: stop what it left running in its group, so no
	// background child outlives the node or holds its pipes open.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(2 * time.Second):
		// A process that left the group still holds a pipe: stop reading.
		outR.Close()
		errR.Close()
		<-drained
	}
	outR.Close()
	errR.Close()
	outEm.close()
	errEm.close()

	out := strings.TrimSuffix(stdout.String(), "\n")
	errText := stderr.String()
	switch {
	case cancelled:
		return out, errText, ctx.Err()
	case timedOut:
		return out, errText, &ProcError{Timeout: ps.timeout, ExitCode: -1, Stderr: tail(errText, maxStderrKept)}
	}
	if stdout.overflow {
		return "", errText, permanent(fmt.Errorf("output exceeds %d MiB", maxProcOutput>>20))
	}
	if waitErr != nil {
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) {
			pe := &ProcError{ExitCode: ee.ExitCode(), Stderr: tail(errText, maxStderrKept)}
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				pe.Signal = ws.Signal().String()
			}
			return out, errText, pe
		}
		return out, errText, waitErr
	}
	return out, errText, nil
}

// terminateGroup asks the process group to stop, then kills it.
func terminateGroup(pid int, waitCh <-chan error) error {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	t := time.NewTimer(procTermGrace)
	defer t.Stop()
	select {
	case err := <-waitCh:
		return err
	case <-t.C:
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return <-waitCh
	}
}

// capture keeps what a process writes, up to limit bytes.
type capture struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	limit    int
	overflow bool
}

func (c *capture) Write(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf.Len()+len(p) > c.limit {
		c.overflow = true
		p = p[:max(0, c.limit-c.buf.Len())]
	}
	c.buf.Write(p)
}

func (c *capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

func pump(r io.Reader, c *capture, em *streamEmitter) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.Write(buf[:n])
			em.write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// streamEmitter turns a process stream into output events: whole lines,
// batched like llm_delta (at most ~10 events a second), within a byte
// budget shared by the node's streams.
type streamEmitter struct {
	x       *Exec
	stream  string
	budget  *atomic.Int64
	mu      sync.Mutex
	lines   []byte // whole lines not yet emitted
	partial []byte // a line still being written
	last    time.Time
	timer   *time.Timer
	closed  bool
}

func newStreamEmitter(x *Exec, stream string, budget *atomic.Int64) *streamEmitter {
	return &streamEmitter{x: x, stream: stream, budget: budget}
}

func (s *streamEmitter) write(p []byte) {
	if s.x == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.partial = append(s.partial, p...)
	if k := bytes.LastIndexByte(s.partial, '\n'); k >= 0 {
		s.lines = append(s.lines, s.partial[:k+1]...)
		s.partial = append(s.partial[:0], s.partial[k+1:]...)
	}
	if len(s.partial) > 64<<10 { // a very long line: emit what we have
		s.lines = append(s.lines, s.partial...)
		s.partial = s.partial[:0]
	}
	if len(s.lines) == 0 {
		return
	}
	if time.Since(s.last) >= deltaInterval {
		s.flushLocked()
		return
	}
	if s.timer == nil {
		s.timer = time.AfterFunc(deltaInterval, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.timer = nil
			s.flushLocked()
		})
	}
}

func (s *streamEmitter) flushLocked() {
	if len(s.lines) == 0 {
		return
	}
	text := s.lines
	s.lines = nil
	s.last = time.Now()
	left := s.budget.Add(-int64(len(text)))
	if left+int64(len(text)) <= 0 {
		return // budget already spent; the warning went out once
	}
	if left < 0 {
		text = text[:int64(len(text))+left]
		s.x.Emit(EvOutput, string(text), map[string]any{"stream": s.stream})
		s.x.Emit(EvWarning, fmt.Sprintf("output beyond %d KiB is not streamed to the log (the node's output keeps all of stdout)",
			maxOutputEvents>>10), nil)
		return
	}
	s.x.Emit(EvOutput, string(text), map[string]any{"stream": s.stream})
}

func (s *streamEmitter) close() {
	if s.x == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.lines = append(s.lines, s.partial...)
	s.partial = nil
	s.flushLocked()
	s.closed = true
}
