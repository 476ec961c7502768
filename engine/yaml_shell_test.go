package engine

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// bashContexts are scripts with one value reference (@V@) in every
// quoting context bash has, and what each must print for value v.
var bashContexts = []struct {
	name   string
	script string
	want   func(v string) string
}{
	{"unquoted", `printf %s @V@`, same},
	{"double quotes", `printf %s "<@V@>"`, wrap("<", ">")},
	{"single quotes", `printf %s 'pre@V@ post'`, wrap("pre", " post")},
	{"ANSI-C quotes", `printf %s $'x\t@V@;y'`, wrap("x\t", ";y")},
	{"command substitution in double quotes", `printf %s "a$(printf %s @V@)b"`, func(v string) string { return "a" + strings.TrimRight(v, "\n") + "b" }},
	{"parameter default", `printf %s ${UNSET_VAR_XYZ:-@V@}`, same},
	{"parameter default in double quotes", `printf %s "${UNSET_VAR_XYZ:-@V@}"`, same},
	{"unquoted here-document", "cat <<EOF\n[@V@]\nEOF", func(v string) string { return "[" + v + "]\n" }},
	{"quoted here-document", "cat <<'EOF'\n[@V@]\nEOF", func(v string) string { return "[" + v + "]\n" }},
	// <<- strips leading tabs from every body line, the value's lines included.
	{"here-document in command substitution", "printf %s \"$(cat <<-\"END\"\n\t@V@\n\tEND\n)\"", func(v string) string {
		lines := strings.Split(v, "\n")
		for i := range lines {
			lines[i] = strings.TrimLeft(lines[i], "\t")
		}
		return strings.TrimRight(strings.Join(lines, "\n"), "\n")
	}},
	{"here-string", `cat <<<@V@`, func(v string) string { return v + "\n" }},
	{"comment", "# a comment @V@ (not run)\nprintf done", func(string) string { return "done" }},
	{"case pattern", "case x in x) printf %s @V@;; esac", same},
	{"case in command substitution", "y=$(case a in a) printf %s @V@;; esac); printf %s \"$y\"", func(v string) string { return strings.TrimRight(v, "\n") }},
	{"backslash before", `printf %s \@V@`, wrap(`\`, "")},
	{"backslash before in double quotes", `printf %s "\@V@"`, wrap(`\`, "")},
	{"double brackets", `[[ @V@ == "$SWITCHYARD_REF_1" ]] && printf ok`, func(string) string { return "ok" }},
	{"array element", `arr=(@V@ two); printf %s "${arr[0]}"`, same},
	{"assignment", `x=@V@; printf %s "$x"`, same},
}

func same(v string) string { return v }

// heredocBreaks: in "quoted here-document", v makes a line EOF.
func heredocBreaks(v string) bool { return strings.Contains("\n["+v+"]\n", "\nEOF\n") }

func wrap(pre, post string) func(string) string {
	return func(v string) string { return pre + v + post }
}

// renderRef renders a script whose @V@ stands for value v.
func renderRef(script, v string) (string, error) {
	return renderBash(strings.ReplaceAll(script, "@V@", refToken(0)), []string{v})
}

func runBashEnv(t *testing.T, script string, env ...string) (string, string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	return out.String(), errb.String()
}

func TestRenderBashContexts(t *testing.T) {
	values := []string{"plain", "", "it's", `a"b`, "$(touch /tmp/pwned)", "`id`", "x\ny\n", "EOF", "a b  c", "*", "\\", "-n", "$'\\x41'",
		"'; echo injected; '", "\"; echo injected; \"", "#", "}", ")", "<<EOF", "EOF\nEOF", "x]\nEOF\necho injected\n[y"}
	for _, c := range bashContexts {
		for _, v := range values {
			rendered, err := renderRef(c.script, v)
			if c.name == "quoted here-document" && heredocBreaks(v) {
				if !errors.Is(err, ErrBashRef) {
					t.Errorf("%s with %q: want ErrBashRef, got %v", c.name, v, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s with %q: %v", c.name, v, err)
				continue
			}
			got, stderr := runBashEnv(t, rendered, "SWITCHYARD_REF_1="+v)
			if want := c.want(v); got != want {
				t.Errorf("%s with %q:\nscript %q\n   got %q\n  want %q\nstderr %s", c.name, v, rendered, got, want, stderr)
			}
		}
	}
}

func TestRenderBashRefusals(t *testing.T) {
	cases := []struct {
		script, value, errSub string
	}{
		{`echo $(( @V@ + 1 ))`, "a[$(id)]", "must be an integer"},
		{`(( @V@ > 1 )) && echo big`, "1+1", "must be an integer"},
		{"echo `echo @V@`", "x", "backquotes"},
		{"cat <<'EOF'\n@V@\nEOF", "x\nEOF\necho injected", "end the here-document"},
		{"cat <<@V@\nx\n", "x", "delimiter"},
	}
	for _, c := range cases {
		_, err := renderRef(c.script, c.value)
		if !errors.Is(err, ErrBashRef) || !strings.Contains(err.Error(), c.errSub) {
			t.Errorf("%q with %q: err %v, want ErrBashRef containing %q", c.script, c.value, err, c.errSub)
		}
	}
	// Integers are fine in arithmetic.
	r, err := renderRef(`echo $(( @V@ + 1 )); (( @V@ > 1 )) && echo big`, " 41 ")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := runBashEnv(t, r); got != "42\nbig\n" {
		t.Fatalf("arithmetic: %q", got)
	}
}

// outputVars is a VarSource with one node, x, whose output is fixed.
type outputVars struct{ out string }

func (o outputVars) Var(string) (string, bool, error) { return "", false, nil }
func (o outputVars) NodeOutput(id string) (string, bool) {
	if id == "x" {
		return o.out, true
	}
	return "", false
}
func (o outputVars) NodeFieldAllowed(string, string) error { return nil }

// substituteBash runs the bash substitution path (Substitute with value
// tokens, then renderBash) on a script referencing $x.output.
func substituteBash(script, out string) (string, []string, error) {
	var refs []string
	text, _, err := Substitute(script, "", outputVars{out}, func(v string) string {
		refs = append(refs, v)
		return refToken(len(refs) - 1)
	})
	if err != nil {
		return "", nil, err
	}
	r, err := renderBash(text, refs)
	return r, refs, err
}

// FuzzBashQuoting checks that any output substituted into bash prints
// exactly itself, in every quoting context, and never runs as code.
func FuzzBashQuoting(f *testing.F) {
	for _, s := range []string{"", "plain", "it's", "$(id)", "`id`", "a\nb\n", "'\"'\"", "\\", "EOF", "$'\\n'", "%s%d", "-e", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		v = strings.ReplaceAll(v, "\x00", "") // no NUL in the environment or in bash strings
		// Every context in one bash run, separated by NUL bytes.
		var parts []string
		var wants []string
		for _, c := range bashContexts {
			if c.name == "quoted here-document" && heredocBreaks(v) {
				continue
			}
			parts = append(parts, strings.ReplaceAll(c.script, "@V@", "$x.output"))
			wants = append(wants, c.want(v))
		}
		script := strings.Join(parts, "\nprintf '\\0'\n")
		rendered, refs, err := substituteBash(script, v)
		if err != nil {
			t.Fatalf("render: %v", err)
		}
		env := make([]string, len(refs))
		for i, r := range refs {
			env[i] = refEnv(i) + "=" + r
		}
		got, stderr := runBashEnv(t, rendered, env...)
		outs := strings.Split(got, "\x00")
		if len(outs) != len(wants) {
			t.Fatalf("value %q: %d outputs, want %d\nstderr %s", v, len(outs), len(wants), stderr)
		}
		for i := range wants {
			if outs[i] != wants[i] {
				t.Errorf("value %q, script %q:\n got %q\nwant %q\nstderr %s", v, parts[i], outs[i], wants[i], stderr)
			}
		}
	})
}

// FuzzRenderBash checks that on any script the renderer neither panics nor
// puts a value into the script text outside a quoted here-document or an
// integer in arithmetic.
func FuzzRenderBash(f *testing.F) {
	for _, c := range bashContexts {
		f.Add(c.script)
	}
	f.Add("echo $(( @V@ )) `@V@` ${a:-'@V@'} \"$(cat <<E\n@V@\nE\n)\" # @V@")
	f.Add("case $( (a) ) in (x) echo @V@;; esac) <<-'X'\n\t@V@\n\tX")
	f.Fuzz(func(t *testing.T, script string) {
		script = strings.ReplaceAll(script, "\x00", "")
		const marker = "VALUE-MARKER-7f3a"
		rendered, err := renderRef(script, marker)
		if err != nil {
			if !errors.Is(err, ErrBashRef) {
				t.Fatalf("error not ErrBashRef: %v", err)
			}
			return
		}
		if strings.Contains(rendered, marker) && !strings.Contains(script, "<<") {
			t.Fatalf("value inlined into script text:\n%q\n->\n%q", script, rendered)
		}
		if strings.Contains(rendered, "\x00") {
			t.Fatalf("token left in %q", rendered)
		}
	})
}

func TestDropFieldRefs(t *testing.T) {
	drop := func(id string) bool { return id == "s" }
	cases := map[string]string{
		"$s.output.a $t.output.b":         "$s.output $t.output.b",
		"{{PREVIOUS_OUTPUT}}$s.output.x-": "{{PREVIOUS_OUTPUT}}$s.output-",
		"$s.outputs.x $s.output":          "$s.outputs.x $s.output",
		"$$s.output.f.g":                  "$$s.output.g",
		"plain":                           "plain",
	}
	for in, want := range cases {
		if got := dropFieldRefs(in, drop); got != want {
			t.Errorf("dropFieldRefs(%q) = %q, want %q", in, got, want)
		}
	}
}
