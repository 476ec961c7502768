// Package yamldir serves a folder of YAML workflows: every *.yaml / *.yml
// file under it (hidden folders skipped) is a read-only workflow with a
// stable id, its loader problems and its canvas projection, started
// through the engine as it is on disk. Paths outside the folder (symlinks
// included) are refused.
package yamldir

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/yamlflow"
)

// IDPrefix starts the id of every workflow of a YAML folder. Database
// workflows have uuids, so the two never collide.
const IDPrefix = "yaml."

// MaxWorkflows bounds the files one listing of a folder looks at.
const MaxWorkflows = 1000

// Workflow is one file of the folder.
type Workflow struct {
	ID          string
	Name        string // the file's name:, else its base name
	Description string
	// Path is the file as people see it: the folder as configured plus
	// its relative path, or the relative path alone when the folder is
	// given as an absolute path (answers never carry absolute paths).
	Path string
	// Source is the file's text (Get only).
	Source string
	// Graph is the canvas projection (yamlflow.CanvasJSON); nil in lists.
	Graph json.RawMessage
	// RunBlocker says why the workflow cannot run here ("" if it can):
	// its errors, or Options.Blocker's reason.
	RunBlocker string
	// Problems are the loader's; lists carry only the errors, which keep
	// the workflow from running.
	Problems []graph.Problem
	ModTime  time.Time
}

// InvalidError is a workflow whose file has errors and cannot run.
type InvalidError struct {
	Path     string
	Problems []graph.Problem // the errors
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("workflow %s has errors and cannot run: %s", e.Path, firstError(e.Problems))
}

func firstError(ps []graph.Problem) string {
	for _, p := range ps {
		if p.IsError() {
			return p.Message
		}
	}
	return ""
}

// Options configures New.
type Options struct {
	Logger *slog.Logger
	// WorkDir is where runs of the folder's workflows work (bash and
	// script nodes, .switchyard/commands); "" keeps the directory the
	// server gives (its working directory).
	WorkDir string
	// Blocker, if set, says why a workflow without errors cannot run here
	// (e.g. engine.ProviderBlocker: a provider that is not configured).
	Blocker func(*yamlflow.Workflow) error
	// Start is passed to every engine.StartYAML (scripts folder, ...).
	// Unset folders come from the environment, as for `switchyard run`.
	Start []engine.YAMLOption
}

// Folder is a folder of YAML workflows: every
// *.yaml / *.yml file under it (hidden folders skipped) is a read-only
// workflow. The folder is scanned on every listing; what was parsed is kept
// until a file's size or modification time changes.
//
// A workflow's id is IDPrefix plus its path relative to the folder,
// escaped to the characters workflow ids allow (see WorkflowID), so it
// is stable and names the same file for as long as the file is there. Runs
// of YAML workflows are stored without a workflow id (the runs table's
// workflow_id names drawn workflows only); a run belongs to the workflow
// whose file its definition snapshot names (see WorkflowIDOfRun).
type Folder struct {
	dir     string // as configured, for the paths shown to people
	absDir  string
	log     *slog.Logger
	workDir string
	start   []engine.YAMLOption
	blocker func(*yamlflow.Workflow) error

	mu    sync.Mutex
	cache map[string]*entry // by absolute file path
}

// entry is what one parse of a file found.
type entry struct {
	modTime time.Time
	size    int64
	sum     [sha256.Size]byte

	name, description string
	problems          []graph.Problem
	blocker           string
	graph             json.RawMessage
}

