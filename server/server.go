// Package server is Switchyard's HTTP server: the JSON API, live run
// events over websockets, the AgentFlow-compatible routes, Prometheus
// metrics and the embedded UI, on echo v4 and gorilla/websocket.
//
// Live events come only from the store's commit hooks, so a client is never
// told about an event that a crash could still lose.
package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/engine/tools"
	"github.com/switchyard/switchyard/llm"
)

// Defaults of Config.
const (
	DefaultMaxBody        = 10 << 20
	DefaultWSBuffer       = 4 << 20
	DefaultPingInterval   = 30 * time.Second
	DefaultWSWriteTimeout = 10 * time.Second
)

// ErrTokenRequired is returned by New for a non-loopback address without
// a token: the API would be open to the network.
var ErrTokenRequired = errors.New("listening on a non-loopback address requires a token (--token or SWITCHYARD_TOKEN)")

// DefaultModels are the models the editor offers when Config.Models is empty.
var DefaultModels = []string{"gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-4.1", "gpt-4.1-mini", "gpt-4o", "gpt-4o-mini", "o4-mini"}

// ReasoningEfforts are the reasoning efforts an agent node may ask for.
var ReasoningEfforts = []string{"minimal", "low", "medium", "high"}

// Config configures a Server.
type Config struct {
	// Engine runs the workflows; its store must be Store.
	Engine *engine.Engine
	// Store holds workflows and runs; its commit hooks feed live events.
	// *store.Store (SQLite) or *postgres.Store (see Store).
	Store Store
	// UI is the built web UI (index.html, assets/); nil serves a note instead.
	UI fs.FS
	// Addr is the address the server listens on. Its host decides whether
	// the server is loopback-only (the default) and which Host headers are
	// its own.
	Addr string
	// Token, when set, is required on every API and websocket request
	// (bearer header or the session cookie POST /login sets).
	Token string
	// SessionTTL is how long a sign-in lasts (default DefaultSessionTTL).
	SessionTTL time.Duration
	// MaxBody limits request bodies in bytes (default 10 MiB).
	MaxBody int64
	// BodyTimeout bounds reading a request (headers and body) (default
	// DefaultBodyTimeout): a client that sends a byte now and then cannot
	// hold a connection.
	BodyTimeout time.Duration
	// WriteTimeout bounds writing an ordinary response (default
	// DefaultWriteTimeout), so a client that does not read frees its
	// connection. Websockets, event streams and the compatibility routes
	// that wait for a run keep their own deadlines and pings.
	WriteTimeout time.Duration
	// MaxConns caps concurrent connections (default DefaultMaxConns): at
	// the cap a new connection closes the one idle longest between
	// keep-alive requests, or waits (in the kernel's backlog) while none is.
	MaxConns int
	Logger   *slog.Logger
	// Metrics is registered at /metrics. Pass the same Metrics in the
	// engine's Sinks to get node and LLM timings; nil makes a fresh one.
	Metrics *Metrics
	// Workflows lists workflows that live outside the database (YAML files
	// in WorkflowsDir) beside the drawn ones; nil means none.
	Workflows WorkflowSource
	// WorkflowsDir is the YAML workflow folder (informational).
	WorkflowsDir string
	// ReadOnlyWorkflows refuses (403) every change of the YAML folder's
	// files through the API (serve --read-only-workflows).
	ReadOnlyWorkflows bool
	// YAMLPositionsFile keeps where the canvas shows the nodes of YAML
	// workflows (outside the user's folder); "" keeps them in memory.
	YAMLPositionsFile string
	// Models the editor offers (default DefaultModels).
	Models []string
	// WSBuffer bounds, in bytes, the events queued for one websocket client
	// (default 4 MiB). A client whose backlog would exceed it is
	// disconnected as too slow and reconnects with after=<last seq>.
	WSBuffer int64
	// PingInterval is the websocket keepalive period (default 30s); a client
	// that does not answer within PongWait is dropped.
	PingInterval time.Duration
	// PongWait is how long a websocket client may take to answer a ping
	// (or send anything) before it is dropped (default 2 × PingInterval).
	PongWait time.Duration
	// YAMLWatchInterval is how often the YAML workflow folder is looked at
	// for files changed on disk, announced on GET /api/ws as
	// workflow_changed (default yamldir.DefaultWatchInterval, 1s; < 0: not
	// watched).
	YAMLWatchInterval time.Duration
	// WSWriteTimeout bounds one websocket write, and one message of the
	// compatibility event streams (default 10s).
	WSWriteTimeout time.Duration
	// GraphWorkDir is the folder the agents of drawn runs work in (serve
	// --workdir); "" gives each such run a fresh folder of its own.
	GraphWorkDir string
	// MCPServers names the MCP servers drawn agents may pick (serve
	// --mcp-config), for the editor.
	MCPServers []string
	// TrustedProxies are the reverse proxies (serve --trusted-proxy) whose
	// X-Forwarded-Host, X-Forwarded-Proto and X-Forwarded-For headers
	// the server believes: a request through one may name any host (the
	// proxy decides which names reach it), its origin is checked against
	// the forwarded host and scheme, and sign-in attempts are counted by
	// the forwarded client address. They need a Token.
	TrustedProxies []netip.Prefix
}

