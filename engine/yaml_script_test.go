package engine

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// hostileScriptCases are, per runtime, a consumer script that quotes
// $ARGUMENTS, a node's output and a field of one inside string literals,
// and payloads that break out of those literals: if a value were spliced
// into the code, each would create its own file in the work directory.
var hostileScriptCases = []struct {
	runtime, script, payload string
	needBun                  bool
}{
	{runtime: "bun", needBun: true, payload: `'); require('fs').writeFileSync('pwned-WHO','x'); ('`, script: `
      console.log('args: $ARGUMENTS');
      console.log('raw: $raw.output');
      console.log('field: $obj.output.field');`},
	{runtime: "uv", payload: `'); open('pwned-WHO','w').write('x'); ('`, script: `
      print('args: $ARGUMENTS')
      print('raw: $raw.output')
      print('field: $obj.output.field')`},
}

// The run input, a node's output (a model's reply, say) and a field of a
// node's JSON output are data: whatever they hold, a script node prints
// them back verbatim and none of them runs as code.
func TestYAMLScriptValuesNeverBecomeCode(t *testing.T) {
	uvOnPath(t)
	for _, tc := range hostileScriptCases {
		t.Run(tc.runtime, func(t *testing.T) {
			if tc.needBun {
				needBun(t)
			}
			e, _ := yamlEngine(t)
			dir := t.TempDir()
			payload := func(who string) string { return strings.ReplaceAll(tc.payload, "WHO", who) }
			run := startYAMLIn(t, e, dir, wf(`
  - id: raw
    bash: |
      printf '%s' "${ARGUMENTS//pwned-args/pwned-raw}"
  - id: obj
    bash: |
      printf '{"field": "%s"}' "${ARGUMENTS//pwned-args/pwned-field}"
  - id: consume
    depends_on: [raw, obj]
    runtime: `+tc.runtime+`
    script: |`+tc.script+"\n"), payload("args"))
			got := waitRun(t, e, run.ID)
			ns := nodeStates(t, e, run.ID)
			for _, who := range []string{"args", "raw", "field"} {
				if _, err := os.Stat(filepath.Join(dir, "pwned-"+who)); err == nil {
					t.Errorf("the value of %s ran as code: it created pwned-%s", who, who)
				}
			}
			want := "args: " + payload("args") + "\nraw: " + payload("raw") + "\nfield: " + payload("field")
			if got.Status != StatusCompleted || ns["consume"].Output != want {
				t.Fatalf("run %s (%s); consume %s: output %q, want %q (error %q)",
					got.Status, got.Error, ns["consume"].Status, ns["consume"].Output, want, ns["consume"].Error)
			}
		})
	}
}