// New serves the YAML workflows of dir. A folder that does
// not exist (yet) lists nothing; a path that is not a folder is an error.
func New(dir string, o Options) (*Folder, error) {
	if dir == "" {
		return nil, errors.New("yaml workflows: folder is required")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("yaml workflows %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("yaml workflows %s: not a folder", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("yaml workflows: %w", err)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Folder{dir: filepath.Clean(dir), absDir: abs, log: o.Logger, workDir: o.WorkDir, start: o.Start, blocker: o.Blocker,
		cache: map[string]*entry{}}, nil
}

// WorkDir is where runs of the folder's workflows work ("": the
// directory the caller gives).
func (y *Folder) WorkDir() string { return y.workDir }

// Dir is the folder's absolute path.
func (y *Folder) Dir() string { return y.absDir }

// file is one workflow file found in the folder.
type file struct {
	rel string // slash-separated, relative to the folder
	abs string
	fi  fs.FileInfo
}

func (f file) id() string { return WorkflowID(f.rel) }

// scan lists the folder's YAML files in path order, at most MaxWorkflows
// of them (truncated says there were more). A missing folder is empty.
func (y *Folder) scan(ctx context.Context) (out []file, truncated bool, err error) {
	// WalkDir does not follow a symlinked root: walk its target, but keep
	// the paths under the folder as configured (runs are matched on them).
	root := y.absDir
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			y.log.Warn("yaml workflows: skipping unreadable path", "path", p, "err", err)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == root {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !yamlflow.IsYAMLFile(p) {
			return nil
		}
		fi, err := os.Stat(p) // follows a symlinked file
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || !y.contained(root, filepath.ToSlash(rel)) {
			return nil // a symlink out of the folder
		}
		if len(out) >= MaxWorkflows {
			y.log.Warn("yaml workflows: too many files; listing the first ones", "dir", y.dir, "max", MaxWorkflows)
			truncated = true
			return fs.SkipAll
		}
		out = append(out, file{rel: filepath.ToSlash(rel), abs: filepath.Join(y.absDir, rel), fi: fi})
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("yaml workflows %s: %w", y.dir, err)
	}
	return out, truncated, nil
}

// List lists the folder's workflows. A listed workflow carries the
// errors that keep it from running (warnings only come with GET). At most
// MaxWorkflows are listed: ListTruncated says whether there were more.
func (y *Folder) List(ctx context.Context) ([]Workflow, error) {
	ws, _, err := y.ListTruncated(ctx)
	return ws, err
}

// ListTruncated is List, and whether the listing was cut: the folder
// holds more than MaxWorkflows YAML files and only the first MaxWorkflows
// (in path order) are listed.
func (y *Folder) ListTruncated(ctx context.Context) (ws []Workflow, truncated bool, err error) {
	files, truncated, err := y.scan(ctx)
	if err != nil {
		return nil, false, err
	}
	out := make([]Workflow, 0, len(files))
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		seen[f.abs] = true
		ent := y.entryByStat(f)
		w := y.workflow(f, ent)
		w.Graph = nil
		w.Problems = errorsOnly(ent.problems)
		out = append(out, w)
	}
	y.mu.Lock()
	for k := range y.cache {
		if !seen[k] {
			delete(y.cache, k)
		}
	}
	y.mu.Unlock()
	return out, truncated, nil
}

// Get implements WorkflowGetter: the file's source, its graph
// projection and every loader problem (file:line in the messages).
func (y *Folder) Get(ctx context.Context, id string) (*Workflow, error) {
	f, err := y.resolve(ctx, id)
	if err != nil {
		return nil, err
	}
	src, err := y.readInside(f.rel)
	if err != nil {
		return nil, y.fileErr(id, err)
	}
	ent := y.entryBySource(f, src)
	w := y.workflow(f, ent)
	w.Source = string(src)
	w.Problems = ent.problems
	return &w, nil
}

// Start implements WorkflowStarter: it starts the file as it is
// now. A file with errors does not start (an *InvalidError).
func (y *Folder) Start(ctx context.Context, e *engine.Engine, id string, opt engine.StartOptions) (*engine.Run, error) {
	f, err := y.resolve(ctx, id)
	if err != nil {
		return nil, err
	}
	src, err := y.readInside(f.rel)
	if err != nil {
		return nil, y.fileErr(id, err)
	}
	ent := y.entryBySource(f, src)
	if graph.HasErrors(ent.problems) {
		return nil, &InvalidError{Path: y.display(f.rel), Problems: errorsOnly(ent.problems)}
	}
	if y.workDir != "" {
		opt.WorkDir = y.workDir
	}
	opt.WorkflowID = f.id() // stored with the run: its workflow's runs are one indexed query
	return e.StartYAML(ctx, f.abs, src, opt, y.start...)
}

// OwnsID reports whether id has the form of this source's ids,
// whether or not its file still exists (its runs still do).
func (y *Folder) OwnsID(id string) bool { return strings.HasPrefix(id, IDPrefix) }

