package proc

// The sandbox: what a node's processes may not see.
//
// Nodes' processes run as the server's user, so without more they could
// read and write whatever that user can: the database (every run's
// inputs and outputs, its decisions), a --token-file, other runs'
// workspaces. An agent whose Bash call was talked into it (a prompt
// injection in a web page it read) could read the server's token and
// approve its own tool calls, or edit the database.
//
// So, where the kernel lets an unprivileged process have its own user and
// mount namespaces (Linux, sandbox_linux.go), every process started
// through StartLocked (bash and script nodes, agents' Bash, hooks, MCP
// servers) starts in a mount namespace of its own in which the hidden
// paths are empty: a hidden folder is an empty read-only folder, a hidden
// file reads as empty. Folders the process needs inside a hidden one (its
// run's workspace and $ARTIFACTS_DIR, under the data folder) are mounted
// back. It runs as the same user, with the same files elsewhere, and
// without capabilities, so it cannot unmount what hides.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Sandbox says what node processes may not see.
type Sandbox struct {
	// Hide lists absolute paths of files and folders hidden from node
	// processes. A path that does not exist is skipped.
	Hide []string

	// folders are the hidden folders as SetSandbox found them (device and
	// inode): a step starts only while each path still names its folder
	// (see enterSandbox).
	folders map[string][2]uint64
}

// ErrNoSandbox: this machine cannot sandbox processes (not Linux, user
// namespaces turned off, a seccomp profile that refuses them).
var ErrNoSandbox = errors.New("sandbox unavailable")

var (
	sandboxMu sync.RWMutex
	sandbox   *Sandbox // nil: processes start unsandboxed
)

// SetSandbox makes every process started from now on start in s, after
// checking that this machine can (a probe starts one sandboxed process
// that hides s's paths). On error (wrapping ErrNoSandbox when the kernel
// refuses), nothing changes. A nil s turns the sandbox off.
func SetSandbox(s *Sandbox) error {
	if s == nil {
		sandboxMu.Lock()
		sandbox = nil
		sandboxMu.Unlock()
		return nil
	}
	hide, err := cleanPaths(s.Hide)
	if err != nil {
		return err
	}
	c := &Sandbox{Hide: hide, folders: folderIDs(hide)}
	if err := probeSandbox(c); err != nil {
		return err
	}
	sandboxMu.Lock()
	sandbox = c
	sandboxMu.Unlock()
	return nil
}

// currentSandbox is the sandbox processes start in now (nil: none).
func currentSandbox() *Sandbox {
	sandboxMu.RLock()
	defer sandboxMu.RUnlock()
	return sandbox
}

// cleanPaths makes paths absolute and clean, resolved through symlinks
// where they exist (a mount lands on what the path resolves to, so the
// resolved path is the one to compare and to mount on).
func cleanPaths(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		a, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("sandbox: %s: %w", p, err)
		}
		if r, err := filepath.EvalSymlinks(a); err == nil {
			a = r
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("sandbox: %s: %w", p, err)
		}
		if a == "/" {
			return nil, fmt.Errorf("sandbox: cannot hide /")
		}
		out = append(out, a)
	}
	return out, nil
}

// within reports whether p is dir or inside it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// exposed lists the paths of expose (resolved) that lie strictly inside a
// hidden folder of hide: those are mounted back in the sandbox, and the
// hidden paths inside them hidden again. A path that is itself hidden
// (a workspace that is the data folder) stays hidden.
func exposed(hide, expose []string) []string {
	var out []string
	for _, e := range expose {
		in, is := false, false
		for _, h := range hide {
			if e == h {
				is = true
			} else if within(e, h) {
				in = true
			}
		}
		if in && !is && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}
