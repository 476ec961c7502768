package engine

import (
	"encoding/json"
	"time"
)

// logged is a node completion found in the event log but not in the node
// states: the process died between the two writes. The log wins.
type logged struct {
	idx int
	res Result
}

// stepRecord is what the event log says about a node's latest visit.
type stepRecord struct {
	started   int         // visit of the last step_start
	starts    map[int]int // step_starts per visit: the attempts made
	completed map[int]stepEnd
	// ended is the step_end after the last step_start, if any: how the
	// node's latest attempt ended.
	ended *stepEnd
}

type stepEnd struct {
	Status    NodeStatus `json:"status"`
	Output    string     `json:"output"`
	Handle    string     `json:"handle"`
	Visit     int        `json:"visit"`
	Decided   bool       `json:"decided"`
	Rejection string     `json:"rejection"`
	Error     string     `json:"error"`
}

// readLog summarizes step_start/step_end events per node.
func readLog(evs []Event) map[string]*stepRecord {
	out := map[string]*stepRecord{}
	for _, ev := range evs {
		if ev.Type != EvStepStart && ev.Type != EvStepEnd {
			continue
		}
		rec := out[ev.NodeID]
		if rec == nil {
			rec = &stepRecord{starts: map[int]int{}, completed: map[int]stepEnd{}}
			out[ev.NodeID] = rec
		}
		var d stepEnd
		_ = json.Unmarshal(ev.Data, &d)
		if ev.Type == EvStepStart {
			rec.started = d.Visit
			rec.starts[d.Visit]++
			rec.ended = nil
			continue
		}
		rec.ended = &d
		if d.Status == NodeCompleted && d.Visit > 0 {
			rec.completed[d.Visit] = d
		}
	}
	return out
}

// runStatusData is the data of a terminal run_status event: why it ended.
type runStatusData struct {
	Error string `json:"error,omitempty"`
}

// loggedEnd returns the terminal status the log ends with, and why; ""
// when the last run_status of the log is not terminal.
func loggedEnd(evs []Event) (RunStatus, string) {
	for i := len(evs) - 1; i >= 0; i-- {
		ev := &evs[i]
		if ev.Type != EvRunStatus {
			continue
		}
		s := RunStatus(ev.Content)
		if !s.Terminal() {
			return "", ""
		}
		var d runStatusData
		_ = json.Unmarshal(ev.Data, &d)
		return s, d.Error
	}
	return "", ""
}

// keepLoggedEnd makes the runner end the run as its log says, when the
// previous driver decided and logged the end but could not save it (a
// full disk or an unreachable database for longer than its lease). A
// terminal status is decided once: recovery writes that end instead of
// running the run on (its failed nodes again, its skipped ones at last).
func (r *runner) keepLoggedEnd(evs []Event, log map[string]*stepRecord) {
	s, why := loggedEnd(evs)
	if s == "" {
		return
	}
	r.loggedEnd, r.loggedReason = s, why
	r.loggedSteps = log
}

// endAsLogged applies the logged end (see keepLoggedEnd) once the logged
// completions were replayed: nodes take the ends the log gives them, the
// rest is skipped as the previous driver did, and settle writes the
// terminal state. Nothing more is logged: the log already tells all of it.
func (r *runner) endAsLogged() {
	r.emitMu.Lock()
	r.silent = true
	r.emitMu.Unlock()
	now := time.Now().UTC()
	for i, ns := range r.nodes {
		switch ns.Status {
		case NodeQueued, NodeRunning, NodeWaiting, NodePending:
		default:
			continue
		}
		rec := r.loggedSteps[ns.NodeID]
		switch {
		case rec != nil && rec.ended != nil && rec.ended.Status != NodeCompleted:
			r.stateMu.Lock()
			ns.Status, ns.Error, ns.FinishedAt, ns.Wait = rec.ended.Status, rec.ended.Error, &now, nil
			r.stateMu.Unlock()
			r.markDirty(i)
		case ns.Visits > 0 && (r.restartRetry[i] || ns.Status == NodeWaiting):
			// In flight at the end, its end not logged: as complete and
			// end would have ended it.
			r.stateMu.Lock()
			ns.Status, ns.Error, ns.FinishedAt, ns.Wait = NodeFailed, string(r.loggedEnd), &now, nil
			r.stateMu.Unlock()
			r.markDirty(i)
		}
	}
	r.queue, r.waiting, r.redecide = nil, nil, nil
	for _, i := range r.pending {
		r.inPending[i] = false
	}
	r.pending = r.pending[:0]
	r.ending, r.endReason = r.loggedEnd, r.loggedReason
	if r.endReason == "" && r.ending == StatusFailed {
		r.endReason = r.failSummary()
	}
	r.loggedSteps = nil
}
