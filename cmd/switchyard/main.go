// Command switchyard serves the Switchyard UI and API, and runs, validates
// and inspects workflows from the command line.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// Exit codes shared by the commands that run workflows.
const (
	exitOK        = 0
	exitFailed    = 1
	exitUsage     = 2
	exitPaused    = 3
	exitCancelled = 4
)

// command is one CLI subcommand. It returns the process exit code.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands is the one place subcommands are registered.
var commands = map[string]command{
	"validate":  {"validate graph or YAML workflow files", cmdValidate},
	"normalize": {"print a graph file in the current shape", cmdNormalize},
	"run":       {"run a workflow file headless", cmdRun},
	"resume":    {"answer a paused run's approval or continue an interrupted run", cmdResume},
	"runs":      {"list runs", cmdRuns},
	"worktrees": {"remove the git worktrees of finished runs (prune)", cmdWorktrees},
	"show":      {"print one run (and its event log)", cmdShow},
	"cancel":    {"cancel a run", cmdCancel},
	"serve":     {"serve the web UI and API", cmdServe},
	"fake-llm":  {"serve a fake OpenAI-compatible endpoint (demos and tests)", cmdFakeLLM},
	"load":      {"measure a server under load (runs, fanout, watchers, approvals)", cmdLoad},
	"db":        {"database tools: db copy (SQLite into PostgreSQL)", cmdDB},
	"prune":     {"delete finished runs older than an age (--older-than 30d) or beyond a count", cmdPrune},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "switchyard: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: switchyard <command> [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'switchyard <command> -h' for a command's flags.")
}
