// Package tools holds the built-in tools an agent may call, named and
// shaped as Claude Code's (Read, Write, Edit, Glob, Grep, Bash, LS), so
// that Archon's allowed_tools/denied_tools mean what they say. File tools
// never reach outside the run's workspace roots; a bad call is an error
// Result the model sees, never a panic or a write outside.
//
// The package knows nothing of runs or events: the engine supplies an Env
// (workspace roots, the Bash environment, a hook that records process
// groups) and turns each Call into tool_call/tool_result events.
package tools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchyard/switchyard/internal/proc"
)

// MaxResult bounds the text of a result the model sees (and the event
// stores): Claude Code cuts Bash output at 30,000 characters too.
const MaxResult = 30000

// Result is what one call returns to the model.
type Result struct {
	// Output is the text the model sees, at most MaxResult bytes (Cut
	// says when it was cut; FullSize is the size before).
	Output   string
	IsError  bool
	Cut      bool
	FullSize int
}

// Env is what a call may touch.
type Env struct {
	// Roots are the folders file tools may read and write: the run's
	// workspace first (relative paths resolve against it), then others
	// such as $ARTIFACTS_DIR. Paths are resolved through symlinks; one
	// that ends outside every root is refused.
	Roots []string
	// ProcEnv is the environment of Bash commands (already the node
	// allowlist: no server secrets).
	ProcEnv []string
	// RunProc runs a Bash command; nil means proc.Run. The engine wraps it
	// to record the process group (process_start) and stream output.
	RunProc func(ctx context.Context, ps proc.Spec) (stdout, stderr string, err error)
	// BashTimeout is a Bash call's default timeout (0: 2 minutes);
	// BashMaxTimeout caps what a call may ask for (0: 10 minutes).
	BashTimeout, BashMaxTimeout time.Duration
}

// Tool is one built-in tool.
type Tool interface {
	// Name is the name the model calls (Read, Write, ...).
	Name() string
	// Description is shown to the model.
	Description() string
	// Parameters is the JSON schema of the arguments object.
	Parameters() map[string]any
	// Call runs the tool. Bad arguments, paths outside the roots, missing
	// files, binary files and failures are error Results; ctx ending stops
	// it (a Bash command's whole process group is killed).
	Call(ctx context.Context, env *Env, args json.RawMessage) Result
}
