package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard"
	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/mcp"
	"github.com/switchyard/switchyard/server"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/postgres"
	"github.com/switchyard/switchyard/yamlflow"
)

// workflowSourceFor is set by the YAML workflow support: it lists the
// YAML workflows of dir beside the drawn ones (nil: none).
var workflowSourceFor func(dir string, logger *slog.Logger, e *engine.Engine) (server.WorkflowSource, error)

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address; other than loopback it needs a token")
	data := dataFlag(fs)
	db := dbFlag(fs)
	token := fs.String("token", "", "require this token on API requests instead of a random one; prefer --token-file or $SWITCHYARD_TOKEN (a command-line argument is readable by every local process)")
	tokenFile := fs.String("token-file", os.Getenv("SWITCHYARD_TOKEN_FILE"), "read the token from this file (default $SWITCHYARD_TOKEN_FILE)")
	noToken := fs.Bool("no-token", false, "loopback only: require no token at all, so every local user and process can use the API and run code as you (bash and script nodes); by default serve makes a random token and prints the address to open with it")
	passEnv := fs.String("pass-env", os.Getenv(engine.PassEnvVar), "comma-separated environment variables bash and script nodes may see beyond the allowlist (default $"+engine.PassEnvVar+")")
	noRecover := fs.Bool("no-recover", false, "leave runs a dead process was driving interrupted instead of continuing them")
	workflows := fs.String("workflows", filepath.Join(".switchyard", "workflows"), "folder of YAML workflows listed beside drawn ones")
	readOnlyWorkflows := fs.Bool("read-only-workflows", false, "refuse every change of the --workflows files through the API and the UI (403)")
	readTimeout := fs.Duration("read-timeout", server.DefaultBodyTimeout, "how long a client may take to send a request's headers and body")
	writeTimeout := fs.Duration("write-timeout", server.DefaultWriteTimeout, "how long a client may take to read an ordinary answer (not streams)")
	maxBody := fs.String("max-body", "10MiB", "largest request body (bytes, or with KiB/MiB/GiB)")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	logLevel := fs.String("log-level", envOr("SWITCHYARD_LOG_LEVEL", "info"), "log level: debug, info, warn or error (default $SWITCHYARD_LOG_LEVEL or info)")
	grace := fs.Duration("shutdown-timeout", 30*time.Second, "how long shutdown waits for in-flight requests")
	cpuProfile := fs.String("cpuprofile", os.Getenv("SWITCHYARD_CPUPROFILE"), "write a CPU profile to this file until shutdown (default $SWITCHYARD_CPUPROFILE)")
	mutexProfile := fs.String("mutexprofile", os.Getenv("SWITCHYARD_MUTEXPROFILE"), "write a profile of lock contention to this file at shutdown (default $SWITCHYARD_MUTEXPROFILE)")
	memProfile := fs.String("memprofile", os.Getenv("SWITCHYARD_MEMPROFILE"), "write a profile of the heap allocations made since start to this file at shutdown (default $SWITCHYARD_MEMPROFILE)")
	maxParallel := fs.Int("max-parallel", envInt("SWITCHYARD_MAX_PARALLEL", 16), "nodes of one run executing at once (default $SWITCHYARD_MAX_PARALLEL or 16)")
	maxConns := fs.Int("max-conns", envInt("SWITCHYARD_MAX_CONNS", server.DefaultMaxConns), "concurrent connections; at the cap idle keep-alive ones are closed first, then new ones wait (default $SWITCHYARD_MAX_CONNS or 4096)")
	maxLLM := fs.Int("max-llm-calls", envInt("SWITCHYARD_MAX_LLM_CALLS", 64), "concurrent LLM calls across all runs (default $SWITCHYARD_MAX_LLM_CALLS or 64)")
	// No default from the environment: -h would print it, and a Slack URL is a secret.
	notifyURL := fs.String("notify-url", "", "POST a JSON notice (Slack-compatible text field) here whenever a node waits for approval (default $SWITCHYARD_NOTIFY_URL)")
	mcpConfig := fs.String("mcp-config", os.Getenv("SWITCHYARD_MCP_CONFIG"), "an mcpServers JSON file (Claude Code's .mcp.json shape) whose servers drawn agents may use (default $SWITCHYARD_MCP_CONFIG)")
	workDir := fs.String("workdir", os.Getenv("SWITCHYARD_WORKDIR"), "the folder drawn runs' agents work in with their file tools and Bash (default $SWITCHYARD_WORKDIR, else a fresh folder per run under the data folder)")
	keep := retentionFlags(fs)
	sandboxMode := sandboxFlag(fs)
	publicURL := fs.String("public-url", os.Getenv("SWITCHYARD_PUBLIC_URL"), "the address people open the UI at, for links in notices (default $SWITCHYARD_PUBLIC_URL or the listen address)")
	var proxies []string
	if v := os.Getenv("SWITCHYARD_TRUSTED_PROXIES"); v != "" {
		proxies = append(proxies, v)
	}
	fs.Func("trusted-proxy", "a reverse proxy's address or CIDR prefix whose X-Forwarded-Host, -Proto and -For headers are believed (repeatable or comma-separated; default $SWITCHYARD_TRUSTED_PROXIES); needs a token", func(v string) error {
		proxies = append(proxies, v)
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: switchyard serve [--addr 127.0.0.1:8080] [--data DIR | --db URL] [--token-file F | --no-token] [--no-recover] [--workflows DIR] [--read-only-workflows] [--pass-env NAMES] [--trusted-proxy CIDR] [--sandbox auto|on|off]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "switchyard serve: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return exitUsage
	}
	if *notifyURL == "" {
		*notifyURL = os.Getenv("SWITCHYARD_NOTIFY_URL")
	}
	if err := checkSandboxMode(*sandboxMode); err != nil {
		fmt.Fprintf(stderr, "switchyard serve: %v\n", err)
		return exitUsage
	}
	// Nodes are this process's children: hide its secrets from
	// /proc/$PPID before anything runs (see hideFromProc).
	if err := hideFromProc(secretFlag{"token", token}, secretFlag{"token-file", tokenFile},
		secretFlag{"notify-url", notifyURL}, secretFlag{"db", db}); err != nil {
		fmt.Fprintf(stderr, "switchyard serve: warning: cannot hide secrets from /proc: %v\n", err)
	}
	if *token != "" {
		fmt.Fprintln(stderr, "switchyard serve: warning: --token puts the token in the process's arguments, which every local user can read (ps, /proc/PID/cmdline) until serve hides them at start; use --token-file or $SWITCHYARD_TOKEN")
	}
	if *tokenFile != "" {
		if *token != "" {
			fmt.Fprintln(stderr, "switchyard serve: give --token or --token-file, not both")
			return exitUsage
		}
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			fmt.Fprintf(stderr, "switchyard serve: --token-file: %v\n", err)
			return exitUsage
		}
		if *token = strings.TrimSpace(string(b)); *token == "" {
			fmt.Fprintf(stderr, "switchyard serve: --token-file %s is empty\n", *tokenFile)
			return exitUsage
		}
	}
	tokenFrom := "--token"
	if *tokenFile != "" {
		tokenFrom = "--token-file " + *tokenFile
	}
	if *token == "" {
		*token, tokenFrom = os.Getenv("SWITCHYARD_TOKEN"), "SWITCHYARD_TOKEN"
	}
	// Node subprocesses read the pass-through list from the environment.
	if err := os.Setenv(engine.PassEnvVar, *passEnv); err != nil {
		fmt.Fprintf(stderr, "switchyard serve: --pass-env: %v\n", err)
		return exitUsage
	}
	unsetEnv("SWITCHYARD_TOKEN", "SWITCHYARD_TOKEN_FILE") // read once, never again
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		fmt.Fprintf(stderr, "switchyard serve: --addr %q: %v\n", *addr, err)
		return exitUsage
	}
	loopback := server.IsLoopbackHost(host)
	if !loopback && (*token == "" || *noToken) {
		fmt.Fprintf(stderr, "switchyard serve: refusing to listen on %s without a token: anyone who can reach it could run workflows.\n"+
			"Give one with --token-file FILE or SWITCHYARD_TOKEN, or listen on loopback (--addr 127.0.0.1:8080).\n", *addr)
		return exitUsage
	}
	// A token even on loopback: every local user can reach a loopback
	// port, and the API runs code as this user (bash and script nodes).
	// Without one given, a random one is made and printed in the address
	// to open (as Jupyter does); --no-token keeps the server open.
	var shownToken string
	switch {
	case *noToken && *token != "":
		fmt.Fprintln(stderr, "switchyard serve: --no-token and a token (--token, --token-file, SWITCHYARD_TOKEN_FILE or SWITCHYARD_TOKEN) exclude each other")
		return exitUsage
	case *noToken:
		fmt.Fprintln(stderr, "switchyard serve: warning: --no-token: every local user and every local process can use this server's API, and through it run commands as you (bash and script nodes); use it only where you are the machine's only user")
	case *token == "":
		t, err := randomToken()
		if err != nil {
			fmt.Fprintf(stderr, "switchyard serve: make a token: %v\n", err)
			return exitFailed
		}
		*token, shownToken = t, t
	}
	// Nodes run as this process's user. As root they could read any file,
	// and with CAP_SYS_PTRACE this process's memory (its token, API keys)
	// despite its being non-dumpable: say so at start.
	if os.Geteuid() == 0 {
		fmt.Fprintln(stderr, "switchyard serve: warning: running as root: bash and script nodes, agents' Bash tool and MCP servers run as root too, and can read any file and this process's memory (its token and API keys); run serve as a user of its own")
	}
	if *token != "" && shownToken == "" {
		// A guessable token would open the API to whoever guesses it.
		if err := server.CheckToken(*token); err != nil {
			fmt.Fprintf(stderr, "switchyard serve: %s: %v\n", tokenFrom, err)
			return exitUsage
		}
	}
	trustedProxies, err := server.ParseTrustedProxies(proxies)
	if err != nil {
		fmt.Fprintf(stderr, "switchyard serve: --trusted-proxy: %v\n", err)
		return exitUsage
	}
	if len(trustedProxies) > 0 && *noToken {
		fmt.Fprintln(stderr, "switchyard serve: --trusted-proxy needs a token: a trusted proxy's headers lift the Host check, which is what keeps a DNS-rebinding page away from a server without one")
		return exitUsage
	}
	if *db != "" {
		if _, err := redactDB(*db); err != nil {
			fmt.Fprintf(stderr, "switchyard serve: %v\n", err)
			return exitUsage
		}
	}
	keepRuns, err := keep.policy()
	if err != nil {
		fmt.Fprintf(stderr, "switchyard serve: %v\n", err)
		return exitUsage
	}
	limit, err := parseSize(*maxBody)
	if err != nil {
		fmt.Fprintf(stderr, "switchyard serve: --max-body: %v\n", err)
		return exitUsage
	}
	logger, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		fmt.Fprintf(stderr, "switchyard serve: %v\n", err)
		return exitUsage
	}
	// The listening and stopped lines are printed whatever the level:
	// scripts (and `switchyard load`) read the bound address from them.
	announce, _ := newLogger(stderr, *logFormat, "debug")
	tuneGC()
	for _, p := range []struct {
		flag, path string
		start      func(string) (func(), error)
	}{{"cpuprofile", *cpuProfile, startCPUProfile}, {"mutexprofile", *mutexProfile, startMutexProfile},
		{"memprofile", *memProfile, startMemProfile}} {
		if p.path == "" {
			continue
		}
		stop, err := p.start(p.path)
		if err != nil {
			fmt.Fprintf(stderr, "switchyard serve: --%s: %v\n", p.flag, err)
			return exitUsage
		}
		defer stop()
	}
	var mcpCfg mcp.Config
	if *mcpConfig != "" {
		if mcpCfg, err = mcp.LoadConfigFile(*mcpConfig); err != nil {
			fmt.Fprintf(stderr, "switchyard serve: --mcp-config: %v\n", err)
			return exitUsage
		}
	}
	if *workDir != "" {
		abs, err := filepath.Abs(*workDir)
		if err == nil {
			var fi os.FileInfo
			if fi, err = os.Stat(abs); err == nil && !fi.IsDir() {
				err = fmt.Errorf("%s is not a folder", abs)
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "switchyard serve: --workdir: %v\n", err)
			return exitUsage
		}
		*workDir = abs
	}
	for _, n := range strings.Split(*passEnv, ",") {
		if n = strings.TrimSpace(n); n != "" && yamlflow.LooksSecret(n) {
			fmt.Fprintf(stderr, "switchyard serve: warning: --pass-env %s looks like a secret: every bash, script and Bash tool call can read it\n", n)
		}
	}
	var notifier *server.Notifier
	if *notifyURL != "" {
		n, err := server.NewNotifier(server.NotifierOptions{URL: *notifyURL, PublicURL: *publicURL, Logger: logger})
		if err != nil {
			fmt.Fprintln(stderr, "switchyard serve: --notify-url:", err)
			return exitUsage
		}
		defer n.Close()
		notifier = n
	}
	unsetEnv("SWITCHYARD_NOTIFY_URL")
	if err := serve(ctx, serveOptions{notifier: notifier, addr: *addr, data: *data, db: *db, token: *token, recover: !*noRecover,
		workflows: *workflows, readOnlyWorkflows: *readOnlyWorkflows, maxBody: limit, maxConns: *maxConns, readTimeout: *readTimeout, writeTimeout: *writeTimeout, grace: *grace, announce: announce,
		maxParallel: *maxParallel, maxLLM: *maxLLM, mcp: mcpCfg, workDir: *workDir, keep: keepRuns, trustedProxies: trustedProxies,
		sandbox: *sandboxMode, tokenFile: *tokenFile, ready: readyLine(stderr, *logFormat, announce, *publicURL, shownToken)}, logger); err != nil {
		logger.Error("serve", "err", err)
		fmt.Fprintln(stderr, "switchyard serve:", err)
		return exitFailed
	}
	return exitOK
}

