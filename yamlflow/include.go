package yamlflow

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// `include:` nodes (Archon's composition): a node
//
//	- id: review
//	  include: archon-review-block
//	  depends_on: [implement]
//
// is replaced, at load time, by the nodes of the workflow it names, as a
// namespaced sub-DAG:
//
//   - each included node x becomes <includeId>__<x> ("review__sync"), and
//     the block's own depends_on, when and $x.output references are
//     rewritten to the new ids;
//   - the include node's depends_on (and when, and trigger_rule where the
//     node sets none) go to the block's entry nodes, those with no
//     depends_on in the block;
//   - depends_on: [review] elsewhere waits for all of the block's sinks
//     (nodes nothing in the block depends on), and $review.output (in
//     texts and conditions) reads the primary sink, the first sink in the
//     block's node order;
//   - the included workflow's provider and model go to its own AI nodes
//     that set none (a block runs as its file says); run-level settings it
//     sets (interactive, worktree, mutates_checkout, pass_env) are ignored,
//     with a warning.
//
// A block is checked on its own first, as if loaded alone: a reference
// from inside it to a node of the including workflow is unknown there.
// Includes nest up to MaxIncludeDepth levels; a cycle, a missing file, an
// id collision or an error in the included file is a load error at the
// include node.

// MaxIncludeDepth is how many levels of include: may nest (a workflow
// including a block including a block including a block).
const MaxIncludeDepth = 3

// IncludeSeparator joins an include node's id and an included node's id.
const IncludeSeparator = "__"

// maxExpandedNodes bounds the nodes all includes of one load may add, and
// maxIncludeLoads the included files it may read (the same file counts
// each time), so a few small files including each other many times cannot
// make a load take long.
const (
	maxExpandedNodes = 10000
	maxIncludeLoads  = 100
)

// ErrIncludeNotFound is wrapped by an IncludeResolver's error when no
// workflow has the name.
var ErrIncludeNotFound = errors.New("included workflow not found")

// ErrInvalidIncludeName is wrapped by ValidIncludeName's errors.
var ErrInvalidIncludeName = errors.New("invalid include name")

// IncludeResolver finds the workflow an `include:` names (as written:
// "archon-review-block" or "archon-review-block.yaml"). It returns the
// file's path (used in messages and Node.Origin) and its source.
type IncludeResolver func(name string) (file string, source []byte, err error)

// WithIncludeResolver makes includes use r.
func WithIncludeResolver(r IncludeResolver) ParseOption {
	return func(c *parseConfig) { c.resolve = r }
}

// WithIncludeDir makes includes look for their workflows in dir
// (DirIncludeResolver). Load uses the workflow file's folder by default.
func WithIncludeDir(dir string) ParseOption { return WithIncludeResolver(DirIncludeResolver(dir)) }

// DirIncludeResolver finds "name" as dir/name.yaml or dir/name.yml (a name
// that ends in .yaml or .yml is taken as the file name). Names that could
// leave dir are refused.
func DirIncludeResolver(dir string) IncludeResolver {
	return func(name string) (string, []byte, error) {
		if err := ValidIncludeName(name); err != nil {
			return "", nil, err
		}
		var tried []string
		for _, cand := range includeFileNames(name) {
			path := filepath.Join(dir, cand)
			data, err := readWorkflowFile(path)
			if err == nil {
				return path, data, nil
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return path, nil, err
			}
			tried = append(tried, path)
		}
		return "", nil, fmt.Errorf("%w: %q (looked for %s)", ErrIncludeNotFound, name, strings.Join(tried, " and "))
	}
}

// SnapshotIncludeResolver resolves includes from a recorded list (a loaded
// Workflow's Includes), so a workflow loads again the same way when its
// files have changed or are gone.
func SnapshotIncludeResolver(includes []IncludedWorkflow) IncludeResolver {
	return func(name string) (string, []byte, error) {
		for _, in := range includes {
			if in.Name == name {
				return in.File, []byte(in.Source), nil
			}
		}
		for _, in := range includes {
			if canonicalInclude(in.Name) == canonicalInclude(name) {
				return in.File, []byte(in.Source), nil
			}
		}
		return "", nil, fmt.Errorf("%w: %q is not in the recorded includes", ErrIncludeNotFound, name)
	}
}

