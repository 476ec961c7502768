package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/llm"
	"github.com/switchyard/switchyard/yamlflow"
)

func TestYAMLPromptNode(t *testing.T) {
	e, rec, srv := yamlLLMEngine(t)
	src := "name: t\ndescription: d\nmodel: gpt-4o-mini\nnodes:\n" + `
  - id: ask
    prompt: "Summarize: $ARGUMENTS"
  - id: other
    model: o4-mini
    effort: low
    systemPrompt: "You answer for $WORKFLOW_ID."
    prompt: "hi"
`
	run, ns := runYAMLT(t, e, src, "the input")
	if run.Status != StatusCompleted {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	if got := ns["ask"].Output; got != "echo: Summarize: the input" {
		t.Fatalf("ask output %q", got)
	}
	for _, typ := range []string{EvStartPrompt, EvLLMResponse} {
		if len(eventsOf(rec, run.ID, "ask", typ)) == 0 {
			t.Errorf("no %s event", typ)
		}
	}
	// The reply arrives whole, so it is usually not streamed at all; what
	// was streamed, if anything, is the response's text.
	if resp := eventsOf(rec, run.ID, "ask", EvLLMResponse); len(resp) != 1 || resp[0].Content != ns["ask"].Output {
		t.Errorf("llm_response %+v", resp)
	}
	if d := eventsOf(rec, run.ID, "ask", EvLLMDelta); len(d) > 0 {
		var streamed strings.Builder
		for _, ev := range d {
			streamed.WriteString(ev.Content)
		}
		if streamed.String() != ns["ask"].Output {
			t.Errorf("streamed %q, answered %q", streamed.String(), ns["ask"].Output)
		}
	}
	models := map[string]bool{}
	for _, r := range srv.Requests() {
		models[r.Model] = true
		if r.Model == "o4-mini" {
			if r.ReasoningEffort != "low" || r.Messages[0].Content != "You answer for "+run.ID+"." {
				t.Errorf("other: effort %q system %q", r.ReasoningEffort, r.Messages[0].Content)
			}
		}
	}
	if !models["gpt-4o-mini"] || !models["o4-mini"] {
		t.Errorf("models used: %v", models)
	}
}

func TestYAMLContextShared(t *testing.T) {
	e, rec, srv := yamlLLMEngine(t)
	srv.SetHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
		return fakeopenai.Reply{Text: "re: " + req.LastUserMessage()}
	})
	run, ns := runYAMLT(t, e, wf(`
  - id: first
    prompt: "one"
  - id: second
    depends_on: [first]
    context: shared
    prompt: "two"
  - id: fresh
    depends_on: [first]
    prompt: "three"
  - id: both
    depends_on: [first, fresh]
    context: shared
    prompt: "four"
`), "")
	if run.Status != StatusCompleted {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	convs := map[string][]fakeopenai.Message{}
	for _, r := range srv.Requests() {
		convs[r.LastUserMessage()] = r.Messages
	}
	roles := func(ms []fakeopenai.Message) string {
		var s []string
		for _, m := range ms {
			s = append(s, m.Role+":"+m.Content)
		}
		return strings.Join(s, "|")
	}
	if got := roles(convs["two"]); !strings.HasSuffix(got, "user:one|assistant:re: one|user:two") {
		t.Errorf("shared conversation: %s", got)
	}
	if got := roles(convs["three"]); strings.Contains(got, "one") {
		t.Errorf("fresh conversation carries history: %s", got)
	}
	if got := roles(convs["four"]); strings.Contains(got, "one") {
		t.Errorf("shared with two dependencies should start fresh: %s", got)
	}
	if !hasEventContaining(rec, run.ID, "both", EvWarning, "exactly one dependency") {
		t.Error("no warning for context: shared with two dependencies")
	}
	if ns["second"].Output != "re: two" {
		t.Errorf("second output %q", ns["second"].Output)
	}
}

