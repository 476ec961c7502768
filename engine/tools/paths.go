package tools

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// place is a path beneath one of the Env's roots, with that root open as an
// os.Root: every operation goes through the Root, so a symlink that points
// out, or one swapped in after a check, cannot carry an access outside it
// (the kernel resolves each component beneath the root's descriptor).
type place struct {
	root    *os.Root
	rootDir string // the root's absolute path
	first   bool   // the root is Roots[0] (the workspace)
	rel     string // slash-separated, beneath root; "." is the root itself
}

func (p *place) close() { _ = p.root.Close() }

// abs is the place's absolute path (as the model should name it).
func (p *place) abs() string { return p.join(p.rel) }

// join is the absolute path of rel, a path beneath the place's root.
func (p *place) join(rel string) string {
	return filepath.Join(p.rootDir, filepath.FromSlash(rel))
}

// outsideError is a path that does not resolve beneath any root.
type outsideError struct{ path string }

func (e *outsideError) Error() string {
	return fmt.Sprintf("path %q is outside the workspace", e.path)
}

// isEscape reports an os.Root refusal: a ".." or symlink that leaves the
// root. os does not export the error, so its text is matched (pinned by
// TestRootEscapeErrorText).
func isEscape(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent"
}

// pathErr turns an error of a root operation on the model's path p into the
// message the model sees.
func pathErr(p string, err error) error {
	var oe *outsideError
	switch {
	case errors.As(err, &oe):
		return &outsideError{path: p}
	case isEscape(err):
		return &outsideError{path: p}
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist", p)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied", p)
	}
	return fmt.Errorf("%s: %w", p, err)
}