// ValidIncludeName checks that an include target is a bare workflow name:
// not empty, no '/', '\' or "..", not starting with '.'.
func ValidIncludeName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidIncludeName)
	case strings.ContainsAny(name, "/\\\x00"):
		return fmt.Errorf("%w %q: a workflow name, without a folder (no '/' or '\\')", ErrInvalidIncludeName, name)
	case strings.Contains(name, ".."), strings.HasPrefix(name, "."):
		return fmt.Errorf("%w %q: must not start with '.' or contain \"..\"", ErrInvalidIncludeName, name)
	}
	return nil
}

func includeFileNames(name string) []string {
	if IsYAMLFile(name) {
		return []string{name}
	}
	return []string{name + ".yaml", name + ".yml"}
}

// canonicalInclude is the workflow name without a .yaml/.yml extension,
// which is how includes are compared (for cycles).
func canonicalInclude(name string) string {
	if IsYAMLFile(name) {
		return strings.TrimSuffix(name, filepath.Ext(name))
	}
	return name
}

func readWorkflowFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// One byte past the limit lets the parser report an oversized file.
	return io.ReadAll(io.LimitReader(f, MaxFileSize+1))
}

// parseIncludeTarget reads an include node's `include:` value.
func (p *parser) parseIncludeTarget(n *Node, f field, v *yaml.Node) {
	s, ok := p.str(f, v)
	if !ok {
		return
	}
	s = strings.TrimSpace(s)
	if s == "" {
		p.errorf(f.line, f.node, f.name, CodeInvalidInclude, "include must name a workflow (include: archon-review-block)")
		return
	}
	if err := ValidIncludeName(s); err != nil {
		p.errorf(f.line, f.node, f.name, CodeInvalidInclude, "%v", err)
		return
	}
	n.include = s
}

// includeBlock is an included workflow, loaded and itself expanded.
type includeBlock struct {
	name    string // as written in include:
	file    string
	wf      *Workflow
	sinks   []string // ids (in wf) of the nodes nothing in wf depends on, in order
	primary string   // sinks[0]: what $include.output reads
}

// expandIncludes replaces each include node of wf by its block. It runs
// after checkGraph, which checked the graph with each include as one node:
// the block was checked on its own, and wiring it in cannot add problems
// except id collisions, checked here.
func (p *parser) expandIncludes(wf *Workflow) {
	blocks := map[*Node]*includeBlock{}
	for _, n := range wf.Nodes {
		if n.includeNode {
			if b := p.loadInclude(wf, n); b != nil {
				blocks[n] = b
			}
		}
	}
	if len(blocks) == 0 {
		return
	}
	// refs: each id this file can name -> its id once flattened.
	refs := make(map[string]string, len(wf.Nodes))
	sinks := map[string][]string{}
	for _, n := range wf.Nodes {
		if _, dup := refs[n.ID]; dup || n.ID == "" {
			continue
		}
		refs[n.ID] = n.ID
		if b := blocks[n]; b != nil {
			prefix := n.ID + IncludeSeparator
			refs[n.ID] = prefix + b.primary
			for _, s := range b.sinks {
				sinks[n.ID] = append(sinks[n.ID], prefix+s)
			}
		}
	}
	for _, n := range wf.Nodes {
		n.refs = refs
		rewriteRefs(n, refs, true)
		n.DependsOn, n.depLines = expandDependencies(n.DependsOn, n.depLines, sinks)
	}
	var out []*Node
	incLines := map[string]int{}
	for _, n := range wf.Nodes {
		b := blocks[n]
		if b == nil {
			out = append(out, n) // the file's own node, or an include that failed
			continue
		}
		incLines[n.ID] = n.fieldLine(includeKey)
		out = append(out, p.inline(n, b)...)
	}
	wf.Nodes = out
	p.checkCollisions(out, incLines)
}

