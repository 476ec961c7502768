// Package bashreftest holds the bash quoting contexts both the lexer's tests
// and the engine's substitution tests check values against.
package bashreftest

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Contexts are scripts with one value reference (@V@) in every
// quoting context bash has, and what each must print for value v.
var Contexts = []struct {
	Name   string
	Script string
	Want   func(v string) string
	// Refuses, when set, says v cannot be placed there: rendering must
	// fail with ErrUnsafe instead.
	Refuses func(v string) bool
}{
	{"unquoted", `printf %s @V@`, Same, nil},
	{"double quotes", `printf %s "<@V@>"`, Wrap("<", ">"), nil},
	{"single quotes", `printf %s 'pre@V@ post'`, Wrap("pre", " post"), nil},
	{"ANSI-C quotes", `printf %s $'x\t@V@;y'`, Wrap("x\t", ";y"), nil},
	{"command substitution in double quotes", `printf %s "a$(printf %s @V@)b"`, func(v string) string { return "a" + strings.TrimRight(v, "\n") + "b" }, nil},
	{"parameter default", `printf %s ${UNSET_VAR_XYZ:-@V@}`, Same, nil},
	{"parameter default in double quotes", `printf %s "${UNSET_VAR_XYZ:-@V@}"`, Same, nil},
	{"unquoted here-document", "cat <<EOF\n[@V@]\nEOF", func(v string) string { return "[" + v + "]\n" }, nil},
	{"quoted here-document", "cat <<'EOF'\n[@V@]\nEOF", func(v string) string { return "[" + v + "]\n" }, HeredocBreaks},
	// <<- strips leading tabs from every body line, the value's lines included.
	{"here-document in command substitution", "printf %s \"$(cat <<-\"END\"\n\t@V@\n\tEND\n)\"", func(v string) string {
		lines := strings.Split(v, "\n")
		for i := range lines {
			lines[i] = strings.TrimLeft(lines[i], "\t")
		}
		return strings.TrimRight(strings.Join(lines, "\n"), "\n")
	}, func(v string) bool {
		// A line END ends it early; bash 5.2 drops a 0x01 byte before
		// another 0x01 or 0x7f in a quoted here-document inside $( ).
		for _, line := range strings.Split(v, "\n") {
			if strings.TrimLeft(line, "\t") == "END" {
				return true
			}
		}
		return strings.Contains(v, "\x01")
	}},
	{"here-string", `cat <<<@V@`, func(v string) string { return v + "\n" }, nil},
	{"comment", "# a comment @V@ (not run)\nprintf done", func(string) string { return "done" }, nil},
	{"case pattern", "case x in x) printf %s @V@;; esac", Same, nil},
	{"case in command substitution", "y=$(case a in a) printf %s @V@;; esac); printf %s \"$y\"", func(v string) string { return strings.TrimRight(v, "\n") }, nil},
	{"backslash before", `printf %s \@V@`, Wrap(`\`, ""), nil},
	{"backslash before in double quotes", `printf %s "\@V@"`, Wrap(`\`, ""), nil},
	{"double brackets", `[[ @V@ == "$SWITCHYARD_REF_1" ]] && printf ok`, func(string) string { return "ok" }, nil},
	{"array element", `arr=(@V@ two); printf %s "${arr[0]}"`, Same, nil},
	{"assignment", `x=@V@; printf %s "$x"`, Same, nil},
}

// Same expects v itself.
func Same(v string) string { return v }

// HeredocBreaks: in "quoted here-document", v makes a line EOF.
func HeredocBreaks(v string) bool { return strings.Contains("\n["+v+"]\n", "\nEOF\n") }

// Wrap expects v between pre and post.
func Wrap(pre, post string) func(string) string {
	return func(v string) string { return pre + v + post }
}

// RunBash runs script with bash -c and env added, returning stdout and
// stderr.
func RunBash(t *testing.T, script string, env ...string) (string, string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	return out.String(), errb.String()
}