// Server serves the API, live events and the UI.
type Server struct {
	cfg      Config
	e        *engine.Engine
	st       Store
	log      *slog.Logger
	echo     *echo.Echo
	cwdOnce  sync.Once
	cwd      string // working directory, read once for new runs' work dir
	hub      *hub
	graphs   *graphCache   // prepared graphs by their JSON's hash
	afGraphs *lru[afEntry] // AgentFlow's shape of run definitions, by their hash
	metrics  *Metrics
	loopback bool
	hosts    map[string]bool // Host names accepted while loopback-only
	sessions *sessions       // sign-ins (nil without a token)
	logins   *loginLimiter
	started  time.Time

	drainCtx context.Context // cancelled when shutdown begins
	drain    context.CancelFunc

	wsWG sync.WaitGroup // websocket handlers (hijacked: http.Server does not wait for them)
	bgWG sync.WaitGroup // background loops (the YAML folder watcher); they end with drainCtx

	announced announcedFiles // the last workflow_changed of each YAML file

	resumingMu sync.Mutex
	resuming   map[string]bool // compat resumes in progress, by run id

	httpMu   sync.Mutex
	httpSrv  *http.Server
	limiter  *connLimiter // Serve's, with MaxConns (under httpMu; tests read it)
	openapi  []byte
	llmOK    bool
	defModel string
}

// New builds a server and subscribes it to the store's commits. It refuses
// a non-loopback Addr without a Token (ErrTokenRequired).
func New(cfg Config) (*Server, error) {
	if cfg.Engine == nil || cfg.Store == nil {
		return nil, errors.New("server: Engine and Store are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.WSBuffer <= 0 {
		cfg.WSBuffer = DefaultWSBuffer
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	if cfg.PongWait <= 0 {
		cfg.PongWait = 2 * cfg.PingInterval
	}
	if cfg.WSWriteTimeout <= 0 {
		cfg.WSWriteTimeout = DefaultWSWriteTimeout
	}
	if len(cfg.Models) == 0 {
		cfg.Models = DefaultModels
	}
	host, err := addrHost(cfg.Addr)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:      cfg,
		e:        cfg.Engine,
		st:       cfg.Store,
		log:      cfg.Logger,
		loopback: IsLoopbackHost(host),
		hosts:    map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true},
		started:  time.Now(),
		resuming: map[string]bool{},
	}
	if !s.loopback && cfg.Token == "" {
		return nil, fmt.Errorf("server: %s: %w", cfg.Addr, ErrTokenRequired)
	}
	if len(cfg.TrustedProxies) > 0 && cfg.Token == "" {
		// A trusted proxy's headers lift the Host check, which is what keeps
		// a DNS-rebinding page away from an open loopback server.
		return nil, fmt.Errorf("server: trusted proxies: %w", ErrTokenRequired)
	}
	if cfg.Token != "" {
		if err := CheckToken(cfg.Token); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	if host != "" {
		s.hosts[strings.ToLower(host)] = true
	}
	if cfg.Token != "" {
		s.sessions = newSessions(cfg.Token, cfg.SessionTTL)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := s.sessions.load(ctx, cfg.Store)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("server: load revoked sessions: %w", err)
		}
	}
	s.logins = newLoginLimiter()
	s.drainCtx, s.drain = context.WithCancel(context.Background())
	s.defModel = llm.DefaultModel
	if llm, err := cfg.Engine.LLM(); err == nil {
		s.llmOK = true
		s.defModel = llm.Model("")
	}
	s.metrics = cfg.Metrics
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	if s.openapi, err = buildOpenAPI(); err != nil {
		return nil, err
	}
	s.hub = newHub(cfg.WSBuffer)
	s.graphs = newGraphCache(graphCacheItems, graphCacheBytes)
	s.afGraphs = newLRU(graphCacheItems, graphCacheBytes, func(e afEntry) int { return e.size })
	s.hub.workflowOf = s.sourceWorkflowID
	s.hub.loadActive(context.Background(), s.st, s.log)
	s.st.OnCommit(s.hub.onCommit)
	s.startYAMLWatch()
	s.metrics.attach(s)
	s.echo = s.routes()
	return s, nil
}

// Handler is the server as an http.Handler (for httptest and embedding).
func (s *Server) Handler() http.Handler { return s.echo }

