package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/switchyard/switchyard/internal/bashref"
	"github.com/switchyard/switchyard/internal/dirlock"
	"github.com/switchyard/switchyard/internal/proc"
	"github.com/switchyard/switchyard/llm"
	"github.com/switchyard/switchyard/yamlflow"
)

// ErrProviderUnsupported is a node naming a provider Switchyard does not ship.
var ErrProviderUnsupported = errors.New("provider is not supported")

// yamlExecutor runs every YAML node kind; the kind picks the behaviour.
type yamlExecutor struct{ kind yamlflow.Kind }

func (y yamlExecutor) Execute(ctx context.Context, x *Exec) (Result, error) {
	spec := x.Spec().(*yamlSpec)
	if err := holdIfMutating(ctx, x, spec); err != nil {
		return Result{}, err
	}
	if err := checkWhen(x, spec); err != nil {
		return Result{}, err
	}
	var (
		res Result
		err error
	)
	switch y.kind {
	case yamlflow.KindPrompt, yamlflow.KindCommand:
		res, err = withRetry(ctx, x, spec.n, func(ctx context.Context) (Result, error) { return runPromptNode(ctx, x, spec) })
	case yamlflow.KindBash:
		res, err = withRetry(ctx, x, spec.n, func(ctx context.Context) (Result, error) { return runBashNode(ctx, x, spec) })
	case yamlflow.KindScript:
		res, err = withRetry(ctx, x, spec.n, func(ctx context.Context) (Result, error) { return runScriptNode(ctx, x, spec) })
	case yamlflow.KindLoop:
		res, err = runLoop(ctx, x, spec, loopState{Iteration: 0})
	case yamlflow.KindApproval:
		res, err = approvalWait(x, spec, approvalState{})
	case yamlflow.KindCancel:
		res, err = runCancelNode(x, spec)
	default:
		err = fmt.Errorf("unknown YAML node kind %q", y.kind)
	}
	return finishNode(x, spec, res, err)
}

// Resume answers an approval gate or an interactive loop's gate.
func (y yamlExecutor) Resume(ctx context.Context, x *Exec, d Decision) (Result, error) {
	spec := x.Spec().(*yamlSpec)
	if err := holdIfMutating(ctx, x, spec); err != nil {
		return Result{}, err
	}
	var (
		res Result
		err error
	)
	switch y.kind {
	case yamlflow.KindApproval:
		res, err = approvalResume(ctx, x, spec, d)
	case yamlflow.KindLoop:
		res, err = loopResume(ctx, x, spec, d)
	default:
		err = fmt.Errorf("node %q (%s) does not wait for decisions", spec.n.ID, y.kind)
	}
	return finishNode(x, spec, res, err)
}

// holdIfMutating takes the working directory (mutates_checkout) before a
// node that runs processes in it. LLM nodes have no tools here, so they
// cannot change it and do not wait for it.
func holdIfMutating(ctx context.Context, x *Exec, spec *yamlSpec) error {
	n := spec.n
	switch {
	case n.Kind == yamlflow.KindBash, n.Kind == yamlflow.KindScript,
		n.Kind == yamlflow.KindLoop && n.Loop != nil && n.Loop.UntilBash != "":
		return spec.rs.holdCheckout(ctx, x)
	}
	return nil
}

// finishNode writes output_type artifacts of a node that completed.
func finishNode(x *Exec, spec *yamlSpec, res Result, err error) (Result, error) {
	if err != nil || res.Wait != nil || spec.n.OutputType == "" {
		return res, err
	}
	dir, derr := x.ArtifactsDir()
	if derr == nil {
		dir = filepath.Join(dir, "nodes")
		derr = os.MkdirAll(dir, 0o755)
	}
	if derr == nil {
		derr = os.WriteFile(filepath.Join(dir, spec.n.ID+".md"), []byte(res.Output), 0o644)
	}
	if derr != nil {
		x.Emit(EvWarning, "cannot write output_type artifact: "+derr.Error(), nil)
	}
	return res, nil
}

