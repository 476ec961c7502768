package main

import (
	"bufio"
	"encoding/json"
	"math"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
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
	url := startFakeLLM(t, "--latency", "40ms")
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
	if deltas == 0 { // the engine coalesces deltas, so one is all a short answer promises
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
		{"negative", `{"gpt-4o": {"input": -1, "output": 2}}`, []string{`field "input" must be a price >= 0`}},
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
	for _, w := range []string{"use <toolname>", "delegate", "call subagents", "-latency", "-chunk-delay"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("help lacks %q:\n%s", w, out)
		}
	}
}