// Metrics returns the server's metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Serve accepts connections on ln until Shutdown. It returns nil after a
// graceful shutdown.
func (s *Server) Serve(ln net.Listener) error {
	var limiter *connLimiter
	if s.cfg.MaxConns > 0 {
		limiter = newConnLimiter(ln, s.cfg.MaxConns)
		ln = limiter
	}
	srv := &http.Server{
		Handler:           s.echo,
		ReadHeaderTimeout: min(10*time.Second, s.cfg.BodyTimeout),
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return context.Background() },
	}
	if limiter != nil {
		srv.ConnState = limiter.connState
	}
	s.httpMu.Lock()
	if s.drainCtx.Err() != nil {
		s.httpMu.Unlock()
		return http.ErrServerClosed
	}
	s.httpSrv, s.limiter = srv, limiter
	s.httpMu.Unlock()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections, closes websockets (code 1001),
// ends long waits (/api/run, event streams) with the run's current state,
// and waits for in-flight requests until ctx ends. It leaves the engine and
// store open: the caller closes the engine next, which keeps running runs
// resumable.
func (s *Server) Shutdown(ctx context.Context) error {
	s.drain() // websocket handlers and long waits watch drainCtx
	s.httpMu.Lock()
	srv := s.httpSrv
	s.httpMu.Unlock()
	var err error
	if srv != nil {
		err = srv.Shutdown(ctx)
	}
	done := make(chan struct{})
	go func() { s.wsWG.Wait(); s.bgWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		if err == nil {
			err = ctx.Err()
		}
	}
	return err
}

// draining reports whether shutdown has begun.
func (s *Server) draining() bool { return s.drainCtx.Err() != nil }

// longCtx is ctx that also ends when shutdown begins: for requests that
// wait on a run.
func (s *Server) longCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.drainCtx, cancel)
	return ctx, func() { stop(); cancel() }
}

func (s *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.errorHandler
	e.JSONSerializer = jsonSerializer{} // bodies that write their own JSON (jsonfast.go)
	e.Use(s.readDeadline, s.logRequests, s.recoverPanics, frameHeaders, s.checkHost, s.checkOrigin, s.limitBody, s.requireAuth, s.longRoutes)

	e.GET("/api/health", s.health)
	e.GET("/api/auth", s.authStatus)
	e.POST("/login", s.login)
	e.POST("/logout", s.logout)
	e.POST("/api/logout", s.logout)
	e.GET("/api/config", s.config)
	e.GET("/api/openapi.json", s.openAPI)
	e.GET("/metrics", s.metricsHandler)

	e.GET("/api/workflows", s.listWorkflows)
	e.POST("/api/workflows", s.createWorkflow)
	e.GET("/api/workflows/:id", s.getWorkflow)
	e.PUT("/api/workflows/:id", s.putWorkflow)
	e.DELETE("/api/workflows/:id", s.deleteWorkflow)
	e.GET("/api/workflows/:id/versions", s.listVersions)
	e.POST("/api/workflows/:id/runs", s.runWorkflow)
	e.GET("/api/workflows/:id/versions/:version", s.getVersion)
	e.POST("/api/validate", s.validate)
	e.POST("/api/normalize", s.normalize)
	s.registerYAMLEditRoutes(e)

	e.GET("/api/runs", s.listRuns)
	e.POST("/api/runs", s.createRun)
	e.GET("/api/runs/:id", s.getRun)
	e.GET("/api/runs/:id/events", s.runEvents)
	e.GET("/api/runs/:id/ws", s.runWS)
	e.POST("/api/runs/:id/approvals/:nodeId", s.decide)
	e.POST("/api/runs/:id/cancel", s.cancelRun)
	e.POST("/api/runs/:id/continue", s.continueRun)
	e.POST("/api/runs/:id/fork", s.forkRun)
	e.GET("/api/ws", s.statusWS)
	e.GET("/api/approvals", s.listApprovals)

	e.POST("/api/run", s.compatRun)
	e.POST("/api/run-stream", s.compatRunStream)
	e.POST("/api/resume", s.compatResume)
	e.POST("/api/resume-stream", s.compatResumeStream)
	e.GET("/api/run/:runId", s.compatGetRun)
	e.GET("/api/default-workflow", s.defaultWorkflow)

	// Not routes but fallbacks: unknown API paths are JSON 404s, every
	// other path is the UI (single-page routing).
	e.RouteNotFound("/api/*", s.apiNotFound)
	e.RouteNotFound("/*", s.serveUI)
	return e
}

// apiNotFound answers unknown API paths: 405 (with Allow) when the path
// exists for other methods, else 404.
func (s *Server) apiNotFound(c echo.Context) error {
	r := c.Request()
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := s.echo.NewContext(r, nil)
		s.echo.Router().Find(m, echo.GetPath(r), probe)
		if p := probe.Path(); p != "" && !strings.HasSuffix(p, "*") {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		c.Response().Header().Set("Allow", strings.Join(allow, ", "))
		return newErr(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "%s is not allowed on %s (allowed: %s)",
			r.Method, r.URL.Path, strings.Join(allow, ", "))
	}
	return newErr(http.StatusNotFound, CodeNotFound, "no API route %s %s", r.Method, r.URL.Path)
}

