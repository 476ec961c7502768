package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/internal/dirlock"
	"github.com/switchyard/switchyard/internal/proc"
	"github.com/switchyard/switchyard/yamlflow"
)

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
