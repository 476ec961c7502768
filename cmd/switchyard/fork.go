package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/switchyard/switchyard/engine"
)

// pinFlags collects --pin NODE=TEXT.
type pinFlags map[string]string

func (p *pinFlags) String() string { return "" }

func (p *pinFlags) Set(v string) error {
	node, text, ok := strings.Cut(v, "=")
	if !ok || node == "" {
		return fmt.Errorf("want NODE=TEXT, not %q", v)
	}
	if *p == nil {
		*p = pinFlags{}
	}
	(*p)[node] = text
	return nil
}

// runFork is `run --from RUN:NODE`: a fork of a run that ended, run here
// like any other run (same exit codes).
func runFork(ctx context.Context, from string, pins pinFlags, fs *flag.FlagSet, input string, events bool, data, db string, stdout, stderr io.Writer) int {
	runID, node, ok := strings.Cut(from, ":")
	if !ok || runID == "" || node == "" {
		fmt.Fprintf(stderr, "switchyard run: --from wants RUN:NODE, not %q\n", from)
		return exitUsage
	}
	var evw io.Writer
	if events {
		evw = stdout
	}
	env, err := openEnv(ctx, db, data, evw, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "switchyard:", err)
		return exitFailed
	}
	defer env.close()
	opt := engine.ForkOptions{Pinned: pins}
	inputSet := false
	fs.Visit(func(f *flag.Flag) { inputSet = inputSet || f.Name == "input" })
	if inputSet {
		opt.Input = &input
	}
	run, err := env.e.Fork(ctx, runID, node, opt)
	switch {
	case errors.Is(err, engine.ErrNotFound):
		fmt.Fprintf(stderr, "switchyard: no run %s\n", runID)
		return exitUsage
	case errors.Is(err, engine.ErrNotForkable):
		fmt.Fprintln(stderr, "switchyard:", err)
		return exitUsage
	case err != nil:
		fmt.Fprintln(stderr, "switchyard:", err)
		return exitFailed
	}
	return env.finish(ctx, run.ID, stdout, stderr)
}
