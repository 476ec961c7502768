package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/switchyard/switchyard/internal/bashref"
	"github.com/switchyard/switchyard/yamlflow"
)

// varMode says how a YAML node's text is substituted.
type varMode int

const (
	modePrompt varMode = iota // prompts, commands, messages: everything raw
	modeBash                  // bash: outputs through the environment, $ARGUMENTS & co left for bash
	modeScript                // scripts: every value through the environment (see renderScriptRefs)
)

// envVarNames are the variables that reach bash scripts through the
// environment instead of being substituted into the script text.
var envVarNames = []string{"ARGUMENTS", "USER_MESSAGE", "LOOP_PREV_OUTPUT", "LOOP_USER_INPUT", "REJECTION_REASON"}

// yamlVars resolves the variables of one YAML node execution.
type yamlVars struct {
	x    *Exec
	spec *yamlSpec
	mode varMode
	// Per-execution values.
	loopPrev, loopUser, rejection string
	// refs collects the values a bash script references (see bashref.Render).
	refs *[]string
}

func (v *yamlVars) Var(name string) (string, bool, error) {
	val, ok, err := v.value(name)
	if ok && err == nil && (v.mode == modeBash || v.mode == modeScript) && v.refs != nil {
		*v.refs = append(*v.refs, val)
		return bashref.Token(len(*v.refs) - 1), true, nil
	}
	return val, ok, err
}

func (v *yamlVars) value(name string) (string, bool, error) {
	switch name {
	case "ARGUMENTS", "USER_MESSAGE":
		if v.mode == modeBash {
			return "", false, nil
		}
		return v.x.RunInput(), true, nil
	case "LOOP_PREV_OUTPUT", "LOOP_USER_INPUT", "REJECTION_REASON":
		if v.mode == modeBash {
			return "", false, nil
		}
		return v.named(name), true, nil
	case "WORKFLOW_ID":
		return v.x.RunID(), true, nil
	case "CONTEXT", "ISSUE_CONTEXT", "EXTERNAL_CONTEXT":
		// Issue context comes from integrations Switchyard does not have:
		// with none given they are cleared, as upstream does.
		if v.mode == modeBash {
			return "", false, nil
		}
		return "", true, nil
	case "ARTIFACTS_DIR":
		d, err := v.x.ArtifactsDir()
		return d, err == nil, err
	case "DOCS_DIR":
		return v.spec.rs.docsDir(), true, nil
	case "BASE_BRANCH":
		b, err := v.spec.rs.baseBranch(v.x.WorkDir())
		if err != nil {
			return "", false, err
		}
		return b, true, nil
	}
	return "", false, nil
}

// named returns the per-execution value of an environment variable name.
func (v *yamlVars) named(name string) string {
	switch name {
	case "ARGUMENTS", "USER_MESSAGE":
		return v.x.RunInput()
	case "LOOP_PREV_OUTPUT":
		return v.loopPrev
	case "LOOP_USER_INPUT":
		return v.loopUser
	case "REJECTION_REASON":
		return v.rejection
	}
	return ""
}

// NodeOutput is a node's output when it completed, "" when it failed, was
// skipped or has not run; ok is false only for an id not in the workflow.
func (v *yamlVars) NodeOutput(id string) (string, bool) {
	out, st, ok := v.x.Output(id)
	if !ok {
		return "", false
	}
	if st != NodeCompleted {
		return "", true
	}
	return out, true
}

// FieldDeclared reports whether node id's output_format declares field.
func (v *yamlVars) FieldDeclared(id, field string) bool {
	n := v.spec.rs.wf.Node(id)
	if n == nil || n.OutputFormat == nil {
		return false
	}
	props, _ := n.OutputFormat["properties"].(map[string]any)
	_, ok := props[field]
	return ok
}

// NodeFieldAllowed refuses fields a node's output_format does not declare.
func (v *yamlVars) NodeFieldAllowed(id, field string) error {
	return fieldDeclared(v.spec.rs.wf.Node(id), field)
}

