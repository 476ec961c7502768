package yamldir

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/switchyard/switchyard/engine"
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
	src, err := readYAML(f.abs)
	if err != nil {
		return nil, y.fileErr(id, err)
	}
	return src, nil
}

// Save replaces the file of id with src when its current text has hash
// base (else a *ConflictError). old is the text it replaced. The write is
// atomic: a temporary file in the same folder, synced, renamed over the
// file's real path (a symlinked file stays a symlink to the new text).
// edit, when set, makes src from the current text instead (src is then
// ignored).
func (y *Folder) Save(ctx context.Context, id, base string, src []byte, edit func(cur []byte) ([]byte, error)) (old, saved []byte, err error) {
	f, err := y.resolve(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	root := y.absDir
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if !y.contained(root, f.rel) {
		return nil, nil, fmt.Errorf("workflow %s: %w", id, engine.ErrNotFound)
	}
	real, err := filepath.EvalSymlinks(f.abs)
	if err != nil {
		return nil, nil, y.fileErr(id, err)
	}
	writeMu.Lock()
	defer writeMu.Unlock()
	cur, err := readYAML(real)
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
	if fi, err := os.Stat(real); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := writeAtomic(real, src, mode, false); err != nil {
		return nil, nil, err
	}
	return cur, src, nil
}

// Create writes a new workflow file at rel (slash-separated, relative to
// the folder; missing folders are made) and returns its id. It refuses a
// file that exists (ErrExists) and paths outside the folder, hidden or
// not .yaml/.yml (*PathError).
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
	root, err := filepath.EvalSymlinks(y.absDir)
	if err != nil {
		return "", err
	}
	// Every existing folder on the way must be a real folder inside.
	parts := strings.Split(rel, "/")
	dir := root
	for _, p := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, p)
		fi, err := os.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
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
	if err := writeAtomic(filepath.Join(root, filepath.FromSlash(rel)), src, 0o644, true); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("%s: %w", y.display(rel), ErrExists)
		}
		return "", err
	}
	return WorkflowID(rel), nil
}

// checkNewPath refuses paths a listing would not show or that leave the
// folder.
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
	if _, ok := ParseID(WorkflowID(rel)); !ok {
		return &PathError{Path: rel, Reason: "is too long"}
	}
	return nil
}

// writeAtomic writes data to a temporary file beside path, syncs it and
// renames it over path (exclusive: links it, failing if path exists),
// then syncs the folder.
func writeAtomic(path string, data []byte, mode fs.FileMode, exclusive bool) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".switchyard-*.tmp")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer os.Remove(name) // gone after a rename; cleanup otherwise
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
		if err := os.Link(name, path); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return err
			}
			// No hard links here (some file systems): check, then rename.
			if _, serr := os.Lstat(path); serr == nil {
				return fs.ErrExist
			}
			if err := os.Rename(name, path); err != nil {
				return err
			}
		}
	} else if err := os.Rename(name, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
