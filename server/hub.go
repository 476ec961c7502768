package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/gorilla/websocket"

	"github.com/switchyard/switchyard/engine"
)

// hub fans committed events and run status changes out to subscribers.
// It is fed by store.OnCommit on the store's writer goroutine, so it never
// blocks: every subscriber has a queue bounded in bytes, and one that would
// exceed it is marked as overflowed (its connection is then closed as too
// slow, and the client reconnects with after=<last seq>).
type hub struct {
	limit int64 // bytes a subscriber may have queued
	// workflowOf names the source workflow of a run stored without a
	// workflow id (YAML runs); read once per run, then kept in states.
	workflowOf func(*engine.Run) string

	mu       sync.RWMutex
	runs     map[string]map[*runSub]struct{}
	statuses map[*statusSub]struct{}

	stMu   sync.Mutex
	states map[string]runState // last state of every non-terminal run
}

// runState is what the run list shows of a run.
type runState struct {
	Status          engine.RunStatus
	WorkflowID      string
	WaitingForInput bool
}

// liveEvent is one committed event shared by every subscriber of its run;
// it is encoded at most once, by the first subscriber that needs it.
type liveEvent struct {
	ev   engine.Event
	once sync.Once
	raw  []byte
	pm   *websocket.PreparedMessage
	err  error
}

func (le *liveEvent) encode() {
	le.once.Do(func() {
		le.raw, le.err = json.Marshal(&le.ev)
		if le.err == nil {
			le.pm, le.err = websocket.NewPreparedMessage(websocket.TextMessage, le.raw)
		}
	})
}

// overflow is closed once when a subscriber's queue was full.
type overflow struct {
	once sync.Once
	ch   chan struct{}
}

func newOverflow() overflow { return overflow{ch: make(chan struct{})} }

func (o *overflow) trip() { o.once.Do(func() { close(o.ch) }) }

func (o *overflow) tripped() bool {
	select {
	case <-o.ch:
		return true
	default:
		return false
	}
}

// queue is a subscriber's backlog, bounded in bytes. A push that would
// exceed the limit trips the overflow instead, unless the queue is empty:
// one commit, however large, always fits a subscriber that kept up, so a
// burst never disconnects a fast client.
type queue[T any] struct {
	mu     sync.Mutex
	items  []T
	bytes  int64
	limit  int64
	notify chan struct{} // capacity 1: "there is something to take"
	over   overflow
}

func newQueue[T any](limit int64) *queue[T] {
	return &queue[T]{limit: limit, notify: make(chan struct{}, 1), over: newOverflow()}
}

// push appends items of the given total size; it never blocks.
func (q *queue[T]) push(size int64, items ...T) {
	q.mu.Lock()
	if q.over.tripped() {
		q.mu.Unlock()
		return
	}
	if q.bytes > 0 && q.bytes+size > q.limit {
		q.items, q.bytes = nil, 0 // the subscriber is dropped: free its backlog
		q.mu.Unlock()
		q.over.trip()
		return
	}
	q.items = append(q.items, items...)
	q.bytes += size
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// take removes and returns everything queued.
func (q *queue[T]) take() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items, q.bytes = nil, 0
	return items
}

type runSub struct {
	runID string
	q     *queue[*liveEvent]
}

type statusSub struct {
	q *queue[[]byte]
}

// statusMsg is one message of GET /api/ws.
type statusMsg struct {
	RunID           string           `json:"runId"`
	Status          engine.RunStatus `json:"status"`
	WorkflowID      string           `json:"workflowId,omitempty"`
	WaitingForInput bool             `json:"waitingForInput"`
}

// eventSize estimates an event's encoded size for queue accounting.
func eventSize(ev *engine.Event) int64 {
	return int64(len(ev.Content) + len(ev.Data) + len(ev.NodeID) + len(ev.Type) + len(ev.RunID) + 96)
}

func newHub(limit int64) *hub {
	return &hub{
		limit:    limit,
		runs:     map[string]map[*runSub]struct{}{},
		statuses: map[*statusSub]struct{}{},
		states:   map[string]runState{},
	}
}