func TestYAMLOutputFormat(t *testing.T) {
	classify := `
  - id: classify
    prompt: classify it
    output_format:
      type: object
      properties:
        sentiment: {type: string, enum: [positive, negative]}
        note: {type: string}
      required: [sentiment]
`
	cases := []struct {
		name    string
		reply   string // "" = the fake's schema-shaped default
		nodes   string
		want    map[string]NodeStatus
		errNode string
		errSub  string
		out     string // output of "use"
	}{
		{name: "valid output, declared fields resolve, optional absent is empty", nodes: classify + `
  - id: use
    depends_on: [classify]
    bash: printf '%s/%s' $classify.output.sentiment "$classify.output.note"
`, reply: "```json\n{\"sentiment\":\"positive\"}\n```", want: map[string]NodeStatus{"classify": NodeCompleted, "use": NodeCompleted}, out: "positive/"},
		{name: "schema default reply validates", nodes: classify,
			want: map[string]NodeStatus{"classify": NodeCompleted}},
		{name: "mismatch fails the node with the schema error", nodes: classify, reply: `{"sentiment":"meh"}`,
			want: map[string]NodeStatus{"classify": NodeFailed}, errNode: "classify", errSub: "does not match output_format"},
		{name: "not JSON fails the node", nodes: classify, reply: `I think positive`,
			want: map[string]NodeStatus{"classify": NodeFailed}, errNode: "classify", errSub: "not JSON"},
		{name: "an undeclared field fails the consumer", nodes: classify + `
  - id: use
    depends_on: [classify]
    bash: 'echo "never: $classify.output.nonexistent_field"'
`, reply: `{"sentiment":"negative"}`, want: map[string]NodeStatus{"classify": NodeCompleted, "use": NodeFailed},
			errNode: "use", errSub: "field not found"},
		{name: "an undeclared field in when fails the node", nodes: classify + `
  - id: use
    depends_on: [classify]
    when: "$classify.output.mood == 'x'"
    bash: echo never
`, reply: `{"sentiment":"negative"}`, want: map[string]NodeStatus{"use": NodeFailed}, errNode: "use", errSub: "not declared"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _, srv := yamlLLMEngine(t)
			if tc.reply != "" {
				srv.Enqueue(fakeopenai.Reply{Text: tc.reply})
			}
			_, ns := runYAMLT(t, e, wf(tc.nodes), "")
			wantStatuses(t, ns, tc.want)
			if tc.errNode != "" && !strings.Contains(ns[tc.errNode].Error, tc.errSub) {
				t.Errorf("%s error %q, want %q", tc.errNode, ns[tc.errNode].Error, tc.errSub)
			}
			if tc.out != "" && ns["use"].Output != tc.out {
				t.Errorf("use output %q, want %q", ns["use"].Output, tc.out)
			}
			if r, ok := srv.LastRequest(); ok && (r.ResponseFormat == nil || r.ResponseFormat.Type != "json_schema") {
				t.Errorf("no json_schema response format requested: %+v", r.ResponseFormat)
			}
		})
	}
}

func TestYAMLCommandNode(t *testing.T) {
	e, _, _ := yamlLLMEngine(t)
	dir := t.TempDir()
	cmds := filepath.Join(dir, ".switchyard", "commands")
	if err := os.MkdirAll(cmds, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cmds, "greet.md"), []byte("---\ndescription: hi\n---\nSay hi to $ARGUMENTS."), 0o644); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "bye.md"), []byte("Bye $ARGUMENTS"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := startYAMLIn(t, e, dir, wf(`
  - id: greet
    command: greet
  - id: bye
    command: bye
  - id: missing
    command: nowhere
`), "Ann", WithCommandsDir(other))
	waitRun(t, e, run.ID)
	ns := nodeStates(t, e, run.ID)
	if ns["greet"].Output != "echo: Say hi to Ann." {
		t.Errorf("greet output %q", ns["greet"].Output)
	}
	if ns["bye"].Output != "echo: Bye Ann" {
		t.Errorf("bye output %q", ns["bye"].Output)
	}
	if e := ns["missing"].Error; !strings.Contains(e, `command "nowhere" not found`) || !strings.Contains(e, cmds) || !strings.Contains(e, other) {
		t.Errorf("missing error %q: want the folders it looked in", e)
	}
}