// loadInclude reads, parses and expands the workflow include node n names.
// Problems are reported at n; the result is nil when there were errors.
func (p *parser) loadInclude(wf *Workflow, n *Node) *includeBlock {
	name := n.include
	if name == "" || n.ID == "" {
		return nil // reported while parsing the node
	}
	line := n.fieldLine(includeKey)
	key := canonicalInclude(name)
	chain := append(slices.Clone(p.chain), key)
	switch {
	case p.cfg == nil || p.cfg.resolve == nil:
		p.errorf(line, n.ID, includeKey, CodeIncludeNotFound, "cannot look up the included workflow %q: this workflow was parsed without a folder to find it in", name)
		return nil
	case slices.Contains(p.chain, key):
		p.errorf(line, n.ID, includeKey, CodeIncludeCycle, "include cycle: %s", strings.Join(chain, " -> "))
		return nil
	case p.depth+1 > MaxIncludeDepth:
		p.errorf(line, n.ID, includeKey, CodeIncludeTooDeep, "includes nest more than %d levels deep: %s", MaxIncludeDepth, strings.Join(chain, " -> "))
		return nil
	}
	if p.cfg.loads++; p.cfg.loads > maxIncludeLoads {
		p.errorf(line, n.ID, includeKey, CodeIncludeTooDeep, "the workflow's includes read more than %d workflow files", maxIncludeLoads)
		return nil
	}
	file, src, err := p.cfg.resolve(name)
	if err != nil {
		code := CodeInvalidInclude
		if errors.Is(err, ErrIncludeNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = CodeIncludeNotFound
		}
		p.errorf(line, n.ID, includeKey, code, "cannot include workflow %q: %v", name, err)
		return nil
	}
	// Messages name the included file beside the including one, as the
	// author sees them (the resolver's path may be absolute).
	display := filepath.Join(filepath.Dir(p.file), filepath.Base(file))
	sub := &parser{file: display, cfg: p.cfg, depth: p.depth + 1, chain: chain, budget: p.budget}
	cw := sub.parse(src)
	// The included file's problems, located at the include node (whose
	// line is in this file); each message starts with its own file:line.
	failed := cw == nil
	for _, d := range sub.diags {
		failed = failed || d.IsError()
		p.add(d.Severity, line, n.ID, includeKey, d.Code, "in included workflow %s", d.Error())
	}
	if failed {
		if len(Errors(sub.diags)) == 0 {
			p.errorf(line, n.ID, includeKey, CodeInvalidInclude, "included workflow %q could not be read", name)
		}
		return nil
	}
	if *p.budget -= len(cw.Nodes); *p.budget < 0 {
		p.errorf(line, n.ID, includeKey, CodeIncludeTooDeep, "includes add more than %d nodes to the workflow", maxExpandedNodes)
		return nil
	}
	var runOwned []string
	for _, k := range []string{"interactive", "worktree", "mutates_checkout", "pass_env"} {
		if sub.topKeys[k] > 0 {
			runOwned = append(runOwned, k)
		}
	}
	if len(runOwned) > 0 {
		p.warnf(line, n.ID, includeKey, CodeFieldIgnored, "included workflow %q sets %s, which belong to the workflow that runs; ignored here (set them on this workflow)", name, strings.Join(runOwned, ", "))
	}
	recordInclude(wf, IncludedWorkflow{Name: name, File: file, Source: string(src)})
	for _, in := range cw.Includes {
		recordInclude(wf, in)
	}
	b := &includeBlock{name: name, file: file, wf: cw}
	dependedOn := map[string]bool{}
	for _, c := range cw.Nodes {
		for _, d := range c.DependsOn {
			dependedOn[d] = true
		}
	}
	for _, c := range cw.Nodes {
		if !dependedOn[c.ID] {
			b.sinks = append(b.sinks, c.ID)
		}
	}
	if len(b.sinks) == 0 { // cannot happen in a valid (acyclic, non-empty) workflow
		p.errorf(line, n.ID, includeKey, CodeInvalidInclude, "included workflow %q has no final node", name)
		return nil
	}
	b.primary = b.sinks[0]
	return b
}

func recordInclude(wf *Workflow, in IncludedWorkflow) {
	for _, have := range wf.Includes {
		if have.Name == in.Name {
			return
		}
	}
	wf.Includes = append(wf.Includes, in)
}

