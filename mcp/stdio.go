package mcp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/internal/proc"
)

// Grace periods of a stdio server's shutdown: Close closes its stdin (the
// MCP spec's first step), waits closeGrace for it to exit, then SIGTERMs
// its process group, waits termGrace, and SIGKILLs the group.
var (
	closeGrace = 1 * time.Second
	termGrace  = 2 * time.Second
)

// Limits of what a stdio server writes to stderr.
const (
	maxStderrLine     = 4 << 10   // a longer line is cut
	maxStderrStreamed = 256 << 10 // bytes passed to Options.Stderr per session
	maxTailLines      = 20        // lines quoted in errors ...
	maxTailBytes      = 2 << 10   // ... up to this many bytes
)

// stdioProc is a running stdio server.
type stdioProc struct {
	pid     int
	exited  chan struct{} // closed once reaped (and its group killed)
	waitErr error         // set before exited is closed
	stdin   *os.File      // our ends of its pipes
	stdout  *os.File
	stderr  *stderrReader
	once    sync.Once
}

// startStdio starts a stdio server in its own process group, with
// BaseEnv plus the entry's env (never os.Environ()).
func startStdio(name string, sc ServerConfig, opts Options) (*stdioProc, error) {
	env := mergeEnv(opts.BaseEnv, sc.Env)
	path, err := lookPath(sc.Command, env, opts.Dir)
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        append([]string{sc.Command}, sc.Args...),
		Env:         env,
		Dir:         opts.Dir,
		SysProcAttr: proc.SysProcAttr(),
	}
	var files []*os.File // every pipe end, closed on failure
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	waitCh := make(chan error, 1)
	start, err := proc.StartLockedExposing(cmd, waitCh, opts.Expose)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("start %s: %w", sc.Command, err)
	}
	// The child holds its ends now: ours must close, or its exit would not
	// end our reads.
	inR.Close()
	outW.Close()
	errW.Close()
	p := &stdioProc{
		pid:    cmd.Process.Pid,
		exited: make(chan struct{}),
		stdin:  inW,
		stdout: outR,
		stderr: newStderrReader(name, errR, opts.Stderr),
	}
	go p.stderr.run()
	// StartLocked registered the server's group with the reaper, which
	// kills it if Switchyard dies: the parent-death signal reaches only the
	// leader (npx's children live on).
	go func() {
		p.waitErr = <-waitCh
		defer proc.UntrackGroup(p.pid)
		// Whatever the leader left running in its group goes with it, so
		// nothing holds the pipes open (and the reads end).
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		close(p.exited)
	}()
	if opts.OnStart != nil && start != 0 {
		opts.OnStart(name, p.pid, start)
	}
	return p, nil
}

