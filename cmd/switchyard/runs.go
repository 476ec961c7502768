package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/ownerlock"
	"github.com/switchyard/switchyard/llm"
	"github.com/switchyard/switchyard/store/sqlite"
)

// runResult is the final JSON printed by run and resume.
type runResult struct {
	RunID            string                   `json:"runId"`
	Status           engine.RunStatus         `json:"status"`
	Outputs          map[string]string        `json:"outputs"`
	PendingApprovals []engine.PendingApproval `json:"pendingApprovals"`
	Error            string                   `json:"error,omitempty"`
	// Usage is the run's model token totals (and cost with SWITCHYARD_PRICES).
	Usage engine.Usage `json:"usage,omitzero"`
}

// exitFor maps a run status to the process exit code.
func exitFor(s engine.RunStatus) int {
	switch s {
	case engine.StatusCompleted:
		return exitOK
	case engine.StatusPaused:
		return exitPaused
	case engine.StatusCancelled:
		return exitCancelled
	}
	return exitFailed
}

// dataFlag registers --data (default: $SWITCHYARD_DATA or ~/.switchyard).
func dataFlag(fs *flag.FlagSet) *string {
	return fs.String("data", "", "data directory holding switchyard.db (default $SWITCHYARD_DATA or ~/.switchyard)")
}

func dbPath(dataDir string) string {
	if dataDir != "" {
		return filepath.Join(dataDir, "switchyard.db")
	}
	return sqlite.DefaultPath()
}

// lineSink prints events as JSON lines as they happen.
type lineSink struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (s *lineSink) Emit(ev *engine.Event) {
	s.mu.Lock()
	_ = s.enc.Encode(ev)
	s.mu.Unlock()
}

// cliEnv is the store and engine a run-related command works with.
type cliEnv struct {
	st     runStore
	e      *engine.Engine
	owners *ownerlock.Registry // nil when it could not be created
}

func openEnv(ctx context.Context, db, dataDir string, events io.Writer, stderr io.Writer) (*cliEnv, error) {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// Nodes run as this process's children: hide its secrets from /proc.
	if err := hideFromProc(secretFlag{"db", &db}); err != nil {
		logger.Warn("cannot hide secrets from /proc", "err", err)
	}
	o, err := openStore(ctx, storeOptions{db: db, data: dataDir, logger: logger})
	if err != nil {
		return nil, err
	}
	if warning, err := startSandbox(envOr("SWITCHYARD_SANDBOX", "auto"), o.artifacts, ""); err != nil {
		o.st.Close()
		return nil, err
	} else if warning != "" {
		logger.Warn(warning)
	}
	st := o.st
	cfg := engine.Config{
		Store:         st,
		ArtifactsRoot: o.artifacts,
		WorkspaceRoot: o.workspaces(),
		WorktreeRoot:  o.worktrees(),
		Logger:        logger,
		LeaseTTL:      leaseTTLFromEnv(),
		MaxParallel:   envInt("SWITCHYARD_MAX_PARALLEL", 0),
		MaxLLMCalls:   envInt("SWITCHYARD_MAX_LLM_CALLS", 0),
	}
	if _, err := llmFromEnv(&cfg); err != nil {
		st.Close()
		return nil, err
	}
	unsetEnv("SWITCHYARD_DB", "SWITCHYARD_DATABASE_URL")
	owners := o.registerOwners(&cfg, logger)
	if events != nil {
		// Print an event only once it is durable: a line the user saw is
		// never lost, even if this process is killed right after.
		ls := &lineSink{enc: newJSONEncoder(events)}
		st.OnCommit(func(evs []engine.Event, _ []*engine.Run) {
			for i := range evs {
				ls.Emit(&evs[i])
			}
		})
	}
	e, err := engine.New(cfg)
	if err != nil {
		closeOwners(owners)
		st.Close()
		return nil, err
	}
	return &cliEnv{st: st, e: e, owners: owners}, nil
}

// registerOwner names this process's lease owner and holds its lock file
// beside the database (<db>.owners/), so that other processes on this
// machine know at once when it dies. Without it (a read-only directory),
// leases alone decide, as across machines.
func registerOwner(cfg *engine.Config, db string, logger *slog.Logger) *ownerlock.Registry {
	owner := ownerlock.NewOwner()
	reg, err := ownerlock.Register(db+".owners", owner)
	if err != nil {
		logger.Warn("no owner lock: runs of this process are taken over only when their leases expire", "err", err)
		return nil
	}
	cfg.Owner, cfg.Owners = owner, reg
	return reg
}

func closeOwners(reg *ownerlock.Registry) {
	if reg != nil {
		_ = reg.Close()
	}
}

