package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/switchyard/switchyard/store/copy"
	"github.com/switchyard/switchyard/store/postgres"
	"github.com/switchyard/switchyard/store/sqlite"
)

// cmdDB groups the database tools; its one subcommand is copy.
func cmdDB(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "copy" {
		fmt.Fprintln(stderr, "usage: switchyard db copy --to POSTGRES_URL [--data DIR]")
		fmt.Fprintln(stderr, "  copies the SQLite database into an empty PostgreSQL one")
		return exitUsage
	}
	fs := flag.NewFlagSet("db copy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := dataFlag(fs)
	to := fs.String("to", envOr("SWITCHYARD_DATABASE_URL", os.Getenv("SWITCHYARD_DB")),
		"PostgreSQL URL of the empty destination database (default $SWITCHYARD_DATABASE_URL, else $SWITCHYARD_DB: the database --db would use)")
	if pos, err := parseInterleaved(fs, args[1:]); err != nil {
		return exitUsage
	} else if len(pos) > 0 || *to == "" {
		fmt.Fprintln(stderr, "usage: switchyard db copy --to POSTGRES_URL [--data DIR]")
		return exitUsage
	}
	from := dbPath(*data)
	// Before the destination is touched: a mistyped --data must not
	// create an empty database and "copy" it.
	if err := sqlite.CheckDatabase(ctx, from); err != nil {
		fmt.Fprintln(stderr, "switchyard:", err)
		if errors.Is(err, sqlite.ErrNotSwitchyard) {
			fmt.Fprintln(stderr, "switchyard: nothing copied; is --data (or SWITCHYARD_DATA) the data directory of the database to copy?")
		}
		return exitFailed
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	dst, err := postgres.Open(ctx, *to, postgres.WithLogger(log))
	if err != nil {
		fmt.Fprintln(stderr, "switchyard:", err)
		return exitFailed
	}
	defer dst.Close()
	st, err := copy.FromSQLite(ctx, from, dst, log)
	if err != nil {
		fmt.Fprintln(stderr, "switchyard:", err)
		return exitFailed
	}
	fmt.Fprintf(stdout, "copied %s: %d workflows (%d versions), %d runs (%d node states, %d events)\n",
		from, st.Workflows, st.Versions, st.Runs, st.Nodes, st.Events)
	return exitOK
}
