package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"
)

// LSMaxEntries is how many entries LS lists.
const LSMaxEntries = 1000

type lsTool struct{}

func (lsTool) Name() string { return "LS" }

func (lsTool) Description() string {
	return "Lists the entries of a folder in the workspace: folders end with '/', symlinks show their target. " +
		"path is absolute, or relative to the workspace folder; ignore is a list of globs of names to leave out. " +
		"Prefer Glob and Grep to find files."
}

func (lsTool) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"path":   map[string]any{"type": "string", "description": "The folder to list: absolute, or relative to the workspace folder"},
			"ignore": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Globs of names to leave out"},
		},
		"required":             []string{"path"},
		"additionalProperties": false,
	}
}

func (t lsTool) Call(ctx context.Context, env *Env, raw json.RawMessage) Result {
	a, err := parseArgs(t, raw)
	if err != nil {
		return errResult("LS", "%v", err)
	}
	dir, ignore := a.str("path"), a.strs("ignore")
	if a.err != nil {
		return errResult("LS", "%v", a.err)
	}
	var skip []*globPattern
	for _, p := range ignore {
		g, err := compileGlob(p)
		if err != nil {
			return errResult("LS", "field \"ignore\": %v", err)
		}
		skip = append(skip, g)
	}
	if err := ctx.Err(); err != nil {
		return errResult("LS", "cancelled: %v", err)
	}
	pl, err := env.locate(dir)
	if err != nil {
		return errResult("LS", "%v", err)
	}
	defer pl.close()
	fi, err := pl.root.Stat(pl.rel)
	if err != nil {
		return errResult("LS", "%v", pathErr(dir, err))
	}
	if !fi.IsDir() {
		return errResult("LS", "%s is a file, not a folder; use Read to read it", dir)
	}
	ents, err := fs.ReadDir(pl.root.FS(), pl.rel)
	if err != nil {
		return errResult("LS", "%v", pathErr(dir, err))
	}
	var out capture
	out.WriteString(strings.TrimSuffix(pl.abs(), "/") + "/")
	n, more := 0, 0
	for _, e := range ents {
		if ignored(skip, e.Name()) {
			continue
		}
		if n == LSMaxEntries {
			more++
			continue
		}
		n++
		name := e.Name()
		switch {
		case e.IsDir():
			name += "/"
		case e.Type()&fs.ModeSymlink != 0:
			rel := e.Name()
			if pl.rel != "." {
				rel = pl.rel + "/" + rel
			}
			if target, err := pl.root.Readlink(rel); err == nil {
				name += " -> " + target
			}
		}
		out.WriteString("\n  " + name)
	}
	trailer := ""
	switch {
	case more > 0:
		trailer = fmt.Sprintf("\n... %d more entries not shown (use Glob to narrow)", more)
	case n == 0:
		trailer = "\n  (empty)"
	}
	return out.result(trailer, false)
}

func ignored(skip []*globPattern, name string) bool {
	for _, g := range skip {
		if g.match(name) {
			return true
		}
	}
	return false
}