// leaseTTLFromEnv reads SWITCHYARD_LEASE_TTL (a Go duration): how long a
// dead process keeps its runs before another may take them over.
func leaseTTLFromEnv() time.Duration {
	d, err := time.ParseDuration(os.Getenv("SWITCHYARD_LEASE_TTL"))
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

// envInt reads a positive integer from the environment, else def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func (c *cliEnv) close() {
	c.e.Close()
	closeOwners(c.owners)
	c.st.Close()
}

// finish waits for the run to leave its loop, prints its result and
// returns the exit code. Interrupting the wait cancels the run.
func (c *cliEnv) finish(ctx context.Context, runID string, stdout, stderr io.Writer) int {
	run, err := c.e.Wait(ctx, runID)
	if err != nil && ctx.Err() != nil {
		fmt.Fprintln(stderr, "switchyard: interrupted: cancelling run", runID)
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, cerr := c.e.Cancel(cctx, runID); cerr != nil {
			fmt.Fprintln(stderr, "switchyard: cancel:", cerr)
		}
		run, err = c.e.Wait(cctx, runID)
	}
	if err != nil {
		fmt.Fprintln(stderr, "switchyard:", err)
		return exitFailed
	}
	res, err := c.result(context.Background(), run)
	if err != nil {
		fmt.Fprintln(stderr, "switchyard:", err)
		return exitFailed
	}
	printJSON(stdout, res)
	return exitFor(run.Status)
}

func (c *cliEnv) result(ctx context.Context, run *engine.Run) (*runResult, error) {
	hdr, nodes, err := c.e.Snapshot(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	res := &runResult{RunID: run.ID, Status: run.Status, Outputs: map[string]string{},
		PendingApprovals: run.PendingApprovals, Error: run.Error, Usage: hdr.Usage}
	if res.PendingApprovals == nil {
		res.PendingApprovals = []engine.PendingApproval{}
	}
	for _, n := range nodes {
		if n.Status == engine.NodeCompleted {
			res.Outputs[n.NodeID] = n.Output
		}
	}
	return res, nil
}

// newJSONEncoder writes JSON for a terminal and for jq: strings as
// written ("a && b"), not escaped for an HTML page ("a \u0026\u0026 b").
// Event data comes stored in json.Marshal's escaped form, which
// SetEscapeHTML leaves as it is, so the writer undoes those escapes too.
func newJSONEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(plainJSON{w})
	enc.SetEscapeHTML(false)
	return enc
}

// plainJSON writes JSON texts (one per Write, as json.Encoder writes them)
// with the escapes \u0026, \u003c and \u003e turned back into &, < and >.
type plainJSON struct{ w io.Writer }

func (p plainJSON) Write(b []byte) (int, error) {
	if _, err := p.w.Write(unescapeHTML(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// unescapeHTML turns the escapes json.Marshal writes for &, < and > back
// into the characters; an escaped backslash followed by u0026 is text and
// stays.
func unescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch strings.ToLower(string(b[i+2 : i+6])) {
			case "0026":
				out = append(out, '&')
				i += 5
				continue
			case "003c":
				out = append(out, '<')
				i += 5
				continue
			case "003e":
				out = append(out, '>')
				i += 5
				continue
			}
		}
		out = append(out, b[i], b[i+1]) // an escape pair, \\ included
		i++
	}
	return out
}

func printJSON(w io.Writer, v any) {
	enc := newJSONEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// parseInterleaved parses flags that may come before or after positional
// arguments ("run wf.json --events" as well as "run --events wf.json").
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	input := fs.String("input", "", "the run's input ($ARGUMENTS; overrides the start node's initialInput)")
	events := fs.Bool("events", false, "print each event as one JSON line as it happens")
	cwd := fs.String("cwd", "", "working directory for bash and script nodes (default: current)")
	from := fs.String("from", "", "RUN:NODE: fork a run that ended from NODE: its upstream nodes keep their results, NODE and what follows run again (instead of FILE)")
	var pins pinFlags
	fs.Var(&pins, "pin", "NODE=TEXT (with --from, repeatable): run with TEXT as the output of upstream node NODE")
	data := dataFlag(fs)
	db := dbFlag(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: switchyard run FILE [--input TEXT] [--events] [--cwd DIR] [--data DIR | --db URL]")
		fmt.Fprintln(stderr, "       switchyard run --from RUN:NODE [--pin NODE=TEXT]... [--input TEXT] [--events]")
		fmt.Fprintln(stderr, "exit codes: 0 completed, 1 failed, 2 invalid usage or workflow, 3 paused, 4 cancelled")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return exitUsage
	}
	if *from != "" {
		if len(pos) != 0 {
			fmt.Fprintln(stderr, "switchyard run: give a FILE or --from, not both")
			return exitUsage
		}
		return runFork(ctx, *from, pins, fs, *input, *events, *data, *db, stdout, stderr)
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	file := pos[0]
	raw, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "switchyard: %s: %v\n", file, err)
		return exitUsage
	}
	workDir := *cwd
	if workDir == "" {
		workDir, _ = os.Getwd()
	}
	starter, code := prepareRun(file, raw, stderr)
	if starter == nil {
		return code
	}
	var evw io.Writer
	if *events {
		evw = stdout
	}
	env, err := openEnv(ctx, *db, *data, evw, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "switchyard:", err)
		return exitFailed
	}
	defer env.close()
	run, err := starter(ctx, env.e, engine.StartOptions{Input: *input, WorkDir: workDir})
	if err != nil {
		var inv *engine.InvalidError
		if errors.As(err, &inv) {
			printProblems(stderr, file, inv.Problems)
			return exitUsage
		}
		fmt.Fprintln(stderr, "switchyard:", err)
		return exitFailed
	}
	return env.finish(ctx, run.ID, stdout, stderr)
}

