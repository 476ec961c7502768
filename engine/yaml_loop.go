package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/switchyard/switchyard/internal/proc"
	"github.com/switchyard/switchyard/llm"
)

// loopState is where a loop node stands; an interactive loop keeps it in
// its Wait state between iterations, so it survives a restart.
type loopState struct {
	Iteration int           `json:"iteration"` // iterations done
	Prev      string        `json:"prev"`      // cleaned output of the last one
	History   []llm.Message `json:"history,omitempty"`
	// ToolWait is set while a tool call of the next iteration waits for a
	// reviewer (approve_tools); UserInput is that iteration's
	// $LOOP_USER_INPUT.
	ToolWait  *loopWait `json:"toolWait,omitempty"`
	UserInput string    `json:"userInput,omitempty"`
}

// yamlLoopExec runs a loop node: iterations of its prompt until the
// completion signal; Resume answers an interactive loop's gate or a tool
// call of an iteration.
type yamlLoopExec struct{}

func (yamlLoopExec) Execute(ctx context.Context, x *Exec) (Result, error) {
	return runYAML(ctx, x, func(ctx context.Context, spec *yamlSpec) (Result, error) {
		return runLoop(ctx, x, spec, loopState{Iteration: 0})
	})
}

func (yamlLoopExec) Resume(ctx context.Context, x *Exec, d Decision) (Result, error) {
	return resumeYAML(ctx, x, func(ctx context.Context, spec *yamlSpec) (Result, error) { return loopResume(ctx, x, spec, d) })
}

// runLoop runs iterations after st until the completion signal (or
// until_bash exiting 0), max_iterations, or, for an interactive loop, the
// gate after an iteration that did not complete.
func runLoop(ctx context.Context, x *Exec, spec *yamlSpec, st loopState) (Result, error) {
	return loopFrom(ctx, x, spec, st, "", nil)
}

// loopResume continues an interactive loop: approve runs the next
// iteration with $LOOP_USER_INPUT set to the reviewer's note; reject
// cancels the run.
func loopResume(ctx context.Context, x *Exec, spec *yamlSpec, d Decision) (Result, error) {
	var st loopState
	if len(x.WaitState) > 0 {
		if err := json.Unmarshal(x.WaitState, &st); err != nil {
			return Result{}, fmt.Errorf("loop state: %w", err)
		}
	}
	if st.ToolWait != nil || d.CallID != "" {
		// A tool call of the iteration in progress was answered: the
		// iteration goes on from the log with the decision.
		return loopFrom(ctx, x, spec, loopState{Iteration: st.Iteration, Prev: st.Prev, History: st.History}, st.UserInput, &d)
	}
	if d.Decision != "approve" {
		x.Emit(EvInputReceived, "User stopped the loop. Feedback: "+d.Note, d)
		reason := strings.TrimSpace(d.Note)
		if reason == "" {
			reason = "no reason given"
		}
		return Result{Decided: true, Rejection: d.Note,
			CancelRun: fmt.Sprintf("loop %q stopped by the reviewer after iteration %d: %s", spec.n.ID, st.Iteration, reason)}, nil
	}
	x.Emit(EvInputReceived, "User continued the loop. Input: "+d.Note, d)
	return loopFrom(ctx, x, spec, st, d.Note, nil)
}

