package fakeopenai_test

import (
	"os"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// yamlBlocks returns the ```yaml blocks of a markdown file.
func yamlBlocks(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, part := range strings.Split(string(b), "```yaml\n")[1:] {
		end := strings.Index(part, "```")
		if end < 0 {
			t.Fatalf("%s: unterminated yaml block", path)
		}
		blocks = append(blocks, part[:end])
	}
	return blocks
}

// drive plays an agent loop through Script.Reply alone, tools answered by
// result; it returns the turns as "Name" / "text: ..." lines.
func drive(t *testing.T, sc *fakeopenai.Script, system, prompt string, result func(fakeopenai.ToolCall) string) []string {
	t.Helper()
	req := &fakeopenai.Request{API: fakeopenai.APIChat, Model: "m", Messages: []fakeopenai.Message{
		{Role: "system", Content: system}, {Role: "user", Content: prompt},
	}}
	var out []string
	for range 30 {
		rep, ok := sc.Reply(req)
		if !ok {
			t.Fatalf("no rule matched %q", prompt)
		}
		text := strings.Join(rep.Chunks, "")
		if len(rep.Chunks) == 0 {
			text = rep.Text
		}
		if len(rep.ToolCalls) == 0 {
			return append(out, "text: "+text)
		}
		var names []string
		for _, c := range rep.ToolCalls {
			names = append(names, c.Name)
		}
		out = append(out, strings.Join(names, "+"))
		req.Messages = append(req.Messages, fakeopenai.Message{Role: "assistant", Content: text, ToolCalls: rep.ToolCalls})
		for _, c := range rep.ToolCalls {
			req.Messages = append(req.Messages, fakeopenai.Message{Role: "tool", ToolCallID: c.ID, Content: result(c)})
		}
	}
	t.Fatalf("loop did not end: %v", out)
	return nil
}

// The SCRIPT.md example parses and behaves as the text says.
func TestScriptDocExample(t *testing.T) {
	t.Parallel()
	blocks := yamlBlocks(t, "SCRIPT.md")
	if len(blocks) == 0 {
		t.Fatal("SCRIPT.md has no yaml example")
	}
	sc, err := fakeopenai.ParseScript("SCRIPT.md", []byte(blocks[0]))
	if err != nil {
		t.Fatal(err)
	}
	const system, prompt = "You are a coding agent.", "Please FIX the failing test"
	for _, tc := range []struct {
		name  string
		fixes bool // whether the Edit makes the tests pass
		start bool // whether they pass from the start
		want  string
	}{
		{"fixed", true, false, "Read Bash Edit Bash text: All tests pass: 1 passed in 0.01s"},
		{"green", false, true, "Read Bash text: All tests pass: 1 passed in 0.01s"},
		{"never", false, false, "Read Bash Edit Bash Edit Bash Edit Bash text: gave up: 1 failed in 0.01s"},
	} {
		passing := tc.start
		got := drive(t, sc, system, prompt, func(c fakeopenai.ToolCall) string {
			switch c.Name {
			case "Edit":
				passing = passing || tc.fixes
				return "ok"
			case "Bash":
				if passing {
					return "1 passed in 0.01s"
				}
				return "1 failed in 0.01s"
			}
			return "def add(a, b): return a - b"
		})
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("%s: %s\nwant %s", tc.name, s, tc.want)
		}
	}
}
