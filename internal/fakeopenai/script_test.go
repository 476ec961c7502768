package fakeopenai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// fixScript is the SCRIPT.md example: read the code and run the tests in
// parallel; while they fail, edit and rerun (at most twice); then answer.
const fixScript = `# The SCRIPT.md example.
rules:
  - name: fix calc
    match: "(?i)fix the failing test"
    system: "coding agent"
    final: "gave up: {{last_result}}"
    turns:
      - text: "Let me look at the code and run the tests."
        tool_calls:
          - name: Read
            arguments: {file_path: calc.sh}
          - name: Bash
            arguments: {command: "sh test.sh"}
      - label: check
        unless_result_contains: FAILED
        text: "All tests pass: {{last_result}}"
      - max_times: 2
        tool_calls:
          - name: Edit
            arguments: {file_path: calc.sh, old_string: "$1 - $2", new_string: "$1 + $2"}
      - max_times: 2
        tool_calls:
          - name: Bash
            arguments: {command: "sh test.sh"}
        goto: check
  - match: "^write notes"
    turns:
      - tool_calls:
          - name: Bash
            arguments: {command: "printf 'say \"hi\"\\n<b>&</b>'"}
      - tool_calls:
          - name: Write
            arguments: {file_path: notes.txt, content: "{{last_result}}"}
      - text: "turn {{turn}} for {{prompt}}: {{results}}"
  - match: "^broken arguments"
    turns:
      - delay: 1ms
        tool_calls:
          - name: Read
            arguments: '{"file_path": "calc.sh"'
          - name: LS
`

const (
	agentSystem = "You are a coding agent."
	fixPrompt   = "Please fix the failing test in calc.sh."
	testSh      = `. ./calc.sh
got=$(add 2 3)
if [ "$got" = 5 ]; then echo "1 passed"; else echo "FAILED: add 2 3 = $got"; fi
`
)

