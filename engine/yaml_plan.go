package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/llm"
	"github.com/switchyard/switchyard/yamlflow"
)

// Environment variables that configure YAML runs when no YAMLOption says
// otherwise. They are read when a run starts and stored with it, so a run
// continued after a restart keeps the folders it started with.
const (
	EnvScriptsDir  = "SWITCHYARD_SCRIPTS_DIR"  // extra folder of named scripts
	EnvCommandsDir = "SWITCHYARD_COMMANDS_DIR" // extra folder of command files
	EnvDocsDir     = "SWITCHYARD_DOCS_DIR"     // $DOCS_DIR (default "docs/")
	EnvBaseBranch  = "SWITCHYARD_BASE_BRANCH"  // $BASE_BRANCH (default: from git)
)

// DefaultDocsDir is $DOCS_DIR when nothing configures it.
const DefaultDocsDir = "docs/"

// yamlConfig is the per-run configuration of a YAML run.
type yamlConfig struct {
	ScriptsDir  string `json:"scriptsDir,omitempty"`
	CommandsDir string `json:"commandsDir,omitempty"`
	DocsDir     string `json:"docsDir,omitempty"`
	BaseBranch  string `json:"baseBranch,omitempty"`
	// retryUnit is what one retry.delay_ms counts (a millisecond; tests
	// shrink it, as delay_ms may not go below 1000).
	retryUnit time.Duration
}

// withRetryUnit makes one retry.delay_ms count d instead of a millisecond.
func withRetryUnit(d time.Duration) YAMLOption { return func(c *yamlConfig) { c.retryUnit = d } }

// YAMLOption configures one YAML run.
type YAMLOption func(*yamlConfig)

// WithScriptsDir names a folder searched first for named scripts
// (`script: analyze` runs analyze.ts, .js or .py from it).
func WithScriptsDir(dir string) YAMLOption { return func(c *yamlConfig) { c.ScriptsDir = dir } }

// WithCommandsDir names a folder searched for command files after the
// working directory's .switchyard/commands/.
func WithCommandsDir(dir string) YAMLOption { return func(c *yamlConfig) { c.CommandsDir = dir } }

// WithDocsDir sets $DOCS_DIR.
func WithDocsDir(dir string) YAMLOption { return func(c *yamlConfig) { c.DocsDir = dir } }

// WithBaseBranch sets $BASE_BRANCH instead of asking git.
func WithBaseBranch(branch string) YAMLOption { return func(c *yamlConfig) { c.BaseBranch = branch } }

// yamlDefinition is Run.Definition of a YAML run: enough to rebuild the
// plan after a restart without the file.
type yamlDefinition struct {
	File   string     `json:"file"`
	Dir    string     `json:"dir"`
	Source string     `json:"source"`
	Config yamlConfig `json:"config"`
	// Includes are the files include: nodes inlined, as they were when the
	// run started: a run continued later expands the same blocks.
	Includes []yamlflow.IncludedWorkflow `json:"includes,omitempty"`
}

// ParseYAMLWorkflow parses workflow source the way StartYAML does. A
// workflow with errors is an *InvalidError (errors.Is ErrInvalidWorkflow)
// carrying every diagnostic; warnings come back with a valid workflow.
//
// include: nodes are looked up beside file unless opts say otherwise.
func ParseYAMLWorkflow(file string, source []byte, opts ...yamlflow.ParseOption) (*yamlflow.Workflow, []graph.Problem, error) {
	if file != "" && len(opts) == 0 {
		opts = []yamlflow.ParseOption{yamlflow.WithIncludeDir(filepath.Dir(file))}
	}
	wf, diags, err := yamlflow.Parse(file, source, opts...)
	probs := yamlflow.Problems(diags)
	if err != nil {
		var le *yamlflow.LoadError
		if errors.As(err, &le) || wf == nil {
			return nil, probs, &InvalidError{Problems: probs}
		}
		return nil, probs, err
	}
	return wf, probs, nil
}

