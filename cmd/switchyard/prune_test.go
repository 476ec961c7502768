package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store/sqlite"
)

// seedRuns stores, in the SQLite database of data, two runs that finished
// 40 days ago (with 3 events each), a run paused 40 days ago and one that
// finished an hour ago.
func seedRuns(t *testing.T, data string) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(data, "switchyard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	for _, r := range []struct {
		id     string
		status engine.RunStatus
		at     time.Time
	}{
		{"run-old-1", engine.StatusCompleted, now.Add(-40 * 24 * time.Hour)},
		{"run-old-2", engine.StatusFailed, now.Add(-39 * 24 * time.Hour)},
		{"run-paused", engine.StatusPaused, now.Add(-40 * 24 * time.Hour)},
		{"run-recent", engine.StatusCompleted, now.Add(-time.Hour)},
	} {
		run := &engine.Run{ID: r.id, Kind: engine.KindGraph, Definition: json.RawMessage(`{"nodes":[]}`),
			Status: r.status, PendingApprovals: []engine.PendingApproval{}, CreatedAt: r.at, UpdatedAt: r.at}
		if r.status.Terminal() {
			run.FinishedAt = &r.at
		}
		var evs []*engine.Event
		for seq := int64(1); seq <= 3; seq++ {
			evs = append(evs, &engine.Event{Seq: seq, Type: engine.EvOutput, Content: "x", Timestamp: r.at})
		}
		if err := st.CreateRun(ctx, run, nil, evs); err != nil {
			t.Fatal(err)
		}
	}
}

func runIDsIn(t *testing.T, data string) []string {
	t.Helper()
	code, out, errOut := run(t, "runs", "--data", data, "--json")
	if code != exitOK {
		t.Fatalf("runs: exit %d: %s", code, errOut)
	}
	var runs []engine.Run
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		t.Fatalf("runs --json: %v: %s", err, out)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	return ids
}

func TestPrune(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	seedRuns(t, data)

	code, out, errOut := run(t, "prune", "--older-than", "30d", "--dry-run", "--data", data)
	if code != exitOK || strings.TrimSpace(out) != "would prune 2 runs (6 events)" {
		t.Fatalf("dry run: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if ids := runIDsIn(t, data); len(ids) != 4 {
		t.Fatalf("a dry run deleted runs: %v left", ids)
	}
	code, out, errOut = run(t, "prune", "--data", data, "--older-than", "30d")
	if code != exitOK || !regexp.MustCompile(`^pruned 2 runs \(6 events\)(; the database shrank by [0-9.]+ (KiB|MiB|bytes))?\n$`).MatchString(out) {
		t.Fatalf("prune: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if ids := fmt.Sprint(runIDsIn(t, data)); !strings.Contains(ids, "run-paused") || !strings.Contains(ids, "run-recent") ||
		strings.Contains(ids, "run-old") {
		t.Fatalf("runs left: %s; want the paused one (older than the cut-off) and the recent one", ids)
	}
	code, out, _ = run(t, "prune", "--data", data, "--keep", "1", "--vacuum")
	if code != exitOK || !strings.Contains(out, "pruned 0 runs") || !strings.Contains(out, "vacuumed ") {
		t.Fatalf("prune --keep 1 --vacuum: exit %d: %s", code, out)
	}
}

func TestPruneUsage(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"prune"}, "--older-than AGE and/or --keep N"},
		{[]string{"prune", "--older-than", "30x"}, `--older-than: "30x" is not an age`},
		{[]string{"prune", "--older-than", "-1d"}, `"-1d" is not an age`},
		{[]string{"prune", "--keep", "-3"}, "--keep -3"},
		{[]string{"prune", "--older-than", "1d", "--vacuum", "--db", "postgres://x@localhost/y"}, "--vacuum is for the SQLite file"},
		{[]string{"prune", "--older-than", "1d", "extra"}, `unexpected argument "extra"`},
	} {
		code, _, errOut := run(t, append(c.args, "--data", data)...)
		if code != exitUsage || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d saying %q", c.args, code, errOut, exitUsage, c.msg)
		}
	}
}

func TestParseAge(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"30d", 30 * 24 * time.Hour}, {"2w", 14 * 24 * time.Hour}, {"1.5d", 36 * time.Hour},
		{"12h", 12 * time.Hour}, {"90m", 90 * time.Minute}, {" 1h30m ", 90 * time.Minute},
		{"", 0}, {"d", 0}, {"0d", 0}, {"-2h", 0}, {"30", 0}, {"1e9d", 0}, {"x7d", 0},
	} {
		got, err := parseAge(c.in)
		if got != c.want || (err == nil) != (c.want > 0) {
			t.Errorf("parseAge(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

// TestServeKeepRuns: serve --keep-runs prunes in the background at start;
// the paused run older than the cut-off stays, and /metrics counts what
// went.
func TestServeKeepRuns(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	seedRuns(t, data)
	p := startServe(t, nil, "--addr", "127.0.0.1:0", "--data", data, "--workflows", "", "--keep-runs", "30d")
	defer p.stop(t)
	deadline := time.Now().Add(time.Minute)
	for {
		code, _, body := p.get(t, "/metrics", "")
		if code != http.StatusOK {
			t.Fatalf("/metrics: %d", code)
		}
		if strings.Contains(string(body), "switchyard_store_pruned_runs_total 2\n") &&
			strings.Contains(string(body), "switchyard_store_pruned_events_total 6\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pruning reported in a minute:\n%s\nlog:\n%s", body, p.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, _, body := p.get(t, "/api/runs", "")
	var runs []struct{ RunID string }
	if code != http.StatusOK || json.Unmarshal(body, &runs) != nil || len(runs) != 2 {
		t.Fatalf("runs after pruning: %d %s", code, body)
	}
	for _, r := range runs {
		if r.RunID != "run-paused" && r.RunID != "run-recent" {
			t.Fatalf("run %s left; want run-paused and run-recent", r.RunID)
		}
	}
}

func TestServeRefusesABadKeepRuns(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--keep-runs", "forever"}, {"--keep-runs-count", "-1"}} {
		code, _, errOut := run(t, append([]string{"serve", "--data", t.TempDir()}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, args[0]) {
			t.Errorf("serve %v: exit %d, stderr %q", args, code, errOut)
		}
	}
}