// inline returns the nodes of block b, namespaced under include node inc
// and wired to inc's dependencies.
func (p *parser) inline(inc *Node, b *includeBlock) []*Node {
	prefix := inc.ID + IncludeSeparator
	ids := make(map[string]string, len(b.wf.Nodes))
	for _, c := range b.wf.Nodes {
		ids[c.ID] = prefix + c.ID
	}
	incTriggerSet := inc.lines["trigger_rule"] > 0
	out := make([]*Node, 0, len(b.wf.Nodes))
	for _, c := range b.wf.Nodes {
		n := cloneNode(c)
		n.ID = prefix + c.ID
		// The canvas shows a node as its own file wrote it.
		n.written = c.written
		if n.written == nil {
			n.written = c
		}
		rewriteRefs(n, ids, false)
		// What the node's own file can name -> ids here.
		n.refs = make(map[string]string, len(ids))
		if c.refs == nil {
			maps.Copy(n.refs, ids)
		} else {
			for k, v := range c.refs {
				n.refs[k] = ids[v]
			}
		}
		if len(c.DependsOn) == 0 {
			// An entry node: it starts when the include node would have.
			n.DependsOn = slices.Clone(inc.DependsOn)
			n.depLines = slices.Clone(inc.depLines)
			p.combineWhen(inc, n, c)
			if incTriggerSet && c.lines["trigger_rule"] == 0 {
				n.TriggerRule = inc.TriggerRule
			}
		} else {
			n.DependsOn = make([]string, len(c.DependsOn))
			for i, d := range c.DependsOn {
				n.DependsOn[i] = ids[d]
			}
		}
		if c.Origin == nil {
			n.Origin = &NodeOrigin{Workflow: b.name, File: b.file, ID: c.ID, Line: c.Line}
			// A block runs as its file says: its provider and model.
			if n.IsAI() && n.Provider == "" {
				n.Provider = b.wf.Provider
			}
			if n.IsAI() && n.Model == "" && (c.Provider == "" || c.Provider == b.wf.Provider) {
				n.Model = b.wf.Model
			}
		}
		n.IncludedFrom = inc.ID
		out = append(out, n)
	}
	return out
}

// combineWhen gives entry node n the include node's condition: alone, or
// joined to n's own with &&. The language has no parentheses and && binds
// tighter than ||, so a side with || cannot be joined without changing
// its meaning: that is a load error.
func (p *parser) combineWhen(inc, n, written *Node) {
	if inc.When == "" {
		return
	}
	if n.When == "" {
		n.When, n.WhenExpr = inc.When, inc.WhenExpr
		return
	}
	if strings.Contains(inc.When, "||") || strings.Contains(n.When, "||") {
		p.errorf(inc.fieldLine("when"), inc.ID, "when", CodeBadWhen, "cannot join this condition with the condition of included node %q (%q): one of them uses ||, and without parentheses && would bind differently; put the condition on the include node only, or inside the block", written.ID, written.When)
		return
	}
	n.When = inc.When + " && " + n.When
	n.WhenExpr, _ = ParseWhen(n.When)
}

// checkCollisions reports ids that appear twice after inlining because of
// an include (two ids of the file itself were reported by checkGraph).
func (p *parser) checkCollisions(nodes []*Node, incLines map[string]int) {
	first := map[string]*Node{}
	for _, n := range nodes {
		prev, dup := first[n.ID]
		if !dup {
			first[n.ID] = n
			continue
		}
		if prev.IncludedFrom == "" && n.IncludedFrom == "" {
			continue
		}
		inc := n.IncludedFrom
		if inc == "" {
			inc = prev.IncludedFrom
		}
		other := "node " + fmt.Sprintf("%q", prev.ID)
		if prev.IncludedFrom == "" {
			other += fmt.Sprintf(" (line %d)", prev.Line)
		} else {
			other += fmt.Sprintf(" of include %q", prev.IncludedFrom)
		}
		p.errorf(incLines[inc], inc, includeKey, CodeDuplicateID, "the include makes a node %q, which collides with %s; rename one of them", n.ID, other)
	}
}

// expandDependencies replaces each dependency on an include node by the
// block's sinks (each on the line of the original entry); a sink already
// listed is not added twice.
func expandDependencies(deps []string, lines []int, sinks map[string][]string) ([]string, []int) {
	expand := false
	for _, d := range deps {
		if sinks[d] != nil {
			expand = true
		}
	}
	if !expand {
		return deps, lines
	}
	var out []string
	var outLines []int
	have := map[string]bool{}
	for _, d := range deps {
		have[d] = true
	}
	for i, d := range deps {
		line := 0
		if i < len(lines) {
			line = lines[i]
		}
		s, ok := sinks[d]
		if !ok {
			out, outLines = append(out, d), append(outLines, line)
			continue
		}
		for _, x := range s {
			if !have[x] {
				have[x] = true
				out, outLines = append(out, x), append(outLines, line)
			}
		}
	}
	return out, outLines
}

