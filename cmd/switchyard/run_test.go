package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

const approvalGraphJSON = `{"nodes":[
  {"id":"s","type":"start","position":{"x":0,"y":0},"data":{"initialInput":"draft"}},
  {"id":"ok","type":"approval","position":{"x":1,"y":0},"data":{"prompt":"Publish?"}},
  {"id":"pub","type":"agent","position":{"x":2,"y":0},"data":{"agentName":"Publisher","userPrompt":"publish {{PREVIOUS_OUTPUT}}"}},
  {"id":"fix","type":"agent","position":{"x":2,"y":1},"data":{"agentName":"Fixer","userPrompt":"fix: $REJECTION_REASON"}}],
 "edges":[{"id":"e1","source":"s","target":"ok"},
  {"id":"e2","source":"ok","target":"pub","sourceHandle":"approve"},
  {"id":"e3","source":"ok","target":"fix","sourceHandle":"reject"}]}`

// cli runs the real binary with a fake LLM and its own data dir.
type cli struct {
	t    *testing.T
	data string
	env  []string
}

func newCLI(t *testing.T, fake *fakeopenai.Server) *cli {
	env := append(os.Environ(), "SWITCHYARD_DATA=", "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	if fake != nil {
		env = append(env, "OPENAI_BASE_URL="+fake.URL(), "OPENAI_API_KEY=test")
	}
	return &cli{t: t, data: t.TempDir(), env: env}
}

func (c *cli) run(args ...string) (int, string, string) {
	c.t.Helper()
	cmd := exec.Command(binary, append(args, "--data", c.data)...)
	cmd.Env = c.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// lastJSON decodes the final result object a run command prints last.
func lastJSON(t *testing.T, out string) runResult {
	t.Helper()
	i := strings.LastIndex(out, "\n{\n")
	if strings.HasPrefix(out, "{\n") && i < 0 {
		i = -1
	}
	var res runResult
	if err := json.Unmarshal([]byte(out[i+1:]), &res); err != nil {
		t.Fatalf("decode result: %v\n%s", err, out)
	}
	return res
}

func TestRunResumeExitCodes(t *testing.T) {
	t.Parallel()
	fake := fakeopenai.StartT(t)
	c := newCLI(t, fake)
	g := writeFile(t, t.TempDir(), "g.json", approvalGraphJSON)

	code, out, errOut := c.run("run", g, "--events")
	if code != exitPaused {
		t.Fatalf("run: exit %d, want 3\n%s\n%s", code, out, errOut)
	}
	res := lastJSON(t, out)
	if res.Status != "paused" || len(res.PendingApprovals) != 1 || res.PendingApprovals[0].NodeID != "ok" || res.Outputs["s"] != "draft" {
		t.Fatalf("result %+v", res)
	}
	// --events printed JSON lines before the result, seq from 1.
	first := strings.SplitN(out, "\n", 2)[0]
	var ev struct {
		Seq  int64  `json:"seq"`
		Type string `json:"type"`
	}
	if err := json.Unmarshal([]byte(first), &ev); err != nil || ev.Seq != 1 || ev.Type != "run_status" {
		t.Fatalf("first event line %q: %v", first, err)
	}

	// Errors on an existing run: one line, exit 2, nothing changed.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"resume", res.RunID, "--decision", "maybe"}, "approve or reject"},
		{[]string{"resume", res.RunID, "--decision", "approve", "--node", "pub"}, "not waiting"},
		{[]string{"resume", "00000000-0000-0000-0000-000000000000", "--decision", "approve"}, "not found"},
		{[]string{"resume", "../etc/passwd", "--decision", "approve"}, "invalid run id"},
		{[]string{"show", "00000000-0000-0000-0000-000000000000"}, "not found"},
	} {
		code, _, errOut := c.run(tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d stderr %q, want 2 and %q on one line", tc.args, code, errOut, tc.want)
		}
	}
	if code, out, _ := c.run("runs", "--status", "paused"); code != 0 || !strings.Contains(out, res.RunID) {
		t.Fatalf("runs: %d %s", code, out)
	}

	code, out, errOut = c.run("resume", res.RunID, "--decision", "REJECT", "--note", "too short")
	if code != exitOK {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errOut)
	}
	res = lastJSON(t, out)
	if res.Status != "completed" || res.Outputs["fix"] != "echo: fix: too short" {
		t.Fatalf("after reject: %+v", res)
	}
	// Not paused any more.
	if code, _, errOut := c.run("resume", res.RunID, "--decision", "approve"); code != exitUsage || !strings.Contains(errOut, "ended") {
		t.Fatalf("resume of a completed run: %d %q", code, errOut)
	}
	code, out, _ = c.run("show", res.RunID, "--events")
	if code != 0 || !strings.Contains(out, `"input_received"`) || !strings.Contains(out, `"status": "completed"`) {
		t.Fatalf("show: %d\n%s", code, out)
	}
}

func TestRunFailedCancelledInvalid(t *testing.T) {
	t.Parallel()
	fake := fakeopenai.StartT(t)
	fake.Enqueue(fakeopenai.Reply{Status: 400})
	c := newCLI(t, fake)
	dir := t.TempDir()
	code, out, errOut := c.run("run", writeFile(t, dir, "g.json", validGraph))
	if code != exitFailed || lastJSON(t, out).Status != "failed" {
		t.Fatalf("failing run: %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = c.run("run", writeFile(t, dir, "bad.json", brokenGraph))
	if code != exitUsage || !strings.Contains(errOut, "start_no_outgoing") {
		t.Fatalf("invalid graph: %d %q", code, errOut)
	}
	code, _, errOut = c.run("run", writeFile(t, dir, "m.json", malformedGraph))
	if code != exitUsage || !strings.Contains(errOut, "line 3") {
		t.Fatalf("malformed: %d %q", code, errOut)
	}
	if code, _, _ := c.run("run"); code != exitUsage {
		t.Fatalf("no file: %d", code)
	}
	// Cancel a paused run from another process.
	code, out, _ = c.run("run", writeFile(t, dir, "a.json", approvalGraphJSON))
	if code != exitPaused {
		t.Fatal(code)
	}
	id := lastJSON(t, out).RunID
	code, out, errOut = c.run("cancel", id)
	if code != exitCancelled || lastJSON(t, out).Status != "cancelled" {
		t.Fatalf("cancel: %d\n%s\n%s", code, out, errOut)
	}
}

func TestRunWithoutLLMConfigured(t *testing.T) {
	t.Parallel()
	c := newCLI(t, nil)
	code, out, _ := c.run("run", writeFile(t, t.TempDir(), "g.json", validGraph), "--input", "x")
	res := lastJSON(t, out)
	if code != exitFailed || !strings.Contains(res.Error, "no LLM configured: set OPENAI_API_KEY or OPENAI_BASE_URL") {
		t.Fatalf("%d %+v", code, res)
	}
}
