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
		"'; echo injected; '", "\"; echo injected; \"", "#", "}", ")", "<<EOF", "EOF\nEOF", "x]\nEOF\necho injected\n[y",
		"\x01", "a\x01\x01b\x01\x7f", "x\n\tEND\necho injected"}
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
	}
	for _, c := range cases {
		_, err := renderRef(c.script, c.value)
		if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), c.errSub) {
			t.Errorf("%q with %q: err %v, want ErrUnsafe containing %q", c.script, c.value, err, c.errSub)
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
