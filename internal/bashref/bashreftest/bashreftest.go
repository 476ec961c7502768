// Package bashreftest holds the bash quoting contexts both the lexer's tests
// and the engine's substitution tests check values against.
package bashreftest

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strconv"
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
		// A line END ends it early, and in $( ) so does one that starts
		// with END and holds a ')'; bash 5.2 drops a 0x01 byte before
		// another 0x01 or 0x7f in a quoted here-document inside $( ).
		for _, line := range strings.Split(v, "\n") {
			if line = strings.TrimLeft(line, "\t"); line == "END" || strings.HasPrefix(line, "END") && strings.Contains(line, ")") {
				return true
			}
		}
		return strings.Contains(v, "\x01")
	}},
	{"quoted here-document in an unquoted one's command substitution", "cat <<EOF\n<$(cat <<'X'\n@V@\nX\n)>\nEOF", func(v string) string {
		return "<" + strings.TrimRight(v, "\n") + ">\n"
	}, func(v string) bool {
		// A line X or EOF ends a here-document early; bash 5.2 drops a
		// 0x01 there; the outer here-document joins a line ending in a
		// backslash to the next.
		for _, line := range strings.Split(v, "\n") {
			if line == "X" || line == "EOF" || strings.HasPrefix(line, "X") && strings.Contains(line, ")") {
				return true
			}
		}
		return strings.Contains(v, "\x01") || strings.Contains(v, "\\\n") || strings.HasSuffix(v, "\\")
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
	// Where bash evaluates text as arithmetic, an array subscript in a
	// value (a[$(cmd)]) would run cmd: only integers may stand there.
	{"arithmetic, the value in double quotes", `printf %s $(( "@V@" + 0 ))`, Int, NotInteger},
	{"old arithmetic", `printf %s $[ @V@ + 0 ]`, Int, NotInteger},
	{"arithmetic in an unquoted here-document", "cat <<EOF\n$(( @V@ + 0 ))\nEOF", func(v string) string { return Int(v) + "\n" }, NotInteger},
	{"numeric comparison", `[[ @V@ -eq @V@ ]] && printf ok`, Const("ok"), NotInteger},
	{"numeric comparison, quoted operand after the operator", `[[ 0 -le "@V@" || 0 -gt "${UNSET_VAR_XYZ:-@V@}" ]] && printf ok`, Const("ok"), NotInteger},
	{"numeric comparison in a here-document's command substitution", "cat <<EOF\n$([[ @V@ -ge 0 || @V@ -lt 0 ]] && printf ok)\nEOF", Const("ok\n"), NotInteger},
	{"substring offset", `s1=abcdefghij; printf %s "${s1:@V@:2}"`, func(v string) string {
		n, x := IntOf(v), int64(10)
		if n < 0 {
			n += x
		}
		if n < 0 || n >= x {
			return ""
		}
		return "abcdefghij"[n:min(n+2, x)]
	}, NotInteger},
	{"array subscript", `a1=(zero one two); printf %s "${a1[@V@]}"`, func(v string) string {
		words, n := []string{"zero", "one", "two"}, IntOf(v)
		if n < 0 {
			n += 3
		}
		if n < 0 || n >= 3 {
			return ""
		}
		return words[n]
	}, NotInteger},
	// A negative subscript of an empty array ends the shell: a subshell.
	{"array subscript in an assignment", `(b1[@V@]=x; printf %s "${!b1[*]}")`, func(v string) string {
		if IntOf(v) < 0 {
			return ""
		}
		return Int(v)
	}, NotInteger},
	{"let", `let "n1 = @V@ + 0"; printf %s "$n1"`, Int, NotInteger},
	{"integer variable", `declare -i n2; n2=@V@; printf %s "$n2"`, Int, NotInteger},
	{"integer variable declared with its value", `f3() { local -i n3=@V@; printf %s "$n3"; }; f3`, Int, NotInteger},
}

// integerRE is what bash evaluates as itself in every arithmetic context:
// a decimal integer (no leading zero: bash reads 010 as octal and 08 as an
// error) short enough not to overflow.
var integerRE = regexp.MustCompile(`^[ \t\n]*[-+]?(0|[1-9][0-9]{0,17})[ \t\n]*$`)

// NotInteger: v cannot stand where bash evaluates arithmetic.
func NotInteger(v string) bool { return !integerRE.MatchString(v) }

// IntOf is the integer v holds (v passed integerRE).
func IntOf(v string) int64 {
	n, err := strconv.ParseInt(strings.TrimLeft(strings.Trim(v, " \t\n"), "+"), 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

// Int expects the integer v holds, as bash prints it.
func Int(v string) string { return strconv.FormatInt(IntOf(v), 10) }

// Const expects s whatever the value.
func Const(s string) func(string) string { return func(string) string { return s } }

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