func TestYAMLLoop(t *testing.T) {
	e, rec, srv := yamlLLMEngine(t)
	srv.Enqueue(fakeopenai.Reply{Text: "draft"}, fakeopenai.Reply{Text: "final answer\n<promise>COMPLETE</promise>"})
	run, ns := runYAMLT(t, e, wf(`
  - id: refine
    loop:
      prompt: "improve [$LOOP_PREV_OUTPUT]"
      until: COMPLETE
      max_iterations: 5
`), "")
	if run.Status != StatusCompleted || ns["refine"].Output != "final answer" {
		t.Fatalf("run %s (%s), output %q", run.Status, run.Error, ns["refine"].Output)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if reqs[0].LastUserMessage() != "improve []" || reqs[1].LastUserMessage() != "improve [draft]" {
		t.Errorf("prompts %q, %q", reqs[0].LastUserMessage(), reqs[1].LastUserMessage())
	}
	if len(reqs[1].Messages) != 4 { // system, user, assistant, user: the conversation continues
		t.Errorf("iteration 2 sent %d messages, want 4", len(reqs[1].Messages))
	}
	if n := len(eventsOf(rec, run.ID, "refine", EvLogicCheck)); n != 2 {
		t.Errorf("%d iteration events, want 2", n)
	}
}

func TestYAMLLoopExhaustedAndUntilBash(t *testing.T) {
	e, _, srv := yamlLLMEngine(t)
	srv.SetHandler(func(req *fakeopenai.Request) fakeopenai.Reply { return fakeopenai.Reply{Text: "not yet"} })
	run, ns := runYAMLT(t, e, wf(`
  - id: never
    loop:
      prompt: "go"
      until: DONE
      max_iterations: 2
      fresh_context: true
  - id: checked
    loop:
      prompt: "go"
      until: DONE
      max_iterations: 3
      until_bash: 'n=$(cat n 2>/dev/null || echo 0); echo $((n+1)) > n; [ "$LOOP_PREV_OUTPUT" = "not yet" ] && [ $n -ge 1 ]'
`), "")
	if run.Status != StatusFailed || !strings.Contains(ns["never"].Error, "ran 2 iterations without the completion signal") {
		t.Fatalf("run %s, never: %q", run.Status, ns["never"].Error)
	}
	if ns["checked"].Status != NodeCompleted || ns["checked"].Output != "not yet" {
		t.Errorf("checked: %+v", ns["checked"])
	}
	for _, r := range srv.Requests() {
		if len(r.Messages) != 2 && r.LastUserMessage() == "go" && strings.Contains(r.Messages[0].Content, "never") {
			t.Errorf("fresh_context sent history")
		}
	}
}

func TestYAMLInteractiveLoop(t *testing.T) {
	src := wf(`
  - id: chat
    loop:
      prompt: "draft [$LOOP_PREV_OUTPUT] input [$LOOP_USER_INPUT]"
      until: DONE
      max_iterations: 4
      interactive: true
      gate_message: "Review: $LOOP_PREV_OUTPUT"
  - id: after
    depends_on: [chat]
    bash: printf %s $chat.output
`)
	t.Run("approve continues with the user's input", func(t *testing.T) {
		e, rec, srv := yamlLLMEngine(t)
		srv.Enqueue(fakeopenai.Reply{Text: "v1"}, fakeopenai.Reply{Text: "v2 DONE"})
		run := startYAMLT(t, e, src, "")
		got := waitRun(t, e, run.ID)
		if got.Status != StatusPaused || len(got.PendingApprovals) != 1 || got.PendingApprovals[0].Prompt != "Review: v1" {
			t.Fatalf("status %s approvals %+v", got.Status, got.PendingApprovals)
		}
		if _, err := e.Resume(context.Background(), run.ID, "chat", Decision{Decision: "approve", Note: "shorter"}); err != nil {
			t.Fatal(err)
		}
		got = waitRun(t, e, run.ID)
		ns := nodeStates(t, e, run.ID)
		if got.Status != StatusCompleted || ns["after"].Output != "v2" {
			t.Fatalf("status %s (%s), after %q", got.Status, got.Error, ns["after"].Output)
		}
		reqs := srv.Requests()
		if last := reqs[len(reqs)-1].LastUserMessage(); last != "draft [v1] input [shorter]" {
			t.Errorf("second prompt %q", last)
		}
		if len(eventsOf(rec, run.ID, "chat", EvWaitInput)) != 1 {
			t.Error("want one wait_input event")
		}
	})
	t.Run("reject cancels the run", func(t *testing.T) {
		e, _, srv := yamlLLMEngine(t)
		srv.Enqueue(fakeopenai.Reply{Text: "v1"})
		run := startYAMLT(t, e, src, "")
		waitRun(t, e, run.ID)
		if _, err := e.Resume(context.Background(), run.ID, "", Decision{Decision: "reject", Note: "wrong direction"}); err != nil {
			t.Fatal(err)
		}
		got := waitRun(t, e, run.ID)
		if got.Status != StatusCancelled || !strings.Contains(got.Error, "wrong direction") {
			t.Fatalf("status %s error %q", got.Status, got.Error)
		}
	})
}

func TestYAMLApproval(t *testing.T) {
	src := wf(`
  - id: plan
    prompt: "plan $ARGUMENTS"
  - id: gate
    depends_on: [plan]
    approval:
      message: "Approve the plan? $plan.output"
      capture_response: true
      on_reject:
        prompt: "Revise because: $REJECTION_REASON"
        max_attempts: 2
  - id: after
    depends_on: [gate]
    bash: printf '%s' $gate.output
`)
	t.Run("reject reworks and asks again, approve captures the note", func(t *testing.T) {
		e, rec, srv := yamlLLMEngine(t)
		run := startYAMLT(t, e, src, "x")
		got := waitRun(t, e, run.ID)
		if got.Status != StatusPaused || got.PendingApprovals[0].Prompt != "Approve the plan? echo: plan x" {
			t.Fatalf("status %s approvals %+v", got.Status, got.PendingApprovals)
		}
		if _, err := e.Resume(context.Background(), run.ID, "gate", Decision{Decision: "reject", Note: "too vague"}); err != nil {
			t.Fatal(err)
		}
		got = waitRun(t, e, run.ID)
		if got.Status != StatusPaused {
			t.Fatalf("after one rejection: %s %s", got.Status, got.Error)
		}
		if last, _ := srv.LastRequest(); last.LastUserMessage() != "Revise because: too vague" {
			t.Errorf("on_reject prompt %q", last.LastUserMessage())
		}
		if _, err := e.Resume(context.Background(), run.ID, "gate", Decision{Decision: "approve", Note: "ship it"}); err != nil {
			t.Fatal(err)
		}
		got = waitRun(t, e, run.ID)
		ns := nodeStates(t, e, run.ID)
		if got.Status != StatusCompleted || ns["after"].Output != "ship it" {
			t.Fatalf("status %s (%s) after %q", got.Status, got.Error, ns["after"].Output)
		}
		if n := len(eventsOf(rec, run.ID, "gate", EvWaitInput)); n != 2 {
			t.Errorf("%d wait_input events, want 2", n)
		}
	})
	t.Run("max_attempts rejections cancel the run", func(t *testing.T) {
		e, _, _ := yamlLLMEngine(t)
		run := startYAMLT(t, e, src, "x")
		waitRun(t, e, run.ID)
		for i, note := range []string{"no", "still no"} {
			if _, err := e.Resume(context.Background(), run.ID, "gate", Decision{Decision: "reject", Note: note}); err != nil {
				t.Fatalf("reject %d: %v", i+1, err)
			}
			waitRun(t, e, run.ID)
		}
		got := waitRun(t, e, run.ID)
		if got.Status != StatusCancelled || !strings.Contains(got.Error, "rejected 2 times") || !strings.Contains(got.Error, "still no") {
			t.Fatalf("status %s error %q", got.Status, got.Error)
		}
		if ns := nodeStates(t, e, run.ID); ns["after"].Status == NodeCompleted {
			t.Error("after ran")
		}
	})
	t.Run("reject without on_reject cancels", func(t *testing.T) {
		e, _ := yamlEngine(t)
		run := startYAMLT(t, e, wf(`
  - id: gate
    approval: {message: "ok?"}
  - id: after
    depends_on: [gate]
    bash: printf '[%s]' $gate.output
`), "")
		waitRun(t, e, run.ID)
		if _, err := e.Resume(context.Background(), run.ID, "", Decision{Decision: "reject", Note: "nope"}); err != nil {
			t.Fatal(err)
		}
		if got := waitRun(t, e, run.ID); got.Status != StatusCancelled || !strings.Contains(got.Error, "nope") {
			t.Fatalf("status %s error %q", got.Status, got.Error)
		}
	})
}

func TestYAMLApprovalResumesInNewEngine(t *testing.T) {
	st := NewMemStore()
	e1, err := New(Config{Store: st, ArtifactsRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := startYAMLIn(t, e1, dir, wf(`
  - id: before
    bash: echo prepared
  - id: gate
    depends_on: [before]
    approval: {message: "go on?", capture_response: true}
  - id: after
    depends_on: [gate]
    bash: printf '%s+%s' $before.output $gate.output
`), "")
	if got := waitRun(t, e1, run.ID); got.Status != StatusPaused {
		t.Fatalf("status %s", got.Status)
	}
	e1.Close() // the process "dies" while the run waits

	e2, rec := newTestEngine(t, Config{Store: st})
	if _, err := e2.Resume(context.Background(), run.ID, "gate", Decision{Decision: "approve", Note: "yes"}); err != nil {
		t.Fatal(err)
	}
	got := waitRun(t, e2, run.ID)
	ns := nodeStates(t, e2, run.ID)
	if got.Status != StatusCompleted || ns["after"].Output != "prepared+yes" {
		t.Fatalf("status %s (%s), after %q", got.Status, got.Error, ns["after"].Output)
	}
	if got.Kind != KindYAML {
		t.Errorf("kind %q", got.Kind)
	}
	if len(rec.events(run.ID)) == 0 {
		t.Error("the new engine emitted no events")
	}
}

func TestYAMLLLMRetry(t *testing.T) {
	e, rec, srv := yamlLLMEngine(t)
	// The provider tries twice per call (MaxAttempts 2); the node retries once.
	srv.Enqueue(fakeopenai.Reply{Status: 503}, fakeopenai.Reply{Status: 503}, fakeopenai.Reply{Text: "finally"})
	run, ns := runYAMLT(t, e, wf(`
  - id: a
    retry: {max_attempts: 1, delay_ms: 1000}
    prompt: hi
`), "", withRetryUnit(time.Microsecond))
	if run.Status != StatusCompleted || ns["a"].Output != "finally" {
		t.Fatalf("run %s (%s) output %q", run.Status, run.Error, ns["a"].Output)
	}
	if !hasEventContaining(rec, run.ID, "a", EvWarning, "retry 1 of 1") {
		t.Error("no retry warning")
	}
}

func TestYAMLAlwaysRunOnLoad(t *testing.T) {
	wfl, _, err := ParseYAMLWorkflow("wf.yaml", []byte(wf(`
  - id: setup
    always_run: true
    bash: echo setup
  - id: work
    depends_on: [setup]
    bash: echo work
`)))
	if err != nil {
		t.Fatal(err)
	}
	p := compileYAML(wfl, yamlConfig{}, 25)
	states := func() []*NodeState {
		return []*NodeState{{NodeID: "setup", Status: NodeCompleted, Visits: 1}, {NodeID: "work", Status: NodeFailed, Visits: 1}}
	}
	s := states()
	yamlOnLoad(p, &Run{Status: StatusInterrupted}, s)
	if s[0].Status != NodeQueued || s[1].Status != NodeFailed {
		t.Fatalf("continue: setup %s work %s", s[0].Status, s[1].Status)
	}
	s = states()
	yamlOnLoad(p, &Run{Status: StatusPaused}, s)
	if s[0].Status != NodeCompleted {
		t.Fatalf("a gate decision reran always_run nodes")
	}
	s = states()
	onLoad(p, &Run{Kind: KindYAML, Status: StatusInterrupted}, s) // registered for YAML runs
	if s[0].Status != NodeQueued {
		t.Fatal("onLoad does not reach yamlOnLoad for YAML runs")
	}
}

func TestYAMLNoLLMConfigured(t *testing.T) {
	e, _ := yamlEngine(t)
	_, ns := runYAMLT(t, e, wf("  - id: a\n    prompt: hi\n"), "")
	if !errors.Is(errors.New(ns["a"].Error), ErrNoLLM) && !strings.Contains(ns["a"].Error, ErrNoLLM.Error()) {
		t.Fatalf("error %q", ns["a"].Error)
	}
}

func TestYAMLRecoverAfterClose(t *testing.T) {
	st := NewMemStore()
	e1, err := New(Config{Store: st, ArtifactsRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := startYAMLIn(t, e1, dir, wf(`
  - id: first
    bash: echo one >> trace
  - id: slow
    depends_on: [first]
    bash: echo start >> trace; sleep 2; echo slow
  - id: last
    depends_on: [slow]
    bash: printf '%s+%s' $first.output $slow.output; cat trace >&2
`), "")
	// Wait until slow runs, then stop the process under it.
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "trace"))
		if strings.Contains(string(b), "start") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("slow never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	e1.Close()
	if got, _ := st.GetRun(context.Background(), run.ID); got.Status != StatusRunning {
		t.Fatalf("after close: %s", got.Status)
	}
	var def yamlDefinition
	if err := json.Unmarshal(run.Definition, &def); err != nil || !strings.Contains(def.Source, "id: slow") || def.File != filepath.Join(dir, "wf.yaml") {
		t.Fatalf("definition %+v (%v)", def, err)
	}

	e2, _ := newTestEngine(t, Config{Store: st})
	ids, err := e2.Recover(context.Background(), true)
	if err != nil || len(ids) != 1 {
		t.Fatalf("recover: %v %v", ids, err)
	}
	got := waitRun(t, e2, run.ID)
	ns := nodeStates(t, e2, run.ID)
	if got.Status != StatusCompleted || ns["last"].Output != "+slow" {
		t.Fatalf("status %s (%s), last %q", got.Status, got.Error, ns["last"].Output)
	}
	if ns["first"].Attempts != 1 || ns["slow"].Attempts != 2 {
		t.Errorf("attempts: first %d (kept), slow %d (rerun)", ns["first"].Attempts, ns["slow"].Attempts)
	}
}

// Every YAML node kind the loader knows has an executor.
func TestEveryYAMLKindIsRegistered(t *testing.T) {
	execs := defaultExecutors()
	for _, k := range yamlflow.Kinds {
		if _, ok := execs[yamlTypePrefix+string(k)]; !ok {
			t.Errorf("YAML node kind %q has no executor in kinds.go", k)
		}
	}
}

// provider: claude (and Claude model names) go to the Claude client with
// Anthropic's model ids; other nodes to the default one. Without a Claude
// client such workflows do not start, naming the key; providers
// Switchyard does not ship do not start either.
func TestYAMLClaudeProvider(t *testing.T) {
	t.Parallel()
	openaiSrv := fakeopenai.StartT(t)
	claudeSrv := fakeopenai.StartT(t)
	mk := func(url string) *llm.Client {
		c, err := llm.New(llm.Config{BaseURL: url, APIKey: "k", RetryBase: 5 * time.Millisecond, MaxAttempts: 2})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	e, _ := newTestEngine(t, Config{LLM: mk(openaiSrv.URL()), Claude: mk(claudeSrv.URL())})
	src := "name: t\ndescription: d\nprovider: claude\nmodel: sonnet\nnodes:\n" +
		"  - id: a\n    prompt: one\n" +
		"  - id: b\n    depends_on: [a]\n    model: anthropic/claude-haiku-4-5\n    prompt: two\n" +
		"  - id: c\n    depends_on: [b]\n    provider: openai\n    model: gpt-5-mini\n    prompt: three\n"
	run, ns := runYAMLT(t, e, src, "")
	if run.Status != StatusCompleted {
		t.Fatalf("run %s: %+v", run.Status, ns)
	}
	var claudeModels, openaiModels []string
	for _, r := range claudeSrv.Requests() {
		claudeModels = append(claudeModels, r.Model)
	}
	for _, r := range openaiSrv.Requests() {
		openaiModels = append(openaiModels, r.Model)
	}
	if !slices.Equal(claudeModels, []string{"claude-sonnet-4-5", "claude-haiku-4-5"}) || !slices.Equal(openaiModels, []string{"gpt-5-mini"}) {
		t.Fatalf("claude got %v, openai got %v", claudeModels, openaiModels)
	}

	noClaude, _ := newTestEngine(t, Config{LLM: mk(openaiSrv.URL())})
	if err := noClaude.ProviderBlocker(mustParseYAML(t, src)); !errors.Is(err, ErrNoClaude) || !strings.Contains(err.Error(), `node "a"`) {
		t.Fatalf("blocker without claude: %v", err)
	}
	if _, err := noClaude.StartYAML(context.Background(), "", []byte(src), StartOptions{}); !errors.Is(err, ErrNoClaude) ||
		!strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Fatalf("start without claude: %v", err)
	}
	pi := "name: t\ndescription: d\nnodes:\n  - id: a\n    provider: pi\n    prompt: one\n"
	if _, err := e.StartYAML(context.Background(), "", []byte(pi), StartOptions{}); !errors.Is(err, ErrProviderUnsupported) {
		t.Fatalf("start with pi: %v", err)
	}
}

func mustParseYAML(t *testing.T, src string) *yamlflow.Workflow {
	t.Helper()
	wf, _, err := ParseYAMLWorkflow("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return wf
}
