package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestYAMLSkillsLoadIntoTheSystemPrompt: a node's skills: are read from
// the run's folder (then ~/.claude/skills) into its system prompt, front
// matter turned into a heading; a missing skill is a warning and the node
// still runs.
func TestYAMLSkillsLoadIntoTheSystemPrompt(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	e, rec := newLLMEngine(t, Config{})
	srv := testFake[t.Name()]
	dir := t.TempDir()
	write := func(p, s string) {
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, ".claude", "skills", "house-style", "SKILL.md"),
		"---\nname: house-style\ndescription: \"How we write Go\"\n---\nAlways wrap errors with %w.\n")
	write(filepath.Join(dir, ".agents", "skills", "house-style", "SKILL.md"), "shadowed: .claude/skills comes first\n")
	write(filepath.Join(home, ".claude", "skills", "reviewer", "SKILL.md"), "Read the diff twice.\n")
	run := startYAMLIn(t, e, dir, wf("  - id: a\n    prompt: go\n    skills: [house-style, reviewer, ghost]\n"), "")
	if got := waitRun(t, e, run.ID); got.Status != StatusCompleted {
		t.Fatalf("%s %s", got.Status, got.Error)
	}
	req, _ := srv.LastRequest()
	sys := req.Messages[0].Content
	for _, want := range []string{DefaultSystemPrompt, "# Skill: house-style\nHow we write Go\n", "Always wrap errors with %w.",
		"# Skill: reviewer\n", "Read the diff twice."} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, sys)
		}
	}
	if strings.Contains(sys, "name: house-style") || strings.Contains(sys, "shadowed") {
		t.Errorf("front matter or a shadowed copy in the system prompt:\n%s", sys)
	}
	var warned bool
	for _, ev := range rec.ofType(run.ID, EvWarning) {
		if strings.Contains(ev.Content, `skill "ghost"`) && strings.Contains(ev.Content, "runs without it") {
			warned = true
		}
	}
	if !warned {
		t.Error("no warning for the missing skill")
	}
}

func TestSplitFrontMatter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, desc, body string }{
		{"---\ndescription: d\n---\nbody\n", "d", "body\n"},
		{"---\r\ndescription: 'q'\r\n---\r\nbody", "q", "body"},
		{"no front matter\n", "", "no front matter\n"},
		{"---\ndescription: never closed\nbody\n", "", "---\ndescription: never closed\nbody\n"},
		{"---\n---", "", ""},
	} {
		meta, body := splitFrontMatter(tc.in)
		if meta["description"] != tc.desc || body != tc.body {
			t.Errorf("%q: description %q body %q, want %q %q", tc.in, meta["description"], body, tc.desc, tc.body)
		}
	}
}