// starter starts a prepared workflow on an engine.
type starter func(ctx context.Context, e *engine.Engine, opt engine.StartOptions) (*engine.Run, error)

// prepareRun decodes a workflow file; on failure it prints why and returns
// the exit code.
func prepareRun(file string, raw []byte, stderr io.Writer) (starter, int) {
	if yamlStarter != nil && isYAML(file) {
		return yamlStarter(file, raw, stderr)
	}
	g, _, err := graph.Decode(raw)
	if err != nil {
		fmt.Fprintf(stderr, "switchyard: %s: %v\n", file, err)
		return nil, exitUsage
	}
	return func(ctx context.Context, e *engine.Engine, opt engine.StartOptions) (*engine.Run, error) {
		return e.StartGraph(ctx, g, opt)
	}, exitOK
}

// yamlStarter is set by the YAML workflow support.
var yamlStarter func(file string, raw []byte, stderr io.Writer) (starter, int)

func printProblems(w io.Writer, file string, probs []graph.Problem) {
	for _, p := range probs {
		loc := ""
		if p.NodeID != "" {
			loc = " node=" + p.NodeID
		}
		if p.EdgeID != "" {
			loc += " edge=" + p.EdgeID
		}
		fmt.Fprintf(w, "%s: %s %s%s: %s\n", file, p.Severity, p.Code, loc, p.Message)
	}
}

// runErrExit maps engine errors on an existing run to a one-line message and exit 2.
func runErrExit(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, "switchyard:", oneLine(err))
	return exitUsage
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

func cmdResume(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("resume", flag.ContinueOnError)
	decision := fs.String("decision", "", "approve or reject the waiting node; omit to continue an interrupted run")
	note := fs.String("note", "", "feedback for the decision ($REJECTION_REASON on reject)")
	node := fs.String("node", "", "the waiting node to answer (needed only when several wait)")
	events := fs.Bool("events", false, "print each new event as one JSON line as it happens")
	usage := "resume RUN_ID [--decision approve|reject] [--note TEXT] [--node NODE_ID] [--events] [--data DIR | --db URL]"
	return onRun(ctx, fs, usage, args, events, stdout, stderr, func(env *cliEnv, id string) int {
		if *decision == "" {
			if *note != "" || *node != "" {
				fmt.Fprintln(stderr, "switchyard: --note and --node need --decision")
				return exitUsage
			}
			if _, err := env.e.Continue(ctx, id); err != nil {
				return runErrExit(stderr, err)
			}
		} else if _, err := env.e.Resume(ctx, id, *node, engine.Decision{Decision: *decision, Note: *note}); err != nil {
			return runErrExit(stderr, err)
		}
		return env.finish(ctx, id, stdout, stderr)
	})
}

// validRunID rejects ids that cannot be run ids before any lookup.
func validRunID(id string) error {
	if len(id) == 0 || len(id) > 64 {
		return fmt.Errorf("invalid run id %q", id)
	}
	for _, c := range id {
		if !(c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) {
			return fmt.Errorf("invalid run id %q", id)
		}
	}
	return nil
}

// onRun parses "CMD RUN_ID [flags]", checks the id and opens the store and
// engine for fn; events, when set, gets events printed as they commit.
func onRun(ctx context.Context, fs *flag.FlagSet, usage string, args []string, events *bool, stdout, stderr io.Writer,
	fn func(env *cliEnv, runID string) int) int {
	fs.SetOutput(stderr)
	data := dataFlag(fs)
	db := dbFlag(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: switchyard "+usage)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	if err := validRunID(pos[0]); err != nil {
		return runErrExit(stderr, err)
	}
	var evw io.Writer
	if events != nil && *events {
		evw = stdout
	}
	env, err := openEnv(ctx, *db, *data, evw, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "switchyard:", err)
		return exitFailed
	}
	defer env.close()
	return fn(env, pos[0])
}

