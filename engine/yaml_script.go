package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/internal/bashref"
	"github.com/switchyard/switchyard/internal/dirlock"
	"github.com/switchyard/switchyard/internal/proc"
	"github.com/switchyard/switchyard/yamlflow"
)

// ---- script nodes ----

// scriptExts lists the file extensions a named script may have, by runtime.
var scriptExts = map[string][]string{
	yamlflow.RuntimeBun: {".ts", ".js", ".mjs", ".mts"},
	yamlflow.RuntimeUV:  {".py"},
}

// yamlScriptExec runs a script node: inline code or a named script, with
// bun or uv.
type yamlScriptExec struct{}

func (yamlScriptExec) Execute(ctx context.Context, x *Exec) (Result, error) {
	return runYAML(ctx, x, func(ctx context.Context, spec *yamlSpec) (Result, error) {
		return withRetry(ctx, x, spec.n, func(ctx context.Context) (Result, error) { return runScriptNode(ctx, x, spec) })
	})
}

func runScriptNode(ctx context.Context, x *Exec, spec *yamlSpec) (Result, error) {
	n := spec.n
	vars := &yamlVars{x: x, spec: spec, mode: modeScript}
	tmp, err := os.MkdirTemp("", "switchyard-script-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(tmp)
	// Values never become script code (see renderScriptRefs): an inline
	// script's references become code that reads SWITCHYARD_REF_<n> from
	// the environment; named scripts are run as they are.
	var refs []string
	var text string
	if !n.ScriptNamed {
		if strings.IndexByte(n.Script, 0) >= 0 {
			return Result{}, permanent(errors.New("script contains a NUL byte"))
		}
		vars.refs = &refs
		text, err = vars.substitute(n.Script, func(v string) string {
			refs = append(refs, v)
			return bashref.Token(len(refs) - 1)
		})
		if err != nil {
			return Result{}, permanent(err)
		}
	}
	env, _, err := nodeEnv(x, vars, refs, tmp, true)
	if err != nil {
		return Result{}, err
	}
	var path string
	if n.ScriptNamed {
		if path, err = findScript(spec.rs, x.WorkDir(), n.Script, n.Runtime); err != nil {
			return Result{}, err
		}
	} else {
		code, err := renderScriptRefs(text, n.Runtime, refs, spilledRefs(env, len(refs)))
		if err != nil {
			return Result{}, permanent(fmt.Errorf("script: %w", err))
		}
		ext := ".ts"
		if n.Runtime == yamlflow.RuntimeUV {
			ext = ".py"
		}
		path = filepath.Join(tmp, "inline"+ext)
		if err := os.WriteFile(path, []byte(code), 0o600); err != nil {
			return Result{}, err
		}
	}
	var ps proc.Spec
	switch n.Runtime {
	case yamlflow.RuntimeBun:
		if len(n.Deps) > 0 {
			mods, err := bunDeps(ctx, x, n.Deps, env)
			if err != nil {
				return Result{}, err
			}
			env = append(env, "NODE_PATH="+mods)
		}
		ps = proc.Spec{Name: "bun", Args: []string{"--no-env-file", "run", path}}
	case yamlflow.RuntimeUV:
		args := []string{"run"}
		for _, d := range n.Deps {
			args = append(args, "--with", d)
		}
		ps = proc.Spec{Name: "uv", Args: append(args, path)}
	default:
		return Result{}, permanent(fmt.Errorf("script runtime %q is not supported (bun or uv)", n.Runtime))
	}
	ps.Dir, ps.Env, ps.Timeout = x.WorkDir(), env, procTimeout(n)
	out, stderr, err := runProc(ctx, x, ps)
	if err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(stderr) != "" {
		x.Emit(EvWarning, "stderr: "+proc.Tail(strings.TrimRight(stderr, "\n"), proc.MaxStderrKept), map[string]any{"stream": "stderr"})
	}
	return Result{Output: out}, nil
}

// scriptDirs lists where named scripts are looked for, in order.
func scriptDirs(rs *yamlRunState, workDir string) []string {
	var dirs []string
	if rs.cfg.ScriptsDir != "" {
		dirs = append(dirs, rs.cfg.ScriptsDir)
	}
	if rs.wf.Dir != "" {
		dirs = append(dirs, filepath.Join(rs.wf.Dir, "scripts"),
			filepath.Join(filepath.Dir(rs.wf.Dir), "scripts")) // .archon/workflows/x.yaml -> .archon/scripts
	}
	if workDir != "" {
		dirs = append(dirs, filepath.Join(workDir, ".switchyard", "scripts"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".switchyard", "scripts"))
	}
	return dirs
}

func findScript(rs *yamlRunState, workDir, name, runtime string) (string, error) {
	if err := yamlflow.ValidCommandName(name); err != nil {
		return "", permanent(fmt.Errorf("script name: %w", err))
	}
	dirs := scriptDirs(rs, workDir)
	exts := scriptExts[runtime]
	for _, d := range dirs {
		for _, ext := range exts {
			p := filepath.Join(d, name+ext)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return p, nil
			}
		}
	}
	return "", permanent(fmt.Errorf("named script %q (%s) not found: looked for %s%s in %s (set %s for another folder)",
		name, runtime, name, strings.Join(exts, "|"), strings.Join(dirs, ", "), EnvScriptsDir))
}