func loadFixScript(t *testing.T) *fakeopenai.Script {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fix.yaml")
	if err := os.WriteFile(path, []byte(fixScript), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := fakeopenai.LoadScript(path)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// project writes a tiny shell "project" whose test fails while add is wrong.
func project(t *testing.T, add string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"calc.sh": "add() { echo $(( " + add + " )); }\n",
		"test.sh": testSh,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// apiMode is one way of asking the model.
type apiMode struct {
	name              string
	responses, stream bool
}

var apiModes = []apiMode{
	{"chat", false, false}, {"chat-stream", false, true},
	{"responses", true, false}, {"responses-stream", true, true},
}

// entry is one transcript item: a model turn or one tool result.
type entry struct {
	text   string
	calls  []fakeopenai.ToolCall
	callID string // set for a tool result
	result string
}

// transcript is an API-neutral conversation, sent in either API's shape.
type transcript struct {
	system, prompt string
	items          []entry
}

var agentTools = []string{"Read", "Edit", "Write", "Bash", "LS"}

// ask sends the transcript once and returns the model's turn.
func (tr *transcript) ask(t *testing.T, client openai.Client, m apiMode) entry {
	t.Helper()
	ctx := context.Background()
	if m.responses {
		return tr.askResponses(ctx, t, client, m.stream)
	}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(tr.system), openai.UserMessage(tr.prompt)}
	for _, it := range tr.items {
		if it.callID != "" {
			msgs = append(msgs, openai.ToolMessage(it.result, it.callID))
			continue
		}
		am := openai.ChatCompletionAssistantMessageParam{}
		if it.text != "" {
			am.Content.OfString = openai.String(it.text)
		}
		for _, c := range it.calls {
			am.ToolCalls = append(am.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: c.ID, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Arguments},
				},
			})
		}
		msgs = append(msgs, openai.ChatCompletionMessageParamUnion{OfAssistant: &am})
	}
	params := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: msgs}
	for _, name := range agentTools {
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: name}))
	}
	var msg openai.ChatCompletionMessage
	var finish string
	var usage openai.CompletionUsage
	if m.stream {
		params.StreamOptions.IncludeUsage = openai.Bool(true)
		stream := client.Chat.Completions.NewStreaming(ctx, params)
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			if !acc.AddChunk(stream.Current()) {
				t.Fatalf("accumulator rejected %s", stream.Current().RawJSON())
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("stream: %v", err)
		}
		msg, finish, usage = acc.Choices[0].Message, acc.Choices[0].FinishReason, acc.Usage
	} else {
		comp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		msg, finish, usage = comp.Choices[0].Message, comp.Choices[0].FinishReason, comp.Usage
	}
	if usage.TotalTokens <= 0 || usage.PromptTokens <= 0 {
		t.Errorf("usage = %+v", usage)
	}
	out := entry{text: msg.Content}
	for _, c := range msg.ToolCalls {
		out.calls = append(out.calls, fakeopenai.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	if want := map[bool]string{true: "tool_calls", false: "stop"}[len(out.calls) > 0]; finish != want {
		t.Errorf("finish_reason %q, want %q", finish, want)
	}
	return out
}

func (tr *transcript) askResponses(ctx context.Context, t *testing.T, client openai.Client, stream bool) entry {
	t.Helper()
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(tr.prompt, responses.EasyInputMessageRoleUser)}
	for _, it := range tr.items {
		if it.callID != "" {
			out := responses.ResponseInputItemParamOfFunctionCallOutput(it.result)
			out.OfFunctionCallOutput.CallID = openai.String(it.callID)
			input = append(input, out)
			continue
		}
		if it.text != "" {
			input = append(input, responses.ResponseInputItemParamOfMessage(it.text, responses.EasyInputMessageRoleAssistant))
		}
		for _, c := range it.calls {
			input = append(input, responses.ResponseInputItemParamOfFunctionCall(c.Arguments, c.ID, c.Name))
		}
	}
	params := responses.ResponseNewParams{
		Model:        "gpt-5-mini",
		Instructions: openai.String(tr.system),
		Input:        responses.ResponseNewParamsInputUnion{OfInputItemList: input},
	}
	for _, name := range agentTools {
		params.Tools = append(params.Tools, responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: name, Parameters: map[string]any{"type": "object"}}})
	}
	var resp *responses.Response
	if stream {
		s := client.Responses.NewStreaming(ctx, params)
		for s.Next() {
			if e, ok := s.Current().AsAny().(responses.ResponseCompletedEvent); ok {
				resp = &e.Response
			}
		}
		if err := s.Err(); err != nil {
			t.Fatalf("stream: %v", err)
		}
		if resp == nil {
			t.Fatal("no response.completed event")
		}
	} else {
		var err error
		if resp, err = client.Responses.New(ctx, params); err != nil {
			t.Fatal(err)
		}
	}
	if resp.Status != "completed" || resp.Usage.TotalTokens <= 0 || resp.Usage.InputTokens <= 0 {
		t.Errorf("status %q usage %+v", resp.Status, resp.Usage)
	}
	out := entry{text: resp.OutputText()}
	for _, item := range resp.Output {
		if item.Type == "function_call" {
			fc := item.AsFunctionCall()
			out.calls = append(out.calls, fakeopenai.ToolCall{ID: fc.CallID, Name: fc.Name, Arguments: fc.Arguments})
		}
	}
	return out
}

