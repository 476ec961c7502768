package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of Options.
const (
	DefaultStartTimeout   = 30 * time.Second
	DefaultCallTimeout    = 2 * time.Minute
	DefaultMaxResultBytes = 100 << 10
)

// ClientName and ClientVersion are what Switchyard tells servers it is.
const (
	ClientName    = "switchyard"
	ClientVersion = "1.0.0"
)

var (
	// ErrTimeout: a server did not initialize within StartTimeout, or a
	// call got no answer within CallTimeout.
	ErrTimeout = errors.New("timed out")
	// ErrServerExited: a stdio server's process ended (or an HTTP
	// server's connection broke).
	ErrServerExited = errors.New("server exited")
	// ErrClosed: the session (or pool) was closed.
	ErrClosed = errors.New("closed")
)

// Options says how to start and talk to servers.
type Options struct {
	// BaseEnv is the environment a stdio server starts with, before its
	// entry's env: the caller's allowlist. Nothing of the Switchyard
	// process's own environment is passed otherwise (never os.Environ()).
	BaseEnv []string
	// Dir is a stdio server's working directory (and what a relative
	// command path is relative to); "" is the process's.
	Dir string
	// Expose lists folders, besides Dir, a stdio server keeps when it
	// starts in the sandbox (proc.SetSandbox): its run's $ARTIFACTS_DIR.
	Expose []string
	// Stderr, if set, receives each line a stdio server writes to stderr
	// (lines over 4 KiB are cut; 256 KiB a session at most), in order,
	// from one goroutine per server: it should not block.
	Stderr func(server, line string)
	// OnStart, if set, hears a stdio server's process group (its leader's
	// pid) and the leader's start time (see proc.StartTime), so a caller
	// can record them and kill the group after its own death.
	OnStart func(server string, pgid int, start uint64)
	// StartTimeout bounds a server's start and initialization
	// (DefaultStartTimeout when 0).
	StartTimeout time.Duration
	// CallTimeout bounds one tool call (DefaultCallTimeout when 0).
	CallTimeout time.Duration
	// MaxResultBytes bounds a result's text (DefaultMaxResultBytes when 0):
	// a longer one is cut, with a note saying so.
	MaxResultBytes int
	// LookupEnv resolves ${VAR} in configs (os.LookupEnv when nil).
	LookupEnv func(string) (string, bool)
	// Secrets are more variable names that ${VAR} never expands, beside
	// OPENAI_API_KEY, ANTHROPIC_API_KEY and SWITCHYARD_*.
	Secrets []string
}

func (o Options) withDefaults() Options {
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	return o
}

// Tool is one tool of a server, as a model sees it.
type Tool struct {
	Server string
	// Name is the server's name for it (what Call takes).
	Name string
	// QualifiedName is the name the model calls it by (see QualifiedName).
	QualifiedName string
	Description   string
	// InputSchema is the arguments' JSON schema, normalized (see
	// NormalizeSchema).
	InputSchema map[string]any
}

// Result is a tool call's answer.
type Result struct {
	// Text is the answer's text content blocks, joined by newlines, with a
	// short line for each other block ("[image: image/png, 2.1 KiB]").
	Text string
	// IsError: the tool reports a failure (the model should see it and may
	// try again), not a failure to call it.
	IsError bool
	// Cut: Text was longer than MaxResultBytes and was cut (a note at its
	// end says so).
	Cut bool
}

// Session is a connection to one server. It is safe for concurrent use.
type Session struct {
	name   string
	opts   Options
	cs     *sdk.ClientSession
	proc   *stdioProc // nil for HTTP servers
	ctx    context.Context
	cancel context.CancelFunc // ends the calls in flight (Close)
	done   chan struct{}      // closed when the connection has ended
	once   sync.Once
	err    error
}

// Name is the server's name.
func (s *Session) Name() string { return s.name }

