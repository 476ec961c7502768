package yamldir

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Change is a workflow file of the folder that changed on disk: created,
// its text changed, or deleted.
type Change struct {
	ID   string
	Path string // as Workflow.Path shows it
	// Hash is the new text's Hash; "" when Deleted.
	Hash    string
	Deleted bool
}

// DefaultWatchInterval is how often Watch looks at the folder.
const DefaultWatchInterval = time.Second

// racyWindow: a file modified this recently is read again on every look
// even when its size and modification time did not change, because a
// second write within the file system's timestamp granularity can keep
// both (the "racy git" problem).
const racyWindow = 2 * time.Second

// Watcher notices changes of the folder's files by looking at them now
// and then: a stat of every file per look, and a read (and hash) only of
// files whose size or modification time changed, or that were modified
// within the last two seconds. It is portable (no inotify/kqueue), costs
// a directory walk per look, and sees a change within one interval.
// A Watcher is used by one goroutine.
type Watcher struct {
	y      *Folder
	files  map[string]watched // by absolute path
	primed bool
	now    func() time.Time
}

type watched struct {
	size    int64
	modTime time.Time
	hash    string
	id      string
	path    string
}

// NewWatcher starts watching; its first Poll records the folder as it is.
func (y *Folder) NewWatcher() *Watcher {
	return &Watcher{y: y, files: map[string]watched{}, now: time.Now}
}

// Poll looks at the folder once and returns what changed since the last
// Poll, in path order (deletions last). The first Poll returns nothing:
// it records the folder as it is. A file that cannot be read is skipped
// (it keeps its last known state).
func (w *Watcher) Poll(ctx context.Context) ([]Change, error) {
	files, _, err := w.y.scan(ctx)
	if err != nil {
		return nil, err
	}
	var out []Change
	seen := make(map[string]bool, len(files))
	now := w.now()
	for _, f := range files {
		seen[f.abs] = true
		old, known := w.files[f.abs]
		if known && old.size == f.fi.Size() && old.modTime.Equal(f.fi.ModTime()) && now.Sub(f.fi.ModTime()) > racyWindow {
			continue
		}
		src, err := w.y.readInside(f.rel)
		if err != nil {
			continue
		}
		if len(src) == 0 && now.Sub(f.fi.ModTime()) <= racyWindow {
			// Most likely caught between a writer's truncate and its
			// write (os.WriteFile, `>` in a shell): look again next
			// time; an empty file that stays empty is reported then.
			continue
		}
		cur := watched{size: f.fi.Size(), modTime: f.fi.ModTime(), hash: Hash(src), id: f.id(), path: w.y.display(f.rel)}
		w.files[f.abs] = cur
		if w.primed && (!known || old.hash != cur.hash) {
			out = append(out, Change{ID: cur.id, Path: cur.path, Hash: cur.hash})
		}
	}
	var gone []Change
	for abs, old := range w.files {
		if !seen[abs] {
			delete(w.files, abs)
			if w.primed {
				gone = append(gone, Change{ID: old.id, Path: old.path, Deleted: true})
			}
		}
	}
	slices.SortFunc(gone, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	w.primed = true
	return append(out, gone...), nil
}

// Watch looks at the folder every interval (DefaultWatchInterval when
// <= 0) until ctx ends, calling fn with each look's changes (never with
// none). The first look only records the folder.
func (y *Folder) Watch(ctx context.Context, interval time.Duration, fn func([]Change)) {
	w := y.NewWatcher()
	if _, err := w.Poll(ctx); err != nil {
		y.log.Warn("yaml workflows: watching the folder failed; trying again", "dir", y.dir, "err", err)
	}
	w.Run(ctx, interval, fn)
}

// Run polls every interval (DefaultWatchInterval when <= 0) until ctx
// ends, calling fn with each look's changes (never with none); the first
// look is one interval from now. A look that fails (the folder
// unreadable) is logged and tried again next time.
func (w *Watcher) Run(ctx context.Context, interval time.Duration, fn func([]Change)) {
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changes, err := w.Poll(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			w.y.log.Warn("yaml workflows: watching the folder failed; trying again", "dir", w.y.dir, "err", err)
		case len(changes) > 0:
			fn(changes)
		}
	}
}
