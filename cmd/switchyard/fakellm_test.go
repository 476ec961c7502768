package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/internal/loadgen"
)

const delegateGraphJSON = `{"nodes":[
  {"id":"s","type":"start","position":{"x":0,"y":0},"data":{"initialInput":"delegate: write a haiku"}},
  {"id":"lead","type":"agent","position":{"x":1,"y":0},"data":{"agentName":"Lead","tools":{"subagents":true}}},
  {"id":"kid","type":"agent","position":{"x":2,"y":1},"data":{"agentName":"Kid","systemPrompt":"kid"}}],
 "edges":[{"id":"e1","source":"s","target":"lead"},
  {"id":"e2","source":"lead","target":"kid","sourceHandle":"subagent"}]}`

var fakeURLRE = regexp.MustCompile(`fake-llm listening url=(\S+)`)

// startFakeLLM runs `switchyard fake-llm` and returns its base URL.
func startFakeLLM(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"fake-llm"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := fakeURLRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case u := <-found:
		return u
	case <-time.After(time.Minute):
		t.Fatal("fake-llm did not print its url")
		return ""
	}
}

// The fake-llm command end to end: a headless run whose prompt asks the
// lead to delegate reaches the subagent, and usage and cost come back.
func TestFakeLLMCommandDelegatesAndReportsUsage(t *testing.T) {
	t.Parallel()
	// Chunks far apart: a reply that arrives whole is logged without
	// llm_delta events, and this one must stream.
	url := startFakeLLM(t, "--latency", "40ms", "--chunk-delay", "50ms")
	dir := t.TempDir()
	prices := writeFile(t, dir, "prices.json", `{"gpt-5-mini": {"input": 0.25, "output": 2}}`)
	c := newCLI(t, nil)
	c.env = append(c.env, "OPENAI_BASE_URL="+url, "OPENAI_API_KEY=test", "SWITCHYARD_PRICES="+prices)
	g := writeFile(t, dir, "g.json", delegateGraphJSON)

	code, out, errOut := c.run("run", g, "--events")
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	var types []string
	var resp struct {
		Model string       `json:"model"`
		Usage engine.Usage `json:"usage"`
	}
	deltas := 0
	for _, line := range strings.Split(out, "\n") {
		var ev engine.Event
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Type == "" {
			continue
		}
		types = append(types, ev.Type)
		if ev.Type == engine.EvLLMDelta && ev.NodeID == "lead" {
			deltas++
		}
		if ev.Type == engine.EvLLMResponse && ev.NodeID == "lead" {
			if err := json.Unmarshal(ev.Data, &resp); err != nil {
				t.Fatal(err)
			}
		}
	}
	joined := strings.Join(types, " ")
	if !strings.Contains(joined, engine.EvSubagentCallStart) || !strings.Contains(joined, engine.EvSubagentCallEnd) {
		t.Errorf("no subagent call events: %s", joined)
	}
	if deltas == 0 { // the engine coalesces deltas, so one is all a streamed answer promises
		t.Error("no llm_delta events from the lead")
	}
	res := lastJSON(t, out)
	want := "echo: delegate: write a haiku\nsubagent_kid_kid: echo: delegate: write a haiku"
	if res.Outputs["lead"] != want {
		t.Errorf("lead output %q, want %q", res.Outputs["lead"], want)
	}
	u := resp.Usage
	if resp.Model != "gpt-5-mini" || u.TotalTokens <= 0 || u.CostUSD == nil {
		t.Fatalf("llm_response data %+v", resp)
	}
	if wantCost := (float64(u.PromptTokens)*0.25 + float64(u.CompletionTokens)*2) / 1e6; math.Abs(*u.CostUSD-wantCost) > 1e-12 {
		t.Errorf("cost %v, want %v", *u.CostUSD, wantCost)
	}
	if res.Usage.TotalTokens != u.TotalTokens || res.Usage.CostUSD == nil {
		t.Errorf("run usage %+v, lead usage %+v", res.Usage, u)
	}
}

func TestServeRefusesBadPriceFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"syntax", "{\n  \"gpt-4o\": {\"input\": 2.5,\n    \"output\": }\n}", []string{"line 3"}},
		{"missing field", `{"gpt-4o": {"input": 2.5}}`, []string{`model "gpt-4o"`, `field "output" is missing`}},
		{"wrong type", "{\n\"gpt-4o\": {\"input\": \"cheap\", \"output\": 1}}", []string{"line 2", `model "gpt-4o"`, "field input", "number"}},
		{"unknown field", `{"gpt-4o": {"input": 1, "ouput": 2}}`, []string{`model "gpt-4o"`, `unknown field "ouput"`}},
		{"negative", `{"gpt-4o": {"input": -1, "output": 2}}`, []string{`field "input" must be a price from 0 to 100000`}},
		// 1e308 made a run's cost +Inf, stored, and GET /api/runs a 500 for good.
		{"absurd", `{"gpt-4o": {"input": 1, "output": 1e308}}`, []string{`model "gpt-4o"`, `field "output" must be a price from 0 to 100000`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "_")+".json", tc.body)
			c := newCLI(t, nil)
			c.env = append(c.env, "SWITCHYARD_PRICES="+path)
			code, out, errOut := c.run("serve", "--addr", "127.0.0.1:0")
			if code != exitFailed {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, exitFailed, out, errOut)
			}
			for _, w := range append([]string{"SWITCHYARD_PRICES", path}, tc.want...) {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}

func TestFakeLLMHelpNamesTriggers(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(binary, "fake-llm", "-h").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, w := range []string{"use <toolname>", "delegate", "call subagents", "-latency", "-chunk-delay", "-script", "SCRIPT.md"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("help lacks %q:\n%s", w, out)
		}
	}
}

const fakeLLMScript = `rules:
  - match: "fix the failing test"
    system: "coding agent"
    final: "gave up: {{last_result}}"
    turns:
      - label: test
        tool_calls:
          - name: Bash
            arguments: {command: "sh test.sh"}
      - unless_result_contains: FAILED
        text: "Done: {{last_result}}"
      - max_times: 3
        tool_calls:
          - name: Edit
            arguments: {file_path: calc.sh, old_string: "a - b", new_string: "a + b"}
        goto: test
`

// fake-llm --script drives the scripted loop over real HTTP: each reply is
// chosen from the tool results sent back; other prompts still get the
// built-in answers.
func TestFakeLLMScriptDrivesToolLoop(t *testing.T) {
	t.Parallel()
	path := writeFile(t, t.TempDir(), "fix.yaml", fakeLLMScript)
	url := startFakeLLM(t, "--script", path)
	client := openai.NewClient(option.WithBaseURL(url), option.WithAPIKey("test"))
	ctx := context.Background()
	msgs := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("You are a coding agent."),
		openai.UserMessage("Please fix the failing test."),
	}
	tools := []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "Bash"}),
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "Edit"}),
	}
	// The results a shell would give: the tests fail, the edit lands, they pass.
	results := []string{"FAILED: add 2 3 = -1", "edited calc.sh", "1 passed"}
	var got []string
	for i := 0; ; i++ {
		comp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-5-mini", Messages: msgs, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		msg := comp.Choices[0].Message
		if comp.Usage.TotalTokens <= 0 {
			t.Errorf("turn %d: no usage", i+1)
		}
		if len(msg.ToolCalls) == 0 {
			got = append(got, "text: "+msg.Content)
			break
		}
		if len(msg.ToolCalls) != 1 || i >= len(results) {
			t.Fatalf("turn %d: %s", i+1, comp.RawJSON())
		}
		call := msg.ToolCalls[0]
		got = append(got, call.Function.Name+" "+call.Function.Arguments)
		msgs = append(msgs, msg.ToParam(), openai.ToolMessage(results[i], call.ID))
	}
	want := []string{
		`Bash {"command":"sh test.sh"}`,
		`Edit {"file_path":"calc.sh","old_string":"a - b","new_string":"a + b"}`,
		`Bash {"command":"sh test.sh"}`,
		"text: Done: 1 passed",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("turns:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	comp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-5-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := comp.Choices[0].Message.Content; c != "echo: hello" {
		t.Errorf("unscripted prompt got %q", c)
	}
}