// cloneNode copies n deeply enough that rewriting the copy's ids,
// dependencies, texts and condition leaves n as it was.
func cloneNode(n *Node) *Node {
	c := *n
	c.DependsOn = slices.Clone(n.DependsOn)
	c.depLines = slices.Clone(n.depLines)
	if n.Loop != nil {
		l := *n.Loop
		c.Loop = &l
	}
	if n.Approval != nil {
		a := *n.Approval
		if a.OnReject != nil {
			r := *a.OnReject
			a.OnReject = &r
		}
		c.Approval = &a
	}
	return &c
}

// rewriteRefs renames the node references in n's texts ($id.output,
// $id.output.field) and condition by rename (ids not in it are kept).
// keepWritten saves n as written first, when anything changes, so the
// canvas can show the file's text.
func rewriteRefs(n *Node, rename map[string]string, keepWritten bool) {
	texts := []*string{&n.Prompt, &n.Bash, &n.SystemPrompt, &n.CancelReason}
	if !n.ScriptNamed {
		texts = append(texts, &n.Script)
	}
	changed := false
	for _, t := range texts {
		changed = changed || renameOutputRefs(*t, rename) != *t
	}
	if n.Loop != nil {
		for _, t := range []string{n.Loop.Prompt, n.Loop.UntilBash, n.Loop.GateMessage} {
			changed = changed || renameOutputRefs(t, rename) != t
		}
	}
	if n.Approval != nil {
		changed = changed || renameOutputRefs(n.Approval.Message, rename) != n.Approval.Message
		if n.Approval.OnReject != nil {
			changed = changed || renameOutputRefs(n.Approval.OnReject.Prompt, rename) != n.Approval.OnReject.Prompt
		}
	}
	newWhen := n.When
	if n.WhenExpr != nil {
		newWhen = renameWhenRefs(n.When, rename)
	}
	changed = changed || newWhen != n.When
	if !changed {
		return
	}
	if keepWritten && n.written == nil {
		n.written = cloneNode(n)
	}
	// Copy-on-write: Loop and Approval may be shared with the written copy.
	if n.Loop != nil {
		l := *n.Loop
		n.Loop = &l
	}
	if n.Approval != nil {
		a := *n.Approval
		if a.OnReject != nil {
			r := *a.OnReject
			a.OnReject = &r
		}
		n.Approval = &a
	}
	texts = []*string{&n.Prompt, &n.Bash, &n.SystemPrompt, &n.CancelReason}
	if !n.ScriptNamed {
		texts = append(texts, &n.Script)
	}
	if n.Loop != nil {
		texts = append(texts, &n.Loop.Prompt, &n.Loop.UntilBash, &n.Loop.GateMessage)
	}
	if n.Approval != nil {
		texts = append(texts, &n.Approval.Message)
		if n.Approval.OnReject != nil {
			texts = append(texts, &n.Approval.OnReject.Prompt)
		}
	}
	for _, t := range texts {
		*t = renameOutputRefs(*t, rename)
	}
	if newWhen != n.When {
		n.When = newWhen
		n.WhenExpr, _ = ParseWhen(newWhen)
	}
}

// renameOutputRefs renames the id of each $id.output reference in s.
func renameOutputRefs(s string, rename map[string]string) string {
	if !strings.Contains(s, ".output") {
		return s
	}
	return outputRefRE.ReplaceAllStringFunc(s, func(m string) string {
		id := m[1 : len(m)-len(".output")]
		if to, ok := rename[id]; ok && to != id {
			return "$" + to + ".output"
		}
		return m
	})
}

// RewriteOutputRefs rewrites the $id.output references of text written in
// the same file as n (the command file a command node runs, loaded when it
// runs) to the ids of this workflow: for a node inlined by an include,
// "$sync.output" becomes "$review__sync.output"; in a workflow with
// includes, "$review.output" becomes the block's primary sink. Text of a
// workflow without includes is returned unchanged.
func (n *Node) RewriteOutputRefs(text string) string {
	if n == nil || n.refs == nil {
		return text
	}
	return renameOutputRefs(text, n.refs)
}
