package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// GlobMaxResults is how many paths Glob lists (Claude Code's bound).
const GlobMaxResults = 100

// skipDirs are the version-control folders that file walks skip.
var skipDirs = map[string]bool{".git": true, ".svn": true, ".hg": true, ".bzr": true, ".jj": true}

type globTool struct{}

func (globTool) Name() string { return "Glob" }

func (globTool) Description() string {
	return "Finds files by name pattern in the workspace, e.g. \"**/*.go\" or \"src/**/*.{ts,tsx}\" " +
		"(** matches any number of folders). path is the folder to search (default: the workspace folder). " +
		fmt.Sprintf("Returns absolute paths, most recently modified first, at most %d.", GlobMaxResults)
}

func (globTool) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"pattern": map[string]any{"type": "string", "description": "The glob pattern to match files against"},
			"path":    map[string]any{"type": "string", "description": "The folder to search in (default: the workspace folder). Omit it rather than passing a placeholder"},
		},
		"required":             []string{"pattern"},
		"additionalProperties": false,
	}
}

type foundFile struct {
	abs   string
	mtime time.Time
}

// sortNewest sorts by modification time, newest first, then by path.
func sortNewest(fs []foundFile) {
	slices.SortFunc(fs, func(a, b foundFile) int {
		if c := b.mtime.Compare(a.mtime); c != 0 {
			return c
		}
		return strings.Compare(a.abs, b.abs)
	})
}

func (t globTool) Call(ctx context.Context, env *Env, raw json.RawMessage) Result {
	a, err := parseArgs(t, raw)
	if err != nil {
		return errResult("Glob", "%v", err)
	}
	pattern, dir := a.str("pattern"), a.str("path")
	if a.err != nil {
		return errResult("Glob", "%v", a.err)
	}
	if filepath.IsAbs(pattern) {
		// An absolute pattern names its folder: its leading folders
		// without glob syntax are the folder to search.
		dir, pattern = splitGlobBase(pattern)
	}
	g, err := compileGlob(pattern)
	if err != nil {
		return errResult("Glob", "%v", err)
	}
	if dir == "" {
		dir = "."
	}
	pl, err := env.locateDir(dir)
	if err != nil {
		return errResult("Glob", "%v", err)
	}
	defer pl.close()
	var found []foundFile
	err = walk(ctx, pl, func(rel, sub string, d fs.DirEntry) error {
		if d.IsDir() || !g.match(sub) {
			return nil
		}
		ff := foundFile{abs: pl.join(rel)}
		if fi, err := d.Info(); err == nil {
			ff.mtime = fi.ModTime()
		}
		found = append(found, ff)
		return nil
	})
	if err != nil {
		return walkErr("Glob", dir, err)
	}
	if len(found) == 0 {
		return Result{Output: "No files found"}
	}
	sortNewest(found)
	var out capture
	for i, f := range found[:min(len(found), GlobMaxResults)] {
		if i > 0 {
			out.WriteString("\n")
		}
		out.WriteString(f.abs)
	}
	trailer := ""
	if len(found) > GlobMaxResults {
		trailer = fmt.Sprintf("\n... %d more files not shown (use a narrower pattern or path)", len(found)-GlobMaxResults)
	}
	return out.result(trailer, false)
}

// splitGlobBase splits an absolute pattern into its leading folders
// without glob syntax and the rest.
func splitGlobBase(pattern string) (string, string) {
	segs := strings.Split(filepath.ToSlash(pattern), "/")
	i := 0
	for i < len(segs)-1 && !hasMeta(segs[i]) {
		i++
	}
	base := "/" + path.Join(segs[:i]...)
	return filepath.FromSlash(base), strings.Join(segs[i:], "/")
}

// locateDir locates p and checks that it is a folder.
func (env *Env) locateDir(p string) (*place, error) {
	pl, err := env.locate(p)
	if err != nil {
		return nil, err
	}
	fi, err := pl.root.Stat(pl.rel)
	if err != nil {
		pl.close()
		return nil, pathErr(p, err)
	}
	if !fi.IsDir() {
		pl.close()
		return nil, fmt.Errorf("%s is not a folder", p)
	}
	return pl, nil
}

// errWalkCut stops a walk early without an error.
var errWalkCut = errors.New("walk cut")

// walk visits the entries beneath the place (a folder), in lexical order,
// through the place's os.Root: symlinks are listed, never followed, and
// version-control folders are skipped. fn gets the entry's path from the
// root and from the place. A ctx that ends stops the walk; unreadable
// folders are skipped. fn may return errWalkCut to stop without error.
func walk(ctx context.Context, pl *place, fn func(rel, sub string, d fs.DirEntry) error) error {
	prefix := ""
	if pl.rel != "." {
		prefix = pl.rel + "/"
	}
	err := fs.WalkDir(pl.root.FS(), pl.rel, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if p == pl.rel {
				return err
			}
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if p == pl.rel {
			return nil
		}
		if d.IsDir() && skipDirs[d.Name()] {
			return fs.SkipDir
		}
		return fn(p, strings.TrimPrefix(p, prefix), d)
	})
	if errors.Is(err, errWalkCut) {
		return nil
	}
	return err
}

// walkErr is the error Result of a walk that failed.
func walkErr(tool, dir string, err error) Result {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return errResult(tool, "cancelled: %v", err)
	}
	return errResult(tool, "%v", pathErr(dir, err))
}
