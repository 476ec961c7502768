package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchyard/switchyard/internal/bashref"
	"github.com/switchyard/switchyard/internal/proc"
	"github.com/switchyard/switchyard/yamlflow"
)

// ---- bash nodes ----

// yamlBashExec runs a bash node's script in the run's working directory.
type yamlBashExec struct{}

func (yamlBashExec) Execute(ctx context.Context, x *Exec) (Result, error) {
	return runYAML(ctx, x, func(ctx context.Context, spec *yamlSpec) (Result, error) {
		return withRetry(ctx, x, spec.n, func(ctx context.Context) (Result, error) { return runBashNode(ctx, x, spec) })
	})
}

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
	return allowedEnv(os.Environ(), workflowPass)
}

// allowedEnv is the part of environ a node subprocess gets.
func allowedEnv(environ, workflowPass []string) []string {
	pass := map[string]bool{}
	for _, n := range strings.Split(envValueOf(environ, PassEnvVar), ",") {
		if n = strings.TrimSpace(n); n != "" {
			pass[n] = true
		}
	}
	for _, n := range workflowPass {
		// The workflow file's: Switchyard's own secrets only through
		// the operator's list above.
		if !yamlflow.OwnSecret(n) {
			pass[n] = true
		}
	}
	env := []string{} // never nil: exec.Cmd would inherit os.Environ()
	for _, kv := range environ {
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

// envValueOf is name's value in environ, as os.Getenv reads its own (the
// first of duplicates); "" when unset.
func envValueOf(environ []string, name string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}