// hasExited reports whether the server exited, waiting up to d for it.
func (p *stdioProc) hasExited(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	default:
	}
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// exitText describes how the server ended; call after exited is closed.
func (p *stdioProc) exitText() string {
	var ee *exec.ExitError
	switch {
	case p.waitErr == nil:
		return "exit status 0"
	case errors.As(p.waitErr, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	return p.waitErr.Error()
}

// stderrNote is "; stderr: <tail>" once stderr has been read to its end
// (up to a short wait), or "" when the server wrote nothing.
func (p *stdioProc) stderrNote() string {
	p.stderr.waitDone(time.Second)
	if t := p.stderr.tail(); t != "" {
		return "; stderr: " + t
	}
	return ""
}

// stop ends the server: stdin closed, then SIGTERM and SIGKILL to its
// process group if it does not exit. Idempotent (with kill).
func (p *stdioProc) stop() { p.end(true) }

// kill SIGKILLs the server's process group at once.
func (p *stdioProc) kill() { p.end(false) }

func (p *stdioProc) end(graceful bool) {
	p.once.Do(func() {
		p.stdin.Close()
		if !graceful {
			_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		}
		if !p.hasExited(closeGrace) {
			_ = syscall.Kill(-p.pid, syscall.SIGTERM)
			if !p.hasExited(termGrace) {
				_ = syscall.Kill(-p.pid, syscall.SIGKILL)
				<-p.exited
			}
		}
		// A process that left the group (setsid) may still hold stderr.
		if !p.stderr.waitDone(2 * time.Second) {
			p.stderr.r.Close()
			<-p.stderr.done
		}
		p.stdout.Close()
	})
}

// mergeEnv is base with the entry's variables set (replacing base's).
func mergeEnv(base []string, add map[string]string) []string {
	env := []string{} // never nil: exec.Cmd would inherit os.Environ()
	for _, kv := range base {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if _, replaced := add[k]; replaced {
			continue
		}
		env = append(env, kv)
	}
	keys := make([]string, 0, len(add))
	for k := range add {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+strings.ReplaceAll(add[k], "\x00", ""))
	}
	return env
}

func envValue(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// lookPath finds the command as the server's own environment would: in
// the PATH of env (the process's PATH when env has none). A command with a
// slash is a path, relative to dir.
func lookPath(command string, env []string, dir string) (string, error) {
	if strings.Contains(command, "/") {
		p := command
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("command %q: %w", command, err)
		}
		return p, nil
	}
	pathVar, ok := envValue(env, "PATH")
	if !ok {
		pathVar = os.Getenv("PATH")
	}
	for _, d := range filepath.SplitList(pathVar) {
		if !filepath.IsAbs(d) {
			continue // a relative PATH entry would depend on the working directory
		}
		p := filepath.Join(d, command)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in PATH (%s)", command, pathVar)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

// stderrReader reads a stdio server's stderr line by line: each line goes
// to Options.Stderr (up to maxStderrStreamed bytes a session) and the last
// lines are kept for error messages.
type stderrReader struct {
	server   string
	r        *os.File
	emit     func(server, line string)
	done     chan struct{}
	mu       sync.Mutex
	lines    []string // the last maxTailLines lines
	streamed int
}

func newStderrReader(server string, r *os.File, emit func(server, line string)) *stderrReader {
	return &stderrReader{server: server, r: r, emit: emit, done: make(chan struct{})}
}

func (s *stderrReader) run() {
	defer close(s.done)
	defer s.r.Close()
	br := bufio.NewReaderSize(s.r, 16<<10)
	var line []byte
	cut := false
	for {
		chunk, err := br.ReadSlice('\n')
		full := err == nil
		data := chunk
		if full {
			data = chunk[:len(chunk)-1]
		}
		if room := maxStderrLine - len(line); len(data) > room {
			line = append(line, data[:room]...)
			cut = true
		} else {
			line = append(line, data...)
		}
		if full || (err != bufio.ErrBufferFull && len(line) > 0) {
			s.add(line, cut)
			line, cut = line[:0], false
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

func (s *stderrReader) add(b []byte, cut bool) {
	line := strings.ToValidUTF8(string(bytes.TrimRight(b, "\r")), "\uFFFD")
	if cut {
		line += " [line cut]"
	}
	s.mu.Lock()
	s.lines = append(s.lines, line)
	if len(s.lines) > maxTailLines {
		s.lines = s.lines[len(s.lines)-maxTailLines:]
	}
	emit := ""
	switch {
	case s.streamed < maxStderrStreamed && s.streamed+len(line) <= maxStderrStreamed:
		emit = line
		s.streamed += len(line) + 1
	case s.streamed < maxStderrStreamed:
		emit = fmt.Sprintf("[stderr: more than %d KiB; the rest is not logged]", maxStderrStreamed>>10)
		s.streamed = maxStderrStreamed
	}
	s.mu.Unlock()
	if emit != "" && s.emit != nil {
		s.emit(s.server, emit) // from this one goroutine: lines arrive in order
	}
}

// tail is the last lines, at most maxTailBytes.
func (s *stderrReader) tail() string {
	s.mu.Lock()
	t := strings.TrimSpace(strings.Join(s.lines, "\n"))
	s.mu.Unlock()
	if len(t) > maxTailBytes {
		k := len(t) - maxTailBytes
		for k < len(t) && (t[k]&0xC0) == 0x80 {
			k++
		}
		t = "…" + t[k:]
	}
	return t
}

// waitDone waits up to d for stderr's end; it reports whether it came.
func (s *stderrReader) waitDone(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.done:
		return true
	case <-t.C:
		return false
	}
}
