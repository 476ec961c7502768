package fakeopenai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultModels are listed by GET /v1/models unless WithModels is given.
var DefaultModels = []string{"gpt-4o-mini", "gpt-4o", "gpt-4.1-mini", "gpt-5", "gpt-5-mini", "o4-mini"}

const (
	defaultLogLimit = 1000
	maxBodyBytes    = 32 << 20
	closeDrainLimit = 5 * time.Second
)

// ErrInvalidAddr is returned by Start when WithAddr names a non-loopback host.
var ErrInvalidAddr = errors.New("fakeopenai: listen address must be loopback")

// Option configures a Server.
type Option func(*config)

type config struct {
	latency    time.Duration
	chunkDelay time.Duration
	apiKey     string
	handler    HandlerFunc
	script     *Script
	models     []string
	logLimit   int
	addr       string
	logger     *slog.Logger
	idle       time.Duration
}

// WithLatency delays every reply by d before its first byte (unless the
// reply sets its own Latency). The wait holds no lock and ends early when the
// client disconnects or the server closes.
func WithLatency(d time.Duration) Option { return func(c *config) { c.latency = d } }

// WithChunkDelay sets the default pause between streamed events.
func WithChunkDelay(d time.Duration) Option { return func(c *config) { c.chunkDelay = d } }

// WithAPIKey requires "Authorization: Bearer <key>" on every request (401 otherwise).
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithHandler sets the reply function used when no queued reply is pending.
func WithHandler(h HandlerFunc) Option { return func(c *config) { c.handler = h } }

// WithScript answers requests that match one of the script's rules from
// the script (see Script), before the handler is asked; see LoadScript.
func WithScript(sc *Script) Option { return func(c *config) { c.script = sc } }

// WithModels sets the model IDs listed by GET /v1/models.
func WithModels(ids ...string) Option {
	return func(c *config) { c.models = append([]string(nil), ids...) }
}

// WithRequestLogLimit bounds the request log to the n most recent requests
// (default 1000); n <= 0 disables the log, e.g. for long load runs.
func WithRequestLogLimit(n int) Option { return func(c *config) { c.logLimit = n } }

// WithAddr sets the listen address for Start (default "127.0.0.1:0"). Only
// loopback hosts are accepted.
func WithAddr(addr string) Option { return func(c *config) { c.addr = addr } }

// WithIdleTimeout closes a keep-alive connection that has waited d for
// its next request, as providers and their load balancers do (0: Go's
// default, the read timeout, none here). Tests that count a client's
// descriptors use it so that the client's idle connections end.
func WithIdleTimeout(d time.Duration) Option { return func(c *config) { c.idle = d } }

// WithLogger receives debug logs about injected faults and HTTP server errors
// (default: discarded).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// Server is a fake OpenAI-compatible API. It is safe for concurrent use.
type Server struct {
	cfg     config
	handler atomic.Pointer[HandlerFunc]
	script  atomic.Pointer[Script]

	mu       sync.Mutex // guards queue and the request log; never held while waiting
	queue    []Reply
	log      []Request // ring buffer of at most cfg.logLimit entries
	logStart int

	total    atomic.Int64
	ids      atomic.Int64 // never reset, so generated IDs stay unique
	inFlight atomic.Int64
	maxConc  atomic.Int64

	closing   chan struct{}
	closeOnce sync.Once
	closeErr  error

	srv     *http.Server
	url     string
	created int64
}

// TB is the subset of testing.TB that StartT needs; this package does not
// import testing so it can ship in the binary.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// New returns a server that is not listening; mount Handler() yourself.
func New(opts ...Option) *Server {
	cfg := config{logLimit: defaultLogLimit, addr: "127.0.0.1:0", models: slices.Clone(DefaultModels)}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, closing: make(chan struct{}), created: time.Now().Unix()}
	if cfg.handler != nil {
		s.SetHandler(cfg.handler)
	}
	s.script.Store(cfg.script)
	return s
}

