package graph

import (
	"errors"
	"strings"
	"testing"
)

func TestToolPatternMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, tool, args string
		want                bool
	}{
		{"Write", "Write", `{"file_path":"a.go"}`, true},
		{"Write", "Edit", `{"file_path":"a.go"}`, false},
		{"*", "mcp__x__y", `{}`, true},
		{"mcp__github__create_*", "mcp__github__create_issue", `{}`, true},
		{"mcp__github__create_*", "mcp__github__list_issues", `{}`, false},
		{"mcp__github__*", "mcp__github__list_issues", `{}`, true},
		{"mcp__*__delete_*", "mcp__fs__delete_file", `{}`, true},
		{"mcp__*__delete_*", "mcp__fs__read_file", `{}`, false},
		{"Bash(git push:*)", "Bash", `{"command":"git push origin main"}`, true},
		{"Bash(git push:*)", "Bash", `{"command":"  git   push"}`, true},
		{"Bash(git push:*)", "Bash", `{"command":"make test && git push"}`, true},
		{"Bash(git push:*)", "Bash", `{"command":"echo $(git push)"}`, true},
		{"Bash(git push:*)", "Bash", `{"command":"ls | git push -f"}`, true},
		{"Bash(git push:*)", "Bash", "{\"command\":\"make\\ngit push\"}", true},
		{"Bash(git push:*)", "Bash", `{"command":"git status"}`, false},
		{"Bash(git push:*)", "Read", `{"command":"git push"}`, false},
		{"Bash(npm test)", "Bash", `{"command":"npm test"}`, true},
		{"Bash(npm test)", "Bash", `{"command":"npm test --watch"}`, false},
		{"Bash(rm *)", "Bash", `{"command":"rm -rf /"}`, true},
		{"Edit(src/:*)", "Edit", `{"file_path":"src/a.go"}`, true},
		{"Edit(src/:*)", "Edit", `{"file_path":"src/../etc/passwd"}`, false},
		{"Edit(src/:*)", "Edit", `{"file_path":"./src/a.go"}`, true},
		{"Edit(src/:*)", "Write", `{"file_path":"src/a.go"}`, true}, // Edit patterns cover every file-editing tool
		{"Read(.env)", "Read", `{"file_path":".env"}`, true},
		{"Read(.env)", "Read", `{"file_path":".env.example"}`, false},
		// An argument that cannot be read: ask (the safe side).
		{"Bash(git push:*)", "Bash", `not json`, true},
		{"Bash(git push:*)", "Bash", `{"cmd":"git push"}`, true},
		{"Bash(git push:*)", "Bash", `{"command":42}`, true},
	}
	for _, tc := range tests {
		p, err := ParseToolPattern(tc.pattern)
		if err != nil {
			t.Fatalf("ParseToolPattern(%q): %v", tc.pattern, err)
		}
		if got := p.Match(tc.tool, []byte(tc.args), ""); got != tc.want {
			t.Errorf("%q.Match(%s, %s) = %v, want %v", tc.pattern, tc.tool, tc.args, got, tc.want)
		}
	}
}

func TestParseToolPatternErrors(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "  ", "Bash()", "Bash(:*)", "Bash(git", "Glob(*.go)", "mcp__x__y(z)", "Re ad", "mcp____x", "mcp__x__", "Bash*(x)"} {
		if _, err := ParseToolPattern(s); !errors.Is(err, ErrInvalidToolPattern) {
			t.Errorf("ParseToolPattern(%q) = %v, want ErrInvalidToolPattern", s, err)
		}
	}
	p, err := ParseToolPattern(" Bash( git  push :*) ")
	if err != nil || p.Name != ToolBash || !p.HasArg || !p.Prefix || p.Arg != "git push" {
		t.Errorf("ParseToolPattern = %+v, %v", p, err)
	}
}