// withRetry runs fn under the node's retry policy: up to max_attempts
// retries after the first failure (as in Archon), delay_ms doubling each
// time. on_error "transient" retries only transient LLM errors and
// processes killed by a timeout or a signal; "all" retries any failure
// except permanent ones (configuration and reference errors).
func withRetry(ctx context.Context, x *Exec, n *yamlflow.Node, fn func(context.Context) (Result, error)) (Result, error) {
	for attempt := 0; ; attempt++ {
		res, err := fn(ctx)
		if err == nil || ctx.Err() != nil || n.Retry == nil || attempt >= n.Retry.MaxAttempts || !retryable(n.Retry.OnError, err) {
			return res, err
		}
		unit := time.Millisecond
		if spec, ok := x.Spec().(*yamlSpec); ok && spec.rs.cfg.retryUnit > 0 {
			unit = spec.rs.cfg.retryUnit
		}
		delay := time.Duration(n.Retry.DelayMS) * unit << attempt
		if delay > 5*time.Minute || delay < 0 {
			delay = 5 * time.Minute
		}
		x.Emit(EvWarning, fmt.Sprintf("%s failed: %v; retry %d of %d in %s", n.ID, err, attempt+1, n.Retry.MaxAttempts, delay),
			map[string]any{"retry": attempt + 1, "maxAttempts": n.Retry.MaxAttempts, "delayMs": delay.Milliseconds()})
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return Result{}, ctx.Err()
		case <-t.C:
		}
	}
}

func retryable(onError string, err error) bool {
	var pe *permanentError
	if errors.As(err, &pe) {
		return false
	}
	if onError == yamlflow.RetryOnAll {
		return true
	}
	var le *llm.CallError
	if errors.As(err, &le) {
		return le.Transient
	}
	var proc *proc.Error
	if errors.As(err, &proc) {
		return proc.Transient()
	}
	return false
}

// ---- prompt and command nodes ----

func runPromptNode(ctx context.Context, x *Exec, spec *yamlSpec) (Result, error) {
	n := spec.n
	text := n.Prompt
	if n.Kind == yamlflow.KindCommand {
		var err error
		if text, err = loadCommand(spec.rs, x.WorkDir(), n.Command); err != nil {
			return Result{}, err
		}
	}
	vars := &yamlVars{x: x, spec: spec, mode: modePrompt}
	user, err := vars.substitute(text, nil)
	if err != nil {
		return Result{}, permanent(err)
	}
	out, err := llmTurn(ctx, x, spec, vars, contextFor(x, spec), user, nil)
	if err != nil {
		return Result{}, err
	}
	return Result{Output: out}, nil
}

// contextFor returns the conversation a node continues: with context
// shared, that of its single dependency when it is an AI node whose
// conversation this process holds; otherwise none (a fresh conversation).
func contextFor(x *Exec, spec *yamlSpec) []llm.Message {
	n := spec.n
	if n.Context != yamlflow.ContextShared {
		return nil
	}
	if len(n.DependsOn) != 1 {
		x.Emit(EvWarning, fmt.Sprintf("context: shared needs exactly one dependency to continue; %q has %d: starting a fresh conversation",
			n.ID, len(n.DependsOn)), nil)
		return nil
	}
	dep := n.DependsOn[0]
	rs := spec.rs
	rs.mu.Lock()
	h, ok := rs.histories[dep]
	rs.mu.Unlock()
	if !ok {
		why := "it holds no conversation"
		if d := rs.wf.Node(dep); d != nil && d.IsAI() {
			why = "its conversation is not in memory (the run was continued in another process)"
		}
		x.Emit(EvWarning, fmt.Sprintf("context: shared cannot continue %q: %s; starting a fresh conversation", dep, why), nil)
		return nil
	}
	return append([]llm.Message(nil), h...)
}

// resolveProvider refuses providers other than the OpenAI-compatible one.
func resolveProvider(spec *yamlSpec) error {
	p := spec.n.Provider
	if p == "" {
		p = spec.rs.wf.Provider
	}
	switch strings.ToLower(strings.TrimSpace(p)) {
	case "", "openai":
		return nil
	}
	return permanent(&providerError{p})
}

// providerError names a provider Switchyard does not ship; it matches
// ErrProviderUnsupported.
type providerError struct{ provider string }

func (e *providerError) Error() string {
	return fmt.Sprintf("provider %q is not supported; Switchyard ships the OpenAI-compatible provider", e.provider)
}

func (e *providerError) Is(target error) bool { return target == ErrProviderUnsupported }