// bunDeps installs a script's dependencies once into a cache folder keyed
// by the dependency list and returns its node_modules (for NODE_PATH).
func bunDeps(ctx context.Context, x *Exec, deps []string, env []string) (string, error) {
	sorted := append([]string(nil), deps...)
	sort.Strings(sorted)
	sum := sha256.Sum256([]byte(strings.Join(sorted, "\n")))
	root := os.Getenv("SWITCHYARD_CACHE_DIR")
	if root == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			c = os.TempDir()
		}
		root = filepath.Join(c, "switchyard")
	}
	dir := filepath.Join(root, "bun-deps", hex.EncodeToString(sum[:8]))
	mods := filepath.Join(dir, "node_modules")
	marker := filepath.Join(dir, ".installed")
	if _, err := os.Stat(marker); err == nil {
		return mods, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("bun deps cache: %w", err)
	}
	// One installer per cache folder, across processes too.
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("bun deps cache: %w", err)
	}
	defer lock.Close()
	if err := dirlock.Flock(ctx, lock); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing the file unlocks too
	if _, err := os.Stat(marker); err == nil {
		return mods, nil
	}
	pkg, _ := json.Marshal(map[string]any{"name": "switchyard-script-deps", "private": true})
	if err := os.WriteFile(filepath.Join(dir, "package.json"), pkg, 0o644); err != nil {
		return "", err
	}
	x.Emit(EvOutput, "installing "+strings.Join(sorted, " ")+" with bun add\n", map[string]any{"stream": "setup"})
	_, _, err = runProc(ctx, x, proc.Spec{Name: "bun", Args: append([]string{"add"}, sorted...), Dir: dir, Env: env,
		Timeout: 5 * time.Minute, Stream: "setup"})
	if err != nil {
		return "", fmt.Errorf("install script deps with bun add: %w", err)
	}
	if err := os.WriteFile(marker, []byte(strings.Join(sorted, "\n")), 0o644); err != nil {
		return "", err
	}
	return mods, nil
}

// ---- values in inline scripts ----
//
// A value never becomes script code. Each reference in an inline script
// ($ARGUMENTS, $id.output, $id.output.field, $WORKFLOW_ID, {{PREVIOUS_OUTPUT}},
// ...) is substituted by a token, its value goes to the environment as
// SWITCHYARD_REF_<n> (as for bash nodes), and renderScriptRefs replaces each
// token with fixed code that reads that variable, written to fit where the
// reference stands (a small lexer of each language's strings and comments):
//
//	bun:  console.log($a.output)        ->  console.log((process.env.SWITCHYARD_REF_1))
//	      console.log('got $a.output')  ->  console.log(('got ' + process.env.SWITCHYARD_REF_1 + ''))
//	      `got $a.output`               ->  `got ${process.env.SWITCHYARD_REF_1}`
//	uv:   print("got $a.output")        ->  print(("got " + __import__("os").environ["SWITCHYARD_REF_1"] + ""))
//	      f"got $a.output"              ->  f"got {__import__('os').environ['SWITCHYARD_REF_1']}"
//
// So a reference always stands for its value as a string, whatever it
// holds (parse JSON with JSON.parse or json.loads), and inside a string it
// still reads as the value. A reference inside a comment becomes the
// variable's name. A value over 100 KiB is read from the file
// SWITCHYARD_REF_<n>_FILE names (see nodeEnv). References inside a JS
// regular expression literal or a Python bytes literal cannot take a string
// and fail the node.

