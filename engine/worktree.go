package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchyard/switchyard/internal/proc"
)

// Archon's worktree isolation: a YAML run whose workflow asks for it
// (worktree: {enabled: true}) and whose workspace is in a git repository
// works in a git worktree of its own, on a new branch switchyard/<run id>,
// under Config.WorktreeRoot. The worktree is kept after the run (its work is
// on that branch); PruneWorktrees removes those of finished runs.

// WorktreeBranchPrefix starts the branch of every run's worktree.
const WorktreeBranchPrefix = "switchyard/"

// WorktreeBranch is the branch of the worktree r works in, or "" when r
// got none.
func (e *Engine) WorktreeBranch(r *Run) string {
	wt := filepath.Join(e.cfg.WorktreeRoot, r.ID)
	if r.WorkDir == wt || strings.HasPrefix(r.WorkDir, wt+string(filepath.Separator)) {
		return WorktreeBranchPrefix + r.ID
	}
	return ""
}

// createWorktree adds the run's worktree for the repository holding dir
// and returns the folder that corresponds to dir inside it.
func (e *Engine) createWorktree(ctx context.Context, dir, runID string) (string, error) {
	top, err := gitOut(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("worktree isolation: %s is not in a git repository: %w", dir, err)
	}
	rel, err := filepath.Rel(top, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = "."
	}
	if _, err := gitOut(ctx, top, "rev-parse", "--verify", "HEAD"); err != nil {
		return "", fmt.Errorf("worktree isolation: the repository at %s has no commit to branch from: %w", top, err)
	}
	root := e.cfg.WorktreeRoot
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("worktree isolation: %w", err)
	}
	wt := filepath.Join(root, runID)
	// Made first, so that in the sandbox (the data folder, the worktrees'
	// root, hidden) git's checkout and its hooks see it: git adds a
	// worktree in an empty folder as in a new one.
	if err := os.MkdirAll(wt, 0o755); err != nil {
		return "", fmt.Errorf("worktree isolation: %w", err)
	}
	if _, err := gitHooked(ctx, top, []string{wt}, "worktree", "add", "-b", WorktreeBranchPrefix+runID, wt, "HEAD"); err != nil {
		return "", fmt.Errorf("worktree isolation: git worktree add: %w", err)
	}
	return filepath.Join(wt, rel), nil
}

// PruneWorktrees removes the worktrees under root whose runs have ended
// (or are unknown to st), and returns their folders. Their branches stay:
// the work the runs did is there. dryRun only lists them.
func PruneWorktrees(ctx context.Context, st Store, root string, dryRun bool) ([]string, error) {
	ents, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	var errs []error
	for _, ent := range ents {
		if !ent.IsDir() {
			continue
		}
		dir := filepath.Join(root, ent.Name())
		r, err := st.GetRun(ctx, ent.Name())
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			errs = append(errs, err)
			continue
		case !r.Status.Terminal():
			continue // the run may still work there
		}
		out = append(out, dir)
		if dryRun {
			continue
		}
		if common, err := gitOut(ctx, dir, "rev-parse", "--path-format=absolute", "--git-common-dir"); err == nil {
			if _, err := gitOut(ctx, filepath.Dir(common), "worktree", "remove", "--force", dir); err != nil {
				errs = append(errs, err)
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// gitHooked runs git in dir as a step runs a command (internal/proc: its
// own process group, in the sandbox when there is one, keeping expose):
// for git commands that run the repository's hooks, code of the
// repository's.
func gitHooked(ctx context.Context, dir string, expose []string, args ...string) (string, error) {
	out, stderr, err := proc.Run(ctx, proc.Spec{Name: "git", Args: args, Dir: dir, Expose: expose,
		Env: inheritedEnv(nil), Timeout: 10 * time.Minute})
	if err != nil {
		if msg := strings.TrimSpace(stderr); msg != "" && !strings.Contains(err.Error(), msg) {
			return "", fmt.Errorf("%w: %s", err, msg)
		}
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// gitOut runs git in dir with the node environment (no server secrets).
func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = inheritedEnv(nil)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return "", fmt.Errorf("%w: %s", err, msg)
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}