// StartYAML parses and starts a YAML DAG workflow. file names the workflow
// in messages and locates its folder (named scripts); source is its text.
// A workflow with errors never starts: the error is an *InvalidError.
func (e *Engine) StartYAML(ctx context.Context, file string, source []byte, opt StartOptions, opts ...YAMLOption) (*Run, error) {
	if file != "" {
		if abs, err := filepath.Abs(file); err == nil {
			file = abs
		}
	}
	wf, _, err := ParseYAMLWorkflow(file, source)
	if err != nil {
		return nil, err
	}
	if err := e.ProviderBlocker(wf); err != nil {
		return nil, err
	}
	cfg := yamlConfig{
		ScriptsDir:  os.Getenv(EnvScriptsDir),
		CommandsDir: os.Getenv(EnvCommandsDir),
		DocsDir:     os.Getenv(EnvDocsDir),
		BaseBranch:  os.Getenv(EnvBaseBranch),
	}
	for _, o := range opts {
		o(&cfg)
	}
	for _, d := range []*string{&cfg.ScriptsDir, &cfg.CommandsDir} {
		if *d != "" {
			if abs, err := filepath.Abs(*d); err == nil {
				*d = abs
			}
		}
	}
	if opt.WorkDir == "" {
		if wd, err := os.Getwd(); err == nil {
			opt.WorkDir = wd
		}
	}
	if abs, err := filepath.Abs(opt.WorkDir); err == nil {
		opt.WorkDir = abs
	}
	opt.runID = newRunID()
	if wf.Worktree != nil && wf.Worktree.Enabled != nil && *wf.Worktree.Enabled {
		wt, err := e.createWorktree(ctx, opt.WorkDir, opt.runID)
		if err != nil {
			return nil, err
		}
		opt.WorkDir = wt
	}
	// $ARTIFACTS_DIR exists before the first node runs (YAML promises it;
	// drawn graphs create it on first use).
	if err := os.MkdirAll(filepath.Join(e.cfg.ArtifactsRoot, opt.runID), 0o755); err != nil {
		return nil, fmt.Errorf("create artifacts dir: %w", err)
	}
	def, err := json.Marshal(yamlDefinition{File: file, Dir: wf.Dir, Source: string(source), Config: cfg, Includes: wf.Includes})
	if err != nil {
		return nil, fmt.Errorf("snapshot workflow: %w", err)
	}
	p := compileYAML(wf, cfg, e.cfg.MaxVisits)
	// Dependency-free nodes are notified rather than enqueued: they go
	// through their join policy too, so `when:` applies to them as well.
	return e.start(ctx, p, KindYAML, def, opt, seedFor(KindYAML, opt.Input))
}

// compileYAMLRun rebuilds a YAML run's plan from its definition snapshot.
func compileYAMLRun(e *Engine, run *Run) (*plan, error) {
	var def yamlDefinition
	if err := json.Unmarshal(run.Definition, &def); err != nil {
		return nil, fmt.Errorf("run %s: decode YAML definition: %w", run.ID, err)
	}
	wf, _, err := ParseYAMLWorkflow(def.File, []byte(def.Source), yamlflow.WithIncludeResolver(yamlflow.SnapshotIncludeResolver(def.Includes)))
	if err != nil {
		return nil, fmt.Errorf("run %s: re-parse workflow: %w", run.ID, err)
	}
	if def.Dir != "" {
		wf.Dir = def.Dir
	}
	return compileYAML(wf, def.Config, e.cfg.MaxVisits), nil
}

// yamlSpec is planNode.spec of a YAML node.
type yamlSpec struct {
	n  *yamlflow.Node
	rs *yamlRunState
}

// yamlRunState is what the nodes of one YAML run share while one process
// drives it. It lives as long as the plan: a run continued after a restart
// gets a fresh one (conversation histories are then gone; see contextFor).
type yamlRunState struct {
	wf  *yamlflow.Workflow
	cfg yamlConfig

	mu        sync.Mutex
	histories map[string][]llm.Message // prompt/command/loop conversations, by node id
	branch    string
	branchErr error
	branchSet bool

	checkout checkoutHold
}

// compileYAML turns a valid workflow into a plan: one plan node per YAML
// node, an edge per depends_on entry, trigger rules and `when:` as join
// policies. Node failures settle as failed (no fail-fast).
func compileYAML(wf *yamlflow.Workflow, cfg yamlConfig, maxVisits int) *plan {
	rs := &yamlRunState{wf: wf, cfg: cfg, histories: map[string][]llm.Message{}}
	p := &plan{failFast: false, maxVisits: maxVisits}
	p.init(len(wf.Nodes))
	for _, n := range wf.Nodes {
		p.index[n.ID] = len(p.nodes)
		p.nodes = append(p.nodes, &planNode{
			id: n.ID, typ: yamlTypePrefix + string(n.Kind), label: fmt.Sprintf("node %q", n.ID),
			describe: string(n.Kind) + " node", spec: &yamlSpec{n: n, rs: rs}, join: yamlJoin{n: n},
		})
	}
	for i, n := range wf.Nodes {
		if len(n.DependsOn) == 0 {
			p.roots = append(p.roots, i)
		}
		for _, dep := range n.DependsOn {
			s, ok := p.index[dep]
			if !ok {
				continue // the loader reports unknown dependencies as errors
			}
			p.addEdge(dep+"->"+n.ID, s, i, "")
		}
	}
	p.finish()
	return p
}

