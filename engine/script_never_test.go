package engine

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Lines using a value (@V@) the ways scripts do, the blocks they stand in,
// and values that print INJECTED if they are ever parsed as code (each
// spells it in two pieces).
var (
	neverPy = []string{
		`print(@V@)`, `print("a@V@b")`, `print('a@V@b')`, `print("""a@V@b""")`, `print('''@V@''')`,
		`print(r"\d@V@")`, `print(R'@V@')`, `print(f"{1} @V@ {{x}}")`, `print(f'{len(@V@)}')`, `print(F"@V@")`,
		`print(rf"@V@{{}}")`, `print(fr'{1}@V@')`, `print(u"@V@")`, `print("\\@V@")`, `# @V@`,
		`x = [@V@, "@V@", '@V@']; print(len(x))`, `print("a" "@V@" 'b')`, `print(str(@V@).upper() if True else '@V@')`,
		`print({"k": @V@}["k"], (lambda v: v)(@V@))`,
	}
	neverPyBlocks = []string{"%s", "def f():\n%s\nf()", "if True:\n%s", "try:\n%s\nexcept Exception as e:\n    print('error', type(e).__name__)"}
	neverJS       = []string{
		`console.log(@V@)`, `console.log("a@V@b")`, `console.log('a@V@b')`, "console.log(`a@V@b`)",
		"console.log(`${1} @V@ ${`@V@`}`)", `// @V@`, `/* @V@ */`, `const x@N@ = [@V@, "@V@"]; console.log(x@N@.length)`,
		`console.log("\\@V@")`, `console.log(@V@ + "@V@")`, `console.log(1 / 2, '@V@' / 1)`, `console.log({a: @V@}.a)`,
		"console.log(String.raw`@V@`)", `console.log([1].map(() => @V@)[0])`,
	}
	neverJSBlocks     = []string{"%s", "(() => {\n%s\n})()", "function f() {\n%s\n}\nf()", "try {\n%s\n} catch (e) { console.log('error', e.name) }"}
	neverScriptValues = []string{
		`'); print('INJ'+'ECTED'); ('`, `"); print("INJ"+"ECTED"); ("`, `"""); print("INJ"+"ECTED"); ("""`,
		`'''); print('INJ'+'ECTED'); ('''`, `{print('INJ'+'ECTED')}`, "\nprint('INJ'+'ECTED')\n", `\`,
		`'); console.log('INJ'+'ECTED'); ('`, `"); console.log("INJ"+"ECTED"); ("`, "`); console.log(`INJ`+`ECTED`); (`",
		"${console.log('INJ'+'ECTED')}", "*/ console.log('INJ'+'ECTED') /*", `\u0027); print('INJ'+'ECTED'); (\u0027`,
		"{{print('INJ'+'ECTED')}}", "\\'); print('INJ'+'ECTED'); ('",
	}
)

// TestScriptValuesNeverRun puts every value above in every line above, in
// every block above, renders the script as a script node does and runs it
// with python3 (uv's language) or node (bun's): a value is refused, or
// data, never code.
func TestScriptValuesNeverRun(t *testing.T) {
	for _, lang := range []struct {
		runtime, interp string
		lines, blocks   []string
		indent          string
		args            func(file string) []string
	}{
		{"uv", "python3", neverPy, neverPyBlocks, "    ", func(f string) []string { return []string{f} }},
		{"bun", "node", neverJS, neverJSBlocks, "", func(f string) []string { return []string{f} }},
	} {
		t.Run(lang.runtime, func(t *testing.T) {
			if _, err := exec.LookPath(lang.interp); err != nil {
				t.Skipf("no %s", lang.interp)
			}
			dir := t.TempDir()
			var ran, refused int
			for _, line := range lang.lines {
				for bi, block := range lang.blocks {
					// One program: the line once per value, each value its own reference.
					var body []string
					env := []string{"PATH=" + os.Getenv("PATH")}
					for i, v := range neverScriptValues {
						l := strings.ReplaceAll(line, "@V@", "\x00"+strconv.Itoa(i)+"\x00")
						l = strings.ReplaceAll(l, "@N@", strconv.Itoa(i))
						if bi > 0 {
							l = lang.indent + l
						}
						body = append(body, l)
						env = append(env, "SWITCHYARD_REF_"+strconv.Itoa(i+1)+"="+v)
					}
					src := strings.Replace(block, "%s", strings.Join(body, "\n"), 1)
					code, err := renderScriptRefs(src, lang.runtime, neverScriptValues, nil)
					if err != nil {
						refused++
						continue
					}
					file := dir + "/s"
					if err := os.WriteFile(file, []byte(code), 0o600); err != nil {
						t.Fatal(err)
					}
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					cmd := exec.CommandContext(ctx, lang.interp, lang.args(file)...)
					cmd.Dir, cmd.Env = dir, env
					out, _ := cmd.CombinedOutput()
					cancel()
					ran++
					if strings.Contains(string(out), "INJECTED") {
						t.Errorf("a value ran as code:\nscript %q\nrendered %q\noutput %s", src, code, out)
					}
					// A program that did not parse says nothing about its values.
					if strings.Contains(string(out), "SyntaxError") {
						t.Errorf("the rendered program does not parse:\nscript %q\nrendered %q\noutput %s", src, code, out)
					}
				}
			}
			t.Logf("%d programs ran, %d refused", ran, refused)
			if ran < refused {
				t.Errorf("most programs were refused (%d ran, %d refused): the check says little", ran, refused)
			}
		})
	}
}