// Connect starts (stdio) or reaches (http, sse) the server and initializes
// an MCP session with it, within StartTimeout. The entry's ${VAR}
// references are expanded first (see Expand): a refused or missing
// variable is an error and nothing starts. Errors name the server, and for
// a stdio server that failed, quote the end of its stderr.
func Connect(ctx context.Context, name string, sc ServerConfig, opts Options) (*Session, error) {
	opts = opts.withDefaults()
	if !serverNameRe.MatchString(name) {
		return nil, fmt.Errorf("mcp server %q: the name may hold only letters, digits, '_' and '-'", name)
	}
	sc, err := Expand(name, sc, opts)
	if err != nil {
		return nil, err
	}
	typ := sc.Type
	if typ == "" {
		typ = TypeStdio
		if sc.URL != "" {
			typ = TypeHTTP
		}
	}
	prefix := fmt.Sprintf("mcp server %q", name)
	switch typ {
	case TypeStdio:
		if sc.Command == "" {
			return nil, fmt.Errorf("%s: no command", prefix)
		}
	case TypeHTTP, TypeSSE:
		if msg := checkURL(sc.URL); msg != "" {
			return nil, fmt.Errorf("%s: url: %s", prefix, msg)
		}
	default:
		return nil, fmt.Errorf("%s: unknown transport type %q", prefix, typ)
	}
	// life is the session's: Close cancels it, which ends calls in flight
	// (and the SSE transport's stream).
	life, endLife := context.WithCancel(context.Background())
	var transport sdk.Transport
	var p *stdioProc
	switch typ {
	case TypeStdio:
		if p, err = startStdio(name, sc, opts); err != nil {
			endLife()
			return nil, fmt.Errorf("%s: %w", prefix, err)
		}
		transport = &sdk.IOTransport{Reader: p.stdout, Writer: p.stdin}
	default:
		client := &http.Client{Transport: &headerTransport{base: http.DefaultTransport, headers: sc.Headers}}
		if typ == TypeSSE {
			// Its event stream lives on the context Connect is given:
			// the session's, not the start's.
			transport = &detachedTransport{t: &sdk.SSEClientTransport{Endpoint: sc.URL, HTTPClient: client}, life: life}
		} else {
			// Switchyard needs no server-initiated messages between calls,
			// so no standing GET stream.
			transport = &sdk.StreamableClientTransport{Endpoint: sc.URL, HTTPClient: client, DisableStandaloneSSE: true}
		}
	}

	client := sdk.NewClient(&sdk.Implementation{Name: ClientName, Version: ClientVersion},
		// No roots, sampling or elicitation: an agent's tools only.
		&sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}})
	startCtx, cancelStart := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancelStart()
	cs, err := client.Connect(startCtx, transport, nil)
	if err != nil {
		var msg string
		switch {
		case ctx.Err() != nil:
			err = fmt.Errorf("%s: start: %w", prefix, ctx.Err())
		case p != nil && p.hasExited(0):
			err = fmt.Errorf("%s: exited before it initialized (%s)%s: %w", prefix, p.exitText(), p.stderrNote(), ErrServerExited)
		case startCtx.Err() != nil:
			if p != nil {
				msg = p.stderrNoteNow()
			}
			err = fmt.Errorf("%s: did not initialize within %s%s: %w", prefix, opts.StartTimeout, msg, ErrTimeout)
		case p != nil && p.hasExited(2*time.Second): // its stdout ended first
			err = fmt.Errorf("%s: exited before it initialized (%s)%s: %w", prefix, p.exitText(), p.stderrNote(), ErrServerExited)
		default:
			if p != nil {
				msg = p.stderrNoteNow()
			}
			err = fmt.Errorf("%s: initialize: %w%s", prefix, err, msg)
		}
		if p != nil {
			p.kill() // a server that failed to start gets no grace
		}
		endLife()
		return nil, err
	}
	s := &Session{name: name, opts: opts, cs: cs, proc: p, ctx: life, cancel: endLife, done: make(chan struct{})}
	go func() {
		_ = cs.Wait()
		close(s.done)
	}()
	if p != nil {
		go func() {
			// The server exited: if something it left outside its group
			// still holds stdout, end the connection anyway.
			select {
			case <-p.exited:
			case <-s.done:
				return
			}
			t := time.NewTimer(2 * time.Second)
			defer t.Stop()
			select {
			case <-s.done:
			case <-t.C:
				p.stdout.Close()
			}
		}()
	}
	return s, nil
}

// stderrNoteNow is stderrNote without waiting for stderr's end (the
// server is still running).
func (p *stdioProc) stderrNoteNow() string {
	if t := p.stderr.tail(); t != "" {
		return "; stderr: " + t
	}
	return ""
}

// Tools lists the server's tools (every page), named for a model.
func (s *Session) Tools(ctx context.Context) ([]Tool, error) {
	ctx, cancel := s.callContext(ctx)
	defer cancel()
	var raw []*sdk.Tool
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, s.callError(ctx, "", err, "tools/list")
		}
		if t != nil && t.Name != "" {
			raw = append(raw, t)
		}
	}
	names := make([]string, len(raw))
	for i, t := range raw {
		names[i] = t.Name
	}
	qualified := qualifyAll(s.name, names)
	tools := make([]Tool, len(raw))
	for i, t := range raw {
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		tools[i] = Tool{
			Server:        s.name,
			Name:          t.Name,
			QualifiedName: qualified[i],
			Description:   desc,
			InputSchema:   NormalizeSchema(t.InputSchema),
		}
	}
	return tools, nil
}

// errCallTimeout is the cause of a call's context when CallTimeout passed
// (not a deadline of the caller's own).
var errCallTimeout = errors.New("call timeout")

