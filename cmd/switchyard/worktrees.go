package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/switchyard/switchyard/engine"
)

// cmdWorktrees manages the git worktrees of isolated YAML runs
// (worktree: {enabled: true}): `prune` removes those of runs that ended,
// keeping their branches switchyard/<run id>.
func cmdWorktrees(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "prune" {
		fmt.Fprintln(stderr, "usage: switchyard worktrees prune [--dry-run] [--data DIR | --db URL]")
		return exitUsage
	}
	fs := flag.NewFlagSet("worktrees prune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dryRun := fs.Bool("dry-run", false, "list the worktrees that would be removed, remove nothing")
	data := dataFlag(fs)
	db := dbFlag(fs)
	if _, err := parseInterleaved(fs, args[1:]); err != nil {
		return exitUsage
	}
	o, err := openStore(ctx, storeOptions{db: *db, data: *data})
	if err != nil {
		fmt.Fprintln(stderr, "switchyard:", err)
		return exitFailed
	}
	defer o.st.Close()
	dirs, err := engine.PruneWorktrees(ctx, o.st, o.worktrees(), *dryRun)
	verb := "removed"
	if *dryRun {
		verb = "would remove"
	}
	for _, d := range dirs {
		fmt.Fprintf(stdout, "%s %s\n", verb, d)
	}
	if err != nil {
		fmt.Fprintln(stderr, "switchyard worktrees prune:", err)
		return exitFailed
	}
	if len(dirs) == 0 {
		fmt.Fprintln(stdout, "no worktrees of finished runs")
	}
	return exitOK
}