// defaultGCPercent is used unless GOGC is set. A server's live heap is
// small (tens of MB) while it allocates fast (JSON, SQLite rows, the OpenAI
// SDK's stream decoding). Measured with `switchyard load runs`: collecting
// at 3x the live heap instead of 2x cut server CPU per run by about 9%;
// 5x gained only 1% more and doubled peak RSS with 10,000 paused runs.
// GOMEMLIMIT, when set, still makes the collector work harder near it.
const defaultGCPercent = 200

func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// releaseStartupGarbage collects what starting up allocated and dropped,
// and returns its pages, before the first request. goose's SQL parser
// keeps a 4 MiB scan buffer per migration it parses at once in a
// sync.Pool: 16 MiB that held the idle server's heap at about 20 MiB, and
// the first heap goal set from it (three times, at GOGC=200) took the
// peak RSS of `switchyard load runs` from about 80 MB steady to 98-111 MB
// in its first second. Two collections: the first moves a pool's buffers
// to its victim cache, the second (in FreeOSMemory) frees them.
func releaseStartupGarbage() {
	runtime.GC()
	debug.FreeOSMemory()
}

// startCPUProfile profiles the process into path until stop is called:
// the load tool's figures are explained with it (go tool pprof).
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// startMutexProfile samples lock contention (one event in
// mutexProfileRate) and writes it to path when stop is called: where the
// CPU per run grows with cores, what serializes shows here as the time
// goroutines waited on each lock.
func startMutexProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	prev := runtime.SetMutexProfileFraction(mutexProfileRate)
	return func() {
		if err := pprof.Lookup("mutex").WriteTo(f, 0); err != nil {
			slog.Warn("mutex profile not written", "path", path, "err", err)
		}
		runtime.SetMutexProfileFraction(prev)
		f.Close()
	}, nil
}