// TestBashPatternsSeeThroughTheShell: a Bash pattern catches the command
// it names wherever the command line runs it, and leaves alone commands
// that only mention it.
func TestBashPatternsSeeThroughTheShell(t *testing.T) {
	t.Parallel()
	p, err := ParseToolPattern("Bash(git push:*)")
	if err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]bool{
		"git push":                                  true,
		"cd repo && git push origin main":           true,
		"cd repo&&git push":                         true,
		"true || git push":                          true,
		"(cd sub; git push)":                        true,
		"{ git push; }":                             true,
		"if true; then git push; fi":                true,
		"! git push":                                true,
		"GIT_TRACE=1 git push":                      true,
		"A=1 B=2 git push":                          true,
		"env GIT_TRACE=1 git push":                  true,
		"env -i PATH=/usr/bin git push":             true,
		"command git push":                          true,
		"exec git push":                             true,
		"sudo -u bob git push":                      true,
		"timeout 30s git push":                      true,
		"nohup git push > out.log 2>&1 &":           true,
		"time git push":                             true,
		"xargs -n1 git push < remotes":              true,
		"/usr/bin/git push":                         true,
		"\"git\" push":                              true,
		"'git' 'push' origin":                       true,
		"g\\it push":                                true,
		"git \\\n push":                             true,
		"git push >/dev/null":                       true,
		"2>/dev/null git push":                      true,
		"bash -c 'cd repo && git push'":             true,
		"sh -c \"git push\"":                        true,
		"bash -lc 'git push'":                       true,
		"eval git push":                             true,
		"eval 'git push'":                           true,
		"echo \"$(git push)\"":                      true,
		"echo \"`git push`\"":                       true,
		"for r in a b; do git push $r; done":        true,
		"sudo env X=1 timeout 5 bash -c 'git push'": true,
		"git status":                                false,
		"git pull && echo push":                     false,
		"echo git push":                             false,
		"grep 'git push' notes.txt":                 false,
		"git log --grep=push":                       false,
	} {
		if got := p.Match(ToolBash, []byte(`{"command":`+jsonString(cmd)+`}`), ""); got != want {
			t.Errorf("Bash(git push:*) on %q = %v, want %v", cmd, got, want)
		}
	}
	exact, _ := ParseToolPattern("Bash(npm test)")
	for cmd, want := range map[string]bool{
		"npm test":             true,
		"CI=1 npm test":        true,
		"cd web && npm test":   true,
		"npm test --watch":     false,
		"npm test; npm run ci": true,
	} {
		if got := exact.Match(ToolBash, []byte(`{"command":`+jsonString(cmd)+`}`), ""); got != want {
			t.Errorf("Bash(npm test) on %q = %v, want %v", cmd, got, want)
		}
	}
}