// Start listens on a loopback port and serves the fake API.
func Start(opts ...Option) (*Server, error) {
	s := New(opts...)
	host, _, err := net.SplitHostPort(s.cfg.addr)
	if err != nil {
		return nil, fmt.Errorf("fakeopenai: listen address %q: %w", s.cfg.addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidAddr, s.cfg.addr)
	}
	ln, err := net.Listen("tcp", s.cfg.addr)
	if err != nil {
		return nil, fmt.Errorf("fakeopenai: listen: %w", err)
	}
	s.srv = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       s.cfg.idle,
		ErrorLog:          slog.NewLogLogger(s.cfg.logger.Handler(), slog.LevelDebug),
	}
	s.url = "http://" + ln.Addr().String() + "/v1"
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.logger.Error("fakeopenai: serve", "err", err)
		}
	}()
	return s, nil
}

// StartT starts a server for a test and closes it in tb.Cleanup.
func StartT(tb TB, opts ...Option) *Server {
	tb.Helper()
	s, err := Start(opts...)
	if err != nil {
		tb.Fatalf("fakeopenai: %v", err)
		return nil
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// URL is the base URL including "/v1", for option.WithBaseURL. It is empty
// for servers made with New.
func (s *Server) URL() string { return s.url }

// Handler serves the API; it accepts paths with or without the "/v1" prefix.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Close stops listening, releases hanging and sleeping requests (their
// connections are dropped) and waits briefly for handlers to return.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		if s.srv != nil {
			s.closeErr = s.srv.Close()
		}
		deadline := time.Now().Add(closeDrainLimit)
		for s.inFlight.Load() > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if n := s.inFlight.Load(); n > 0 {
			s.closeErr = errors.Join(s.closeErr, fmt.Errorf("fakeopenai: %d handlers still running after close", n))
		}
	})
	return s.closeErr
}

// SetHandler replaces the reply function; nil restores DefaultReply.
func (s *Server) SetHandler(h HandlerFunc) {
	if h == nil {
		s.handler.Store(nil)
		return
	}
	s.handler.Store(&h)
}

// SetScript replaces the script; nil removes it.
func (s *Server) SetScript(sc *Script) { s.script.Store(sc) }

// Enqueue appends replies to the FIFO that is consumed before the handler,
// one reply per completion request (chat or responses).
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	s.queue = append(s.queue, replies...)
	s.mu.Unlock()
}

// Pending returns how many queued replies are left.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns the logged completion requests, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, 0, len(s.log))
	out = append(out, s.log[s.logStart:]...)
	return append(out, s.log[:s.logStart]...)
}

// LastRequest returns the most recent logged completion request.
func (s *Server) LastRequest() (Request, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.log) == 0 {
		return Request{}, false
	}
	i := s.logStart - 1
	if i < 0 {
		i = len(s.log) - 1
	}
	return s.log[i], true
}

// Reset clears the request log, the reply queue and the counters (the
// maximum concurrency restarts from the current in-flight count).
func (s *Server) Reset() {
	s.mu.Lock()
	s.queue, s.log, s.logStart = nil, nil, 0
	s.mu.Unlock()
	s.total.Store(0)
	s.maxConc.Store(s.inFlight.Load())
}

// Stats is a snapshot of the request counters.
type Stats struct {
	TotalRequests int64 // every HTTP request received, including errors and /models
	InFlight      int64
	MaxConcurrent int64 // highest InFlight seen
}

// Stats returns the current counters.
func (s *Server) Stats() Stats {
	return Stats{TotalRequests: s.total.Load(), InFlight: s.inFlight.Load(), MaxConcurrent: s.maxConc.Load()}
}

// TotalRequests counts every HTTP request received since start or Reset.
func (s *Server) TotalRequests() int64 { return s.total.Load() }

// InFlight is the number of requests being handled right now.
func (s *Server) InFlight() int64 { return s.inFlight.Load() }