// spilledRefs reports, per value, whether nodeEnv moved it to a file.
func spilledRefs(env []string, n int) []bool {
	out := make([]bool, n)
	for i := range out {
		prefix := bashref.EnvName(i) + "_FILE="
		for _, kv := range env {
			if strings.HasPrefix(kv, prefix) {
				out[i] = true
				break
			}
		}
	}
	return out
}

// scriptToken reads the token at s[i:] (see bashref.Token): its value
// index and length; ok is false when s[i:] is no token.
func scriptToken(s string, i int) (idx, size int, ok bool) {
	if i >= len(s) || s[i] != 0 {
		return 0, 0, false
	}
	j := i + 1
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == i+1 || j >= len(s) || s[j] != 0 {
		return 0, 0, false
	}
	n, err := strconv.Atoi(s[i+1 : j])
	if err != nil {
		return 0, 0, false
	}
	return n, j + 1 - i, true
}

// renderScriptRefs turns the tokens of text into code reading the values
// from the environment (see above). refs are the values (only their count
// matters here), spilled says which were moved to files.
func renderScriptRefs(text, runtime string, refs []string, spilled []bool) (string, error) {
	if !strings.Contains(text, "\x00") {
		return text, nil
	}
	r := &scriptRenderer{s: text, spilled: spilled}
	var err error
	switch runtime {
	case yamlflow.RuntimeBun:
		err = r.js()
	case yamlflow.RuntimeUV:
		err = r.py()
	default:
		return "", fmt.Errorf("script runtime %q is not supported (bun or uv)", runtime)
	}
	if err != nil {
		return "", err
	}
	if r.max >= len(refs) {
		return "", fmt.Errorf("internal error: reference %d of %d", r.max+1, len(refs))
	}
	return string(r.out), nil
}

type scriptRenderer struct {
	s       string
	i       int
	out     []byte
	spilled []bool
	max     int // highest value index seen
}

func (r *scriptRenderer) isSpilled(idx int) bool { return idx < len(r.spilled) && r.spilled[idx] }

func (r *scriptRenderer) note(idx int) {
	if idx > r.max {
		r.max = idx
	}
}

// jsExpr is the JavaScript expression for value idx.
func (r *scriptRenderer) jsExpr(idx int) string {
	name := bashref.EnvName(idx)
	if r.isSpilled(idx) {
		return `require("node:fs").readFileSync(process.env.` + name + `_FILE, "utf8")`
	}
	return "process.env." + name
}

// pyExpr is the Python expression for value idx, with q as its quote
// (the other quote inside an f-string's replacement field).
func (r *scriptRenderer) pyExpr(idx int, q byte) string {
	name := bashref.EnvName(idx)
	lit := func(s string) string { return string(q) + s + string(q) }
	env := "__import__(" + lit("os") + ").environ["
	if r.isSpilled(idx) {
		return "open(" + env + lit(name+"_FILE") + "], encoding=" + lit("utf-8") + ").read()"
	}
	return env + lit(name) + "]"
}

// token consumes a token at the cursor, if there is one.
func (r *scriptRenderer) token() (int, bool) {
	idx, size, ok := scriptToken(r.s, r.i)
	if !ok {
		return 0, false
	}
	r.i += size
	r.note(idx)
	return idx, true
}

func (r *scriptRenderer) copyByte() {
	r.out = append(r.out, r.s[r.i])
	r.i++
}