// renderScriptRefs writes each reference as code that reads its variable,
// fitted to where it stands.
func TestRenderScriptRefs(t *testing.T) {
	tok := func(i int) string { return "\x00" + string(rune('0'+i)) + "\x00" }
	js := func(i int) string { return "process.env.SWITCHYARD_REF_" + string(rune('1'+i)) }
	py := func(i int) string { return `__import__("os").environ["SWITCHYARD_REF_` + string(rune('1'+i)) + `"]` }
	pyq := func(i int) string { return `__import__('os').environ['SWITCHYARD_REF_` + string(rune('1'+i)) + `']` }
	cases := []struct {
		name, runtime, in, want string
		spilled                 []bool
	}{
		{"bun code", "bun", "console.log(" + tok(0) + ".length)", "console.log((" + js(0) + ").length)", nil},
		{"bun double quotes", "bun", `console.log("got: ` + tok(0) + `!".length)`, `console.log(("got: " + ` + js(0) + ` + "!").length)`, nil},
		{"bun single quotes", "bun", `x = 'a` + tok(0) + `b` + tok(1) + `'`, `x = ('a' + ` + js(0) + ` + 'b' + ` + js(1) + ` + '')`, nil},
		{"bun escaped quote before", "bun", `"a\"` + tok(0) + `"`, `("a\"" + ` + js(0) + ` + "")`, nil},
		{"bun backslash before the reference", "bun", `"a\` + tok(0) + `"`, `("a" + ` + js(0) + ` + "")`, nil},
		{"bun template", "bun", "`a ${b} " + tok(0) + "`", "`a ${b} ${" + js(0) + "}`", nil},
		{"bun template expression", "bun", "`a ${f(" + tok(0) + ")} b`", "`a ${f((" + js(0) + "))} b`", nil},
		{"bun nested template", "bun", "`a ${`b " + tok(0) + "`}`", "`a ${`b ${" + js(0) + "}`}`", nil},
		{"bun line comment", "bun", "// uses " + tok(0) + "\nf(" + tok(0) + ")", "// uses SWITCHYARD_REF_1\nf((" + js(0) + "))", nil},
		{"bun block comment", "bun", "/* '" + tok(0) + " */ f()", "/* 'SWITCHYARD_REF_1 */ f()", nil},
		{"bun division is no regex", "bun", "x = a / 2; y = '" + tok(0) + "' / 1", "x = a / 2; y = ('' + " + js(0) + " + '') / 1", nil},
		{"bun regex with a quote", "bun", "s.replace(/'/g, \"\"); f('" + tok(0) + "')", "s.replace(/'/g, \"\"); f(('' + " + js(0) + " + ''))", nil},
		{"bun spilled", "bun", "f(" + tok(0) + ")", `f((require("node:fs").readFileSync(process.env.SWITCHYARD_REF_1_FILE, "utf8")))`, []bool{true}},
		{"uv code", "uv", "print(" + tok(0) + ")", "print((" + py(0) + "))", nil},
		{"uv double quotes", "uv", `print("got: ` + tok(0) + `")`, `print(f"got: {` + pyq(0) + `}")`, nil},
		{"uv triple quotes", "uv", "x = '''a\n" + tok(0) + "\nb'''", "x = f'''a\n{" + py(0) + "}\nb'''", nil},
		{"uv raw string", "uv", `x = r"\d{2}` + tok(0) + `"`, `x = rf"\d{{2}}{` + pyq(0) + `}"`, nil},
		{"uv adjacent literals", "uv", `x = ("a" "` + tok(0) + `" 'b')`, `x = ("a" f"{` + pyq(0) + `}" 'b')`, nil},
		{"uv braces and escapes", "uv", `x = u"{k}\{ \N{BULLET} ` + tok(0) + `"`, `x = f"{{k}}\{{ \N{BULLET} {` + pyq(0) + `}"`, nil},
		{"uv f-string", "uv", `x = f"{a} ` + tok(0) + ` {{b}}"`, `x = f"{a} {__import__('os').environ['SWITCHYARD_REF_1']} {{b}}"`, nil},
		{"uv f-string field", "uv", `x = f'{len(` + tok(0) + `)}'`, `x = f'{len((__import__("os").environ["SWITCHYARD_REF_1"]))}'`, nil},
		{"uv comment", "uv", "# " + tok(0) + "\nx = 1", "# SWITCHYARD_REF_1\nx = 1", nil},
		{"uv prefix-like word", "uv", "if" + `"` + tok(0) + `": pass`, `if f"{` + pyq(0) + `}": pass`, nil},
		{"uv spilled", "uv", "x = " + tok(0), `x = (open(__import__("os").environ["SWITCHYARD_REF_1_FILE"], encoding="utf-8").read())`, []bool{true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := renderScriptRefs(tc.in, tc.runtime, []string{"v0", "v1"}, tc.spilled)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	for _, tc := range []struct{ runtime, in, want string }{
		{"bun", "x.match(/a" + tok(0) + "/)", "regular expression"},
		{"uv", `x = b"` + tok(0) + `"`, "bytes literal"},
		{"uv", `x = f"{d['` + tok(0) + `']}"`, "f-string"},
	} {
		if _, err := renderScriptRefs(tc.in, tc.runtime, []string{"v"}, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %q: err %v, want one naming the %s", tc.runtime, tc.in, err, tc.want)
		}
	}
}

// References work where an expression goes, inside every kind of string,
// for values of any size (over 100 KiB they travel through a file), and
// {{PREVIOUS_OUTPUT}} too.
func TestYAMLScriptReferencesReadTheValues(t *testing.T) {
	uvOnPath(t)
	big := strings.Repeat("x'\"`${}\\", 20<<10) // 160 KiB, every quote
	cases := []struct {
		runtime, script string
		needBun         bool
	}{
		{runtime: "bun", needBun: true, script: `
      const parsed = JSON.parse($obj.output);
      console.log(parsed.field === $obj.output.field, $ARGUMENTS === process.env.ARGUMENTS);
      console.log("dq " + "[$ARGUMENTS]".length, 'sq [$obj.output.field]', ` + "`tpl [$ARGUMENTS]`" + `);
      // a comment naming $big.output
      console.log(($big.output).length, {{PREVIOUS_OUTPUT}}.length);`},
		{runtime: "uv", script: `
      import json
      parsed = json.loads($obj.output)
      print(parsed["field"] == $obj.output.field, $ARGUMENTS == __import__("os").environ["ARGUMENTS"])
      print("dq " + str(len("[$ARGUMENTS]")), 'sq [$obj.output.field]', f"f [{$ARGUMENTS}] [$ARGUMENTS]", """tq
      [$ARGUMENTS]""")
      # a comment naming $big.output
      print(len($big.output), len({{PREVIOUS_OUTPUT}}))`},
	}
	input := `it's "quoted" ${x} \n`
	wantLines := map[string]string{
		"bun": "true true\ndq " + itoa(len(input)+2) + " sq [" + input + "] tpl [" + input + "]\n" + itoa(len(big)) + " " + itoa(len(big)),
		"uv": "True True\ndq " + itoa(len(input)+2) + " sq [" + input + "] f [" + input + "] [" + input + "] tq\n[" + input + "]\n" +
			itoa(len(big)) + " " + itoa(len(big)),
	}
	for _, tc := range cases {
		t.Run(tc.runtime, func(t *testing.T) {
			if tc.needBun {
				needBun(t)
			}
			e, _ := yamlEngine(t)
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big), 0o644); err != nil {
				t.Fatal(err)
			}
			run := startYAMLIn(t, e, dir, wf(`
  - id: obj
    bash: |
      python3 -c 'import json, os; print(json.dumps({"field": os.environ["ARGUMENTS"]}))'
  - id: big
    depends_on: [obj]
    bash: cat big.txt
  - id: consume
    depends_on: [big]
    runtime: `+tc.runtime+`
    script: |`+tc.script+"\n"), input)
			got := waitRun(t, e, run.ID)
			ns := nodeStates(t, e, run.ID)
			if got.Status != StatusCompleted || ns["consume"].Output != wantLines[tc.runtime] {
				t.Fatalf("run %s (%s); consume %s: output\n%s\nwant\n%s\n(error %q)",
					got.Status, got.Error, ns["consume"].Status, ns["consume"].Output, wantLines[tc.runtime], ns["consume"].Error)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
