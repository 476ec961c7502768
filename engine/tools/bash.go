package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/switchyard/switchyard/internal/proc"
)

// Bash timeouts when the Env sets none (Claude Code's).
const (
	DefaultBashTimeout    = 2 * time.Minute
	DefaultBashMaxTimeout = 10 * time.Minute
)

type bashTool struct{}

func (bashTool) Name() string { return "Bash" }

func (bashTool) Description() string {
	return "Runs a bash command in the workspace folder and returns its output (stdout, then stderr). " +
		"Each call starts a fresh shell: cd and variables do not carry over. " +
		"timeout is in milliseconds (default 2 minutes, at most 10, or less where the workflow says so); the command and everything it started are killed when it passes. " +
		"Prefer Read, Edit, Write, Glob, Grep and LS over cat, sed, echo >, find, grep and ls."
}

func (bashTool) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"command":     map[string]any{"type": "string", "description": "The command to run"},
			"timeout":     map[string]any{"type": "integer", "description": "Optional timeout in milliseconds (at most 600000)"},
			"description": map[string]any{"type": "string", "description": "What the command does, in 5-10 words"},
		},
		"required":             []string{"command"},
		"additionalProperties": false,
	}
}

// timeouts are the Env's Bash default and cap, with the package defaults
// for zero.
func (env *Env) timeouts() (def, most time.Duration) {
	def, most = env.BashTimeout, env.BashMaxTimeout
	if def <= 0 {
		def = DefaultBashTimeout
	}
	if most <= 0 {
		most = DefaultBashMaxTimeout
	}
	return min(def, most), most
}

func (t bashTool) Call(ctx context.Context, env *Env, raw json.RawMessage) Result {
	a, err := parseArgs(t, raw)
	if err != nil {
		return errResult("Bash", "%v", err)
	}
	command, ms := a.str("command"), a.int("timeout")
	_ = a.str("description")
	if a.err != nil {
		return errResult("Bash", "%v", a.err)
	}
	if strings.TrimSpace(command) == "" {
		return errResult("Bash", "field \"command\" is empty")
	}
	if a.has("timeout") && ms <= 0 {
		return errResult("Bash", "field \"timeout\" must be a positive number of milliseconds, got %d", ms)
	}
	roots, err := env.roots()
	if err != nil {
		return errResult("Bash", "%v", err)
	}
	timeout, most := env.timeouts()
	if a.has("timeout") {
		timeout = min(time.Duration(ms)*time.Millisecond, most)
	}
	// A nil Env makes exec inherit this process's environment (server
	// secrets included): the command gets ProcEnv and nothing else.
	penv := slices.Clone(env.ProcEnv)
	if penv == nil {
		penv = []string{}
	}
	run := env.RunProc
	if run == nil {
		run = proc.Run
	}
	stdout, stderr, err := run(ctx, proc.Spec{
		Name:    "bash",
		Args:    []string{"-c", command},
		Dir:     roots[0],
		Expose:  roots,
		Env:     penv,
		Timeout: timeout,
	})
	body := stdout
	if s := strings.TrimRight(stderr, "\n"); s != "" {
		if body != "" {
			body += "\n"
		}
		body += s
	}
	if err == nil {
		if body == "" {
			body = "(no output)"
		}
		return Fit(body, false)
	}
	var pe *proc.Error
	var note string
	switch {
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		note = fmt.Sprintf("Command cancelled (%v); its process group was killed.", ctx.Err())
	case errors.As(err, &pe) && pe.Timeout > 0:
		note = fmt.Sprintf("Command timed out after %s; its process group was killed.", pe.Timeout)
	case errors.As(err, &pe) && pe.Signal != "":
		note = "Command ended by signal: " + pe.Signal + "."
	case errors.As(err, &pe):
		note = fmt.Sprintf("Exit code %d", pe.ExitCode)
	default:
		note = "Command failed: " + err.Error()
	}
	if body != "" {
		note = "\n" + note
	}
	return fit(body, note, len(body), true)
}