// loadActive seeds the run states (for metrics and change detection) with
// the runs that are not over yet.
func (h *hub) loadActive(ctx context.Context, st Store, log *slog.Logger) {
	for _, status := range []engine.RunStatus{engine.StatusPending, engine.StatusRunning,
		engine.StatusPaused, engine.StatusInterrupted} {
		runs, err := st.ListRuns(ctx, engine.RunFilter{Status: status, Limit: 1 << 20})
		if err != nil {
			log.Warn("list active runs", "status", status, "err", err)
			continue
		}
		h.stMu.Lock()
		for _, r := range runs {
			h.states[r.ID] = runState{Status: r.Status, WorkflowID: h.workflowFor(r), WaitingForInput: r.WaitingForInput}
		}
		h.stMu.Unlock()
	}
}

// workflowFor is the workflow a run belongs to, for the run list.
func (h *hub) workflowFor(r *engine.Run) string {
	if r.WorkflowID == "" && r.Kind == engine.KindYAML && h.workflowOf != nil {
		return h.workflowOf(r)
	}
	return r.WorkflowID
}

func (h *hub) subscribeRun(runID string) *runSub {
	s := &runSub{runID: runID, q: newQueue[*liveEvent](h.limit)}
	h.mu.Lock()
	m := h.runs[runID]
	if m == nil {
		m = map[*runSub]struct{}{}
		h.runs[runID] = m
	}
	m[s] = struct{}{}
	h.mu.Unlock()
	return s
}

func (h *hub) unsubscribeRun(s *runSub) {
	h.mu.Lock()
	if m := h.runs[s.runID]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(h.runs, s.runID)
		}
	}
	h.mu.Unlock()
}

func (h *hub) subscribeStatus() *statusSub {
	s := &statusSub{q: newQueue[[]byte](h.limit)}
	h.mu.Lock()
	h.statuses[s] = struct{}{}
	h.mu.Unlock()
	return s
}

func (h *hub) unsubscribeStatus(s *statusSub) {
	h.mu.Lock()
	delete(h.statuses, s)
	h.mu.Unlock()
}

// onCommit is the store commit hook. It runs on the writer goroutine and
// must never block.
func (h *hub) onCommit(events []engine.Event, runs []*engine.Run) {
	var changes []statusMsg
	if len(runs) > 0 {
		h.stMu.Lock()
		for _, r := range runs {
			prev, ok := h.states[r.ID]
			wf := prev.WorkflowID
			if !ok || wf == "" {
				wf = h.workflowFor(r)
			}
			st := runState{Status: r.Status, WorkflowID: wf, WaitingForInput: r.WaitingForInput}
			if r.Status.Terminal() {
				delete(h.states, r.ID)
			} else {
				h.states[r.ID] = st
			}
			if !ok || prev != st {
				changes = append(changes, statusMsg{RunID: r.ID, Status: st.Status, WorkflowID: st.WorkflowID,
					WaitingForInput: st.WaitingForInput})
			}
		}
		h.stMu.Unlock()
	}

	h.mu.RLock()
	defer h.mu.RUnlock()
	if len(h.runs) > 0 {
		// Group the commit's events by run: each subscriber gets its run's
		// share in one push.
		var byRun map[string][]*liveEvent
		var sizes map[string]int64
		for i := range events {
			id := events[i].RunID
			if len(h.runs[id]) == 0 {
				continue
			}
			if byRun == nil {
				byRun, sizes = map[string][]*liveEvent{}, map[string]int64{}
			}
			byRun[id] = append(byRun[id], &liveEvent{ev: events[i]})
			sizes[id] += eventSize(&events[i])
		}
		for id, les := range byRun {
			for s := range h.runs[id] {
				s.q.push(sizes[id], les...)
			}
		}
	}
	if len(h.statuses) > 0 {
		for _, m := range changes {
			raw, err := json.Marshal(m)
			if err != nil {
				continue
			}
			for s := range h.statuses {
				s.q.push(int64(len(raw)), raw)
			}
		}
	}
}

// countByStatus counts the runs that are not over, by status.
func (h *hub) countByStatus() map[engine.RunStatus]int {
	out := map[engine.RunStatus]int{}
	h.stMu.Lock()
	for _, st := range h.states {
		out[st.Status]++
	}
	h.stMu.Unlock()
	return out
}

// subscriberCounts returns the number of run-event and status subscribers.
func (h *hub) subscriberCounts() (runs, statuses int) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, m := range h.runs {
		runs += len(m)
	}
	return runs, len(h.statuses)
}

// broadcastStatus queues raw (one message of GET /api/ws) for every
// status subscriber; it never blocks.
func (h *hub) broadcastStatus(raw []byte) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.statuses {
		s.q.push(int64(len(raw)), raw)
	}
}