// roots are the Env's roots, absolute and clean.
func (env *Env) roots() ([]string, error) {
	if env == nil || len(env.Roots) == 0 {
		return nil, errors.New("no workspace folder is configured")
	}
	out := make([]string, 0, len(env.Roots))
	for _, r := range env.Roots {
		a, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("workspace root %q: %w", r, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// resolve places p (absolute, or relative to Roots[0]) beneath a root. The
// path is cleaned lexically first (a ".." that climbs out of every root is
// refused); a path that is not lexically beneath a root is tried again
// with symlinks resolved on both sides (a root named through a symlink,
// or a link elsewhere that points into a root). Symlinks beneath the root
// are left to os.Root, which refuses any that lead out.
func (env *Env) resolve(p string) (*place, error) {
	roots, err := env.roots()
	if err != nil {
		return nil, err
	}
	if p == "" {
		return nil, errors.New("empty path")
	}
	if strings.ContainsRune(p, 0) {
		return nil, fmt.Errorf("path %q holds a NUL byte", p)
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(roots[0], abs)
	}
	abs = filepath.Clean(abs)
	if pl, ok, err := openBeneath(roots, roots, abs); ok || err != nil {
		return pl, err
	}
	real := evalPrefix(abs)
	realRoots := make([]string, len(roots))
	for i, r := range roots {
		realRoots[i] = r
		if rr, err := filepath.EvalSymlinks(r); err == nil {
			realRoots[i] = rr
		}
	}
	if pl, ok, err := openBeneath(roots, realRoots, real); ok || err != nil {
		return pl, err
	}
	return nil, &outsideError{path: p}
}

// openBeneath opens the deepest of dirs (the roots, maybe with symlinks
// resolved) that abs lies beneath.
func openBeneath(roots, dirs []string, abs string) (*place, bool, error) {
	best, bestRel := -1, ""
	for i, d := range dirs {
		rel, ok := beneath(d, abs)
		if ok && (best < 0 || len(d) > len(dirs[best])) {
			best, bestRel = i, rel
		}
	}
	if best < 0 {
		return nil, false, nil
	}
	r, err := os.OpenRoot(dirs[best])
	if err != nil {
		return nil, true, fmt.Errorf("workspace root %s: %w", roots[best], err)
	}
	return &place{root: r, rootDir: dirs[best], first: best == 0, rel: bestRel}, true, nil
}

// beneath reports whether abs is dir or below it, and the slash-separated
// path from dir.
func beneath(dir, abs string) (string, bool) {
	rel, err := filepath.Rel(dir, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// evalPrefix resolves the symlinks of the longest existing prefix of abs
// and appends the rest (a path to be created need not exist).
func evalPrefix(abs string) string {
	rest := ""
	for p := abs; ; {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return abs
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// openRead opens rel for reading without blocking: opening a FIFO (or a
// device) for reading would otherwise wait for a writer, beyond ctx's
// reach. Callers then check that it is a regular file.
func openRead(r *os.Root, rel string) (*os.File, error) {
	return r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// maxLinks bounds the symlinks locate follows.
const maxLinks = 16

// locate resolves p and follows a symlink in its last component, so that a
// link to another root (or an absolute link, which os.Root refuses) works
// when its target lies beneath a root. Links in the folders above are left
// to os.Root. The place is open (close it); missing files are not errors.
func (env *Env) locate(p string) (*place, error) {
	pl, err := env.resolve(p)
	if err != nil {
		return nil, pathErr(p, err)
	}
	for range maxLinks {
		if pl.rel == "." {
			return pl, nil
		}
		fi, err := pl.root.Lstat(pl.rel)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return pl, nil
			}
			pl.close()
			return nil, pathErr(p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return pl, nil
		}
		target, err := pl.root.Readlink(pl.rel)
		if err != nil {
			pl.close()
			return nil, pathErr(p, err)
		}
		if !filepath.IsAbs(target) {
			// Relative to the link's real folder, as the kernel reads it
			// (the folder may itself be reached through a link). This only
			// names the target: the access still goes through a Root.
			parent := filepath.Dir(pl.abs())
			if rp, err := filepath.EvalSymlinks(parent); err == nil {
				parent = rp
			}
			target = filepath.Join(parent, target)
		}
		pl.close()
		if pl, err = env.resolve(target); err != nil {
			return nil, pathErr(p, err) // names the model's path, not the link's target
		}
	}
	pl.close()
	return nil, fmt.Errorf("%s: too many levels of symbolic links", p)
}

// writeAtomic writes data to the place's file: a temporary file in the same
// folder, then a rename over the name, both through one os.Root opened on
// that folder, so a reader never sees half a file and a folder swapped for
// a symlink cannot redirect the write. Parent folders are created; an
// existing file keeps its mode. It reports whether the file was created.
func writeAtomic(pl *place, data []byte) (created bool, err error) {
	dir, base := path.Split(pl.rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	if base == "" || base == "." || base == ".." {
		return false, errors.New("is a directory")
	}
	if dir != "." {
		if err := pl.root.MkdirAll(dir, 0o755); err != nil {
			return false, err
		}
	}
	d, err := pl.root.OpenRoot(dir)
	if err != nil {
		return false, err
	}
	defer d.Close()
	mode, created := fs.FileMode(0o644), true
	fi, err := d.Lstat(base)
	switch {
	case err == nil && fi.IsDir():
		return false, errors.New("is a directory")
	case err == nil && fi.Mode().IsRegular():
		mode, created = fi.Mode().Perm(), false
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		// Swapped in since locate followed links: the rename below
		// replaces the link itself, inside this folder.
	case err == nil:
		return false, errors.New("is not a regular file")
	case !errors.Is(err, fs.ErrNotExist):
		return false, err
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	stem := base
	if len(stem) > 200 {
		stem = stem[:200]
	}
	tmp := "." + stem + "." + hex.EncodeToString(rnd[:]) + ".tmp"
	f, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			_ = d.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if err == nil && !created {
		err = f.Chmod(mode) // the umask may have narrowed the create mode
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	if err := d.Rename(tmp, base); err != nil {
		return false, err
	}
	return created, nil
}
