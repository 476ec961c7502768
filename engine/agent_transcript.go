package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/switchyard/switchyard/llm"
)

// transcript is what the event log holds of one agent loop: the turns that
// finished (as messages) and the last turn if some of its calls did not.
type transcript struct {
	msgs    []llm.Message
	turns   int
	pending *pendingTurn
	usage   *Usage // the node's usage as of its last logged turn
}

// restoreUsage makes a loop continued from the log count on from the usage
// its last logged turn reported.
func (a *agentCall) restoreUsage(tr *transcript) {
	if tr == nil || tr.usage == nil {
		return
	}
	a.mu.Lock()
	if a.usage.u.IsZero() {
		a.usage.u = *tr.usage
	}
	a.mu.Unlock()
}

// loggedEvents returns this node's events from the store, once per
// invocation: what an agent loop that starts again rebuilds itself from.
func (a *agentCall) loggedEvents(ctx context.Context) ([]Event, error) {
	a.logMu.Lock()
	defer a.logMu.Unlock()
	if a.logLoaded {
		return a.logged, nil
	}
	evs, err := a.x.r.e.store.Events(ctx, a.x.RunID(), 0, 0)
	if err != nil {
		return nil, fmt.Errorf("read the run's log to continue node %q: %w", a.x.NodeID(), err)
	}
	id := a.x.NodeID()
	for _, ev := range evs {
		if ev.NodeID != id {
			continue
		}
		switch ev.Type {
		case EvLLMTurn, EvToolCall, EvToolResult, EvInputReceived:
			a.logged = append(a.logged, ev)
		}
	}
	a.logLoaded = true
	return a.logged, nil
}

// transcriptFor rebuilds session's loop from the log; nil when this node
// cannot have logged anything yet (its first attempt of this visit).
func (a *agentCall) transcriptFor(ctx context.Context, session string) (*transcript, error) {
	if !a.continuing {
		return nil, nil
	}
	evs, err := a.loggedEvents(ctx)
	if err != nil {
		return nil, err
	}
	return buildTranscript(evs, session), nil
}

// buildTranscript reads one session's turns from a node's events.
func buildTranscript(evs []Event, session string) *transcript {
	type turnRec struct {
		text    string
		calls   []llm.ToolCall
		results map[string]toolOutcome
		dec     map[string]Decision
	}
	turns := map[int]*turnRec{}
	get := func(n int) *turnRec {
		t := turns[n]
		if t == nil {
			t = &turnRec{results: map[string]toolOutcome{}, dec: map[string]Decision{}}
			turns[n] = t
		}
		return t
	}
	callTurn := map[string]int{}
	var usage *Usage
	for _, ev := range evs {
		var d struct {
			Session   string          `json:"session"`
			Turn      int             `json:"turn"`
			CallID    string          `json:"callId"`
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
			OK        bool            `json:"ok"`
			Denied    bool            `json:"denied"`
			Bytes     int             `json:"bytes"`
			Cut       bool            `json:"cut"`
			Decision  string          `json:"decision"`
			Note      string          `json:"note"`
			Usage     *Usage          `json:"usage"`
		}
		if len(ev.Data) == 0 || json.Unmarshal(ev.Data, &d) != nil || d.Session != session {
			continue
		}
		switch ev.Type {
		case EvLLMTurn:
			get(d.Turn).text = ev.Content
			if d.Usage != nil {
				usage = d.Usage
			}
		case EvToolCall:
			t := get(d.Turn)
			t.calls = append(t.calls, llm.ToolCall{ID: d.CallID, Name: d.Tool, Arguments: loggedArgs(d.Arguments)})
			callTurn[d.CallID] = d.Turn
		case EvToolResult:
			get(d.Turn).results[d.CallID] = toolOutcome{text: ev.Content, isError: !d.OK, denied: d.Denied, full: d.Bytes, cut: d.Cut}
		case EvInputReceived:
			if n, ok := callTurn[d.CallID]; ok && d.CallID != "" {
				get(n).dec[d.CallID] = Decision{Decision: d.Decision, Note: d.Note, CallID: d.CallID}
			}
		}
	}
	nums := make([]int, 0, len(turns))
	for n := range turns {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	tr := &transcript{usage: usage}
	for k, n := range nums {
		t := turns[n]
		if len(t.calls) == 0 {
			continue // text of a turn whose calls were never logged: asked again
		}
		p := &pendingTurn{turn: n, text: t.text, calls: t.calls, results: t.results, decisions: t.dec}
		tr.turns = n
		done := true
		for _, c := range t.calls {
			if _, ok := t.results[c.ID]; !ok {
				done = false
			}
		}
		if !done && k == len(nums)-1 {
			tr.pending = p
			break
		}
		for _, c := range t.calls {
			if _, ok := t.results[c.ID]; !ok {
				// Only the last turn can be unfinished; say so rather than
				// send the model a conversation with a hole in it.
				p.results[c.ID] = toolOutcome{isError: true, text: "error: the result of this call was lost"}
			}
		}
		tr.msgs = append(tr.msgs, p.messages()...)
	}
	return tr
}

// loggedArgs turns a tool_call event's arguments back into the text the
// model sent: an object as it is; text that was not JSON was logged as a
// JSON string.
func loggedArgs(raw json.RawMessage) string {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