// llmTurn sends one user message (after history, if any) and returns the
// answer, validated against output_format when the node has one. The
// conversation is kept for nodes that continue it (context: shared).
func llmTurn(ctx context.Context, x *Exec, spec *yamlSpec, vars *yamlVars, history []llm.Message, user string, data map[string]any) (string, error) {
	n := spec.n
	if err := resolveProvider(spec); err != nil {
		return "", err
	}
	client, err := x.Engine().LLM()
	if err != nil {
		return "", permanent(err)
	}
	model := n.Model
	if model == "" {
		model = spec.rs.wf.Model
	}
	msgs := history
	if len(msgs) == 0 {
		system := DefaultSystemPrompt
		if strings.TrimSpace(n.SystemPrompt) != "" {
			if system, err = vars.substitute(n.SystemPrompt, nil); err != nil {
				return "", permanent(err)
			}
		}
		msgs = []llm.Message{{Role: "system", Content: system}}
	}
	msgs = append(msgs, llm.Message{Role: "user", Content: user})
	ev := map[string]any{"systemPrompt": msgs[0].Content, "model": client.Model(model)}
	for k, v := range data {
		ev[k] = v
	}
	x.Emit(EvStartPrompt, user, ev)
	if n.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(n.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	a := &agentCall{x: x, llm: client}
	resp, err := a.complete(ctx, llm.Request{Model: model, Effort: n.Effort, Messages: msgs, Schema: n.OutputFormat,
		IdleTimeout: time.Duration(n.IdleTimeoutMS) * time.Millisecond},
		newCoalescer(x), "")
	if err != nil {
		return "", err
	}
	text := resp.Text
	x.Emit(EvLLMResponse, text, data)
	if n.OutputFormat != nil {
		if text, err = validateOutput(n, text); err != nil {
			return "", err
		}
	}
	msgs = append(msgs, llm.Message{Role: "assistant", Content: text})
	spec.rs.mu.Lock()
	spec.rs.histories[n.ID] = msgs
	spec.rs.mu.Unlock()
	return text, nil
}

// ErrOutputFormat is wrapped by structured outputs that do not match the
// node's output_format.
var ErrOutputFormat = errors.New("output does not match output_format")

// validateOutput checks a structured answer against the node's schema and
// returns it without a Markdown fence.
func validateOutput(n *yamlflow.Node, text string) (string, error) {
	clean := strings.TrimSpace(stripFence(text))
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(clean))
	if err != nil {
		return "", fmt.Errorf("%w: not JSON: %v", ErrOutputFormat, err)
	}
	schema := n.OutputSchema()
	if schema == nil {
		if schema, err = yamlflow.CompileOutputFormat(n.OutputFormat); err != nil {
			return "", permanent(fmt.Errorf("output_format: %w", err))
		}
	}
	if err := schema.Validate(v); err != nil {
		return "", fmt.Errorf("%w: %v", ErrOutputFormat, err)
	}
	return clean, nil
}

// loadCommand reads a command file: .switchyard/commands/ in the working
// directory, then the configured folder, then ~/.switchyard/commands/.
func loadCommand(rs *yamlRunState, workDir, name string) (string, error) {
	if err := yamlflow.ValidCommandName(name); err != nil {
		return "", permanent(err)
	}
	var dirs []string
	if workDir != "" {
		dirs = append(dirs, filepath.Join(workDir, ".switchyard", "commands"))
	}
	if rs.cfg.CommandsDir != "" {
		dirs = append(dirs, rs.cfg.CommandsDir)
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".switchyard", "commands"))
	}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, name+".md"))
		if err == nil {
			return stripFrontMatter(string(b)), nil
		}
	}
	return "", permanent(fmt.Errorf("command %q not found: looked for %s.md in %s (set %s for another folder)",
		name, name, strings.Join(dirs, ", "), EnvCommandsDir))
}

// stripFrontMatter removes a leading ---\n...\n--- block.
func stripFrontMatter(s string) string {
	t := strings.TrimPrefix(s, "\ufeff")
	if !strings.HasPrefix(t, "---\n") && !strings.HasPrefix(t, "---\r\n") {
		return s
	}
	rest := t[strings.IndexByte(t, '\n')+1:]
	for off := 0; off < len(rest); {
		end := strings.IndexByte(rest[off:], '\n')
		line := rest[off:]
		if end >= 0 {
			line = rest[off : off+end]
		}
		if strings.TrimRight(line, "\r \t") == "---" {
			if end < 0 {
				return ""
			}
			return strings.TrimLeft(rest[off+end+1:], "\r\n")
		}
		if end < 0 {
			break
		}
		off += end + 1
	}
	return s // no closing line: not front matter
}

