package yamlflow

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads and parses the workflow file at path. The error is a
// *LoadError when the file has error diagnostics, or a wrapped os error when
// it cannot be read. Diagnostics hold every warning and error.
//
// `include:` nodes find their workflows in the file's folder unless an
// option says otherwise (WithIncludeResolver, WithIncludeDir).
func Load(path string, opts ...ParseOption) (*Workflow, []Diagnostic, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("load workflow: %w", err)
	}
	defer f.Close()
	// Read one byte past the limit so Parse can report an oversized file.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, nil, fmt.Errorf("load workflow %s: %w", path, err)
	}
	abs, absErr := filepath.Abs(path)
	if absErr == nil {
		opts = append([]ParseOption{WithIncludeDir(filepath.Dir(abs))}, opts...)
	}
	wf, diags, lerr := Parse(path, data, opts...)
	if wf != nil && absErr == nil {
		wf.Dir = filepath.Dir(abs)
	}
	return wf, diags, lerr
}

// Parse parses workflow YAML; file names it in diagnostics and sets
// Workflow.File and Dir. On errors the returned Workflow is nil (YAML syntax
// error) or partial, never fit to run; check the error first.
//
// Parse reads no files by itself: a workflow with `include:` nodes needs an
// option that finds the included workflows (WithIncludeDir,
// WithIncludeResolver); without one each include is an error.
func Parse(file string, data []byte, opts ...ParseOption) (*Workflow, []Diagnostic, error) {
	cfg := &parseConfig{}
	for _, o := range opts {
		o(cfg)
	}
	p := &parser{file: file, cfg: cfg, budget: new(int(maxExpandedNodes)),
		chain: []string{canonicalInclude(filepath.Base(file))}}
	wf := p.parse(data)
	if wf != nil {
		wf.buildIndex()
	}
	errs := Errors(p.diags)
	if len(errs) > 0 {
		return wf, p.diags, &LoadError{File: file, Diagnostics: errs}
	}
	return wf, p.diags, nil
}

// ParseOption configures Parse and Load.
type ParseOption func(*parseConfig)

type parseConfig struct {
	resolve IncludeResolver
	loads   int // included files read so far (maxIncludeLoads)
}

type parser struct {
	file  string
	cfg   *parseConfig
	diags []Diagnostic

	// Includes: how deep this file is (0 = the file being loaded), the
	// chain of workflow names that led here (for cycles), and the nodes
	// left to all expansions together.
	depth  int
	chain  []string
	budget *int
	// topKeys are the top-level keys the file sets, with their lines.
	topKeys map[string]int
}

// field says where a value sits, for diagnostics.
type field struct {
	line int
	node string
	name string
}

func (p *parser) add(sev string, line int, nodeID, fieldName, code, format string, args ...any) {
	p.diags = append(p.diags, Diagnostic{
		File: p.file, Line: line, NodeID: nodeID, Field: fieldName,
		Code: code, Severity: sev, Message: fmt.Sprintf(format, args...),
	})
}

func (p *parser) errorf(line int, nodeID, fieldName, code, format string, args ...any) {
	p.add(SeverityError, line, nodeID, fieldName, code, format, args...)
}

func (p *parser) warnf(line int, nodeID, fieldName, code, format string, args ...any) {
	p.add(SeverityWarning, line, nodeID, fieldName, code, format, args...)
}

