package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Grep limits.
const (
	// GrepMaxFileSize: larger files are skipped (and counted in a note).
	GrepMaxFileSize = 32 << 20
	// GrepMaxLineChars is where a content line is cut.
	GrepMaxLineChars = 500
)

// grepTypes maps Grep's type names (ripgrep's, with common aliases) to
// file name globs.
var grepTypes = map[string][]string{
	"c":      {"*.c", "*.h"},
	"cpp":    {"*.cpp", "*.cc", "*.cxx", "*.c++", "*.hpp", "*.hh", "*.hxx", "*.h", "*.inl"},
	"cs":     {"*.cs"},
	"css":    {"*.css", "*.scss", "*.sass", "*.less"},
	"dart":   {"*.dart"},
	"docker": {"Dockerfile", "Dockerfile.*", "*.dockerfile"},
	"elixir": {"*.ex", "*.exs"},
	"go":     {"*.go"},
	"html":   {"*.html", "*.htm", "*.xhtml"},
	"java":   {"*.java"},
	"js":     {"*.js", "*.jsx", "*.mjs", "*.cjs", "*.vue"},
	"json":   {"*.json", "*.jsonl", "*.json5"},
	"kotlin": {"*.kt", "*.kts"},
	"lua":    {"*.lua"},
	"make":   {"Makefile", "makefile", "GNUmakefile", "*.mk", "*.mak"},
	"md":     {"*.md", "*.markdown", "*.mdx"},
	"php":    {"*.php"},
	"proto":  {"*.proto"},
	"py":     {"*.py", "*.pyi"},
	"rb":     {"*.rb", "*.gemspec", "Gemfile", "Rakefile"},
	"rs":     {"*.rs"},
	"scala":  {"*.scala", "*.sc"},
	"sh":     {"*.sh", "*.bash", "*.zsh", ".bashrc", ".zshrc", ".profile"},
	"sql":    {"*.sql"},
	"svelte": {"*.svelte"},
	"swift":  {"*.swift"},
	"toml":   {"*.toml"},
	"ts":     {"*.ts", "*.tsx", "*.mts", "*.cts"},
	"txt":    {"*.txt"},
	"xml":    {"*.xml", "*.xsd", "*.xsl", "*.svg"},
	"yaml":   {"*.yaml", "*.yml"},
}

// grepAliases are the other names of grepTypes entries.
var grepAliases = map[string]string{
	"typescript": "ts", "javascript": "js", "python": "py", "rust": "rs", "ruby": "rb",
	"markdown": "md", "yml": "yaml", "golang": "go", "csharp": "cs", "bash": "sh", "kt": "kotlin",
}

func grepTypeGlobs(name string) ([]string, bool) {
	if a, ok := grepAliases[name]; ok {
		name = a
	}
	g, ok := grepTypes[name]
	return g, ok
}

func grepTypeNames() string {
	names := make([]string, 0, len(grepTypes)+len(grepAliases))
	for k := range grepTypes {
		names = append(names, k)
	}
	for k := range grepAliases {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

type grepTool struct{}

func (grepTool) Name() string { return "Grep" }

func (grepTool) Description() string {
	return "Searches file contents in the workspace with a regular expression (Go RE2 syntax, like ripgrep's: " +
		"escape literal braces, e.g. `interface\\{\\}`). path is a file or folder (default: the workspace folder); " +
		"glob (e.g. \"*.js\", \"*.{ts,tsx}\") or type (e.g. go, js, py, rs) filters the files. " +
		"output_mode: \"files_with_matches\" (default) lists matching files, newest first; \"content\" shows matching lines " +
		"(with -n line numbers, default on, and -A/-B/-C context lines); \"count\" shows matches per file. " +
		"head_limit keeps the first N entries, offset skips N first. Patterns match within one line unless multiline is true. " +
		"Binary files and version-control folders are skipped."
}

func (grepTool) Parameters() map[string]any {
	num := func(d string) map[string]any { return map[string]any{"type": "integer", "description": d} }
	flag := func(d string) map[string]any { return map[string]any{"type": "boolean", "description": d} }
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"pattern":     map[string]any{"type": "string", "description": "The regular expression to search for in file contents"},
			"path":        map[string]any{"type": "string", "description": "File or folder to search in (default: the workspace folder)"},
			"glob":        map[string]any{"type": "string", "description": "Glob to filter files (e.g. \"*.js\", \"*.{ts,tsx}\"); several separated by spaces or commas; a leading ! excludes"},
			"type":        map[string]any{"type": "string", "description": "File type to search (e.g. go, js, ts, py, rs, java, md, yaml, json)"},
			"output_mode": map[string]any{"type": "string", "enum": []string{"content", "files_with_matches", "count"}, "description": "\"content\" shows matching lines, \"files_with_matches\" file paths (default), \"count\" match counts"},
			"-i":          flag("Case-insensitive search"),
			"-n":          flag("Show line numbers (content mode; default true)"),
			"-A":          num("Lines to show after each match (content mode)"),
			"-B":          num("Lines to show before each match (content mode)"),
			"-C":          num("Lines to show before and after each match (content mode)"),
			"head_limit":  num("Show only the first N lines or entries (default: all)"),
			"offset":      num("Skip the first N lines or entries (default 0)"),
			"multiline":   flag("Let patterns span lines, with . matching newlines (default false)"),
		},
		"required":             []string{"pattern"},
		"additionalProperties": false,
	}
}