// runTool executes one call in dir the way an agent's built-in tools would.
func runTool(dir string, c fakeopenai.ToolCall) string {
	var a struct {
		FilePath  string `json:"file_path"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
		Content   string `json:"content"`
		Command   string `json:"command"`
	}
	if err := json.Unmarshal([]byte(c.Arguments), &a); err != nil {
		return "error: arguments are not valid JSON: " + err.Error()
	}
	path := filepath.Join(dir, a.FilePath)
	switch c.Name {
	case "Read":
		b, err := os.ReadFile(path)
		if err != nil {
			return "error: " + err.Error()
		}
		return string(b)
	case "Write":
		if err := os.WriteFile(path, []byte(a.Content), 0o644); err != nil {
			return "error: " + err.Error()
		}
		return "wrote " + a.FilePath
	case "Edit":
		b, err := os.ReadFile(path)
		if err != nil {
			return "error: " + err.Error()
		}
		if !strings.Contains(string(b), a.OldString) {
			return "error: old_string not found in " + a.FilePath
		}
		if err := os.WriteFile(path, []byte(strings.Replace(string(b), a.OldString, a.NewString, 1)), 0o644); err != nil {
			return "error: " + err.Error()
		}
		return "edited " + a.FilePath
	case "Bash":
		cmd := exec.Command("sh", "-c", a.Command)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			return string(out) + "\n" + err.Error()
		}
		return string(out)
	}
	return "error: unknown tool " + c.Name
}

// runAgent loops until the model answers without tool calls; it returns the
// model's turns and the transcript before each of them.
func runAgent(t *testing.T, client openai.Client, m apiMode, dir, prompt string) ([]entry, []transcript) {
	t.Helper()
	tr := transcript{system: agentSystem, prompt: prompt}
	var turns []entry
	var before []transcript
	for range 20 {
		before = append(before, transcript{system: tr.system, prompt: tr.prompt, items: append([]entry(nil), tr.items...)})
		turn := tr.ask(t, client, m)
		turns = append(turns, turn)
		if len(turn.calls) == 0 {
			return turns, before
		}
		tr.items = append(tr.items, turn)
		for _, c := range turn.calls {
			tr.items = append(tr.items, entry{callID: c.ID, result: runTool(dir, c)})
		}
	}
	t.Fatalf("agent did not finish in 20 turns: %+v", turns)
	return nil, nil
}

// shape renders turns as "Read+Bash | Edit | text" for comparisons.
func shape(turns []entry) string {
	var parts []string
	for _, tn := range turns {
		var names []string
		for _, c := range tn.calls {
			names = append(names, c.Name)
		}
		if len(names) == 0 {
			names = append(names, "text")
		}
		parts = append(parts, strings.Join(names, "+"))
	}
	return strings.Join(parts, " | ")
}

// The scripted loop end to end on all four API shapes: the real client,
// a real shell test, results fed back, the next turn chosen from them.
func TestScriptAgentLoop(t *testing.T) {
	t.Parallel()
	sc := loadFixScript(t)
	for _, m := range apiModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			srv := fakeopenai.StartT(t, fakeopenai.WithScript(sc))
			client := newClient(srv)
			for _, tc := range []struct {
				name, add, shape, final, calc string
			}{
				{"fixes the bug", "$1 - $2", "Read+Bash | Edit | Bash | text", "All tests pass: 1 passed\n", "$1 + $2"},
				// The branch: tests pass at once, so no edit.
				{"already green", "$1 + $2", "Read+Bash | text", "All tests pass: 1 passed\n", "$1 + $2"},
				// The edit never applies: two tries, then the rule's final text.
				{"gives up", "$1 * $2", "Read+Bash | Edit | Bash | Edit | Bash | text", "gave up: FAILED: add 2 3 = 6\n", "$1 * $2"},
			} {
				dir := project(t, tc.add)
				turns, _ := runAgent(t, client, m, dir, fixPrompt)
				if got := shape(turns); got != tc.shape {
					t.Errorf("%s: turns %s, want %s", tc.name, got, tc.shape)
				}
				if got := turns[0].text; got != "Let me look at the code and run the tests." {
					t.Errorf("%s: first turn's text %q", tc.name, got)
				}
				if got := turns[len(turns)-1].text; got != tc.final {
					t.Errorf("%s: final %q, want %q", tc.name, got, tc.final)
				}
				b, _ := os.ReadFile(filepath.Join(dir, "calc.sh"))
				if !strings.Contains(string(b), tc.calc) {
					t.Errorf("%s: calc.sh = %q", tc.name, b)
				}
				ids := map[string]bool{}
				for _, tn := range turns {
					for _, c := range tn.calls {
						if ids[c.ID] || !strings.HasPrefix(c.ID, "call_") {
							t.Errorf("%s: tool-call id %q repeated or malformed", tc.name, c.ID)
						}
						ids[c.ID] = true
					}
				}
			}
			// Arguments keep the file's key order, like a model's.
			turns, _ := runAgent(t, client, m, project(t, "$1 - $2"), fixPrompt)
			if got, want := turns[1].calls[0].Arguments, `{"file_path":"calc.sh","old_string":"$1 - $2","new_string":"$1 + $2"}`; got != want {
				t.Errorf("Edit arguments %s, want %s", got, want)
			}
			// A prompt no rule matches gets the echo.
			other := transcript{system: agentSystem, prompt: "hello"}
			if got := other.ask(t, client, m); got.text != "echo: hello" || len(got.calls) != 0 {
				t.Errorf("unmatched prompt got %+v", got)
			}
		})
	}
}

// The system regexp narrows a rule: the same prompt under another system
// prompt is not scripted.
func TestScriptSystemMatch(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t, fakeopenai.WithScript(loadFixScript(t)))
	client := newClient(srv)
	for _, m := range []apiMode{apiModes[0], apiModes[2]} {
		tr := transcript{system: "You write poems.", prompt: fixPrompt}
		if got := tr.ask(t, client, m); got.text != "echo: "+fixPrompt || len(got.calls) != 0 {
			t.Errorf("%s: other system prompt got %+v", m.name, got)
		}
	}
}

// Resume: a fresh server (no memory of the run) handed the transcript of
// the first k turns answers exactly turn k+1, ids included, across APIs.
func TestScriptResumeFromTranscript(t *testing.T) {
	t.Parallel()
	sc := loadFixScript(t)
	live := fakeopenai.StartT(t, fakeopenai.WithScript(sc))
	turns, before := runAgent(t, newClient(live), apiModes[0], project(t, "$1 * $2"), fixPrompt)
	if len(turns) != 6 {
		t.Fatalf("live run: %s", shape(turns))
	}
	for _, m := range apiModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			for k := range turns {
				fresh := fakeopenai.StartT(t, fakeopenai.WithScript(loadFixScript(t)))
				got := before[k].ask(t, newClient(fresh), m)
				want := turns[k]
				if got.text != want.text || fmt.Sprint(got.calls) != fmt.Sprint(want.calls) {
					t.Errorf("turn %d resumed = %+v, live = %+v", k+1, got, want)
				}
			}
		})
	}
}

// Placeholders fill text and JSON arguments (escaped there); raw string
// arguments are sent verbatim, invalid JSON included; calls in one turn
// arrive together.
func TestScriptPlaceholdersAndRawArguments(t *testing.T) {
	t.Parallel()
	sc := loadFixScript(t)
	for _, m := range apiModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			srv := fakeopenai.StartT(t, fakeopenai.WithScript(sc))
			client := newClient(srv)
			dir := t.TempDir()
			turns, _ := runAgent(t, client, m, dir, "write notes please")
			if shape(turns) != "Bash | Write | text" {
				t.Fatalf("turns %s", shape(turns))
			}
			notes, err := os.ReadFile(filepath.Join(dir, "notes.txt"))
			if want := "say \"hi\"\n<b>&</b>"; err != nil || string(notes) != want {
				t.Errorf("notes.txt = %q (%v), want %q", notes, err, want)
			}
			if want := "turn 3 for write notes please: wrote notes.txt"; turns[2].text != want {
				t.Errorf("final %q, want %q", turns[2].text, want)
			}

			tr := transcript{system: agentSystem, prompt: "broken arguments"}
			got := tr.ask(t, client, m)
			if len(got.calls) != 2 || got.calls[0].Name != "Read" || got.calls[1].Name != "LS" {
				t.Fatalf("calls %+v", got.calls)
			}
			if got.calls[0].Arguments != `{"file_path": "calc.sh"` || got.calls[1].Arguments != "{}" {
				t.Errorf("arguments %q, %q", got.calls[0].Arguments, got.calls[1].Arguments)
			}
			if got.calls[0].ID == got.calls[1].ID {
				t.Errorf("parallel calls share id %q", got.calls[0].ID)
			}
		})
	}
}

// A slow turn holds its reply back; closing the server (a crash) drops the
// waiting request.
func TestScriptDelayHoldsReply(t *testing.T) {
	t.Parallel()
	sc, err := fakeopenai.ParseScript("slow.yaml", []byte(`rules:
  - match: slow
    turns:
      - delay: 1h
        text: never
`))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := fakeopenai.Start(fakeopenai.WithScript(sc))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	client := newClient(srv)
	done := make(chan error, 1)
	go func() {
		_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model:    "gpt-4o-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("slow please")},
		}, option.WithMaxRetries(0))
		done <- err
	}()
	deadline := time.Now().Add(time.Minute)
	for srv.InFlight() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("request never arrived")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("slow turn answered early: %v", err)
	default:
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("request succeeded after the server closed")
		}
	case <-time.After(time.Minute):
		t.Fatal("request still waiting after close")
	}
}

func TestScriptSetScriptAndReply(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t)
	client := newClient(srv)
	tr := transcript{system: agentSystem, prompt: fixPrompt}
	if got := tr.ask(t, client, apiModes[0]); got.text != "echo: "+fixPrompt {
		t.Fatalf("before SetScript: %+v", got)
	}
	srv.SetScript(loadFixScript(t))
	if got := tr.ask(t, client, apiModes[0]); shape([]entry{got}) != "Read+Bash" {
		t.Fatalf("after SetScript: %+v", got)
	}
	// Queued replies still come first.
	srv.Enqueue(fakeopenai.Reply{Text: "queued"})
	if got := tr.ask(t, client, apiModes[0]); got.text != "queued" {
		t.Fatalf("queue: %+v", got)
	}
	srv.SetScript(nil)
	if got := tr.ask(t, client, apiModes[0]); got.text != "echo: "+fixPrompt {
		t.Fatalf("after SetScript(nil): %+v", got)
	}

	var nilScript *fakeopenai.Script
	if _, ok := nilScript.Reply(&fakeopenai.Request{}); ok {
		t.Error("nil script matched")
	}
	// No user message: nothing to match.
	if _, ok := loadFixScript(t).Reply(&fakeopenai.Request{Messages: []fakeopenai.Message{{Role: "system", Content: agentSystem}}}); ok {
		t.Error("request without a user message matched")
	}
}

func TestScriptJSONFile(t *testing.T) {
	t.Parallel()
	src := "{\n\t\"rules\": [\n\t\t{\"match\": \"go\", \"turns\": [\n\t\t\t{\"tool_calls\": [{\"name\": \"Bash\", \"arguments\": {\"command\": \"ls\", \"timeout\": 5000, \"x\": [true, null, 1.5]}}]},\n\t\t\t{\"text\": \"{{last_result}}\"}\n\t\t]}\n\t]\n}\n"
	sc, err := fakeopenai.ParseScript("s.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	srv := fakeopenai.StartT(t, fakeopenai.WithScript(sc))
	tr := transcript{system: "s", prompt: "go"}
	got := tr.ask(t, newClient(srv), apiModes[1])
	if len(got.calls) != 1 || got.calls[0].Arguments != `{"command":"ls","timeout":5000,"x":[true,null,1.5]}` {
		t.Fatalf("calls %+v", got.calls)
	}
	tr.items = append(tr.items, got, entry{callID: got.calls[0].ID, result: "a.txt"})
	if got := tr.ask(t, newClient(srv), apiModes[1]); got.text != "a.txt" {
		t.Errorf("second turn %+v", got)
	}
}

func TestScriptBadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name, body string
		want       []string // besides the file path
	}{
		{"syntax", "rules:\n  - match: x\n    turns: [\n", []string{":3:", "YAML syntax: did not find expected node content"}},
		{"empty", "", []string{"empty script"}},
		{"not a mapping", "- 1\n", []string{":1:", "expected a mapping, got a list"}},
		{"no rules", "rule: []\n", []string{":1:", "rule: unknown field (known: rules)"}},
		{"empty rules", "rules: []\n", []string{":1:", "rules: must list at least one rule"}},
		{"unknown turn field", "rules:\n  - match: x\n    turns:\n      - tool_call: []\n", []string{":4:", "rules[0].turns[0].tool_call: unknown field", "tool_calls"}},
		{"missing name", "rules:\n  - turns:\n      - tool_calls:\n          - arguments: {}\n", []string{":4:", "rules[0].turns[0].tool_calls[0].name: is required"}},
		{"missing turns", "rules:\n  - match: x\n", []string{":2:", "rules[0].turns: is required"}},
		{"empty turn", "rules:\n  - turns:\n      - label: a\n", []string{":3:", "rules[0].turns[0]: a turn needs text or tool_calls"}},
		{"bad regexp", "rules:\n  - match: \"(\"\n    turns: [{text: x}]\n", []string{":2:", "rules[0].match: bad regexp"}},
		{"bad system regexp", "rules:\n  - system: \"[\"\n    turns: [{text: x}]\n", []string{":2:", "rules[0].system: bad regexp"}},
		{"unknown goto", "rules:\n  - turns:\n      - text: x\n        goto: nowhere\n", []string{":4:", "rules[0].turns[0].goto", `no turn has label "nowhere"`}},
		{"duplicate label", "rules:\n  - turns:\n      - {label: a, text: x}\n      - {label: a, text: y}\n", []string{":4:", "rules[0].turns[1].label", "earlier turn"}},
		{"bad delay", "rules:\n  - turns:\n      - text: x\n        delay: soon\n", []string{":4:", "rules[0].turns[0].delay", `"soon"`}},
		{"bad max_times", "rules:\n  - turns:\n      - text: x\n        max_times: 0\n", []string{":4:", "rules[0].turns[0].max_times", ">= 1"}},
		{"bad placeholder", "rules:\n  - turns:\n      - text: \"{{last_reslt}}\"\n", []string{":3:", "rules[0].turns[0].text", "{{last_reslt}}", "last_result"}},
		{"placeholder in arguments", "rules:\n  - turns:\n      - tool_calls:\n          - name: Bash\n            arguments: {command: \"{{cmd}}\"}\n", []string{":5:", "tool_calls[0].arguments", "{{cmd}}"}},
		{"numeric arguments", "rules:\n  - turns:\n      - tool_calls:\n          - name: Bash\n            arguments: 5\n", []string{":5:", "tool_calls[0].arguments", "expected a mapping"}},
		{"list arguments", "rules:\n  - turns:\n      - tool_calls:\n          - name: Bash\n            arguments: [1]\n", []string{":5:", "tool_calls[0].arguments", "got a list"}},
		{"infinite number", "rules:\n  - turns:\n      - tool_calls:\n          - name: Bash\n            arguments: {n: .inf}\n", []string{":5:", "tool_calls[0].arguments", "not a JSON number"}},
		{"duplicate key", "rules:\n  - match: a\n    match: b\n    turns: [{text: x}]\n", []string{":3:", "rules[0].match"}},
		{"text not a string", "rules:\n  - turns:\n      - text: {a: 1}\n", []string{":3:", "rules[0].turns[0].text: expected a string, got a mapping"}},
		{"json wrong type", "{\"rules\": [\n  {\"match\": \"x\",\n   \"turns\": \"oops\"}]}\n", []string{":3:", "rules[0].turns: expected a list"}},
		{"json syntax", "{\"rules\": [\n  {\"match\": \"x\",,\n}\n", []string{":2:", "JSON syntax: invalid character ','"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".yaml")
			if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			sc, err := fakeopenai.LoadScript(path)
			if err == nil {
				t.Fatalf("loaded %+v", sc)
			}
			var se *fakeopenai.ScriptError
			if !errors.As(err, &se) || se.File != path {
				t.Errorf("error %T %v is not a ScriptError for %s", err, err, path)
			}
			for _, w := range append([]string{path}, tc.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
		})
	}
	_, err := fakeopenai.LoadScript(filepath.Join(dir, "missing.yaml"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}