func cmdCancel(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	return onRun(ctx, fs, "cancel RUN_ID [--data DIR | --db URL]", args, nil, stdout, stderr, func(env *cliEnv, id string) int {
		// A run the server (or another process) drives is cancelled by
		// that process, which polls for the request left in the database.
		if _, err := env.e.Cancel(ctx, id); errors.Is(err, engine.ErrCancelPending) {
			fmt.Fprintln(stderr, "switchyard:", oneLine(err))
			return exitFailed
		} else if err != nil {
			return runErrExit(stderr, err)
		}
		return env.finish(ctx, id, stdout, stderr)
	})
}

func cmdRuns(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("runs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	status := fs.String("status", "", "only runs with this status")
	limit := fs.Int("limit", 50, "at most this many runs, newest first")
	asJSON := fs.Bool("json", false, "print JSON")
	data := dataFlag(fs)
	db := dbFlag(fs)
	if _, err := parseInterleaved(fs, args); err != nil {
		return exitUsage
	}
	o, err := openStore(ctx, storeOptions{db: *db, data: *data})
	if err != nil {
		fmt.Fprintln(stderr, "switchyard:", err)
		return exitFailed
	}
	st := o.st
	defer st.Close()
	runs, err := st.ListRuns(ctx, engine.RunFilter{Status: engine.RunStatus(*status), Limit: *limit})
	if err != nil {
		fmt.Fprintln(stderr, "switchyard:", err)
		return exitFailed
	}
	if *asJSON {
		for _, r := range runs {
			r.Definition = nil
		}
		printJSON(stdout, runs)
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN ID\tSTATUS\tKIND\tCREATED\tWAITING\tERROR")
	for _, r := range runs {
		waiting := ""
		for i, p := range r.PendingApprovals {
			if i > 0 {
				waiting += ","
			}
			waiting += p.NodeID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Status, r.Kind,
			r.CreatedAt.Local().Format(time.DateTime), waiting, truncate(r.Error, 60))
	}
	tw.Flush()
	return exitOK
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func cmdShow(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("show", flag.ContinueOnError)
	events := fs.Bool("events", false, "also print the whole event log as JSON lines")
	return onRun(ctx, fs, "show RUN_ID [--events] [--data DIR | --db URL]", args, nil, stdout, stderr, func(env *cliEnv, id string) int {
		return show(ctx, env, id, *events, stdout, stderr)
	})
}

func show(ctx context.Context, env *cliEnv, runID string, events bool, stdout, stderr io.Writer) int {
	run, nodes, err := env.e.Snapshot(ctx, runID)
	if err != nil {
		return runErrExit(stderr, err)
	}
	res, _ := env.result(ctx, run)
	printJSON(stdout, struct {
		*runResult
		WorkflowID string              `json:"workflowId,omitempty"`
		Kind       string              `json:"kind"`
		Input      string              `json:"input"`
		CreatedAt  time.Time           `json:"createdAt"`
		FinishedAt *time.Time          `json:"finishedAt,omitempty"`
		Nodes      []*engine.NodeState `json:"nodes"`
	}{res, run.WorkflowID, run.Kind, run.Input, run.CreatedAt, run.FinishedAt, nodes})
	if events {
		evs, err := env.st.Events(ctx, run.ID, 0, 0)
		if err != nil {
			fmt.Fprintln(stderr, "switchyard:", err)
			return exitFailed
		}
		enc := newJSONEncoder(stdout)
		for i := range evs {
			_ = enc.Encode(&evs[i])
		}
	}
	return exitOK
}

// llmFromEnv gives cfg the LLM clients the environment configures: the
// OpenAI-compatible one (OPENAI_API_KEY / OPENAI_BASE_URL) and Claude
// (ANTHROPIC_API_KEY). ok is false when there is no OpenAI-compatible one.
func llmFromEnv(cfg *engine.Config) (ok bool, err error) {
	if lc, has := llm.ConfigFromEnv(); has {
		lc.MaxConns = cfg.MaxLLMCalls
		if cfg.LLM, err = llm.New(lc); err != nil {
			return false, err
		}
		ok = true
	}
	if cc, has := llm.ClaudeConfigFromEnv(); has {
		cc.MaxConns = cfg.MaxLLMCalls
		if cfg.Claude, err = llm.New(cc); err != nil {
			return ok, fmt.Errorf("claude: %w", err)
		}
	}
	// A bad price table stops the start: costs silently missing would be
	// found out much later, if at all.
	if path := os.Getenv(llm.PricesEnv); path != "" {
		if cfg.Prices, err = llm.LoadPrices(path); err != nil {
			return ok, fmt.Errorf("%s: %w", llm.PricesEnv, err)
		}
	}
	return ok, nil
}