// wrap puts parentheses around out[start:] (a string literal rewritten as
// a concatenation stays one operand).
func (r *scriptRenderer) wrap(start int) {
	r.out = append(r.out, 0)
	copy(r.out[start+1:], r.out[start:len(r.out)-1])
	r.out[start] = '('
	r.out = append(r.out, ')')
}

// lineComment copies up to the end of the line; tokens become the names.
func (r *scriptRenderer) lineComment() {
	for r.i < len(r.s) && r.s[r.i] != '\n' {
		if idx, ok := r.token(); ok {
			r.out = append(r.out, bashref.EnvName(idx)...)
			continue
		}
		r.copyByte()
	}
}

// ---- JavaScript / TypeScript ----

func (r *scriptRenderer) js() error {
	type frame struct {
		template bool
		depth    int // open { in a code frame
	}
	stack := []frame{{}}
	last := byte(0) // last significant byte of code, for / as division or regex
	word := ""      // last word of code
	for r.i < len(r.s) {
		top := &stack[len(stack)-1]
		if top.template {
			if idx, ok := r.token(); ok {
				r.out = append(r.out, "${"+r.jsExpr(idx)+"}"...)
				continue
			}
			switch c := r.s[r.i]; {
			case c == '\\':
				r.escape()
			case c == '`':
				r.copyByte()
				stack = stack[:len(stack)-1]
				last, word = ')', ""
			case c == '$' && r.i+1 < len(r.s) && r.s[r.i+1] == '{':
				r.out = append(r.out, "${"...)
				r.i += 2
				stack = append(stack, frame{})
				last, word = '{', ""
			default:
				r.copyByte()
			}
			continue
		}
		if idx, ok := r.token(); ok {
			r.out = append(r.out, "("+r.jsExpr(idx)+")"...)
			last, word = ')', ""
			continue
		}
		c := r.s[r.i]
		switch {
		case c == '/' && r.i+1 < len(r.s) && r.s[r.i+1] == '/':
			r.lineComment()
		case c == '/' && r.i+1 < len(r.s) && r.s[r.i+1] == '*':
			r.blockComment()
		case c == '/' && jsRegexAllowed(last, word):
			if err := r.jsRegex(); err != nil {
				return err
			}
			last, word = ')', ""
		case c == '\'' || c == '"':
			_ = r.quoted(string(c), "", false) // JS strings cannot fail
			last, word = ')', ""
		case c == '`':
			r.copyByte()
			stack = append(stack, frame{template: true})
		case c == '{':
			top.depth++
			r.copyByte()
			last, word = c, ""
		case c == '}':
			if top.depth == 0 && len(stack) > 1 { // the end of a template's ${
				stack = stack[:len(stack)-1]
			} else if top.depth > 0 {
				top.depth--
			}
			r.copyByte()
			last, word = c, ""
		case isJSIdent(c):
			start := r.i
			for r.i < len(r.s) && isJSIdent(r.s[r.i]) {
				r.i++
			}
			word = r.s[start:r.i]
			r.out = append(r.out, word...)
			last = 'a'
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			r.copyByte()
		default:
			r.copyByte()
			last, word = c, ""
		}
	}
	return nil
}

