package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
)

var eventsTests = []test{
	{"EventsInOrder", runsOnly(testEvents)},
	{"WritesAreFencedByOwner", runsOnly(testFencing)},
	{"OnCommitSeesCommittedEventsInOrder", testOnCommitOrder},
	{"BadEventDoesNotPoisonBatch", testBadEvent},
	{"FirstEventsOfAPage", testFirstEvents},
	{"KeptLogIsTheStoredLog", testKeptLog},
}

func event(runID string, seq int64) *engine.Event {
	ev := &engine.Event{
		Seq:       seq,
		RunID:     runID,
		NodeID:    fmt.Sprintf("node-%d", seq%3),
		Type:      engine.EvLLMDelta,
		Content:   fmt.Sprintf("chunk %d of %s", seq, runID),
		Timestamp: t0.Add(time.Duration(seq) * 1001 * time.Microsecond),
	}
	if seq%2 == 0 {
		ev.Data = json.RawMessage(fmt.Sprintf(`{"seq":%d,"tokens":[1,2,3]}`, seq))
	}
	return ev
}

func checkEvents(t *testing.T, what string, got []engine.Event, runID string, from, to int64) {
	t.Helper()
	if want := int(to - from + 1); len(got) != want {
		t.Fatalf("%s: got %d events, want %d (seq %d..%d)", what, len(got), want, from, to)
	}
	for i, g := range got {
		w := event(runID, from+int64(i))
		if g.Seq != w.Seq || g.RunID != w.RunID || g.NodeID != w.NodeID || g.Type != w.Type ||
			g.Content != w.Content || !g.Timestamp.Equal(w.Timestamp) || !bytes.Equal(g.Data, w.Data) {
			t.Fatalf("%s: event %d = %+v, want %+v", what, i, g, *w)
		}
	}
}

func testEvents(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r1 := newRun("run-ev-1", engine.StatusRunning, t0)
	r2 := newRun("run-ev-2", engine.StatusRunning, t0)
	r3 := newRun("run-ev-3", engine.StatusRunning, t0)
	create(t, s, r1)
	create(t, s, r2)
	create(t, s, r3)

	// One struct reused for every Emit, as a producer with a buffer might.
	var buf engine.Event
	for i := int64(1); i <= 100; i++ {
		buf = *event(r1.ID, i)
		s.Emit(&buf)
		if i <= 50 {
			buf = *event(r2.ID, i)
			s.Emit(&buf)
		}
	}
	// Data mutated after Emit must not reach the store.
	ev := event(r1.ID, 101)
	data := []byte(`{"seq":101,"tokens":[1,2,3]}`)
	ev.Data = data
	s.Emit(ev)
	copy(data, `{"XXX"`)

	// A checkpoint is ordered after the run's events: once it returns they
	// are all stored.
	must(t, s.Checkpoint(ctx, r1, nil), "Checkpoint r1")
	must(t, s.Checkpoint(ctx, r2, nil), "Checkpoint r2")

	all, err := s.Events(ctx, r1.ID, 0, 0)
	must(t, err, "Events r1")
	if len(all) != 101 {
		t.Fatalf("Events r1: got %d, want 101", len(all))
	}
	checkEvents(t, "Events r1", all[:100], r1.ID, 1, 100)
	if got := string(all[100].Data); got != `{"seq":101,"tokens":[1,2,3]}` {
		t.Errorf("event 101 data = %s: changed by the caller after Emit", got)
	}

	page, err := s.Events(ctx, r1.ID, 40, 10)
	must(t, err, "Events after 40 limit 10")
	checkEvents(t, "Events after 40 limit 10", page, r1.ID, 41, 50)

	page, err = s.Events(ctx, r1.ID, 95, 3)
	must(t, err, "Events after 95 limit 3")
	checkEvents(t, "Events after 95 limit 3", page, r1.ID, 96, 98)

	page, err = s.Events(ctx, r1.ID, 101, 0)
	must(t, err, "Events after the last")
	if len(page) != 0 {
		t.Errorf("Events after the last seq: got %d, want 0", len(page))
	}

	ev2, err := s.Events(ctx, r2.ID, 0, -1)
	must(t, err, "Events r2")
	checkEvents(t, "Events r2", ev2, r2.ID, 1, 50)

	none, err := s.Events(ctx, r3.ID, 0, 0)
	must(t, err, "Events of a run without events")
	if len(none) != 0 {
		t.Errorf("Events of a run without events: got %d", len(none))
	}

	_, _, maxSeq, err := s.LoadRun(ctx, r1.ID)
	must(t, err, "LoadRun")
	if maxSeq != 101 {
		t.Errorf("LoadRun maxSeq = %d, want 101", maxSeq)
	}
}

