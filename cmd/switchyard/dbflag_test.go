package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/internal/pgtest"
)

// TestDBFlag: run, runs, resume and show work on PostgreSQL with --db (or
// $SWITCHYARD_DB), each command a new store and engine as a new process
// would be, and nothing is written beside the SQLite path of --data (no
// database file, no owner locks). A --db that is not a PostgreSQL URL is
// refused. Not parallel: it sets $SWITCHYARD_DB.
func TestDBFlag(t *testing.T) {
	pg := pgtest.StartT(t)
	dsn := pg.NewDatabase(t)
	t.Run("load with two servers", func(t *testing.T) { loadTwoServers(t, pg.NewDatabase(t)) })
	file := writeYAML(t, `
  - id: prep
    bash: echo prepared
  - id: gate
    depends_on: [prep]
    approval:
      message: "Ship $prep.output?"
  - id: after
    depends_on: [gate]
    bash: printf 'after %s' $prep.output
`)
	data, cwd := t.TempDir(), t.TempDir()
	code, stdout, stderr := run(t, "run", file, "--cwd", cwd, "--data", data, "--db", dsn)
	if code != exitPaused {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	res := decodeResult(t, stdout)

	t.Setenv("SWITCHYARD_DB", dsn)
	code, stdout, stderr = run(t, "runs", "--json", "--data", data)
	var runs []engine.Run
	if err := json.Unmarshal([]byte(stdout), &runs); err != nil || code != exitOK {
		t.Fatalf("runs ($SWITCHYARD_DB): exit %d, %v\n%s\n%s", code, err, stdout, stderr)
	}
	if len(runs) != 1 || runs[0].ID != res.RunID || runs[0].Status != engine.StatusPaused {
		t.Fatalf("runs: %+v, want %s paused", runs, res.RunID)
	}
	code, stdout, stderr = run(t, "resume", res.RunID, "--decision", "approve", "--data", data)
	if code != exitOK {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := decodeResult(t, stdout); got.Outputs["after"] != "after prepared" {
		t.Fatalf("after resume: %+v", got)
	}
	code, stdout, stderr = run(t, "show", res.RunID, "--events", "--db", dsn)
	if code != exitOK || !strings.Contains(stdout, `"status": "completed"`) || !strings.Contains(stdout, `"type":"step_end"`) {
		t.Fatalf("show: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// Only the runs' artifact folders are local.
	if ents, _ := os.ReadDir(data); len(ents) != 1 || ents[0].Name() != "artifacts" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("--data %s holds %v with --db: only artifacts/ expected (no SQLite file, no owner locks)", data, names)
	}

	for _, bad := range []string{"mysql://x/y", "/tmp/switchyard.db"} {
		code, _, stderr = run(t, "runs", "--db", bad)
		if code != exitFailed || !strings.Contains(stderr, "PostgreSQL URL") {
			t.Errorf("runs --db %s: exit %d, stderr %q", bad, code, stderr)
		}
		code, _, stderr = run(t, "serve", "--db", bad)
		if code != exitUsage || !strings.Contains(stderr, "PostgreSQL URL") {
			t.Errorf("serve --db %s: exit %d, stderr %q", bad, code, stderr)
		}
	}
}

// loadTwoServers: `switchyard load runs --servers 2 --db` starts two serve
// processes on one database, starts runs on both and sees every run
// complete through the first one's status websocket (the second's runs
// reach it as other processes' commits).
func loadTwoServers(t *testing.T, dsn string) {
	cmd := exec.Command(binary, "load", "runs", "--servers", "2", "--db", dsn, "--duration", "1s", "--clients", "4", "--json", "--quiet")
	cmd.Env = append(os.Environ(), "SWITCHYARD_DB=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("load: %v\n%s", err, errb.String())
	}
	var got struct {
		Result struct {
			Started, Completed, Failed, StartErrors int
		} `json:"result"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	if r := got.Result; r.Completed == 0 || r.Completed != r.Started || r.Failed != 0 || r.StartErrors != 0 {
		t.Fatalf("result %+v", r)
	}
	if code, _, stderr := run(t, "load", "runs", "--servers", "2"); code != exitUsage || !strings.Contains(stderr, "--db") {
		t.Errorf("--servers 2 without --db: exit %d, %q", code, stderr)
	}
}