// MaxConcurrent is the highest number of simultaneous requests seen.
func (s *Server) MaxConcurrent() int64 { return s.maxConc.Load() }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for m := s.maxConc.Load(); n > m && !s.maxConc.CompareAndSwap(m, n); m = s.maxConc.Load() {
	}
	seq := s.total.Add(1)

	select {
	case <-s.closing:
		writeAPIError(w, http.StatusServiceUnavailable, "", "fakeopenai server is closed")
		return
	default:
	}

	path := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1"), "/")
	var api string
	switch {
	case path == "/chat/completions":
		api = APIChat
	case path == "/responses":
		api = APIResponses
	case path == "/models" || strings.HasPrefix(path, "/models/"):
		if s.checkAuth(w, r) {
			s.serveModels(w, r, strings.TrimPrefix(strings.TrimPrefix(path, "/models"), "/"))
		}
		return
	default:
		writeAPIError(w, http.StatusNotFound, "", fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeAPIError(w, http.StatusMethodNotAllowed, "", fmt.Sprintf("method %s not allowed on %s", r.Method, r.URL.Path))
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeAPIError(w, http.StatusRequestEntityTooLarge, "", "request body too large")
		}
		return // otherwise the client went away mid-body
	}

	// The header is the live request's: record copies it for the log,
	// which outlives the request.
	req := &Request{Seq: seq, Header: r.Header, Body: body, Received: time.Now()}
	perr := parseRequest(api, body, req)
	if perr != nil {
		req.ParseError = perr.Error()
	}
	s.record(req)
	if !s.checkAuth(w, r) {
		return
	}
	if perr != nil {
		writeAPIError(w, http.StatusBadRequest, "", perr.Error())
		return
	}
	s.respond(w, r, req, s.nextReply(req))
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rd := http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if n := r.ContentLength; n > 0 && n <= maxBodyBytes {
		buf := make([]byte, n)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return nil, fmt.Errorf("read body: %w", err)
		}
		return buf, nil
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	return b, nil
}

func (s *Server) checkAuth(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.apiKey == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || got == "" {
		writeAPIError(w, http.StatusUnauthorized, "", "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth.")
		return false
	}
	if got != s.cfg.apiKey {
		writeAPIErrorCode(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
		return false
	}
	return true
}

func (s *Server) record(req *Request) {
	if s.cfg.logLimit <= 0 {
		return
	}
	c := *req
	c.Header = req.Header.Clone()
	s.mu.Lock()
	if len(s.log) < s.cfg.logLimit {
		s.log = append(s.log, c)
	} else {
		s.log[s.logStart] = c
		s.logStart = (s.logStart + 1) % len(s.log)
	}
	s.mu.Unlock()
}

func (s *Server) nextReply(req *Request) Reply {
	s.mu.Lock()
	if len(s.queue) > 0 {
		r := s.queue[0]
		s.queue[0] = Reply{}
		s.queue = s.queue[1:]
		s.mu.Unlock()
		return r
	}
	s.mu.Unlock()
	if r, ok := s.script.Load().Reply(req); ok {
		s.cfg.logger.Debug("fakeopenai: scripted reply", "seq", req.Seq, "tool_calls", len(r.ToolCalls))
		return r
	}
	if h := s.handler.Load(); h != nil {
		return (*h)(req)
	}
	return DefaultReply(req)
}

// sleep waits d; it reports false if the client left or the server is closing.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.closing:
		return false
	}
}

func (s *Server) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// abortConnection drops the TCP connection with a RST and no HTTP response.
func abortConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable (HTTP/2, wrapped writer): net/http drops the
		// connection or stream for this sentinel panic without logging it.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func (s *Server) serveModels(w http.ResponseWriter, r *http.Request, id string) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeAPIError(w, http.StatusMethodNotAllowed, "", fmt.Sprintf("method %s not allowed on %s", r.Method, r.URL.Path))
		return
	}
	if id != "" {
		for _, m := range s.cfg.models {
			if m == id {
				writeJSON(w, http.StatusOK, modelJSON{ID: m, Object: "model", Created: s.created, OwnedBy: "openai"})
				return
			}
		}
		writeAPIErrorCode(w, http.StatusNotFound, "invalid_request_error", "model_not_found",
			fmt.Sprintf("The model '%s' does not exist or you do not have access to it.", id))
		return
	}
	list := modelListJSON{Object: "list", Data: make([]modelJSON, 0, len(s.cfg.models))}
	for _, m := range s.cfg.models {
		list.Data = append(list.Data, modelJSON{ID: m, Object: "model", Created: s.created, OwnedBy: "openai"})
	}
	writeJSON(w, http.StatusOK, list)
}

type modelJSON struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type modelListJSON struct {
	Object string      `json:"object"`
	Data   []modelJSON `json:"data"`
}

func requestID(seq int64) string { return "req_fake" + strconv.FormatInt(seq, 10) }