// grepOpts are a Grep call's settings.
type grepOpts struct {
	re            *regexp.Regexp
	mode          string
	numbers       bool
	before, after int
	multiline     bool
	offset, limit int
	include       []*globPattern // any must match (none: all files)
	exclude       []*globPattern
	types         []*globPattern // any must match the base name
}

// grepOut collects a call's output entries (lines or files) with offset
// and head_limit applied as they come.
type grepOut struct {
	capture
	offset, limit int
	seen, kept    int
	more          bool // head_limit left entries out
}

// add emits one entry; it reports false once head_limit is reached (the
// walk may stop).
func (o *grepOut) add(s string) bool {
	o.seen++
	if o.seen <= o.offset {
		return true
	}
	if o.limit > 0 && o.kept == o.limit {
		o.more = true
		return false
	}
	if o.total > 0 {
		o.WriteString("\n")
	}
	o.WriteString(s)
	o.kept++
	return true
}

func (t grepTool) Call(ctx context.Context, env *Env, raw json.RawMessage) Result {
	a, err := parseArgs(t, raw)
	if err != nil {
		return errResult("Grep", "%v", err)
	}
	o, dir, err := grepOptions(a)
	if err != nil {
		return errResult("Grep", "%v", err)
	}
	if dir == "" {
		dir = "."
	}
	pl, err := env.locate(dir)
	if err != nil {
		return errResult("Grep", "%v", err)
	}
	defer pl.close()
	fi, err := pl.root.Stat(pl.rel)
	if err != nil {
		return errResult("Grep", "%v", pathErr(dir, err))
	}
	g := &grepper{o: o, pl: pl, ctx: ctx, out: grepOut{offset: o.offset, limit: o.limit}}
	if !fi.IsDir() {
		// One file named outright: no glob or type filter, as ripgrep.
		g.file(pl.rel, fi.Size())
	} else {
		err = walk(ctx, pl, func(rel, sub string, d fs.DirEntry) error {
			if d.IsDir() || !d.Type().IsRegular() || !o.wants(sub) {
				return nil
			}
			var size int64
			if info, err := d.Info(); err == nil {
				size = info.Size()
			}
			if !g.file(rel, size) {
				return errWalkCut
			}
			return nil
		})
		if err != nil {
			return walkErr("Grep", dir, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return errResult("Grep", "cancelled: %v", err)
	}
	return g.result()
}

func grepOptions(a *args) (*grepOpts, string, error) {
	o := &grepOpts{
		mode:      a.str("output_mode"),
		numbers:   true,
		multiline: a.bool("multiline"),
		offset:    a.int("offset"),
		limit:     a.int("head_limit"),
	}
	pattern, dir, globs, typ := a.str("pattern"), a.str("path"), a.str("glob"), a.str("type")
	ci := a.bool("-i")
	if a.has("-n") {
		o.numbers = a.bool("-n")
	}
	c := a.int("-C")
	o.before, o.after = c, c
	if a.has("-B") {
		o.before = a.int("-B")
	}
	if a.has("-A") {
		o.after = a.int("-A")
	}
	if a.err != nil {
		return nil, "", a.err
	}
	switch o.mode {
	case "":
		o.mode = "files_with_matches"
	case "content", "files_with_matches", "count":
	default:
		return nil, "", fmt.Errorf("field \"output_mode\": want content, files_with_matches or count, got %q", o.mode)
	}
	for name, v := range map[string]int{"-A": o.after, "-B": o.before, "head_limit": o.limit, "offset": o.offset} {
		if v < 0 {
			return nil, "", fmt.Errorf("field %q must not be negative, got %d", name, v)
		}
	}
	if pattern == "" {
		return nil, "", fmt.Errorf("field \"pattern\" is empty")
	}
	flags := ""
	if ci {
		flags += "i"
	}
	if o.multiline {
		flags += "ms"
	}
	expr := pattern
	if flags != "" {
		expr = "(?" + flags + ")" + pattern
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, "", fmt.Errorf("invalid pattern: %w", err)
	}
	o.re = re
	for _, gp := range splitGlobs(globs) {
		neg := strings.HasPrefix(gp, "!")
		cg, err := compileGlob(strings.TrimPrefix(gp, "!"))
		if err != nil {
			return nil, "", fmt.Errorf("field \"glob\": %w", err)
		}
		if neg {
			o.exclude = append(o.exclude, cg)
		} else {
			o.include = append(o.include, cg)
		}
	}
	if typ != "" {
		gs, ok := grepTypeGlobs(strings.ToLower(typ))
		if !ok {
			return nil, "", fmt.Errorf("field \"type\": unknown file type %q (known: %s)", typ, grepTypeNames())
		}
		for _, s := range gs {
			cg, _ := compileGlob(s)
			o.types = append(o.types, cg)
		}
	}
	return o, dir, nil
}

// splitGlobs splits the glob field at spaces, and at commas outside braces
// ("*.js,*.ts" is two globs; "*.{js,ts}" is one).
func splitGlobs(s string) []string {
	var out []string
	for f := range strings.FieldsSeq(s) {
		for _, p := range splitTop(f) {
			if p != "" && p != "!" {
				out = append(out, p)
			}
		}
	}
	return out
}

// wants reports whether the file at sub (its path from the searched
// folder) passes the glob and type filters. A glob without '/' matches the
// base name at any depth, as in ripgrep.
func (o *grepOpts) wants(sub string) bool {
	base := path.Base(sub)
	m := func(g *globPattern) bool { return g.match(sub) || g.match(base) }
	if len(o.include) > 0 && !slices.ContainsFunc(o.include, m) {
		return false
	}
	if slices.ContainsFunc(o.exclude, m) {
		return false
	}
	if len(o.types) > 0 && !slices.ContainsFunc(o.types, func(g *globPattern) bool { return g.match(base) }) {
		return false
	}
	return true
}

// grepper runs one Grep call over files.
type grepper struct {
	o       *grepOpts
	pl      *place
	ctx     context.Context
	out     grepOut
	files   []foundFile // files_with_matches
	total   int         // matches (count mode)
	nfiles  int         // files with matches
	large   int         // files skipped as too large
	printed bool        // a content group was printed (for "--")
}

// file searches one file (rel: its path from the root); false stops the
// walk (head_limit reached in a mode that needs no more).
func (g *grepper) file(rel string, size int64) bool {
	if g.ctx.Err() != nil {
		return false
	}
	if size > GrepMaxFileSize {
		g.large++
		return true
	}
	f, err := openRead(g.pl.root, rel)
	if err != nil {
		return true
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		_ = f.Close()
		return true
	}
	data, err := io.ReadAll(io.LimitReader(f, GrepMaxFileSize+1))
	_ = f.Close()
	if err != nil {
		return true
	}
	if len(data) > GrepMaxFileSize {
		g.large++
		return true
	}
	if isBinary(data[:min(len(data), sniffSize)]) {
		return true
	}
	if g.o.mode == "files_with_matches" {
		if g.matches(data) {
			ff := foundFile{abs: g.pl.join(rel)}
			if fi, err := g.pl.root.Stat(rel); err == nil {
				ff.mtime = fi.ModTime()
			}
			g.files = append(g.files, ff)
		}
		return true
	}
	lines := splitLines(data)
	hit, n := g.matchLines(data, lines)
	if n == 0 {
		return true
	}
	g.nfiles++
	g.total += n
	name := g.display(rel)
	if g.o.mode == "count" {
		g.out.add(name + ":" + strconv.Itoa(n))
		return true // the totals count every file
	}
	return g.content(name, lines, hit)
}

// matches reports whether data has any match.
func (g *grepper) matches(data []byte) bool {
	if g.o.multiline {
		return g.o.re.Match(data)
	}
	for i, line := range eachLine(data) {
		if i%4096 == 0 && g.ctx.Err() != nil {
			return false
		}
		if g.o.re.Match(line) {
			return true
		}
	}
	return false
}

// matchLines marks the lines holding matches and counts them: matching
// lines, or matches in multiline mode (a match marks every line it spans).
func (g *grepper) matchLines(data []byte, lines [][]byte) ([]bool, int) {
	hit := make([]bool, len(lines))
	n := 0
	if !g.o.multiline {
		for i, l := range lines {
			if i%4096 == 0 && g.ctx.Err() != nil {
				return hit, 0
			}
			if g.o.re.Match(l) {
				hit[i] = true
				n++
			}
		}
		return hit, n
	}
	starts := []int{0} // byte offset of each line
	for i, b := range data {
		if b == '\n' && i+1 < len(data) {
			starts = append(starts, i+1)
		}
	}
	lineOf := func(b int) int { return max(sort.SearchInts(starts, b+1)-1, 0) }
	for _, m := range g.o.re.FindAllIndex(data, -1) {
		n++
		end := max(m[1]-1, m[0])
		for i := lineOf(m[0]); i <= lineOf(end) && i < len(hit); i++ {
			hit[i] = true
		}
	}
	return hit, n
}

// content emits one file's matching lines with their context lines,
// runs of shown lines separated by "--" when context was asked for; false
// once head_limit is reached.
func (g *grepper) content(name string, lines [][]byte, hit []bool) bool {
	show := make([]bool, len(lines))
	for i, h := range hit {
		if h {
			for j := max(i-g.o.before, 0); j <= min(i+g.o.after, len(lines)-1); j++ {
				show[j] = true
			}
		}
	}
	withContext := g.o.before > 0 || g.o.after > 0
	for j := range lines {
		if !show[j] {
			continue
		}
		if withContext && g.printed && (j == 0 || !show[j-1]) {
			if !g.out.add("--") {
				return false
			}
		}
		sep := "-"
		if hit[j] {
			sep = ":"
		}
		line := name + sep
		if g.o.numbers {
			line += strconv.Itoa(j+1) + sep
		}
		if !g.out.add(line + cutLine(lines[j])) {
			return false
		}
		g.printed = true
	}
	return true
}

// cutLine is a content line, cut at GrepMaxLineChars characters.
func cutLine(b []byte) string {
	s := string(b)
	n := 0
	for i := range s {
		if n == GrepMaxLineChars {
			return s[:i] + " [... line cut]"
		}
		n++
	}
	return s
}

// display names a file in content and count output: relative to the
// workspace folder when it is beneath it (as Claude Code), else absolute.
func (g *grepper) display(rel string) string {
	if g.pl.first {
		return rel
	}
	return g.pl.join(rel)
}

func (g *grepper) result() Result {
	var trailer []string
	if g.large > 0 {
		trailer = append(trailer, fmt.Sprintf("(%d files over %d MiB were not searched)", g.large, GrepMaxFileSize>>20))
	}
	switch g.o.mode {
	case "files_with_matches":
		if len(g.files) == 0 {
			return Result{Output: strings.Join(append([]string{"No files found"}, trailer...), "\n")}
		}
		sortNewest(g.files)
		g.out.WriteString(fmt.Sprintf("Found %d file%s", len(g.files), plural(len(g.files))))
		for _, f := range g.files {
			if !g.out.add(f.abs) {
				break
			}
		}
	case "count":
		if g.nfiles == 0 {
			return Result{Output: strings.Join(append([]string{"No matches found"}, trailer...), "\n")}
		}
		trailer = append([]string{fmt.Sprintf("Found %d total occurrence%s across %d file%s.", g.total, plural(g.total), g.nfiles, plural(g.nfiles))}, trailer...)
	default:
		if g.nfiles == 0 {
			return Result{Output: strings.Join(append([]string{"No matches found"}, trailer...), "\n")}
		}
	}
	if g.out.more {
		trailer = append([]string{fmt.Sprintf("... (head_limit %d reached; more results not shown: use offset to page)", g.o.limit)}, trailer...)
	}
	if g.out.kept == 0 && g.o.offset > 0 {
		trailer = append([]string{fmt.Sprintf("(no results past offset %d)", g.o.offset)}, trailer...)
	}
	t := ""
	if len(trailer) > 0 {
		t = strings.Join(trailer, "\n")
		if g.out.total > 0 {
			t = "\n\n" + t
		}
	}
	return g.out.result(t, false)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// eachLine yields data's lines (without "\n" or "\r\n") with their index.
func eachLine(data []byte) func(yield func(int, []byte) bool) {
	return func(yield func(int, []byte) bool) {
		for i := 0; len(data) > 0; i++ {
			k := bytes.IndexByte(data, '\n')
			var line []byte
			if k < 0 {
				line, data = data, nil
			} else {
				line, data = data[:k], data[k+1:]
			}
			if !yield(i, bytes.TrimSuffix(line, []byte("\r"))) {
				return
			}
		}
	}
}

func splitLines(data []byte) [][]byte {
	var lines [][]byte
	for _, l := range eachLine(data) {
		lines = append(lines, l)
	}
	return lines
}