// callContext bounds one request by CallTimeout and ends it when the
// session closes.
func (s *Session) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeoutCause(ctx, s.opts.CallTimeout, errCallTimeout)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// Call calls a tool by the server's name for it. args is the arguments
// object (empty or null: {}); arguments that are not a JSON object are an
// error Result, for the model to correct. A tool's own failure is a
// Result with IsError; a failure to call it (the server exited, the call
// timed out, a protocol error such as an unknown tool) is an error naming
// the server and the tool.
func (s *Session) Call(ctx context.Context, tool string, args json.RawMessage) (Result, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if args[0] != '{' || !json.Valid(args) {
		return Result{Text: "arguments must be a JSON object", IsError: true}, nil
	}
	callCtx, cancel := s.callContext(ctx)
	defer cancel()
	res, err := s.cs.CallTool(callCtx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return Result{}, s.callError(callCtx, tool, err, "")
	}
	return s.result(res), nil
}

// callError explains a failed request. tool is "" for tools/list.
func (s *Session) callError(callCtx context.Context, tool string, err error, what string) error {
	prefix := fmt.Sprintf("mcp server %q", s.name)
	if tool != "" {
		prefix += fmt.Sprintf(": tool %q", tool)
	} else {
		prefix += ": " + what
	}
	var rpcErr *jsonrpc.Error
	switch {
	case s.ctx.Err() != nil:
		return fmt.Errorf("%s: the session was closed: %w", prefix, ErrClosed)
	case errors.As(err, &rpcErr):
		return fmt.Errorf("%s: the server answered with an error: %w", prefix, err)
	case context.Cause(callCtx) == errCallTimeout:
		return fmt.Errorf("%s: no answer within %s: %w", prefix, s.opts.CallTimeout, ErrTimeout)
	case callCtx.Err() != nil:
		return fmt.Errorf("%s: %w", prefix, callCtx.Err())
	case s.proc != nil && s.proc.hasExited(2*time.Second):
		return fmt.Errorf("%s: the server exited (%s)%s: %w", prefix, s.proc.exitText(), s.proc.stderrNote(), ErrServerExited)
	case errors.Is(err, sdk.ErrConnectionClosed):
		return fmt.Errorf("%s: the connection to the server broke: %w (%w)", prefix, ErrServerExited, err)
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

// result turns a CallToolResult into text for a model.
func (s *Session) result(res *sdk.CallToolResult) Result {
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, describeContent(c))
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	text := strings.Join(parts, "\n")
	r := Result{Text: text, IsError: res.IsError}
	if len(text) > s.opts.MaxResultBytes {
		kept := cutString(text, s.opts.MaxResultBytes)
		r.Text = kept + fmt.Sprintf("\n[output cut: %d of %d bytes shown]", len(kept), len(text))
		r.Cut = true
	}
	return r
}

func describeContent(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return fmt.Sprintf("[image: %s, %s]", orUnknown(c.MIMEType), size(len(c.Data)))
	case *sdk.AudioContent:
		return fmt.Sprintf("[audio: %s, %s]", orUnknown(c.MIMEType), size(len(c.Data)))
	case *sdk.ResourceLink:
		s := "[resource link: " + c.URI
		if c.Name != "" && c.Name != c.URI {
			s += " (" + c.Name + ")"
		}
		if c.MIMEType != "" {
			s += ", " + c.MIMEType
		}
		return s + "]"
	case *sdk.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return "[resource]"
		}
		if r.Text != "" {
			return fmt.Sprintf("[resource: %s, %s]\n%s", r.URI, orUnknown(r.MIMEType), r.Text)
		}
		return fmt.Sprintf("[resource: %s, %s, %s]", r.URI, orUnknown(r.MIMEType), size(len(r.Blob)))
	}
	return fmt.Sprintf("[%T content]", c)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

func size(n int) string {
	if n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/1024)
}

// Close ends the session: calls in flight end with ErrClosed, and a stdio
// server is stopped (stdin closed; SIGTERM, then SIGKILL to its process
// group if it does not exit). Idempotent.
func (s *Session) Close() error {
	s.once.Do(func() {
		s.cancel()
		closed := make(chan error, 1)
		go func() { closed <- s.cs.Close() }()
		select {
		case s.err = <-closed:
		case <-time.After(10 * time.Second):
			// The SDK waits for requests the server sends us; a stdio
			// server is stopped below anyway.
		}
		if s.proc != nil {
			s.proc.stop()
			s.err = nil // the server's exit status is no failure of ours
		}
	})
	return s.err
}

// detachedTransport connects t on the session's context (life), giving up
// when the start's context ends.
type detachedTransport struct {
	t    sdk.Transport
	life context.Context
}

func (d *detachedTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	type result struct {
		c   sdk.Connection
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := d.t.Connect(d.life)
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		return r.c, r.err
	case <-ctx.Done():
		go func() { // reap the late connection
			if r := <-ch; r.c != nil {
				r.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// headerTransport adds an entry's headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(req)
}