const (
	mutexProfileRate = 5
	memProfileRate   = 4 << 10
)

// startMemProfile writes the allocations made from start to stop (pprof's
// allocs profile) to path: which code allocates what `load runs` reports
// as serverAllocsPerRun. It samples every memProfileRate bytes instead of
// Go's 512 KB, which in a few seconds of load left too few samples to
// tell the owners of a run's thousand allocations apart.
func startMemProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	runtime.MemProfileRate = memProfileRate
	return func() {
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			slog.Warn("memory profile not written", "path", path, "err", err)
		}
		f.Close()
	}, nil
}

type serveOptions struct {
	addr, data, token, workflows string
	recover                      bool
	readOnlyWorkflows            bool
	maxBody                      int64
	maxConns                     int
	readTimeout, writeTimeout    time.Duration
	grace                        time.Duration
	maxParallel, maxLLM          int
	announce                     *slog.Logger // start and stop lines, at any log level
	notifier                     *server.Notifier
	ready                        func(bound string) // called once, after the listening line
	db                           string             // PostgreSQL URL; "" for the SQLite file of data
	mcp                          mcp.Config         // servers drawn agents may pick (--mcp-config)
	workDir                      string             // drawn runs' folder (--workdir); "" for one per run
	keep                         store.Retention    // finished runs to keep (--keep-runs, --keep-runs-count)
	trustedProxies               []netip.Prefix     // --trusted-proxy
	sandbox                      string             // --sandbox: auto, on or off
	tokenFile                    string             // --token-file, hidden from nodes
}