// WorkflowIDOfRun returns the id of the folder's workflow a YAML run was
// started from: the file its definition snapshot names, if that file is
// (or was) in the folder. "" for other runs.
func (y *Folder) WorkflowIDOfRun(r *engine.Run) string {
	if r == nil || r.Kind != engine.KindYAML || len(r.Definition) == 0 {
		return ""
	}
	var def struct {
		File string `json:"file"`
	}
	if json.Unmarshal(r.Definition, &def) != nil || def.File == "" || !filepath.IsAbs(def.File) {
		return ""
	}
	rel, err := filepath.Rel(y.absDir, def.File)
	if err != nil || !filepath.IsLocal(rel) || !yamlflow.IsYAMLFile(rel) || hiddenPath(filepath.ToSlash(rel)) {
		return ""
	}
	return WorkflowID(filepath.ToSlash(rel))
}

// resolve finds the file of id: by decoding it, or (for the hashed ids of
// very long paths) by scanning. engine.ErrNotFound if there is none.
func (y *Folder) resolve(ctx context.Context, id string) (file, error) {
	notFound := fmt.Errorf("workflow %s: %w", id, engine.ErrNotFound)
	if !y.OwnsID(id) {
		return file{}, notFound
	}
	if rel, ok := ParseID(id); ok {
		abs := filepath.Join(y.absDir, filepath.FromSlash(rel))
		root := y.absDir
		if r, err := filepath.EvalSymlinks(root); err == nil {
			root = r
		}
		if !y.contained(root, rel) {
			return file{}, notFound
		}
		fi, err := os.Stat(abs)
		if err != nil || !fi.Mode().IsRegular() {
			return file{}, notFound
		}
		return file{rel: rel, abs: abs, fi: fi}, nil
	}
	files, _, err := y.scan(ctx)
	if err != nil {
		return file{}, err
	}
	for _, f := range files {
		if f.id() == id {
			return f, nil
		}
	}
	return file{}, notFound
}

func (y *Folder) fileErr(id string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("workflow %s: %w", id, engine.ErrNotFound)
	}
	return fmt.Errorf("workflow %s: %w", id, err)
}

// contained reports whether rel (slash-separated, under realRoot, the
// folder's resolved path) is a file the listing shows: no folder on its way
// is a symlink (the listing does not follow them), and its real path, with
// a symlinked file resolved, stays inside the folder.
func (y *Folder) contained(realRoot, rel string) bool {
	p := filepath.Join(realRoot, filepath.FromSlash(rel))
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil || dir != filepath.Dir(p) {
		return false
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return false
	}
	r, err := filepath.Rel(realRoot, real)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) && !filepath.IsAbs(r)
}

// display is the path people see: the folder as configured plus rel when
// that is a relative path inside the working directory, else rel alone, so
// answers never carry the server's absolute paths.
func (y *Folder) display(rel string) string {
	if !filepath.IsLocal(y.dir) {
		return rel
	}
	return filepath.Join(y.dir, filepath.FromSlash(rel))
}

func (y *Folder) workflow(f file, ent *entry) Workflow {
	name := ent.name
	if strings.TrimSpace(name) == "" {
		name = strings.TrimSuffix(strings.TrimSuffix(pathBase(f.rel), ".yaml"), ".yml")
	}
	return Workflow{ID: f.id(), Name: name, Description: ent.description, RunBlocker: ent.blocker,
		Graph: ent.graph, Path: y.display(f.rel), ModTime: f.fi.ModTime().UTC()}
}

// entryByStat returns the cached parse of f while its size and
// modification time are unchanged, else parses it again.
func (y *Folder) entryByStat(f file) *entry {
	y.mu.Lock()
	ent := y.cache[f.abs]
	y.mu.Unlock()
	if ent != nil && ent.size == f.fi.Size() && ent.modTime.Equal(f.fi.ModTime()) {
		return ent
	}
	src, err := y.readInside(f.rel)
	if err != nil {
		y.log.Warn("yaml workflows: cannot read", "path", f.abs, "err", err)
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // its path is absolute
		}
		return &entry{problems: []graph.Problem{{Code: "unreadable", Severity: graph.SeverityError,
			Message: fmt.Sprintf("%s: cannot read the file: %v", y.display(f.rel), err)}}}
	}
	return y.entryBySource(f, src)
}