func (p *parser) parse(data []byte) *Workflow {
	if len(data) > MaxFileSize {
		p.errorf(1, "", "", CodeFileTooLarge, "file is larger than %d bytes", MaxFileSize)
		return nil
	}
	doc, ok := p.decode(data)
	if !ok {
		return nil
	}
	wf := &Workflow{File: p.file, Dir: filepath.Dir(p.file), MutatesCheckout: true}
	if doc == nil || len(doc.Content) == 0 || isNull(doc.Content[0]) {
		p.errorf(1, "", "", CodeEmptyDocument, "workflow file is empty; it needs name, description and nodes")
		return wf
	}
	root := deref(doc.Content[0])
	if root == nil || root.Kind != yaml.MappingNode {
		p.errorf(doc.Content[0].Line, "", "", CodeInvalidDocument, "a workflow must be a YAML mapping with name, description and nodes, not %s", describe(root))
		return wf
	}

	var nodesVal *yaml.Node
	nodesLine := 0
	p.topKeys = map[string]int{}
	for _, e := range p.pairs(root, "", "") {
		f := field{line: e.line, name: e.key}
		p.topKeys[e.key] = e.line
		switch e.key {
		case "name":
			wf.Name, _ = p.str(f, e.val)
			wf.Name = strings.TrimSpace(wf.Name)
		case "description":
			wf.Description, _ = p.str(f, e.val)
		case "nodes":
			nodesVal, nodesLine = e.val, e.line
		case "provider":
			wf.Provider, _ = p.str(f, e.val)
			wf.Provider = strings.TrimSpace(wf.Provider)
			p.checkProvider(e.line, "", wf.Provider)
		case "model":
			wf.Model, _ = p.str(f, e.val)
			wf.Model = strings.TrimSpace(wf.Model)
		case "interactive":
			wf.Interactive = p.boolean(f, e.val, false)
		case "mutates_checkout":
			wf.MutatesCheckout = p.boolean(f, e.val, true)
		case "tags":
			wf.Tags, _, _ = p.strList(f, e.val)
		case "worktree":
			p.parseWorktree(wf, f, e.val)
		case "pass_env":
			names, _, _ := p.strList(f, e.val)
			for _, n := range names {
				if !envNameRE.MatchString(n) {
					p.errorf(e.line, "", "pass_env", CodeInvalidValue, "%q is not an environment variable name", n)
					continue
				}
				switch {
				case OwnSecret(n):
					p.warnf(e.line, "", "pass_env", CodeSecretPassEnv,
						"%q is one of Switchyard's own secrets: a workflow's pass_env never passes it to nodes (serve --pass-env can)", n)
				case LooksSecret(n):
					p.warnf(e.line, "", "pass_env", CodeSecretPassEnv,
						"%q looks like a secret: every bash, script and Bash tool call of this workflow, and the agents that run them, can read it", n)
				}
				wf.PassEnv = append(wf.PassEnv, n)
			}
		default:
			p.extraTopLevel(wf, e)
		}
	}
	if wf.Name == "" {
		p.errorf(root.Line, "", "name", CodeMissingName, "workflow %s has no name (a non-empty top-level `name:` is required)", p.file)
	}
	if strings.TrimSpace(wf.Description) == "" {
		p.errorf(root.Line, "", "description", CodeMissingDesc, "a non-empty top-level `description:` is required")
	}

	switch nv := deref(nodesVal); {
	case isNull(nodesVal):
		line := root.Line
		if nodesLine > 0 {
			line = nodesLine
		}
		hint := ""
		if _, ok := wf.Extra["steps"]; ok {
			hint = " (the sequential `steps:` format is not supported; write a DAG with `nodes:`)"
		}
		p.errorf(line, "", "nodes", CodeMissingNodes, "a non-empty `nodes:` list is required%s", hint)
	case nv.Kind != yaml.SequenceNode:
		p.errorf(nodesLine, "", "nodes", CodeInvalidType, "must be a list of nodes, not %s", describe(nv))
	case len(nv.Content) == 0:
		p.errorf(nodesLine, "", "nodes", CodeEmptyNodes, "the workflow has no nodes")
	default:
		for i, item := range nv.Content {
			if n := p.parseNode(i, item); n != nil {
				wf.Nodes = append(wf.Nodes, n)
			}
		}
	}
	p.checkGraph(wf)
	p.expandIncludes(wf)
	return wf
}

func (p *parser) extraTopLevel(wf *Workflow, e kv) {
	v, err := toValue(e.val, new(int(maxValueNodes)), 0)
	if err != nil {
		p.errorf(e.line, "", e.key, CodeInvalidValue, "%v", err)
	}
	if wf.Extra == nil {
		wf.Extra = map[string]any{}
	}
	wf.Extra[e.key] = v
	switch {
	case notImplementedTopLevel[e.key]:
		p.warnf(e.line, "", e.key, CodeNotImplemented, "not implemented by Switchyard; ignored")
	case commonNodeFields[e.key] || aiNodeFields[e.key] || agentNodeFields[e.key] || isKindKey(e.key):
		p.warnf(e.line, "", e.key, CodeUnknownField, "unknown top-level field (it is a node field: put it on a node under `nodes:`); ignored")
	default:
		msg := "unknown top-level field; ignored"
		if s := suggest(e.key, keys(topLevelFields)); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		p.warnf(e.line, "", e.key, CodeUnknownField, "%s", msg)
	}
}

func isKindKey(k string) bool {
	for _, kind := range Kinds {
		if string(kind) == k {
			return true
		}
	}
	return false
}

func kindList() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}
