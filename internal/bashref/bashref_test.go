package bashref

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/internal/bashref/bashreftest"
)

// renderRef renders a script whose @V@ stands for value v.
func renderRef(script, v string) (string, error) {
	return Render(strings.ReplaceAll(script, "@V@", Token(0)), []string{v})
}

func TestRenderBashContexts(t *testing.T) {
	values := []string{"plain", "", "it's", `a"b`, "$(touch /tmp/pwned)", "`id`", "x\ny\n", "EOF", "a b  c", "*", "\\", "-n", "$'\\x41'",
		"'; echo injected; '", "\"; echo injected; \"", "#", "}", ")", "<<EOF", "EOF\nEOF", "x]\nEOF\necho injected\n[y", "X)", "END)\necho INJ''ECTED >&2\n$(cat <<'END'", "END)\n\"; echo INJ''ECTED >&2; echo \"", "Xx)\n$(echo INJ''ECTED >&2)",
		"\x01", "a\x01\x01b\x01\x7f", "x\n\tEND\necho injected",
		"7", " 12 ", "-3", "+0", "08", "a[$(echo INJ''ECTED >&2)]", "x[$(echo INJ''ECTED >&2)]+1", "1+a[`echo INJ''ECTED >&2`]"}
	for _, c := range bashreftest.Contexts {
		for _, v := range values {
			rendered, err := renderRef(c.Script, v)
			if c.Refuses != nil && c.Refuses(v) {
				if !errors.Is(err, ErrUnsafe) {
					t.Errorf("%s with %q: want ErrUnsafe, got %v", c.Name, v, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s with %q: %v", c.Name, v, err)
				continue
			}
			got, stderr := bashreftest.RunBash(t, rendered, "SWITCHYARD_REF_1="+v)
			// The values spell it INJ''ECTED: only running them prints it.
			if strings.Contains(stderr, "INJECTED") {
				t.Errorf("%s with %q: the value ran as code:\nscript %q\nstderr %s", c.Name, v, rendered, stderr)
			}
			if want := c.Want(v); got != want {
				t.Errorf("%s with %q:\nscript %q\n   got %q\n  want %q\nstderr %s", c.Name, v, rendered, got, want, stderr)
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
		{"x=$(cat <<'EOF'\n@V@\nEOF\n)", "a\x01\x01", "0x01"},
		{"x=$(cat <<'X'\n@V@\nX\n)", "X)\necho injected\n$(cat <<'X'", "holds a ')'"},
		{"x=$(cat <<-'X'\n\t@V@\n\tX\n)", "\tX # )\necho injected", "holds a ')'"},
		{"cat <<EOF\n$(cat <<'X'\n@V@\nX\n)\nEOF", "Xx)", "holds a ')'"},
		{"cat <<EOF\n$(cat <<'X'\n@V@\nX\n)\nEOF", "a\\\nb", "backslash"},
		{"cat <<EOF\n$(( @V@ ))\nEOF", "a[$(id)]", "an arithmetic expression must be an integer"},
		{"echo $[ @V@ ]", "1+1", "an arithmetic expression"},
		{`echo $(( "@V@" ))`, "a[$(id)]", "an arithmetic expression"},
		{`[[ @V@ -gt 1 ]]`, "a[$(id)]", "a numeric comparison"},
		{`[[ -n x && 1 -ne "${y:-@V@}" ]]`, "x", "a numeric comparison"},
		{`echo "${x:@V@}"`, "a[$(id)]", "a substring's offset"},
		{`echo "${a[@V@]}"`, "a[$(id)]", "an array subscript"},
		{`a[@V@]=1`, "x", "an array subscript"},
		{`a[1+"@V@"]+=1`, "x", "an array subscript"},
		{`let x=@V@`, "y", "the arguments of let"},
		{"declare -i n\nn=@V@", "y", "integer variable"},
		{"typeset -ri n=@V@", "y", "integer variable"},
		{`echo $(( 010 + @V@ ))`, "010", "without leading zeros"},
	}
	for _, c := range cases {
		_, err := renderRef(c.script, c.value)
		if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), c.errSub) {
			t.Errorf("%q with %q: err %v, want ErrUnsafe containing %q", c.script, c.value, err, c.errSub)
		}
	}
	// Not arithmetic: a string comparison in [[ ]], an operand of another
	// operator, a default value, an associative array's key, a word that
	// is not an assignment, a command substitution's output, a variable
	// named like an integer one elsewhere.
	for _, script := range []string{
		`[[ @V@ == x || -n @V@ ]] && echo y`,
		`[[ -z @V@ ]] || [[ 1 -eq 1 ]] && echo y`,
		`echo ${x:-@V@} ${x:=@V@} ${x:+@V@} ${x#@V@}`,
		"declare -A h\nh[@V@]=1; echo \"${h[@V@]}\"",
		`echo a[@V@] a[@V@]x`,
		`echo $(( $(grep -c @V@ /dev/null) ))`,
		"f() { local -i n; }\nm=@V@",
		"if true; then echo let @V@; fi",
	} {
		r, err := renderRef(script, "a[$(echo INJ''ECTED >&2)]")
		if err != nil {
			t.Errorf("%q: %v", script, err)
			continue
		}
		if _, stderr := bashreftest.RunBash(t, r, "SWITCHYARD_REF_1=a[$(echo INJ''ECTED >&2)]"); strings.Contains(stderr, "INJECTED") {
			t.Errorf("%q: the value ran as code: %s", script, stderr)
		}
	}
	// Integers are fine in arithmetic.
	r, err := renderRef(`echo $(( @V@ + 1 )); (( @V@ > 1 )) && echo big`, " 41 ")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := bashreftest.RunBash(t, r); got != "42\nbig\n" {
		t.Fatalf("arithmetic: %q", got)
	}
}

// FuzzRenderBash checks that on any script the renderer neither panics nor
// puts a value into the script text outside a quoted here-document or an
// integer in arithmetic.
func FuzzRenderBash(f *testing.F) {
	for _, c := range bashreftest.Contexts {
		f.Add(c.Script)
	}
	f.Add("echo $(( @V@ )) `@V@` ${a:-'@V@'} \"$(cat <<E\n@V@\nE\n)\" # @V@")
	f.Add("case $( (a) ) in (x) echo @V@;; esac) <<-'X'\n\t@V@\n\tX")
	f.Add("[[ @V@ -eq 1 && ${a[@V@]:@V@} ]] && let x=@V@; a[@V@]+=1 $[ @V@ ] ${#b[@V@]}\ndeclare -Ai h n=@V@\ncat <<E\n$(( @V@ )) $(cat <<'F'\n@V@\nF\n)\nE")
	f.Fuzz(func(t *testing.T, script string) {
		script = strings.ReplaceAll(script, "\x00", "")
		const marker = "VALUE-MARKER-7f3a"
		rendered, err := renderRef(script, marker)
		if err != nil {
			if !errors.Is(err, ErrUnsafe) {
				t.Fatalf("error not ErrUnsafe: %v", err)
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

// TestRenderGlobWordIsNotASubscript: a word name[ that does not go on to
// ]= is lexed as any word, so a here-document after it is one.
func TestRenderGlobWordIsNotASubscript(t *testing.T) {
	got, err := renderRef("echo a[ <<'EOF'\n@V@\nEOF", "v")
	if want := "echo a[ <<'EOF'\nv\nEOF"; err != nil || got != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
}