// loopFrom runs the iterations after st; d answers a tool call of the first
// of them that waited for a reviewer.
func loopFrom(ctx context.Context, x *Exec, spec *yamlSpec, st loopState, userInput string, d *Decision) (Result, error) {
	n := spec.n
	lp := n.Loop
	history := st.History
	if st.Iteration == 0 {
		history = contextFor(x, spec)
	}
	first := st.Iteration + 1
	for i := first; i <= lp.MaxIterations; i++ {
		vars := &yamlVars{x: x, spec: spec, mode: modePrompt, loopPrev: st.Prev}
		if i == first {
			vars.loopUser = userInput
		}
		prompt, err := vars.substitute(lp.Prompt, nil)
		if err != nil {
			return Result{}, permanent(err)
		}
		var hist []llm.Message
		if !lp.FreshContext {
			hist = history
		}
		data := map[string]any{"iteration": i, "maxIterations": lp.MaxIterations}
		o := turnOpts{session: fmt.Sprintf("v%d/i%d", x.Visit, i)}
		if i == first {
			o.decision = d
		}
		res, err := withRetry(ctx, x, n, func(ctx context.Context) (Result, error) {
			out, wait, err := llmTurn(ctx, x, spec, vars, hist, prompt, data, o)
			o.continuing = true // a retry continues what the log holds
			return Result{Output: out, Wait: wait}, err
		})
		if err != nil {
			return Result{}, fmt.Errorf("iteration %d: %w", i, err)
		}
		if res.Wait != nil {
			// A tool call waits for a reviewer: keep where the loop stands.
			var lw loopWait
			_ = json.Unmarshal(res.Wait.State, &lw)
			ws := loopState{Iteration: i - 1, Prev: st.Prev, History: st.History, ToolWait: &lw}
			if i == first {
				ws.UserInput = userInput
			}
			res.Wait.State, _ = json.Marshal(ws)
			return res, nil
		}
		raw := res.Output
		clean := stripSignal(raw, lp.Until)
		done := hasSignal(raw, lp.Until)
		how := fmt.Sprintf("completion signal %q", lp.Until)
		if !done && lp.UntilBash != "" {
			if done, err = untilBash(ctx, x, spec, clean); err != nil {
				return Result{}, fmt.Errorf("iteration %d: until_bash: %w", i, err)
			}
			how += " / until_bash"
		}
		x.Emit(EvLogicCheck, fmt.Sprintf("Iteration %d of %d: %s %s", i, lp.MaxIterations, how, map[bool]string{true: "met", false: "not met"}[done]),
			map[string]any{"iteration": i, "maxIterations": lp.MaxIterations, "result": done})
		if !lp.FreshContext {
			spec.rs.mu.Lock()
			history = append([]llm.Message(nil), spec.rs.histories[n.ID]...)
			spec.rs.mu.Unlock()
		}
		st = loopState{Iteration: i, Prev: clean}
		if !lp.FreshContext {
			st.History = history
		}
		if done {
			return Result{Output: clean}, nil
		}
		if lp.Interactive && i < lp.MaxIterations {
			gv := &yamlVars{x: x, spec: spec, mode: modePrompt, loopPrev: clean}
			msg, err := gv.substitute(lp.GateMessage, nil)
			if err != nil {
				return Result{}, permanent(err)
			}
			if strings.TrimSpace(msg) == "" {
				msg = fmt.Sprintf("Loop %q finished iteration %d of %d: approve to continue, reject to stop", n.ID, i, lp.MaxIterations)
			}
			raw, _ := json.Marshal(st)
			return Result{Wait: &Wait{Prompt: msg, State: raw}}, nil
		}
	}
	return Result{}, fmt.Errorf("%w: loop %q ran %d iterations without the completion signal %q",
		ErrLoopExhausted, n.ID, lp.MaxIterations, lp.Until)
}

// ErrLoopExhausted is a loop that reached max_iterations without completing.
var ErrLoopExhausted = errors.New("loop reached max_iterations")

// untilBash runs the loop's until_bash; exit 0 means the loop is done.
func untilBash(ctx context.Context, x *Exec, spec *yamlSpec, prev string) (bool, error) {
	vars := &yamlVars{x: x, spec: spec, mode: modeBash, loopPrev: prev}
	_, _, err := runBash(ctx, x, spec, vars, spec.n.Loop.UntilBash, procTimeout(spec.n), "until_bash")
	if err == nil {
		return true, nil
	}
	var pe *proc.Error
	if errors.As(err, &pe) && pe.Timeout == 0 && pe.Signal == "" {
		return false, nil
	}
	return false, err
}

var xmlTagRE = regexp.MustCompile(`<([A-Za-z][A-Za-z0-9_.:-]*)>\s*([^<]*?)\s*</([A-Za-z][A-Za-z0-9_.:-]*)>`)

// hasSignal reports whether a loop answer carries its completion signal:
// wrapped in any XML-like tag (<promise>DONE</promise>), alone on a line,
// or as the very last word. A signal merely mentioned mid-sentence does
// not count.
func hasSignal(text, signal string) bool {
	signal = strings.TrimSpace(signal)
	if signal == "" {
		return false
	}
	for _, m := range xmlTagRE.FindAllStringSubmatch(text, -1) {
		if m[1] == m[3] && m[2] == signal {
			return true
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == signal {
			return true
		}
	}
	return endsWithSignal(strings.TrimRightFunc(text, endPunct), signal)
}

func endPunct(r rune) bool { return unicode.IsSpace(r) || r == '.' || r == '!' }

// stripSignal removes the completion signal's markup from an answer: the
// tagged form entirely, and lines holding only the signal.
func stripSignal(text, signal string) string {
	signal = strings.TrimSpace(signal)
	if signal == "" {
		return strings.TrimSpace(text)
	}
	out := xmlTagRE.ReplaceAllStringFunc(text, func(m string) string {
		sm := xmlTagRE.FindStringSubmatch(m)
		if sm[1] == sm[3] && sm[2] == signal {
			return ""
		}
		return m
	})
	lines := strings.Split(out, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if strings.TrimSpace(l) != signal {
			kept = append(kept, l)
		}
	}
	out = strings.TrimSpace(strings.Join(kept, "\n"))
	if t := strings.TrimRightFunc(out, endPunct); endsWithSignal(t, signal) {
		out = strings.TrimSpace(strings.TrimSuffix(t, signal))
	}
	return out
}

// endsWithSignal: text ends with signal as a whole word.
func endsWithSignal(t, signal string) bool {
	if !strings.HasSuffix(t, signal) {
		return false
	}
	before, _ := utf8.DecodeLastRuneInString(t[:len(t)-len(signal)])
	return len(t) == len(signal) || !(unicode.IsLetter(before) || unicode.IsDigit(before) || before == '_')
}
