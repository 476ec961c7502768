package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/sqlite"
)

// `switchyard prune` deletes finished runs on demand; `serve --keep-runs`
// and `--keep-runs-count` do it in the background (retentionFlags).
func cmdPrune(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("prune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	olderThan := fs.String("older-than", "", "delete runs that finished longer ago than this (30d, 12h, 90m)")
	keep := fs.Int("keep", 0, "delete all finished runs but the N that finished last (with --older-than: either deletes)")
	dryRun := fs.Bool("dry-run", false, "count what would be deleted; delete nothing")
	vacuum := fs.Bool("vacuum", false, "SQLite: then rebuild the file so it shrinks now and after every later prune (needs it to itself: stop serve first, and free disk of about its size)")
	data := dataFlag(fs)
	db := dbFlag(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: switchyard prune --older-than 30d [--keep N] [--dry-run] [--vacuum] [--data DIR | --db URL]")
		fmt.Fprintln(stderr, "  deletes finished runs (completed, failed, cancelled) with their events; pending, running,")
		fmt.Fprintln(stderr, "  paused and interrupted runs are never deleted")
		fs.PrintDefaults()
	}
	if pos, err := parseInterleaved(fs, args); err != nil {
		return exitUsage
	} else if len(pos) > 0 {
		fmt.Fprintf(stderr, "switchyard prune: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	var age time.Duration
	if *olderThan != "" {
		var err error
		if age, err = parseAge(*olderThan); err != nil {
			fmt.Fprintf(stderr, "switchyard prune: --older-than: %v\n", err)
			return exitUsage
		}
	}
	if *keep < 0 {
		fmt.Fprintf(stderr, "switchyard prune: --keep %d: want 0 or more\n", *keep)
		return exitUsage
	}
	if age == 0 && *keep == 0 {
		fmt.Fprintln(stderr, "switchyard prune: say what to delete: --older-than AGE and/or --keep N")
		fs.Usage()
		return exitUsage
	}
	if *vacuum && *db != "" {
		fmt.Fprintln(stderr, "switchyard prune: --vacuum is for the SQLite file; PostgreSQL reuses freed space by itself (autovacuum)")
		return exitUsage
	}
	o, err := openStore(ctx, storeOptions{db: *db, data: *data})
	if err != nil {
		fmt.Fprintln(stderr, "switchyard:", err)
		return exitFailed
	}
	p := store.Retention{KeepFor: age, KeepCount: *keep}.Prune(time.Now())
	p.DryRun = *dryRun
	got, err := o.st.PruneRuns(ctx, p)
	if cerr := o.st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(stderr, "switchyard:", err)
		if got.Runs > 0 {
			fmt.Fprintf(stderr, "switchyard: %d runs were pruned before that\n", got.Runs)
		}
		return exitFailed
	}
	what := fmt.Sprintf("%d runs (%d events)", got.Runs, got.Events)
	switch {
	case *dryRun:
		fmt.Fprintf(stdout, "would prune %s\n", what)
		return exitOK
	case got.FreedBytes > 0:
		fmt.Fprintf(stdout, "pruned %s; the database shrank by %s\n", what, byteSize(got.FreedBytes))
	default:
		fmt.Fprintf(stdout, "pruned %s\n", what)
	}
	if *vacuum {
		if err := sqlite.VacuumFile(ctx, o.sqlite); err != nil {
			fmt.Fprintln(stderr, "switchyard:", err)
			return exitFailed
		}
		fmt.Fprintf(stdout, "vacuumed %s: it returns freed space to the file system from now on\n", o.sqlite)
	}
	return exitOK
}

// retention is the --keep-runs and --keep-runs-count of serve.
type retention struct {
	keepFor   *string
	keepCount *int
}

// retentionFlags registers serve's retention flags (default: keep all).
func retentionFlags(fs *flag.FlagSet) retention {
	return retention{
		keepFor: fs.String("keep-runs", "", "delete finished runs (and their events) older than this, in the background (30d, 12h; default: keep all)"),
		keepCount: fs.Int("keep-runs-count", 0,
			"keep only the N finished runs that finished last, deleting the older ones in the background (default: keep all)"),
	}
}

// policy reads the flags; an error names the flag.
func (r retention) policy() (store.Retention, error) {
	var p store.Retention
	if *r.keepFor != "" {
		age, err := parseAge(*r.keepFor)
		if err != nil {
			return p, fmt.Errorf("--keep-runs: %w", err)
		}
		p.KeepFor = age
	}
	if *r.keepCount < 0 {
		return p, fmt.Errorf("--keep-runs-count %d: want 0 or more", *r.keepCount)
	}
	p.KeepCount = *r.keepCount
	return p, nil
}

// parseAge reads an age: a number of days (30d) or weeks (2w), or a Go
// duration (12h, 90m, 1h30m). It must be positive.
func parseAge(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	var d time.Duration
	var err error
	switch {
	case strings.HasSuffix(t, "d") || strings.HasSuffix(t, "w"):
		unit := 24 * time.Hour
		if strings.HasSuffix(t, "w") {
			unit *= 7
		}
		var n float64
		n, err = strconv.ParseFloat(t[:len(t)-1], 64)
		if err == nil && n > 0 && n < 1e5 {
			d = time.Duration(n * float64(unit))
		} else if err == nil {
			err = errors.New("out of range")
		}
	default:
		d, err = time.ParseDuration(t)
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not an age (e.g. 30d, 2w, 12h, 90m)", s)
	}
	return d, nil
}

// byteSize writes n bytes for people.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