func fieldDeclared(n *yamlflow.Node, field string) error {
	if n == nil || n.OutputFormat == nil {
		return nil
	}
	props, ok := n.OutputFormat["properties"].(map[string]any)
	if !ok {
		return nil
	}
	if _, ok := props[field]; ok {
		return nil
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	return &FieldError{NodeID: n.ID, Field: field,
		Reason: fmt.Sprintf("field not found: %q is not declared in the output_format of node %q (declared: %s)",
			field, n.ID, strings.Join(names, ", "))}
}

// substitute resolves the variables of s for this execution. A field
// reference to a node that did not complete fails the node (Archon's rule):
// it has no output, so the field is not found.
func (v *yamlVars) substitute(s string, quote Quoter) (string, error) {
	var missing error
	dropFieldRefs(s, func(id string) bool {
		_, st, ok := v.x.Output(id)
		if ok && st != NodeCompleted && missing == nil {
			missing = fmt.Errorf("$%s.output: field not found: node %q has no output (%s)", id, id, statusWord(st))
		}
		return false
	})
	if missing != nil {
		return "", missing
	}
	prev := v.x.Input
	if (v.mode == modeBash || v.mode == modeScript) && v.refs != nil && strings.Contains(s, varPreviousOutput) {
		// {{PREVIOUS_OUTPUT}} holds outputs too: it must not become script text.
		*v.refs = append(*v.refs, prev)
		prev = bashref.Token(len(*v.refs) - 1)
	}
	out, warns, err := Substitute(s, prev, v, quote)
	for _, w := range warns {
		v.x.Emit(EvWarning, w.Message, nil)
	}
	return out, err
}

func statusWord(st NodeStatus) string {
	if st == NodeIdle {
		return "not run"
	}
	return string(st)
}

// dropFieldRefs rewrites $id.output.field to $id.output where drop(id). It
// tokenizes exactly like Substitute, so every other reference is untouched.
func dropFieldRefs(s string, drop func(id string) bool) string {
	if !strings.Contains(s, ".output.") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], varPreviousOutput) {
			b.WriteString(varPreviousOutput)
			i += len(varPreviousOutput)
			continue
		}
		if s[i] != '$' {
			b.WriteByte(s[i])
			i++
			continue
		}
		name := scanIdent(s[i+1:])
		if name == "" {
			b.WriteByte('$')
			i++
			continue
		}
		end := i + 1 + len(name)
		if next := at(s, end+len(".output")); strings.HasPrefix(s[end:], ".output") && (next == '-' || !isIdentByte(next)) {
			end2 := end + len(".output")
			if at(s, end2) == '.' {
				if f := scanField(s[end2+1:]); f != "" && drop(name) {
					b.WriteString(s[i:end2])
					i = end2 + 1 + len(f)
					continue
				}
			}
		}
		b.WriteString(s[i:end])
		i = end
	}
	return b.String()
}

// whenLookup resolves `when:` references against node states: the whole
// output of a node that did not complete has no value (it reads as ""),
// and a field of one fails the node, as substitution does (Archon's rule:
// there is no output, so the field is not found); a field of a node
// declaring output_format must be declared; a field of any other output
// needs a JSON object.
func whenLookup(p *plan, state func(id string) (string, NodeStatus, bool)) yamlflow.Lookup {
	return func(id, field string) (any, bool, error) {
		out, st, ok := state(id)
		if !ok {
			return nil, false, nil
		}
		if st != NodeCompleted {
			if field != "" {
				return nil, false, fmt.Errorf("field not found: node %q has no output (%s)", id, statusWord(st))
			}
			return nil, false, nil
		}
		if field == "" {
			return out, true, nil
		}
		k, ok := p.index[id]
		if !ok {
			return nil, false, nil
		}
		if spec, ok := p.nodes[k].spec.(*yamlSpec); ok {
			if err := fieldDeclared(spec.n, field); err != nil {
				return nil, false, err
			}
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(strings.TrimSpace(stripFence(out))), &obj); err != nil || obj == nil {
			return nil, false, &FieldError{NodeID: id, Field: field, Reason: "output is not a JSON object"}
		}
		raw, ok := obj[field]
		if !ok {
			return nil, false, nil
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var val any
		if err := dec.Decode(&val); err != nil {
			return nil, false, &FieldError{NodeID: id, Field: field, Reason: err.Error()}
		}
		if val == nil {
			return "null", true, nil // JSON null compares as 'null', as upstream
		}
		return val, true, nil
	}
}

// checkWhen evaluates a node's condition again when it starts: the join
// let it run on an evaluation error so that the error fails it here.
func checkWhen(x *Exec, spec *yamlSpec) error {
	n := spec.n
	if n.WhenExpr == nil {
		return nil
	}
	_, err := n.WhenExpr.Eval(whenLookup(x.r.plan, x.Output))
	if err != nil {
		return permanent(fmt.Errorf("when condition: %w", err))
	}
	return nil
}

func (rs *yamlRunState) docsDir() string {
	if rs.cfg.DocsDir != "" {
		return rs.cfg.DocsDir
	}
	return DefaultDocsDir
}

// ErrNoBaseBranch is returned when $BASE_BRANCH is used but neither
// configuration nor git names one.
var ErrNoBaseBranch = errors.New("cannot determine $BASE_BRANCH")

// baseBranch resolves $BASE_BRANCH once per run: configuration, else the
// remote's default branch, else main or master if the repository has it.
func (rs *yamlRunState) baseBranch(workDir string) (string, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.branchSet {
		return rs.branch, rs.branchErr
	}
	rs.branchSet = true
	if rs.cfg.BaseBranch != "" {
		rs.branch = rs.cfg.BaseBranch
		return rs.branch, nil
	}
	rs.branch, rs.branchErr = gitBaseBranch(workDir)
	return rs.branch, rs.branchErr
}

func gitBaseBranch(dir string) (string, error) {
	// gitOut: the node environment, not this process's (its API keys
	// would be in /proc/PID/environ of a git any node could read).
	git := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return gitOut(ctx, dir, args...)
	}
	if ref, err := git("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"); err == nil && ref != "" {
		return strings.TrimPrefix(ref, "origin/"), nil
	}
	for _, b := range []string{"main", "master"} {
		if _, err := git("rev-parse", "--verify", "--quiet", "refs/heads/"+b); err == nil {
			return b, nil
		}
	}
	return "", fmt.Errorf("%w: %s has no origin/HEAD and no main or master branch; set %s", ErrNoBaseBranch, dir, EnvBaseBranch)
}

// permanentError marks failures a retry cannot fix (configuration,
// references): retry.on_error "all" does not retry them either.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}