// ---- bash nodes ----

func runBashNode(ctx context.Context, x *Exec, spec *yamlSpec) (Result, error) {
	vars := &yamlVars{x: x, spec: spec, mode: modeBash}
	out, _, err := runBash(ctx, x, spec, vars, spec.n.Bash, procTimeout(spec.n), "")
	if err != nil {
		return Result{}, err
	}
	return Result{Output: out}, nil
}

func procTimeout(n *yamlflow.Node) time.Duration {
	if n.TimeoutMS > 0 {
		return time.Duration(n.TimeoutMS) * time.Millisecond
	}
	return proc.DefaultTimeout
}

// runBash substitutes and runs a bash script in the run's working
// directory. stderr on success becomes a warning.
func runBash(ctx context.Context, x *Exec, spec *yamlSpec, vars *yamlVars, script string, timeout time.Duration, stream string) (string, string, error) {
	if strings.IndexByte(script, 0) >= 0 {
		return "", "", permanent(errors.New("bash script contains a NUL byte"))
	}
	var refs []string
	vars.refs = &refs
	text, err := vars.substitute(script, func(v string) string {
		refs = append(refs, v)
		return bashref.Token(len(refs) - 1)
	})
	if err != nil {
		return "", "", permanent(err)
	}
	for i := range refs {
		refs[i] = strings.ReplaceAll(refs[i], "\x00", "") // bash cannot hold NUL
	}
	rendered, err := bashref.Render(text, refs)
	if err != nil {
		return "", "", permanent(err)
	}
	tmp, err := os.MkdirTemp("", "switchyard-bash-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	env, prelude, err := nodeEnv(x, vars, refs, tmp, strings.Contains(script, "BASE_BRANCH"))
	if err != nil {
		return "", "", err
	}
	if prelude != "" {
		p := filepath.Join(tmp, "prelude.sh")
		if err := os.WriteFile(p, []byte(prelude), 0o600); err != nil {
			return "", "", err
		}
		if user := os.Getenv("BASH_ENV"); user != "" {
			env = append(env, "SWITCHYARD_USER_BASH_ENV="+user)
		}
		env = append(env, "BASH_ENV="+p)
	}
	args := []string{"-c", rendered}
	if len(rendered) > maxInlineScript {
		// Too long for one argument (the kernel caps each at 128 KiB).
		p := filepath.Join(tmp, "script.sh")
		if err := os.WriteFile(p, []byte(rendered), 0o600); err != nil {
			return "", "", err
		}
		args = []string{p}
	}
	out, stderr, err := runProc(ctx, x, proc.Spec{Name: "bash", Args: args, Dir: x.WorkDir(), Env: env, Timeout: timeout, Stream: stream})
	if err == nil && strings.TrimSpace(stderr) != "" {
		x.Emit(EvWarning, "stderr: "+proc.Tail(strings.TrimRight(stderr, "\n"), proc.MaxStderrKept), map[string]any{"stream": "stderr"})
	}
	return out, stderr, err
}

// Sizes above which values travel through files instead of the environment.
const (
	maxInlineScript = 100 << 10
	maxEnvValue     = 100 << 10
	maxEnvTotal     = 1 << 20
)

// nodeEnvAllowed are the variables of the Switchyard process that node
// subprocesses inherit: what tools need to run, nothing that holds a secret
// (API keys and the server token stay out of outputs, events and logs).
// PassEnvVar and a workflow's pass_env name more, explicitly.
var nodeEnvAllowed = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
	"LANG": true, "LANGUAGE": true, "TZ": true, "TERM": true,
	"TMPDIR": true, "TMP": true, "TEMP": true,
	"XDG_CONFIG_HOME": true, "XDG_CACHE_HOME": true, "XDG_DATA_HOME": true, "XDG_RUNTIME_DIR": true,
	"SSL_CERT_FILE": true, "SSL_CERT_DIR": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true,
	"http_proxy": true, "https_proxy": true, "no_proxy": true,
}

// PassEnvVar names a comma-separated list of extra variables the server
// passes to every node subprocess (serve --pass-env sets it).
const PassEnvVar = "SWITCHYARD_PASS_ENV"