// TestFilePatternsSeeEverySpelling: a file pattern catches a path however
// it is written (relative, ./, absolute in the run's folder) and by every
// tool of its kind.
func TestFilePatternsSeeEverySpelling(t *testing.T) {
	t.Parallel()
	const dir = "/work/run"
	tests := []struct {
		pattern, tool, args string
		want                bool
	}{
		{"Write(docs/*)", "Write", `{"file_path":"docs/a.md"}`, true},
		{"Write(docs/*)", "Write", `{"file_path":"./docs/a.md"}`, true},
		{"Write(docs/*)", "Write", `{"file_path":"/work/run/docs/a.md"}`, true},
		{"Write(docs/*)", "Write", `{"file_path":"/work/run/./docs/../docs/a.md"}`, true},
		{"Write(docs/*)", "Write", `{"file_path":"/work/runner/docs/a.md"}`, false},
		{"Write(docs/*)", "Write", `{"file_path":"/work/run/src/a.md"}`, false},
		{"Write(docs/*)", "Edit", `{"file_path":"/work/run/docs/a.md"}`, true},
		{"Write(./docs/*)", "Write", `{"file_path":"docs/a.md"}`, true},
		{"Write(/work/run/docs/*)", "Write", `{"file_path":"docs/a.md"}`, true},
		{"Edit(src/main.go)", "Write", `{"file_path":"/work/run/src/main.go"}`, true},
		{"Read(secrets/*)", "Read", `{"file_path":"/work/run/secrets/key"}`, true},
		{"Read(secrets/*)", "Grep", `{"pattern":"x","path":"secrets"}`, true},
		{"Read(secrets/*)", "Grep", `{"pattern":"x","path":"/work/run"}`, true},
		{"Read(secrets/*)", "Grep", `{"pattern":"x"}`, true},
		{"Read(secrets/*)", "Grep", `{"pattern":"x","path":"src"}`, false},
		{"Read(secrets/*)", "Glob", `{"pattern":"**"}`, false},
		{"Read(secrets/*)", "Write", `{"file_path":"secrets/key"}`, false},
	}
	for _, tc := range tests {
		p, err := ParseToolPattern(tc.pattern)
		if err != nil {
			t.Fatalf("ParseToolPattern(%q): %v", tc.pattern, err)
		}
		if got := p.Match(tc.tool, []byte(tc.args), dir); got != tc.want {
			t.Errorf("%q.Match(%s, %s) = %v, want %v", tc.pattern, tc.tool, tc.args, got, tc.want)
		}
	}
	pats := []ToolPattern{}
	for _, s := range []string{"mcp__github__*", "Write"} {
		p, _ := ParseToolPattern(s)
		pats = append(pats, p)
	}
	if p, ok := MatchCall(pats, "Write", nil, ""); !ok || p.Raw != "Write" {
		t.Errorf("MatchCall(Write) = %v, %v", p, ok)
	}
	if _, ok := MatchCall(pats, "Read", nil, ""); ok {
		t.Error("MatchCall(Read) = true")
	}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// FuzzBashPattern: matching never panics, and no command hides a gated
// one by what it puts around it: after another command, after variable
// assignments or env, or inside bash -c.
func FuzzBashPattern(f *testing.F) {
	for _, s := range []string{"git push", "npm test", "rm -rf /", "git push origin 'main'", "echo \"$(x)\"", "a\\\nb", "'", "\"", "$(", "2>&1"} {
		f.Add("git push", s, "make")
	}
	f.Fuzz(func(t *testing.T, prefix, cmd, before string) {
		// Patterns as people write them: words, no shell syntax, not
		// starting with a keyword or an assignment (which a command
		// line's spellings leave out).
		for _, c := range prefix {
			if !(c == ' ' || c == '-' || c == '_' || c == '.' || c == '/' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
				return
			}
		}
		if f := strings.Fields(prefix); len(f) > 0 && keywords[f[0]] {
			return
		}
		p, err := ParseToolPattern("Bash(" + prefix + ":*)")
		if err != nil {
			return
		}
		args := func(c string) []byte { return []byte(`{"command":` + jsonString(c) + `}`) }
		// The antecedent is what the shell would run (the simple commands'
		// spellings), not a raw piece of text that happens to match.
		budget := commandBudget
		runs := false
		for _, words := range shellCommands(cmd) {
			if commandSpellings(words, 0, &budget, p.matchArg) {
				runs = true
				break
			}
		}
		if !runs || budget < 0 {
			return
		}
		if strings.ContainsAny(before, "\\'\"`$()<>#\n") || strings.ContainsAny(cmd, "'<>") {
			return // wrapping that changes how cmd itself parses
		}
		for _, wrapped := range []string{
			before + " && " + cmd,
			before + "; " + cmd,
			"X=1 " + cmd,
			"env X=1 " + cmd,
			"bash -c '" + cmd + "'",
		} {
			if !p.Match(ToolBash, args(wrapped), "") {
				t.Errorf("Bash(%s:*) matches %q but not %q", prefix, cmd, wrapped)
			}
		}
	})
}

// TestLongScriptsAreMatchedByWhatTheyRun: a long command line (an agent
// writing a file through a heredoc, a script of many wrapped commands) is
// matched by what it runs, not asked about for its length.
func TestLongScriptsAreMatchedByWhatTheyRun(t *testing.T) {
	t.Parallel()
	p, _ := ParseToolPattern("Bash(git push:*)")
	heredoc := "cat > big.py <<'EOF'\n" + strings.Repeat("print('x')\n", 5000) + "EOF\npython3 big.py"
	wrapped := strings.Repeat("timeout 5 env A=1 nice -n 5 make test\n", 2000)
	for _, cmd := range []string{heredoc, wrapped} {
		if p.Match(ToolBash, []byte(`{"command":`+jsonString(cmd)+`}`), "") {
			t.Errorf("a long command that runs no git push was matched (%d bytes)", len(cmd))
		}
		if !p.Match(ToolBash, []byte(`{"command":`+jsonString(cmd+"\ngit push")+`}`), "") {
			t.Errorf("the git push at the end of a long command was not matched (%d bytes)", len(cmd))
		}
	}
}