// entryBySource returns the cached parse of src (same content), else
// parses it and caches the result.
func (y *Folder) entryBySource(f file, src []byte) *entry {
	sum := sha256.Sum256(src)
	y.mu.Lock()
	ent := y.cache[f.abs]
	y.mu.Unlock()
	if ent != nil && ent.sum == sum {
		return ent
	}
	ent = &entry{modTime: f.fi.ModTime(), size: f.fi.Size(), sum: sum}
	if int64(len(src)) != ent.size {
		ent.size = -1 // changed while we looked: parse again next time
	}
	// include: blocks are looked up beside the file. (The cache keys on the
	// file's own text: an edited block shows on the next change of the file
	// or restart.)
	wf, diags, _ := yamlflow.Parse(y.display(f.rel), src, yamlflow.WithIncludeDir(filepath.Dir(f.abs)))
	ent.problems = yamlflow.Problems(diags)
	switch {
	case graph.HasErrors(ent.problems):
		ent.blocker = fmt.Sprintf("The file has errors: %s", firstError(ent.problems))
	case wf != nil && y.blocker != nil:
		if err := y.blocker(wf); err != nil {
			ent.blocker = err.Error()
		}
	}
	if wf != nil {
		ent.name, ent.description = wf.Name, wf.Description
		ent.graph = yamlflow.CanvasJSON(wf)
	}
	y.mu.Lock()
	y.cache[f.abs] = ent
	y.mu.Unlock()
	return ent
}

func errorsOnly(ps []graph.Problem) []graph.Problem {
	var out []graph.Problem
	for _, p := range ps {
		if p.IsError() {
			out = append(out, p)
		}
	}
	return out
}

func pathBase(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[i+1:]
	}
	return rel
}

func hiddenPath(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}

// WorkflowID is the id of the workflow file at rel (slash-separated,
// relative to the folder): IDPrefix + rel with '/' written "__" and
// every byte other than letters, digits, '-' and '.' written "_XX" (hex),
// e.g. "yaml.test-workflows__e2e-deterministic.yaml". The mapping is
// one-to-one, so ids are stable and decode back to their file. A path too
// long for an id (128 characters) gets a shortened id ending in a hash of
// the path.
func WorkflowID(rel string) string {
	var b strings.Builder
	b.WriteString(IDPrefix)
	for i := 0; i < len(rel); i++ {
		c := rel[i]
		switch {
		case c == '/':
			b.WriteString("__")
		case c == '-' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "_%02X", c)
		}
	}
	id := b.String()
	if len(id) <= MaxIDLen {
		return id
	}
	// '_' followed by 'h' is no escape: ParseID refuses hashed
	// ids, and resolve finds them by scanning.
	sum := sha256.Sum256([]byte(rel))
	tail := "_h" + hex.EncodeToString(sum[:12])
	head := id[:MaxIDLen-len(tail)]
	return head + tail
}

// MaxIDLen bounds ids; longer paths get hashed ids.
const MaxIDLen = 128

// ParseID decodes an id made by WorkflowID back to the
// relative path. ok is false for ids it never makes (non-canonical
// escapes, hashed ids) and for paths a scan would not list (hidden parts,
// "..", not .yaml/.yml).
func ParseID(id string) (rel string, ok bool) {
	if !strings.HasPrefix(id, IDPrefix) || !idChars(id) {
		return "", false
	}
	s := id[len(IDPrefix):]
	var b bytes.Buffer
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(s) && s[i+1] == '_' {
			b.WriteByte('/')
			i++
			continue
		}
		if i+2 >= len(s) || !isUpperHex(s[i+1]) || !isUpperHex(s[i+2]) {
			return "", false
		}
		v, _ := hex.DecodeString(s[i+1 : i+3])
		b.WriteByte(v[0])
		i += 2
	}
	rel = b.String()
	if rel == "" || WorkflowID(rel) != id || strings.ContainsRune(rel, 0) ||
		!filepath.IsLocal(filepath.FromSlash(rel)) ||
		!yamlflow.IsYAMLFile(rel) || hiddenPath(rel) || hasEmptyPart(rel) {
		return "", false
	}
	return rel, true
}

// idChars reports whether id is short enough and made of the characters
// WorkflowID writes.
func idChars(id string) bool {
	if len(id) > MaxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

func hasEmptyPart(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if part == "" || part == "." || part == ".." {
			return true
		}
	}
	return false
}

func isUpperHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' }