// inheritedEnv is the part of os.Environ() a node subprocess gets.
func inheritedEnv(workflowPass []string) []string {
	pass := map[string]bool{}
	for _, n := range strings.Split(os.Getenv(PassEnvVar), ",") {
		if n = strings.TrimSpace(n); n != "" {
			pass[n] = true
		}
	}
	for _, n := range workflowPass {
		pass[n] = true
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if nodeEnvAllowed[k] || strings.HasPrefix(k, "LC_") || pass[k] {
			env = append(env, kv)
		}
	}
	return env
}

// nodeEnv builds a subprocess environment: the allowed part of the
// process's own (inheritedEnv), the run's variables, and (for bash) the
// SWITCHYARD_REF_<n> values. A value over
// 100 KiB goes to a file under tmp instead: SWITCHYARD_<NAME>_FILE names
// it, and for bash the returned prelude (run through BASH_ENV) reads it back
// into the variable, so scripts see the whole value, never truncated.
// BASE_BRANCH is set when branch is true and git (or configuration) knows it.
func nodeEnv(x *Exec, vars *yamlVars, refs []string, tmp string, branch bool) (env []string, prelude string, err error) {
	drop := map[string]bool{"BASH_ENV": true}
	for _, name := range envVarNames {
		drop[name] = true
	}
	for _, kv := range inheritedEnv(vars.spec.rs.wf.PassEnv) {
		k, _, _ := strings.Cut(kv, "=")
		if drop[k] || strings.HasPrefix(k, "SWITCHYARD_REF_") {
			continue
		}
		env = append(env, kv)
	}
	var pre strings.Builder
	total := 0
	put := func(name, value string) error {
		value = strings.ReplaceAll(value, "\x00", "") // the environment cannot hold NUL
		if len(value) <= maxEnvValue && total+len(value) <= maxEnvTotal {
			total += len(value)
			env = append(env, name+"="+value)
			return nil
		}
		p := filepath.Join(tmp, strings.ToLower(name))
		if err := os.WriteFile(p, []byte(value), 0o600); err != nil {
			return fmt.Errorf("spill %s to a file: %w", name, err)
		}
		env = append(env, "SWITCHYARD_"+strings.TrimPrefix(name, "SWITCHYARD_")+"_FILE="+p)
		fmt.Fprintf(&pre, "IFS= read -r -d '' %s < %s || :\n", name, quoteShell(p))
		return nil
	}
	for _, name := range envVarNames {
		if err := put(name, vars.named(name)); err != nil {
			return nil, "", err
		}
	}
	if dir, derr := x.ArtifactsDir(); derr == nil {
		env = append(env, "ARTIFACTS_DIR="+dir)
	}
	env = append(env, "WORKFLOW_ID="+x.RunID(), "DOCS_DIR="+vars.spec.rs.docsDir(),
		"SWITCHYARD_RUN_ID="+x.RunID(), "SWITCHYARD_NODE_ID="+x.NodeID())
	if branch {
		if b, berr := vars.spec.rs.baseBranch(x.WorkDir()); berr == nil {
			env = append(env, "BASE_BRANCH="+b)
		}
	}
	for i, v := range refs {
		if err := put(bashref.EnvName(i), v); err != nil {
			return nil, "", err
		}
	}
	if pre.Len() > 0 {
		prelude = "unset BASH_ENV\n" + pre.String() +
			"if [ -n \"${SWITCHYARD_USER_BASH_ENV-}\" ]; then export BASH_ENV=\"$SWITCHYARD_USER_BASH_ENV\"; . \"$BASH_ENV\"; fi\n"
	}
	return env, prelude, nil
}

// ---- script nodes ----

// scriptExts lists the file extensions a named script may have, by runtime.
var scriptExts = map[string][]string{
	yamlflow.RuntimeBun: {".ts", ".js", ".mjs", ".mts"},
	yamlflow.RuntimeUV:  {".py"},
}

