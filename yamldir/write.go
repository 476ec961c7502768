package yamldir

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/switchyard/switchyard/yamlflow"
)

// Hash is the version stamp of a file's text: the hex SHA-256 of its
// bytes. Editors send the hash of the text they started from; a save
// whose base is not the file's current hash is a conflict.
func Hash(src []byte) string {
	sum := sha256.Sum256(src)
	return hex.EncodeToString(sum[:])
}

// ConflictError is a save whose base is not what the file holds now.
type ConflictError struct {
	Path string
	Disk []byte // the file's text now
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s changed on disk since you opened it (hash %s)", e.Path, Hash(e.Disk))
}

// ErrExists is a create of a file that is already there.
var ErrExists = errors.New("file already exists")

// PathError is a path a create refuses (outside the folder, hidden, not
// .yaml/.yml).
type PathError struct {
	Path, Reason string
}

func (e *PathError) Error() string { return fmt.Sprintf("path %q: %s", e.Path, e.Reason) }

// writeMu serialises writes of all folders of the process: a save's
// check of the base hash and its rename happen as one step.
var writeMu sync.Mutex

// Source returns the file of id's current text.
func (y *Folder) Source(ctx context.Context, id string) ([]byte, error) {
	f, err := y.resolve(ctx, id)
	if err != nil {
		return nil, err
	}
	src, err := y.readInside(f.rel)
	if err != nil {
		return nil, y.fileErr(id, err)
	}
	return src, nil
}

// openRoot opens the folder as an os.Root: every path opened through it
// is resolved beneath the folder (openat with RESOLVE_BENEATH where the
// kernel has it), symlinks included, whatever is renamed meanwhile. A
// check followed by a write by path could be raced by a symlink renamed
// over a file or folder in between (it wrote outside the folder); through
// the root, a path that leaves the folder fails instead.
func (y *Folder) openRoot() (*os.Root, error) {
	return os.OpenRoot(y.absDir)
}

// readInside reads the file at rel (slash-separated) beneath the folder,
// one byte past the format's limit so the loader reports an oversized file.
func (y *Folder) readInside(rel string) ([]byte, error) {
	root, err := y.openRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	// The root refuses absolute symlinks, even into the folder: a
	// symlinked file is followed here, within the folder.
	real, err := y.realRel(root, rel)
	if err != nil {
		return nil, err
	}
	return readRoot(root, real)
}

func readRoot(root *os.Root, rel string) ([]byte, error) {
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, yamlflow.MaxFileSize+1))
}

// realRel follows the symlinks of rel's last part (a symlinked workflow
// file is saved through to its target, and stays a link), keeping the
// path beneath the folder: a target outside is not found. The folders on
// the way are the root's to resolve.
func (y *Folder) realRel(root *os.Root, rel string) (string, error) {
	bases := []string{y.absDir}
	if r, err := filepath.EvalSymlinks(y.absDir); err == nil && r != y.absDir {
		bases = append(bases, r)
	}
	for range 40 { // as the kernel's limit of links followed
		fi, err := root.Lstat(filepath.FromSlash(rel))
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return rel, nil
		}
		target, err := root.Readlink(filepath.FromSlash(rel))
		if err != nil {
			return "", err
		}
		next := ""
		if filepath.IsAbs(target) {
			for _, b := range bases {
				if r, err := filepath.Rel(b, target); err == nil && filepath.IsLocal(r) {
					next = filepath.ToSlash(r)
					break
				}
			}
		} else if j := path.Join(path.Dir(rel), filepath.ToSlash(target)); filepath.IsLocal(filepath.FromSlash(j)) {
			next = j
		}
		if next == "" {
			return "", fmt.Errorf("%s links outside the folder: %w", rel, fs.ErrNotExist)
		}
		rel = next
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links: %w", rel, fs.ErrNotExist)
}