// yamlJoin decides whether a YAML node runs once all its dependencies
// settled: first its trigger rule, then its `when:` condition.
type yamlJoin struct{ n *yamlflow.Node }

func (j yamlJoin) decide(r *runner, i int, _ []bool) (bool, string) {
	n := j.n
	if r.nodes[i].Visits > 0 {
		return false, "already ran" // DAG nodes run once; keeps results when a dependency reruns (always_run)
	}
	var done, failed, skipped []string
	for _, ei := range r.plan.in[i] {
		src := r.plan.edges[ei].src
		id := r.plan.nodes[src].id
		switch r.nodes[src].Status {
		case NodeCompleted:
			done = append(done, id)
		case NodeFailed:
			failed = append(failed, id)
		default:
			skipped = append(skipped, id)
		}
	}
	total := len(r.plan.in[i])
	if run, why := triggerAllows(n.TriggerRule, total, done, failed, skipped); !run {
		return false, why
	}
	if strings.TrimSpace(n.When) == "" {
		return true, ""
	}
	if n.WhenExpr == nil {
		_, perr := yamlflow.ParseWhen(n.When)
		msg := fmt.Sprintf("when condition %q does not parse (%v): node %q skipped", n.When, perr, n.ID)
		r.emit(n.ID, EvWarning, msg, nil)
		return false, msg
	}
	ok, err := n.WhenExpr.Eval(whenLookup(r.plan, func(id string) (string, NodeStatus, bool) {
		k, ok := r.plan.index[id]
		if !ok {
			return "", NodeIdle, false
		}
		return r.nodes[k].Output, r.nodes[k].Status, true
	}))
	if err != nil {
		// A bad field reference fails the node: let it run, and its
		// executor evaluates the condition again and reports the error.
		return true, ""
	}
	r.emit(n.ID, EvLogicCheck, fmt.Sprintf("Condition %q evaluated as %t", n.When, ok),
		map[string]any{"when": n.When, "result": ok})
	if !ok {
		return false, fmt.Sprintf("when condition %q is false", n.When)
	}
	return true, ""
}

// triggerAllows applies a trigger rule to the dependencies' outcomes.
func triggerAllows(rule string, total int, done, failed, skipped []string) (bool, string) {
	if total == 0 {
		return true, ""
	}
	switch rule {
	case yamlflow.TriggerOneSuccess:
		if len(done) > 0 {
			return true, ""
		}
		return false, "trigger_rule one_success: no dependency succeeded"
	case yamlflow.TriggerNoneFailedMinOneSuccess:
		if len(failed) > 0 {
			return false, fmt.Sprintf("trigger_rule none_failed_min_one_success: %s failed", strings.Join(failed, ", "))
		}
		if len(done) == 0 {
			return false, "trigger_rule none_failed_min_one_success: no dependency succeeded"
		}
		return true, ""
	case yamlflow.TriggerAllDone:
		return true, ""
	default: // all_success
		if len(done) == total {
			return true, ""
		}
		var parts []string
		if len(failed) > 0 {
			parts = append(parts, strings.Join(failed, ", ")+" failed")
		}
		if len(skipped) > 0 {
			parts = append(parts, strings.Join(skipped, ", ")+" skipped")
		}
		return false, "trigger_rule all_success: " + strings.Join(parts, "; ")
	}
}

// yamlOnLoad makes always_run nodes run again when a run is continued
// after an interruption: their previous result is kept until they finish
// again; nodes after them keep theirs (see yamlJoin's "already ran").
func yamlOnLoad(p *plan, run *Run, states []*NodeState) {
	if run.Status == StatusPaused {
		return // answering a gate is not a resume of the DAG
	}
	for _, st := range states {
		i, ok := p.index[st.NodeID]
		if !ok {
			continue
		}
		spec, ok := p.nodes[i].spec.(*yamlSpec)
		if !ok || !spec.n.AlwaysRun || !st.Status.Settled() || st.Status == NodeSkipped {
			continue
		}
		st.Status = NodeQueued
		st.Visits++ // a new visit: its earlier completion in the log must not count
	}
}
