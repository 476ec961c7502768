// Package proc runs the subprocesses of bash and script nodes: each in its
// own process group, killed as a group on timeout or cancellation (and
// whatever the leader leaves behind in its group when it exits), with
// stdout and stderr captured in full and streamed as batched whole lines.
package proc

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

// Limits of node subprocesses.
const (
	// DefaultTimeout bounds a bash or script node without `timeout:`.
	DefaultTimeout = 120 * time.Second
	// termGrace is how long a process group gets between SIGTERM and SIGKILL.
	termGrace = 2 * time.Second
	// MaxOutput bounds the stdout a node keeps as its output.
	MaxOutput = 64 << 20
	// MaxStreamed bounds the bytes of output one process streams; the
	// captured stdout still keeps everything.
	MaxStreamed = 256 << 10
	// MaxStderrKept bounds the stderr quoted in errors and warnings.
	MaxStderrKept = 16 << 10
	// FlushInterval is the least time between two output callbacks of a
	// stream (like the LLM's delta events: about ten a second).
	FlushInterval = 100 * time.Millisecond
)

var (
	// ErrNotFound: the executable is not in PATH.
	ErrNotFound = errors.New("executable not found in PATH")
	// ErrOutputTooLarge: stdout exceeded MaxOutput.
	ErrOutputTooLarge = fmt.Errorf("output exceeds %d MiB", MaxOutput>>20)
)

// Error is a process that did not exit 0.
type Error struct {
	Timeout  time.Duration // > 0: killed because the timeout passed
	ExitCode int           // -1 when killed by a signal
	Signal   string        // the signal that ended it, if any
	Stderr   string        // tail of its stderr
}

func (e *Error) Error() string {
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
func (e *Error) Transient() bool { return e.Timeout > 0 || e.Signal != "" }

// Output receives streamed text: whole lines of one stream ("stderr", or
// Spec.Stream for stdout). cut is true once, on the call that reached
// MaxStreamed; nothing more is streamed after it.
type Output func(stream, text string, cut bool)

// Spec is one subprocess.
type Spec struct {
	Name    string
	Args    []string
	Dir     string
	Env     []string      // the whole environment: nil is an empty one
	Timeout time.Duration // 0: none
	// Expose lists folders, besides Dir, the process needs when it starts
	// in the sandbox (SetSandbox): its run's $ARTIFACTS_DIR, say.
	Expose []string
	// Stdin, if set, is the process's standard input (else none).
	Stdin io.Reader
	// Stream names stdout in Output calls ("stdout" by default).
	Stream string
	// Output, if set, receives the streams as they are written.
	Output Output
	// OnStart, if set, hears the process group id (the leader's pid) and
	// the leader's start time (see StartTime) right after the start, so a
	// caller can record them and kill the group after its own death. It is
	// not called for a leader that ended before its start time was read.
	OnStart func(pgid int, start uint64)
}

// Run runs a subprocess in its own process group and returns its stdout
// (one trailing newline removed) and stderr. The whole group is killed
// (SIGTERM, then SIGKILL) on timeout or when ctx ends, and whatever the
// leader leaves behind in its group is killed when it exits. On Linux the
// group is also killed the moment this process dies, however it dies (see
// reaper_linux.go). Errors: ctx's
// error when cancelled, *Error for a failed process, ErrNotFound,
// ErrOutputTooLarge.
func Run(ctx context.Context, ps Spec) (string, string, error) {
	cmd := exec.Command(ps.Name, ps.Args...)
	cmd.Dir = ps.Dir
	// Never this process's environment (the server's keys and token):
	// exec inherits it for a nil Env.
	cmd.Env = ps.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.SysProcAttr = SysProcAttr()
	cmd.Stdin = ps.Stdin
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
	waitCh := make(chan error, 1)
	st, err := StartLockedExposing(cmd, waitCh, ps.Expose)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return "", "", fmt.Errorf("%s: %w", ps.Name, ErrNotFound)
		}
		return "", "", fmt.Errorf("start %s: %w", ps.Name, err)
	}
	pid := cmd.Process.Pid
	// No start time: not known here (outside Linux); what the leader left
	// in its group is still killed below.
	if st != 0 {
		// StartLocked registered the group with the reaper, which kills it
		// if this process dies before the step ends (see reaper_linux.go).
		defer unregisterGroup(pid) // after the group is killed below
		if ps.OnStart != nil {
			ps.OnStart(pid, st)
		}
	}
	budget := &atomic.Int64{}
	budget.Store(MaxStreamed)
	stream := ps.Stream
	if stream == "" {
		stream = "stdout"
	}
	var stdout, stderr capture
	stdout.limit = MaxOutput
	stderr.limit = MaxOutput
	outEm := newStreamEmitter(ps.Output, stream, budget)
	errEm := newStreamEmitter(ps.Output, "stderr", budget)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); pump(outR, &stdout, outEm) }()
	go func() { defer readers.Done(); pump(errR, &stderr, errEm) }()

	var timeoutC <-chan time.Time
	if ps.Timeout > 0 {
		t := time.NewTimer(ps.Timeout)
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
		return out, errText, &Error{Timeout: ps.Timeout, ExitCode: -1, Stderr: Tail(errText, MaxStderrKept)}
	}
	if stdout.overflow {
		return "", errText, ErrOutputTooLarge
	}
	if waitErr != nil {
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) {
			pe := &Error{ExitCode: ee.ExitCode(), Stderr: Tail(errText, MaxStderrKept)}
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
	t := time.NewTimer(termGrace)
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

// Tail is the last n bytes of s, marked as cut when it is.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// streamEmitter turns a process stream into output callbacks: whole
// lines, batched (at most one call per FlushInterval), within a byte budget
// shared by the process's streams.
type streamEmitter struct {
	out     Output
	stream  string
	budget  *atomic.Int64
	mu      sync.Mutex
	lines   []byte // whole lines not yet emitted
	partial []byte // a line still being written
	last    time.Time
	timer   *time.Timer
	closed  bool
}

func newStreamEmitter(out Output, stream string, budget *atomic.Int64) *streamEmitter {
	return &streamEmitter{out: out, stream: stream, budget: budget}
}

func (s *streamEmitter) write(p []byte) {
	if s.out == nil {
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
	if time.Since(s.last) >= FlushInterval {
		s.flushLocked()
		return
	}
	if s.timer == nil {
		s.timer = time.AfterFunc(FlushInterval, func() {
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
		s.out(s.stream, string(text), true)
		return
	}
	s.out(s.stream, string(text), false)
}

func (s *streamEmitter) close() {
	if s.out == nil {
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