// testFencing: a header checkpoint or an event from an owner that no longer
// holds the run writes nothing.
func testFencing(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r := newRun("run-fence", engine.StatusRunning, t0)
	create(t, s, r)
	must(t, s.AcquireRun(ctx, r.ID, "A", "", t0, t0.Add(time.Second)), "AcquireRun A")
	s.Emit(&engine.Event{RunID: r.ID, Seq: 1, NodeID: "n", Type: "step_start", Timestamp: t0, Owner: "A"})
	// A stalls; its lease expires and B takes over.
	must(t, s.AcquireRun(ctx, r.ID, "B", "", t0.Add(time.Minute), t0.Add(time.Hour)), "AcquireRun B")
	s.Emit(&engine.Event{RunID: r.ID, Seq: 2, NodeID: "n", Type: "from-A", Timestamp: t0, Owner: "A"})
	s.Emit(&engine.Event{RunID: r.ID, Seq: 2, NodeID: "n", Type: "from-B", Timestamp: t0, Owner: "B"})
	hdrA := *r
	hdrA.Owner = "A"
	hdrA.Status = engine.StatusFailed
	mustIs(t, s.Checkpoint(ctx, &hdrA, []*engine.NodeState{{NodeID: "n", Status: engine.NodeFailed}}), engine.ErrConflict,
		"checkpoint by the owner that lost the run")
	hdrB := *r
	hdrB.Owner = "B"
	must(t, s.Checkpoint(ctx, &hdrB, []*engine.NodeState{{NodeID: "n", Status: engine.NodeCompleted}}), "checkpoint by the holder")
	got, nodes, last, err := s.LoadRun(ctx, r.ID)
	must(t, err, "LoadRun")
	if got.Status != engine.StatusRunning || len(nodes) != 1 || nodes[0].Status != engine.NodeCompleted || last != 2 {
		t.Fatalf("after fencing: status %s nodes %+v last %d", got.Status, nodes, last)
	}
	evs, err := s.Events(ctx, r.ID, 0, 0)
	must(t, err, "Events")
	if len(evs) != 2 || evs[1].Type != "from-B" {
		t.Fatalf("events %+v: the fenced owner's event was written", evs)
	}
}