func isJSIdent(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// jsRegexAllowed reports whether a / after last (and word) starts a
// regular expression literal rather than a division.
func jsRegexAllowed(last byte, word string) bool {
	switch word {
	case "return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw", "instanceof", "yield", "await":
		return true
	}
	if last == 'a' || last == ')' || last == ']' || last == '}' {
		return false
	}
	return true
}

func (r *scriptRenderer) blockComment() {
	r.out = append(r.out, "/*"...)
	r.i += 2
	for r.i < len(r.s) {
		if strings.HasPrefix(r.s[r.i:], "*/") {
			r.out = append(r.out, "*/"...)
			r.i += 2
			return
		}
		if idx, ok := r.token(); ok {
			r.out = append(r.out, bashref.EnvName(idx)...)
			continue
		}
		r.copyByte()
	}
}

func (r *scriptRenderer) jsRegex() error {
	r.copyByte() // the opening /
	class := false
	for r.i < len(r.s) {
		if _, ok := r.token(); ok {
			return errors.New("a reference inside a regular expression literal cannot be read from the environment: build the pattern with new RegExp(...)")
		}
		c := r.s[r.i]
		switch {
		case c == '\\':
			r.escape()
			continue
		case c == '[':
			class = true
		case c == ']':
			class = false
		case c == '/' && !class:
			r.copyByte()
			for r.i < len(r.s) && isJSIdent(r.s[r.i]) { // flags
				r.copyByte()
			}
			return nil
		case c == '\n':
			return nil // not a regex after all; leave the rest to the language
		}
		r.copyByte()
	}
	return nil
}

// escape copies a backslash and the byte it escapes; before a token the
// backslash is dropped (the reference is read as the value).
func (r *scriptRenderer) escape() {
	if _, _, ok := scriptToken(r.s, r.i+1); ok {
		r.i++
		return
	}
	r.copyByte()
	if r.i < len(r.s) {
		r.copyByte()
	}
}

// quoted copies a string literal opened by q (', ", ”' or """) with the
// given Python prefix; a token inside closes it, concatenates the value
// and reopens it, and the whole literal gets parentheses. py selects
// Python's rules (triple quotes, f-strings, bytes).
func (r *scriptRenderer) quoted(q, prefix string, py bool) error {
	lower := strings.ToLower(prefix)
	fstr, bytesLit, raw := strings.Contains(lower, "f"), strings.Contains(lower, "b"), strings.Contains(lower, "r")
	// A Python string holding a reference becomes an f-string that reads
	// it in a replacement field: it stays a literal, so adjacent literals
	// still concatenate ("a" "b"), which a concatenation in parentheses
	// would not.
	conv := py && !fstr && !bytesLit && r.literalHasToken(q)
	if conv {
		prefix = strings.NewReplacer("u", "", "U", "").Replace(prefix) + "f"
		if n := len(r.out); n > 0 && isPyIdent(r.out[n-1]) {
			r.out = append(r.out, ' ') // if"x" stays if f"x", not iff"x"
		}
	}
	start := len(r.out)
	r.out = append(r.out, prefix+q...)
	r.i += len(q)
	other := byte('"')
	if q[0] == '"' {
		other = '\''
	}
	depth := 0 // open replacement fields of an f-string
	had := false
	for r.i < len(r.s) {
		if idx, ok := r.token(); ok {
			switch {
			case !py:
				r.out = append(r.out, q+" + "+r.jsExpr(idx)+" + "+q...)
				had = true
			case conv:
				r.out = append(r.out, "{"+r.pyExpr(idx, other)+"}"...)
			case fstr && depth > 0:
				r.out = append(r.out, "("+r.pyExpr(idx, other)+")"...)
			case fstr:
				r.out = append(r.out, "{"+r.pyExpr(idx, other)+"}"...)
			case bytesLit:
				return errors.New("a reference inside a bytes literal cannot be read from the environment as bytes: encode the string instead")
			default:
				r.out = append(r.out, q+" + "+r.pyExpr(idx, '"')+" + "+prefix+q...)
				had = true
			}
			continue
		}
		c := r.s[r.i]
		switch {
		case c == '\\' && conv:
			r.convEscape(raw)
			continue
		case c == '\\':
			r.escape()
			continue
		case conv && (c == '{' || c == '}'):
			r.out = append(r.out, c, c) // literal braces of an f-string
			r.i++
			continue
		case strings.HasPrefix(r.s[r.i:], q):
			r.out = append(r.out, q...)
			r.i += len(q)
			if had {
				r.wrap(start)
			}
			return nil
		case c == '\n' && len(q) == 1:
			// Unterminated: leave the error to the language.
			if had {
				r.wrap(start)
			}
			return nil
		case fstr && (strings.HasPrefix(r.s[r.i:], "{{") || strings.HasPrefix(r.s[r.i:], "}}")) && depth == 0:
			r.copyByte()
		case fstr && c == '{':
			depth++
		case fstr && c == '}' && depth > 0:
			depth--
		case fstr && depth > 0 && (c == '\'' || c == '"'):
			// A string inside a replacement field: copied as it is.
			if err := r.nestedString(c); err != nil {
				return err
			}
			continue
		}
		r.copyByte()
	}
	if had {
		r.wrap(start)
	}
	return nil
}

// literalHasToken reports whether the string literal opened by q at the
// cursor holds a reference.
func (r *scriptRenderer) literalHasToken(q string) bool {
	for i := r.i + len(q); i < len(r.s); {
		if _, _, ok := scriptToken(r.s, i); ok {
			return true
		}
		switch c := r.s[i]; {
		case c == '\\' && i+1 < len(r.s) && r.s[i+1] != 0:
			i += 2
		case strings.HasPrefix(r.s[i:], q), c == '\n' && len(q) == 1:
			return false
		default:
			i++
		}
	}
	return false
}

// convEscape copies an escape of a string being turned into an f-string:
// a brace after the backslash is doubled (it is literal there), a named
// character (\N{...}) is kept whole, and a backslash before a reference is
// dropped, as escape does.
func (r *scriptRenderer) convEscape(raw bool) {
	if _, _, ok := scriptToken(r.s, r.i+1); ok {
		r.i++
		return
	}
	if !raw && strings.HasPrefix(r.s[r.i:], `\N{`) {
		if end := strings.IndexByte(r.s[r.i:], '}'); end > 0 && strings.IndexByte(r.s[r.i:r.i+end], 0) < 0 {
			r.out = append(r.out, r.s[r.i:r.i+end+1]...)
			r.i += end + 1
			return
		}
	}
	r.copyByte()
	if r.i < len(r.s) {
		if c := r.s[r.i]; c == '{' || c == '}' {
			r.out = append(r.out, c)
		}
		r.copyByte()
	}
}

// nestedString copies a string literal inside an f-string's replacement
// field. A reference there is refused: the value cannot be read with the
// quotes the enclosing strings leave free (before Python 3.12).
func (r *scriptRenderer) nestedString(q byte) error {
	r.copyByte()
	for r.i < len(r.s) {
		if _, ok := r.token(); ok {
			return errors.New("a reference inside a string inside an f-string's {...} cannot be read from the environment: use it in the {...} itself")
		}
		c := r.s[r.i]
		if c == '\\' {
			r.escape()
			continue
		}
		r.copyByte()
		if c == q || c == '\n' {
			return nil
		}
	}
	return nil
}

// ---- Python ----

func (r *scriptRenderer) py() error {
	for r.i < len(r.s) {
		if idx, ok := r.token(); ok {
			r.out = append(r.out, "("+r.pyExpr(idx, '"')+")"...)
			continue
		}
		c := r.s[r.i]
		switch {
		case c == '#':
			r.lineComment()
		case c == '\'' || c == '"':
			if err := r.quoted(pyQuote(r.s[r.i:]), "", true); err != nil {
				return err
			}
		case isPyIdent(c):
			start := r.i
			for r.i < len(r.s) && isPyIdent(r.s[r.i]) {
				r.i++
			}
			word := r.s[start:r.i]
			if r.i < len(r.s) && (r.s[r.i] == '\'' || r.s[r.i] == '"') && isPyPrefix(word) {
				q := pyQuote(r.s[r.i:])
				if err := r.quoted(q, word, true); err != nil {
					return err
				}
				continue
			}
			r.out = append(r.out, word...)
		default:
			r.copyByte()
		}
	}
	return nil
}

func isPyIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// isPyPrefix reports whether w is a string prefix (r, b, u, f, rb, br, fr,
// rf in any case).
func isPyPrefix(w string) bool {
	switch strings.ToLower(w) {
	case "r", "b", "u", "f", "rb", "br", "fr", "rf":
		return true
	}
	return false
}

// pyQuote is the quote that opens the string literal at s.
func pyQuote(s string) string {
	if strings.HasPrefix(s, `"""`) || strings.HasPrefix(s, "'''") {
		return s[:3]
	}
	return s[:1]
}