// readyLine returns what serve calls once it listens: the address to open,
// as the last line of start-up, so a person running `go run` sees it under
// the build and log output. With --log-format json it is a log record.
// A token serve made (token) is in the address, for the UI to sign in
// with; a token the user gave is not printed.
func readyLine(w io.Writer, format string, announce *slog.Logger, publicURL, token string) func(string) {
	return func(bound string) {
		u := withToken(browserURL(bound, publicURL), token)
		if format == "json" {
			announce.Info("open in your browser", "url", u)
			return
		}
		fmt.Fprintf(w, "Open %s in your browser\n", u)
	}
}

// browserURL is the address a person opens: the public URL when given,
// else the bound address, with a wildcard host (0.0.0.0, ::) as 127.0.0.1.
func browserURL(bound, publicURL string) string {
	if publicURL != "" {
		return publicURL
	}
	host, port, err := net.SplitHostPort(bound)
	if err != nil {
		return "http://" + bound
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// withToken adds ?token= to the address to open (the UI trades it for its
// session cookie and removes it from the address bar).
func withToken(u, token string) string {
	if token == "" {
		return u
	}
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	if p.Path == "" {
		p.Path = "/"
	}
	q := p.Query()
	q.Set("token", token)
	p.RawQuery = q.Encode()
	return p.String()
}

// randomToken returns 32 random bytes, base64url-encoded.
func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func serve(ctx context.Context, o serveOptions, logger *slog.Logger) error {
	// On PostgreSQL, other processes' commits reach the live-event hub:
	// a websocket here follows a run another process drives.
	db, err := openStore(ctx, storeOptions{db: o.db, data: o.data, logger: logger, remote: true})
	if err != nil {
		return err
	}
	st := db.st
	defer st.Close()
	unsetEnv("SWITCHYARD_DB", "SWITCHYARD_DATABASE_URL")
	// Before the first node can start (recovery below continues runs).
	if warning, err := startSandbox(o.sandbox, db.artifacts, o.tokenFile); err != nil {
		return err
	} else if warning != "" {
		logger.Warn(warning)
	}
	if pg, ok := st.(*postgres.Store); ok && pg.SynchronousCommit() == "off" {
		logger.Warn("postgres: synchronous_commit is off: commits are acknowledged before they are durable, so a database crash may lose the last node completions (and run those nodes again); set it to on")
	}
	metrics := server.NewMetrics()
	cfg := engine.Config{
		Store:         st,
		ArtifactsRoot: db.artifacts,
		WorkspaceRoot: db.workspaces(),
		WorktreeRoot:  db.worktrees(),
		MCP:           o.mcp,
		Logger:        logger,
		LeaseTTL:      leaseTTLFromEnv(),
		Sinks:         []engine.Sink{metrics},
		MaxParallel:   o.maxParallel,
		MaxLLMCalls:   o.maxLLM,
	}
	if o.notifier != nil {
		cfg.Sinks = append(cfg.Sinks, o.notifier)
	}
	if ok, err := llmFromEnv(&cfg); err != nil {
		return err
	} else if !ok {
		logger.Warn("no LLM configured: agent nodes will fail; set OPENAI_API_KEY or OPENAI_BASE_URL")
	}
	owners := db.registerOwners(&cfg, logger)
	defer closeOwners(owners) // after the engine's Close (defers run last first)
	e, err := engine.New(cfg)
	if err != nil {
		return err
	}
	// Closing the engine keeps running runs resumable: the next process
	// recovers them.
	defer e.Close()

	var src server.WorkflowSource
	if workflowSourceFor != nil {
		if src, err = workflowSourceFor(o.workflows, logger, e); err != nil {
			return fmt.Errorf("workflows folder %s: %w", o.workflows, err)
		}
	}
	defer startStoreUpkeep(ctx, st, src, o.keep, metrics.Registry(), logger)()
	ui, ok := switchyard.UI()
	if !ok {
		logger.Info("built without the web UI (-tags noui): serving the API only")
	}
	srv, err := server.New(server.Config{
		Engine: e, Store: st, UI: ui, Addr: o.addr, Token: o.token, MaxBody: o.maxBody, MaxConns: o.maxConns, BodyTimeout: o.readTimeout, WriteTimeout: o.writeTimeout, Logger: logger,
		Metrics: metrics, Workflows: src, WorkflowsDir: o.workflows,
		GraphWorkDir: o.workDir, MCPServers: o.mcp.Names(), TrustedProxies: o.trustedProxies,
		ReadOnlyWorkflows: o.readOnlyWorkflows, YAMLPositionsFile: filepath.Join(filepath.Dir(dbPath(o.data)), "yaml-positions.json"),
	})
	if err != nil {
		return err
	}
	took, err := e.Recover(ctx, o.recover)
	if err != nil {
		return fmt.Errorf("recover runs: %w", err)
	}
	if len(took) > 0 {
		verb := "continued"
		if !o.recover {
			verb = "marked interrupted"
		}
		logger.Info("recovered runs", "count", len(took), "action", verb)
	}
	e.KeepRecovering(o.recover)
	releaseStartupGarbage()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	bound := ln.Addr().String()
	if o.notifier != nil {
		o.notifier.SetBase("http://" + bound)
	}
	o.announce.Info("listening", "addr", bound, "url", "http://"+bound, "auth", o.token != "", "db", db.where)

	// Before serving: connections wait in the listen backlog, so no
	// request record is printed above the address to open.
	if o.ready != nil {
		o.ready(bound)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down: finishing in-flight requests", "timeout", o.grace)
	sctx, cancel := context.WithTimeout(context.Background(), o.grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		logger.Warn("shutdown", "err", err)
	}
	if err := <-served; err != nil {
		logger.Warn("serve", "err", err)
	}
	e.Close()
	o.announce.Info("stopped")
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// parseSize reads a byte count: "1048576", "512KiB", "10MiB", "1GiB"
// (KB/MB/GB are read as the binary units too).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if len(t) > len(u.suffix) && strings.EqualFold(t[len(t)-len(u.suffix):], u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("%q is not a size (e.g. 10MiB)", s)
	}
	return n * mult, nil
}