// logRequests logs one structured line per request and counts it.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		if err := next(c); err != nil {
			c.Error(err)
		}
		r := c.Request()
		status := c.Response().Status
		route := c.Path()
		if route == "" || strings.HasSuffix(route, "*") && !strings.HasPrefix(route, "/api") {
			route = "ui"
		}
		elapsed := time.Since(start)
		s.metrics.observeRequest(r.Method, route, status, elapsed)
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		} else if route == "ui" || r.URL.Path == "/metrics" || r.URL.Path == "/api/health" {
			level = slog.LevelDebug
		}
		// Checked first: building the line's arguments allocates (boxed
		// values) even when the level is off, on every request.
		if s.log.Enabled(r.Context(), level) {
			s.log.Log(r.Context(), level, "request",
				"method", r.Method, "path", r.URL.Path, "route", route, "status", status,
				"bytes", c.Response().Size, "duration", elapsed.Round(time.Microsecond), "remote", r.RemoteAddr)
		}
		return nil
	}
}

func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("handler panicked", "method", c.Request().Method, "path", c.Request().URL.Path, "panic", p)
				err = newErr(http.StatusInternalServerError, CodeInternal, "internal error")
			}
		}()
		return next(c)
	}
}

// limitBody caps request bodies at MaxBody.
func (s *Server) limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength > s.cfg.MaxBody {
			return newErr(http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
				"request body is larger than %d bytes", s.cfg.MaxBody)
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(c.Response(), r.Body, s.cfg.MaxBody)
		}
		return next(c)
	}
}

func (s *Server) health(c echo.Context) error {
	if s.draining() {
		return c.JSON(http.StatusServiceUnavailable, map[string]any{"status": "shutting_down"})
	}
	return c.JSON(http.StatusOK, map[string]any{
		"status": "ok", "uptimeSeconds": int64(time.Since(s.started).Seconds()),
	})
}

type configJSON struct {
	LLMConfigured    bool             `json:"llmConfigured"`
	Providers        []configProvider `json:"providers"`
	Models           []string         `json:"models"`
	DefaultModel     string           `json:"defaultModel"`
	ReasoningEfforts []string         `json:"reasoningEfforts"`
	AuthRequired     bool             `json:"authRequired"`
	// BuiltinTools are the tools an agent's checklist offers; MCPServers
	// the servers of serve --mcp-config it may pick.
	BuiltinTools []string          `json:"builtinTools"`
	MCPServers   []configMCPServer `json:"mcpServers"`
}

type configMCPServer struct {
	Name string `json:"name"`
}

// configProvider is a provider with its models, in the shape AgentFlow's
// editor reads (apps/web/src/app/workflow-editor.ts, loadConfig): it keeps
// the enabled providers and offers each model with its reasoning efforts.
type configProvider struct {
	ID      string        `json:"id"`
	Enabled bool          `json:"enabled"`
	Models  []configModel `json:"models"`
}

type configModel struct {
	ID               string   `json:"id"`
	ReasoningEfforts []string `json:"reasoningEfforts"`
}

// config tells the editor what it may offer; it never includes the key.
func (s *Server) config(c echo.Context) error {
	mcpServers := make([]configMCPServer, 0, len(s.cfg.MCPServers))
	for _, n := range s.cfg.MCPServers {
		mcpServers = append(mcpServers, configMCPServer{Name: n})
	}
	models := make([]configModel, 0, len(s.cfg.Models))
	for _, m := range s.cfg.Models {
		// Never empty: AgentFlow's editor selects the first effort.
		models = append(models, configModel{ID: m, ReasoningEfforts: ReasoningEfforts})
	}
	return c.JSON(http.StatusOK, configJSON{
		LLMConfigured:    s.llmOK,
		Providers:        []configProvider{{ID: "openai", Enabled: s.llmOK, Models: models}},
		Models:           s.cfg.Models,
		DefaultModel:     s.defModel,
		ReasoningEfforts: ReasoningEfforts,
		AuthRequired:     s.cfg.Token != "",
		BuiltinTools:     tools.Names(),
		MCPServers:       mcpServers,
	})
}

func (s *Server) openAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, s.openapi)
}

// addrHost returns the host part of a listen address ("" for all interfaces).
func addrHost(addr string) (string, error) {
	if addr == "" {
		return "", nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("server: listen address %q: %w", addr, err)
	}
	return host, nil
}

// IsLoopbackHost reports whether a listen host only accepts local
// connections: "localhost" or a loopback IP. "" (all interfaces) is not.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