func testOnCommitOrder(t *testing.T, open Open) {
	ctx := ctxT(t)
	s := open(t, Options{})
	runs := []*engine.Run{newRun("run-h1", engine.StatusRunning, t0), newRun("run-h2", engine.StatusRunning, t0)}
	for _, r := range runs {
		must(t, s.CreateRun(ctx, r, nil, nil), "CreateRun")
	}

	var mu sync.Mutex
	seen := map[string][]int64{}
	var headers []string
	var problems []string
	var total atomic.Int64
	s.OnCommit(func(events []engine.Event, rs []*engine.Run) {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range events {
			seen[e.RunID] = append(seen[e.RunID], e.Seq)
		}
		for _, r := range rs {
			headers = append(headers, r.ID+":"+string(r.Status))
		}
		// Everything reported is already readable: it was committed.
		for _, r := range []string{"run-h1", "run-h2"} {
			seqs := seen[r]
			if len(seqs) == 0 {
				continue
			}
			got, err := s.Events(ctx, r, seqs[len(seqs)-1]-1, 1)
			if err != nil || len(got) != 1 {
				problems = append(problems, fmt.Sprintf("%s seq %d not readable in hook: %v", r, seqs[len(seqs)-1], err))
			}
		}
		total.Add(int64(len(events)))
	})
	s.OnCommit(func([]engine.Event, []*engine.Run) { panic("a broken hook") }) // must not kill the writer

	const n = 2000
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Go(func() {
			for i := int64(1); i <= n; i++ {
				s.Emit(event(r.ID, i))
				if i%500 == 0 {
					c := *r
					c.Status = engine.RunStatus(fmt.Sprintf("s%d", i))
					if err := s.Checkpoint(ctx, &c, nil); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	// Hooks may run after Checkpoint has returned: wait for them.
	waitFor(t, "hooks to see every event", func() bool { return total.Load() == 2*n })

	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Error(p)
	}
	for _, r := range runs {
		seqs := seen[r.ID]
		if len(seqs) != n {
			t.Errorf("%s: hooks saw %d events, want %d", r.ID, len(seqs), n)
		}
		for i, sq := range seqs {
			if sq != int64(i+1) {
				t.Fatalf("%s: hook event %d has seq %d: out of order", r.ID, i, sq)
			}
		}
	}
	if len(headers) != 8 { // 4 checkpoints per run
		t.Errorf("hooks saw run headers %v, want 8", headers)
	}
	// A store that commits in transactions batches events (the in-memory
	// store has no transactions: 0).
	st := s.Stats()
	if st.Batches >= 2*n {
		t.Errorf("%d commits for %d events: events are not batched", st.Batches, 2*n)
	}
	// The writer's busy time counts every committed batch (a batch takes
	// microseconds at least); no batches, no time.
	if (st.Batches > 0) != (st.WriterBusy > 0) {
		t.Errorf("writer busy %v after %d commits", st.WriterBusy, st.Batches)
	}
}

// testBadEvent: events of unknown runs and duplicate seqs are skipped (and
// counted); the rest of their batch commits, gapless.
func testBadEvent(t *testing.T, open Open) {
	ctx := ctxT(t)
	s := open(t, Options{})
	r := newRun("run-ok", engine.StatusRunning, t0)
	must(t, s.CreateRun(ctx, r, nil, nil), "CreateRun")
	emit := func(runID string, seq int64, content string) {
		e := event(runID, seq)
		e.Content = content
		s.Emit(e)
	}
	emit(r.ID, 1, "first")
	emit("no-such-run", 1, "orphan") // unknown run
	emit(r.ID, 2, "second")
	emit(r.ID, 2, "duplicate") // same seq again
	emit(r.ID, 3, "third")
	must(t, s.Checkpoint(ctx, r, nil), "Checkpoint")
	evs, err := s.Events(ctx, r.ID, 0, 0)
	must(t, err, "Events")
	var contents []string
	for _, e := range evs {
		contents = append(contents, e.Content)
	}
	if !slices.Equal(contents, []string{"first", "second", "third"}) {
		t.Fatalf("events %v, want first second third", contents)
	}
	if st := s.Stats(); st.EventsDropped != 2 || st.WriteErrors != 0 {
		t.Errorf("EventsDropped %d WriteErrors %d, want 2 and 0", st.EventsDropped, st.WriteErrors)
	}
}

// testFirstEvents: FirstEvents returns, in one call, the first event of
// each listed run whose first event has the asked type (a fork's
// run_forked), and nothing for other runs, unknown ids or later events of
// that type.
func testFirstEvents(t *testing.T, open Open) {
	s := openWithWorkflows(t, open)
	ctx := ctxT(t)
	forked := func(runID string, seq int64, parent string) *engine.Event {
		return &engine.Event{Seq: seq, RunID: runID, NodeID: engine.SystemNodeID, Type: engine.EvRunForked,
			Content: "forked from " + parent, Timestamp: t0.Add(time.Duration(seq) * time.Millisecond),
			Data: json.RawMessage(fmt.Sprintf(`{"parentRunId":%q,"fromNode":"b"}`, parent))}
	}
	var ids []string
	for i := range 7 {
		r := newRun(fmt.Sprintf("run-first-%d", i), engine.StatusRunning, t0)
		create(t, s, r)
		ids = append(ids, r.ID)
		switch i % 3 {
		case 0: // a fork: run_forked first
			s.Emit(forked(r.ID, 1, "parent-"+r.ID))
			s.Emit(event(r.ID, 2))
		case 1: // not a fork: another event first, run_forked later
			s.Emit(event(r.ID, 1))
			s.Emit(forked(r.ID, 2, "not-first"))
		case 2: // no events at all
		}
		must(t, s.Checkpoint(ctx, r, nil), "Checkpoint "+r.ID)
	}
	got, err := s.FirstEvents(ctx, append(ids, "run-first-unknown"), engine.EvRunForked)
	must(t, err, "FirstEvents")
	want := map[string]bool{"run-first-0": true, "run-first-3": true, "run-first-6": true}
	if len(got) != len(want) {
		t.Fatalf("FirstEvents: got runs %v, want %v", slices.Sorted(maps.Keys(got)), want)
	}
	for id := range want {
		ev, ok := got[id]
		w := forked(id, 1, "parent-"+id)
		if !ok || ev.RunID != id || ev.Seq != 1 || ev.Type != w.Type || ev.NodeID != w.NodeID ||
			ev.Content != w.Content || !ev.Timestamp.Equal(w.Timestamp) || !bytes.Equal(ev.Data, w.Data) {
			t.Errorf("FirstEvents[%s] = %+v (found %v), want %+v", id, ev, ok, *w)
		}
	}
	none, err := s.FirstEvents(ctx, nil, engine.EvRunForked)
	must(t, err, "FirstEvents of no runs")
	if len(none) != 0 {
		t.Errorf("FirstEvents of no runs: %v", none)
	}
}