func runScriptNode(ctx context.Context, x *Exec, spec *yamlSpec) (Result, error) {
	n := spec.n
	vars := &yamlVars{x: x, spec: spec, mode: modeScript}
	tmp, err := os.MkdirTemp("", "switchyard-script-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(tmp)
	var path string
	if n.ScriptNamed {
		if path, err = findScript(spec.rs, x.WorkDir(), n.Script, n.Runtime); err != nil {
			return Result{}, err
		}
	} else {
		code, err := vars.substitute(n.Script, nil)
		if err != nil {
			return Result{}, permanent(err)
		}
		ext := ".ts"
		if n.Runtime == yamlflow.RuntimeUV {
			ext = ".py"
		}
		path = filepath.Join(tmp, "inline"+ext)
		if err := os.WriteFile(path, []byte(code), 0o600); err != nil {
			return Result{}, err
		}
	}
	env, _, err := nodeEnv(x, vars, nil, tmp, true)
	if err != nil {
		return Result{}, err
	}
	var ps proc.Spec
	switch n.Runtime {
	case yamlflow.RuntimeBun:
		if len(n.Deps) > 0 {
			mods, err := bunDeps(ctx, x, n.Deps, env)
			if err != nil {
				return Result{}, err
			}
			env = append(env, "NODE_PATH="+mods)
		}
		ps = proc.Spec{Name: "bun", Args: []string{"--no-env-file", "run", path}}
	case yamlflow.RuntimeUV:
		args := []string{"run"}
		for _, d := range n.Deps {
			args = append(args, "--with", d)
		}
		ps = proc.Spec{Name: "uv", Args: append(args, path)}
	default:
		return Result{}, permanent(fmt.Errorf("script runtime %q is not supported (bun or uv)", n.Runtime))
	}
	ps.Dir, ps.Env, ps.Timeout = x.WorkDir(), env, procTimeout(n)
	out, stderr, err := runProc(ctx, x, ps)
	if err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(stderr) != "" {
		x.Emit(EvWarning, "stderr: "+proc.Tail(strings.TrimRight(stderr, "\n"), proc.MaxStderrKept), map[string]any{"stream": "stderr"})
	}
	return Result{Output: out}, nil
}

// scriptDirs lists where named scripts are looked for, in order.
func scriptDirs(rs *yamlRunState, workDir string) []string {
	var dirs []string
	if rs.cfg.ScriptsDir != "" {
		dirs = append(dirs, rs.cfg.ScriptsDir)
	}
	if rs.wf.Dir != "" {
		dirs = append(dirs, filepath.Join(rs.wf.Dir, "scripts"),
			filepath.Join(filepath.Dir(rs.wf.Dir), "scripts")) // .archon/workflows/x.yaml -> .archon/scripts
	}
	if workDir != "" {
		dirs = append(dirs, filepath.Join(workDir, ".switchyard", "scripts"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".switchyard", "scripts"))
	}
	return dirs
}

func findScript(rs *yamlRunState, workDir, name, runtime string) (string, error) {
	if err := yamlflow.ValidCommandName(name); err != nil {
		return "", permanent(fmt.Errorf("script name: %w", err))
	}
	dirs := scriptDirs(rs, workDir)
	exts := scriptExts[runtime]
	for _, d := range dirs {
		for _, ext := range exts {
			p := filepath.Join(d, name+ext)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return p, nil
			}
		}
	}
	return "", permanent(fmt.Errorf("named script %q (%s) not found: looked for %s%s in %s (set %s for another folder)",
		name, runtime, name, strings.Join(exts, "|"), strings.Join(dirs, ", "), EnvScriptsDir))
}

// bunDeps installs a script's dependencies once into a cache folder keyed
// by the dependency list and returns its node_modules (for NODE_PATH).
func bunDeps(ctx context.Context, x *Exec, deps []string, env []string) (string, error) {
	sorted := append([]string(nil), deps...)
	sort.Strings(sorted)
	sum := sha256.Sum256([]byte(strings.Join(sorted, "\n")))
	root := os.Getenv("SWITCHYARD_CACHE_DIR")
	if root == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			c = os.TempDir()
		}
		root = filepath.Join(c, "switchyard")
	}
	dir := filepath.Join(root, "bun-deps", hex.EncodeToString(sum[:8]))
	mods := filepath.Join(dir, "node_modules")
	marker := filepath.Join(dir, ".installed")
	if _, err := os.Stat(marker); err == nil {
		return mods, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("bun deps cache: %w", err)
	}
	// One installer per cache folder, across processes too.
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("bun deps cache: %w", err)
	}
	defer lock.Close()
	if err := dirlock.Flock(ctx, lock); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing the file unlocks too
	if _, err := os.Stat(marker); err == nil {
		return mods, nil
	}
	pkg, _ := json.Marshal(map[string]any{"name": "switchyard-script-deps", "private": true})
	if err := os.WriteFile(filepath.Join(dir, "package.json"), pkg, 0o644); err != nil {
		return "", err
	}
	x.Emit(EvOutput, "installing "+strings.Join(sorted, " ")+" with bun add\n", map[string]any{"stream": "setup"})
	_, _, err = runProc(ctx, x, proc.Spec{Name: "bun", Args: append([]string{"add"}, sorted...), Dir: dir, Env: env,
		Timeout: 5 * time.Minute, Stream: "setup"})
	if err != nil {
		return "", fmt.Errorf("install script deps with bun add: %w", err)
	}
	if err := os.WriteFile(marker, []byte(strings.Join(sorted, "\n")), 0o644); err != nil {
		return "", err
	}
	return mods, nil
}

