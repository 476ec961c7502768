package bashref

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Commands using a value (@V@) in the ways scripts do, and places to put
// them: TestRenderedValuesNeverRun combines them.
var (
	neverFragments = []string{
		`echo @V@`,
		`printf '%s\n' "@V@"`,
		`echo $(( @V@ + 1 ))`,
		`(( @V@ > 1 )) && echo big`,
		`[[ @V@ -lt 3 ]] && echo lt`,
		`[[ "@V@" == x || -n @V@ ]] && echo eq`,
		`x=abcdef; echo "${x:@V@:1}" ${x:1:@V@}`,
		`a=(p q r); echo "${a[@V@]}" ${#a[@V@]}`,
		`b[@V@]=1; b[1+@V@]+=2`,
		"declare -A h\nh[@V@]=1; echo \"${h[@V@]}\"",
		`let "z = @V@" z+=@V@`,
		"declare -i k\nk=@V@; k+=@V@",
		`echo $[ @V@ ]`,
		"cat <<EOF\n@V@ $(( @V@ )) ${x:-@V@} $([[ @V@ -eq 1 ]])\nEOF",
		"cat <<'EOF'\n@V@\nEOF",
		"cat <<-EOF\n\t@V@ ${a[@V@]}\n\tEOF",
		"y=$(cat <<'END'\n@V@\nEND\n); echo \"$y\"",
		`case @V@ in x) echo x;; *) echo other;; esac`,
		`echo ${UNSET:-@V@} ${UNSET:=@V@} "${UNSET/@V@/x}"`,
		`for i in @V@; do echo "$i"; done`,
		`f() { local -i m=@V@; echo $m; }; f`,
		`echo '@V@' $'@V@' "@V@"`,
		`cat <<<@V@`,
		`echo "$(echo "@V@")" $(echo @V@)`,
	}
	neverWrappers = []string{
		"%s",
		`echo "$( %s )"`,
		"if true; then\n%s\nfi",
		"{ %s\n}",
		"( %s )",
		"cat <<EOF\n$( %s\n)\nEOF",
		"g() {\n%s\n}; g",
	}
	// Each spells INJ''ECTED: only a value that runs prints INJECTED.
	neverValues = []string{
		"3", "-1",
		"a[$(echo INJ''ECTED >&2)]",
		"x[`echo INJ''ECTED >&2`]+1",
		"$(echo INJ''ECTED >&2)",
		"`echo INJ''ECTED >&2`",
		"EOF\necho INJ''ECTED >&2",
		"END)\necho INJ''ECTED >&2\n$(cat <<'END'",
		"EOF)\n$(echo INJ''ECTED >&2)\n$(cat <<'EOF'",
		"'; echo INJ''ECTED >&2; '",
		"\"; echo INJ''ECTED >&2; \"",
		"}; echo INJ''ECTED >&2; {",
		")\necho INJ''ECTED >&2\n(",
	}
)

// TestRenderedValuesNeverRun is the renderer's promise, checked by bash:
// in a script made of the commands above, nested in the places above, a
// value either is refused (ErrUnsafe) or is only ever data.
func TestRenderedValuesNeverRun(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	var ran, refused int
	check := func(script, v string) {
		t.Helper()
		r, err := renderRef(script, v)
		if err != nil {
			refused++
			if !errors.Is(err, ErrUnsafe) {
				t.Errorf("%q with %q: %v", script, v, err)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-c", r)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "SWITCHYARD_REF_1=" + v}
		out, _ := cmd.CombinedOutput()
		ran++
		if strings.Contains(string(out), "INJECTED") {
			t.Errorf("the value ran as code:\nscript %q\nvalue %q\nrendered %q\noutput %s", script, v, r, out)
		}
	}
	for _, frag := range neverFragments {
		for _, w := range neverWrappers {
			script := strings.Replace(w, "%s", frag, 1)
			for _, v := range neverValues {
				check(script, v)
			}
		}
	}
	// Several commands, nested in each other.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		script := neverFragments[rng.IntN(len(neverFragments))]
		for range 1 + rng.IntN(3) {
			w := neverWrappers[rng.IntN(len(neverWrappers))]
			script = strings.Replace(w, "%s", script+"\n"+neverFragments[rng.IntN(len(neverFragments))], 1)
		}
		check(script, neverValues[rng.IntN(len(neverValues))])
	}
	t.Logf("%d scripts ran, %d refused", ran, refused)
	if ran < refused {
		t.Errorf("most scripts were refused (%d ran, %d refused): the check says little", ran, refused)
	}
}