// Save replaces the file of id with src when its current text has hash
// base (else a *ConflictError). old is the text it replaced. The write is
// atomic: a temporary file in the same folder, synced, renamed over the
// file's real path (a symlinked file stays a symlink to the new text).
// Every step goes through the folder's os.Root, so nothing renamed
// meanwhile makes it read or write outside the folder.
// edit, when set, makes src from the current text instead (src is then
// ignored).
func (y *Folder) Save(ctx context.Context, id, base string, src []byte, edit func(cur []byte) ([]byte, error)) (old, saved []byte, err error) {
	f, err := y.resolve(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	root, err := y.openRoot()
	if err != nil {
		return nil, nil, y.fileErr(id, err)
	}
	defer root.Close()
	real, err := y.realRel(root, f.rel)
	if err != nil {
		return nil, nil, y.fileErr(id, err)
	}
	writeMu.Lock()
	defer writeMu.Unlock()
	cur, err := readRoot(root, real)
	if err != nil {
		return nil, nil, y.fileErr(id, err)
	}
	if Hash(cur) != base {
		return nil, nil, &ConflictError{Path: y.display(f.rel), Disk: cur}
	}
	if edit != nil {
		if src, err = edit(cur); err != nil {
			return nil, nil, err
		}
	}
	if len(src) > yamlflow.MaxFileSize {
		return nil, nil, fmt.Errorf("the text is larger than %d bytes", yamlflow.MaxFileSize)
	}
	if string(src) == string(cur) {
		return cur, cur, nil
	}
	mode := fs.FileMode(0o644)
	if fi, err := root.Stat(filepath.FromSlash(real)); err == nil {
		mode = fi.Mode().Perm()
	}
	if testHookBeforeWrite != nil {
		testHookBeforeWrite()
	}
	if err := writeAtomic(root, real, src, mode, false); err != nil {
		return nil, nil, fmt.Errorf("save %s: %w", y.display(f.rel), err)
	}
	return cur, src, nil
}

// testHookBeforeWrite, when set (tests), runs between a save's or a
// create's checks and its write.
var testHookBeforeWrite func()

// Create writes a new workflow file at rel (slash-separated, relative to
// the folder; missing folders are made) and returns its id. It refuses a
// file that exists (ErrExists) and paths outside the folder, hidden, not
// .yaml/.yml, or with names that mislead (*PathError). As Save, it writes
// through the folder's os.Root.
func (y *Folder) Create(ctx context.Context, rel string, src []byte) (string, error) {
	if err := checkNewPath(rel); err != nil {
		return "", err
	}
	if len(src) > yamlflow.MaxFileSize {
		return "", fmt.Errorf("the text is larger than %d bytes", yamlflow.MaxFileSize)
	}
	if err := os.MkdirAll(y.absDir, 0o755); err != nil {
		return "", err
	}
	root, err := y.openRoot()
	if err != nil {
		return "", err
	}
	defer root.Close()
	// Every existing folder on the way must be a real folder inside.
	parts := strings.Split(rel, "/")
	for i, p := range parts[:len(parts)-1] {
		dir := filepath.FromSlash(strings.Join(parts[:i+1], "/"))
		fi, err := root.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := root.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return "", err
			}
		case err != nil:
			return "", err
		case !fi.IsDir():
			return "", &PathError{Path: rel, Reason: fmt.Sprintf("%s is not a folder (symlinks are not followed)", p)}
		}
	}
	writeMu.Lock()
	defer writeMu.Unlock()
	if testHookBeforeWrite != nil {
		testHookBeforeWrite()
	}
	if err := writeAtomic(root, rel, src, 0o644, true); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("%s: %w", y.display(rel), ErrExists)
		}
		return "", fmt.Errorf("create %s: %w", y.display(rel), err)
	}
	return WorkflowID(rel), nil
}

// checkNewPath refuses paths a listing would not show or that leave the
// folder, and names that mislead people or tools: control characters (a
// newline splits a name in logs and listings), bidirectional text controls
// (they show a name other than the one on disk), a byte order mark or
// other invisible characters, and a leading '-' (read as an option by a
// command line).
func checkNewPath(rel string) error {
	switch {
	case rel == "" || strings.ContainsRune(rel, 0) || strings.Contains(rel, "\\"):
		return &PathError{Path: rel, Reason: "must be a file name such as my-flow.yaml"}
	case !filepath.IsLocal(filepath.FromSlash(rel)) || hasEmptyPart(rel):
		return &PathError{Path: rel, Reason: "must stay inside the workflows folder"}
	case !yamlflow.IsYAMLFile(rel):
		return &PathError{Path: rel, Reason: "must end in .yaml or .yml"}
	case hiddenPath(rel):
		return &PathError{Path: rel, Reason: "must not be hidden (a part starting with '.')"}
	}
	if !utf8.ValidString(rel) {
		return &PathError{Path: rel, Reason: "must be valid UTF-8"}
	}
	for _, part := range strings.Split(rel, "/") {
		if strings.HasPrefix(part, "-") {
			return &PathError{Path: rel, Reason: "must not start a name with '-' (it reads as an option on a command line)"}
		}
	}
	for _, r := range rel {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return &PathError{Path: rel, Reason: fmt.Sprintf("must not contain control characters (U+%04X; a newline or tab, say)", r)}
		case r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			return &PathError{Path: rel, Reason: fmt.Sprintf("must not contain bidirectional text controls (U+%04X): they show a name other than the file's", r)}
		case r == 0xfeff:
			return &PathError{Path: rel, Reason: "must not contain a byte order mark (U+FEFF)"}
		case (r >= 0x200b && r <= 0x200d) || r == 0x2060 || r == 0x00ad:
			return &PathError{Path: rel, Reason: fmt.Sprintf("must not contain invisible characters (U+%04X)", r)}
		}
	}
	if _, ok := ParseID(WorkflowID(rel)); !ok {
		return &PathError{Path: rel, Reason: "is too long"}
	}
	return nil
}

// writeAtomic writes data to a temporary file beside rel (beneath root),
// syncs it and renames it over rel (exclusive: links it, failing if rel
// exists), then syncs the folder. Every path goes through root.
func writeAtomic(root *os.Root, rel string, data []byte, mode fs.FileMode, exclusive bool) error {
	dir := path.Dir(rel)
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmpRel := filepath.FromSlash(path.Join(dir, ".switchyard-"+hex.EncodeToString(rnd[:])+".tmp"))
	dst := filepath.FromSlash(rel)
	tmp, err := root.OpenFile(tmpRel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer root.Remove(tmpRel) // gone after a rename; cleanup otherwise
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if exclusive {
		if err := root.Link(tmpRel, dst); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return err
			}
			// No hard links here (some file systems): check, then rename.
			if _, serr := root.Lstat(dst); serr == nil {
				return fs.ErrExist
			}
			if err := root.Rename(tmpRel, dst); err != nil {
				return err
			}
		}
	} else if err := root.Rename(tmpRel, dst); err != nil {
		return err
	}
	if d, err := root.Open(filepath.FromSlash(dir)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