// ---- cancel and approval nodes ----

func runCancelNode(x *Exec, spec *yamlSpec) (Result, error) {
	vars := &yamlVars{x: x, spec: spec, mode: modePrompt}
	reason, err := vars.substitute(spec.n.CancelReason, nil)
	if err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(reason) == "" {
		reason = fmt.Sprintf("cancelled by node %q", spec.n.ID)
	}
	return Result{Output: reason, CancelRun: reason}, nil
}

// approvalState is an approval node's private state while it waits.
type approvalState struct {
	Rejections int    `json:"rejections"`
	LastRework string `json:"lastRework,omitempty"`
}

func approvalWait(x *Exec, spec *yamlSpec, st approvalState) (Result, error) {
	vars := &yamlVars{x: x, spec: spec, mode: modePrompt}
	msg, err := vars.substitute(spec.n.Approval.Message, nil)
	if err != nil {
		return Result{}, permanent(err)
	}
	raw, _ := json.Marshal(st)
	return Result{Wait: &Wait{Prompt: msg, State: raw}}, nil
}

// approvalResume applies a reviewer's decision. Approve continues (output:
// the reviewer's note with capture_response, else ""). Reject runs the
// on_reject prompt with $REJECTION_REASON and asks again; the
// max_attempts-th rejection, or any rejection without on_reject, cancels
// the run with the reviewer's reason.
func approvalResume(ctx context.Context, x *Exec, spec *yamlSpec, d Decision) (Result, error) {
	var st approvalState
	if len(x.WaitState) > 0 {
		_ = json.Unmarshal(x.WaitState, &st)
	}
	ap := spec.n.Approval
	if d.Decision == "approve" {
		x.Emit(EvInputReceived, "User approved this step.", d)
		out := ""
		if ap.CaptureResponse {
			out = d.Note
		}
		return Result{Output: out, Decided: true}, nil
	}
	x.Emit(EvInputReceived, "User rejected this step. Feedback: "+d.Note, d)
	st.Rejections++
	reason := strings.TrimSpace(d.Note)
	if reason == "" {
		reason = "no reason given"
	}
	if ap.OnReject == nil {
		return Result{Decided: true, Rejection: d.Note,
			CancelRun: fmt.Sprintf("approval %q rejected: %s", spec.n.ID, reason)}, nil
	}
	maxAttempts := ap.OnReject.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = yamlflow.DefaultOnRejectMaxAttempts
	}
	if st.Rejections >= maxAttempts {
		return Result{Decided: true, Rejection: d.Note,
			CancelRun: fmt.Sprintf("approval %q rejected %d times (max_attempts %d): %s", spec.n.ID, st.Rejections, maxAttempts, reason)}, nil
	}
	res, err := withRetry(ctx, x, spec.n, func(ctx context.Context) (Result, error) {
		vars := &yamlVars{x: x, spec: spec, mode: modePrompt, rejection: d.Note}
		user, err := vars.substitute(ap.OnReject.Prompt, nil)
		if err != nil {
			return Result{}, permanent(err)
		}
		out, err := llmTurn(ctx, x, spec, vars, nil, user, map[string]any{"onReject": st.Rejections})
		return Result{Output: out}, err
	})
	if err != nil {
		return Result{}, fmt.Errorf("on_reject prompt: %w", err)
	}
	st.LastRework = res.Output
	return approvalWait(x, spec, st)
}
