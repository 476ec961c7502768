package yamlflow

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/graph"
)

// Severities of a Diagnostic (the same strings as graph.SeverityError and
// graph.SeverityWarning).
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Diagnostic codes. They are a stable contract: the CLI, the API and the UI
// show them.
const (
	// File level.
	CodeYAMLSyntax        = "yaml_syntax"
	CodeFileTooLarge      = "file_too_large"
	CodeEmptyDocument     = "empty_document"
	CodeInvalidDocument   = "invalid_document"
	CodeMultipleDocuments = "multiple_documents"
	CodeDuplicateKey      = "duplicate_key"
	CodeInvalidKey        = "invalid_key"
	CodeInvalidType       = "invalid_type"
	CodeInvalidValue      = "invalid_value"
	CodeMissingName       = "missing_name"
	CodeMissingDesc       = "missing_description"
	CodeMissingNodes      = "missing_nodes"
	CodeEmptyNodes        = "empty_nodes"

	// Fields we do not know or do not use.
	CodeUnknownField   = "unknown_field"
	CodeNotImplemented = "not_implemented"
	CodeAIFieldIgnored = "ai_field_ignored"
	CodeFieldIgnored   = "field_ignored"

	// Node structure.
	CodeInvalidNode            = "invalid_node"
	CodeMissingID              = "missing_id"
	CodeDuplicateID            = "duplicate_id"
	CodeUnreferenceableID      = "unreferenceable_id"
	CodeNoType                 = "no_type"
	CodeMutuallyExclusiveTypes = "mutually_exclusive_types"
	CodeUnknownTypeKey         = "unknown_type_key"
	CodeEmptyCommand           = "empty_command"
	CodeInvalidCommandName     = "invalid_command_name"
	CodeEmptyPrompt            = "empty_prompt"
	CodeEmptyBash              = "empty_bash"
	CodeEmptyScript            = "empty_script"
	CodeMissingRuntime         = "missing_runtime"
	CodeInvalidRuntime         = "invalid_runtime"
	CodeEmptyCancelReason      = "empty_cancel_reason"
	CodeInvalidLoop            = "invalid_loop"
	CodeInvalidApproval        = "invalid_approval"
	CodeInvalidTriggerRule     = "invalid_trigger_rule"
	CodeInvalidRetry           = "invalid_retry"
	CodeInvalidContext         = "invalid_context"
	CodeUnknownProvider        = "unknown_provider"
	CodeUnsupportedProvider    = "unsupported_provider" // a warning: loads, cannot run
	CodeSecretPassEnv          = "secret_pass_env"      // a warning: pass_env names what looks like a secret
	CodeBadOutputFormat        = "bad_output_format"
	CodeUnknownTool            = "unknown_tool" // a warning: a tool name Switchyard does not know
	CodeInvalidMCP             = "invalid_mcp"
	CodeInvalidHooks           = "invalid_hooks"
	CodeInvalidInclude         = "invalid_include"
	CodeIncludeNotFound        = "include_not_found"
	CodeIncludeCycle           = "include_cycle"
	CodeIncludeTooDeep         = "include_too_deep"

	// Graph.
	CodeUnknownDependency   = "unknown_dependency"
	CodeDuplicateDependency = "duplicate_dependency"
	CodeDependencyCycle     = "dependency_cycle"
	CodeBadWhen             = "bad_when"
	CodeUnknownWhenRef      = "unknown_when_ref"
	CodeWhenRefNotUpstream  = "when_ref_not_upstream"
	CodeUnknownOutputRef    = "unknown_output_ref"
)

// Diagnostic is one problem found while loading a workflow.
type Diagnostic struct {
	File     string
	Line     int // 1-based YAML line; 0 when unknown
	NodeID   string
	Field    string // dotted path inside the node or file, e.g. "loop.max_iterations"
	Code     string
	Severity string // "error" or "warning"
	Message  string
}

// Problem is d as the problem both workflow formats share; its message is
// the whole located text (Error).
func (d Diagnostic) Problem() graph.Problem {
	sev := graph.SeverityWarning
	if d.IsError() {
		sev = graph.SeverityError
	}
	return graph.Problem{Code: d.Code, Severity: sev, Message: d.Error(), NodeID: d.NodeID, Field: d.Field, Line: d.Line}
}

// Problems converts diagnostics to problems (see Diagnostic.Problem).
func Problems(diags []Diagnostic) []graph.Problem {
	out := make([]graph.Problem, 0, len(diags))
	for _, d := range diags {
		out = append(out, d.Problem())
	}
	return out
}

// IsError reports whether d blocks the workflow from loading.
func (d Diagnostic) IsError() bool { return d.Severity == SeverityError }

// Error formats d as `wf.yaml:12: node "build": field "bash": must not be empty`.
func (d Diagnostic) Error() string {
	var b strings.Builder
	b.WriteString(d.File)
	if d.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(d.Line))
	}
	b.WriteString(": ")
	if d.NodeID != "" {
		fmt.Fprintf(&b, "node %q: ", d.NodeID)
	}
	if d.Field != "" {
		fmt.Fprintf(&b, "field %q: ", d.Field)
	}
	b.WriteString(d.Message)
	return b.String()
}

// String is Error, so a Diagnostic prints the same in logs and errors.
func (d Diagnostic) String() string { return d.Error() }

// ErrInvalidWorkflow matches (errors.Is) every *LoadError.
var ErrInvalidWorkflow = errors.New("invalid workflow")

// LoadError is returned by Load and Parse when at least one error-severity
// Diagnostic was found. It holds all of them (warnings excluded).
type LoadError struct {
	File        string
	Diagnostics []Diagnostic
}

// Error lists every error, one a line.
func (e *LoadError) Error() string {
	lines := make([]string, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		lines[i] = d.Error()
	}
	return strings.Join(lines, "\n")
}

// Is makes errors.Is(err, ErrInvalidWorkflow) true.
func (e *LoadError) Is(target error) bool { return target == ErrInvalidWorkflow }

// Unwrap exposes each Diagnostic, so errors.As(err, &Diagnostic{}) finds the first.
func (e *LoadError) Unwrap() []error {
	errs := make([]error, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		errs[i] = d
	}
	return errs
}

// Errors returns the error-severity diagnostics of ds.
func Errors(ds []Diagnostic) []Diagnostic {
	var out []Diagnostic
	for _, d := range ds {
		if d.IsError() {
			out = append(out, d)
		}
	}
	return out
}