func TestFakeLLMScriptBadFile(t *testing.T) {
	t.Parallel()
	path := writeFile(t, t.TempDir(), "bad.yaml", "rules:\n  - match: x\n    turns:\n      - tool_calls:\n          - arguments: {}\n")
	cmd := exec.Command(binary, "fake-llm", "--script", path)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitFailed {
		t.Fatalf("exit %v, want %d\n%s", err, exitFailed, stderr.String())
	}
	for _, w := range []string{path + ":5", "rules[0].turns[0].tool_calls[0].name", "is required"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q: %s", w, stderr.String())
		}
	}
	if strings.Contains(stdout.String(), "listening") {
		t.Errorf("listened despite the bad script: %s", stdout.String())
	}
}

// The script example in `fake-llm -h` is a valid script.
func TestFakeLLMHelpScriptExampleParses(t *testing.T) {
	t.Parallel()
	start := strings.Index(fakeLLMHelp, "  rules:\n")
	if start < 0 {
		t.Fatal("help has no script example")
	}
	example := fakeLLMHelp[start:]
	example = example[:strings.Index(example, "\n\n")+1]
	var lines []string
	for _, l := range strings.Split(example, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "  "))
	}
	sc, err := fakeopenai.ParseScript("help", []byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatalf("%v\n%s", err, example)
	}
	rep, ok := sc.Reply(&fakeopenai.Request{Messages: []fakeopenai.Message{{Role: "user", Content: "fix the failing test"}}})
	if !ok || len(rep.ToolCalls) != 1 || rep.ToolCalls[0].Name != "Bash" {
		t.Errorf("first turn %+v (matched %v)", rep, ok)
	}
}

// TestFakeLLMServesTLS: with --tls the fake answers over HTTPS and HTTP/2
// with the certificate it wrote to --cert-out, which a client that trusts
// that file (and nothing else) accepts; its /_stats counts connections.
// --cert-out without --tls is refused.
func TestFakeLLMServesTLS(t *testing.T) {
	t.Parallel()
	certFile := filepath.Join(t.TempDir(), "fake.pem")
	url := startFakeLLM(t, "--tls", "--cert-out", certFile, "--whole")
	if !strings.HasPrefix(url, "https://127.0.0.1:") || !strings.HasSuffix(url, "/v1") {
		t.Fatalf("url %q", url)
	}
	hc, err := trustingClient(certFile)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	resp, err := hc.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 || !strings.Contains(string(b), "echo: hi") {
		t.Fatalf("%s over %s: %s", resp.Status, resp.Proto, b)
	}
	st, err := loadgen.GetFakeStats(context.Background(), hc, url)
	if err != nil || st.Requests != 1 || st.Conns != 1 {
		t.Errorf("stats %+v, %v: want 1 request on 1 connection (the stats read shares it)", st, err)
	}
	// A client with the system's roots only refuses the certificate.
	if resp, err := http.Get(strings.TrimSuffix(url, "/v1") + "/_stats"); err == nil {
		resp.Body.Close()
		t.Error("the fake's own certificate was trusted without --cert-out's file")
	}

	cmd := exec.Command(binary, "fake-llm", "--cert-out", certFile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	var ee *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(stderr.String(), "--cert-out needs --tls") {
		t.Errorf("--cert-out without --tls: %v, %s", err, stderr.String())
	}
}
