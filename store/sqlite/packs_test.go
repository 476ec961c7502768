package sqlite

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
)

// packedEvent is the i-th event of a run in these tests: node, type,
// content and data vary, data is absent on every third, and content holds
// bytes that are not UTF-8 (a step's raw output) on every fifth.
func packedEvent(runID string, seq int64) *engine.Event {
	e := &engine.Event{Seq: seq, RunID: runID, NodeID: fmt.Sprintf("node-%d", seq%4), Type: engine.EvOutput,
		Content: fmt.Sprintf("line %d", seq), Timestamp: t0.Add(time.Duration(seq) * time.Microsecond)}
	if seq%3 != 0 {
		e.Data = json.RawMessage(fmt.Sprintf(`{"seq":%d}`, seq))
	}
	if seq%5 == 0 {
		e.Content = "raw \xff\xfe bytes"
	}
	return e
}

func eventRows(t *testing.T, s *Store, runID string) int {
	t.Helper()
	var n int
	mustOK(t, s.rdb.QueryRow(`SELECT count(*) FROM run_events WHERE run_id = ?`, runID).Scan(&n), "count rows")
	return n
}

// TestEventsArePacked: the events of a run that reach one commit together
// take a row per 32 (not one each), and Events reads back exactly the
// reference log from every point with every limit; a gap in the seqs
// starts a new row.
func TestEventsArePacked(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t)
	for _, id := range []string{"run-a", "run-b", "run-other"} {
		mustOK(t, s.CreateRun(ctx, newRun(id), nil, nil), "CreateRun "+id)
	}
	// The writer waits in a commit of another run's event while the
	// events below queue up: they reach the next commits together.
	release := holdWriter(t, s, ev("run-other", 1, "x"), nil)
	want := map[string][]engine.Event{}
	emit := func(runID string, seq int64) {
		e := packedEvent(runID, seq)
		want[runID] = append(want[runID], *e)
		s.Emit(e)
	}
	for seq := int64(1); seq <= 100; seq++ {
		emit("run-a", seq)
		if seq <= 40 && seq != 20 { // run-b's log has a gap at 20
			emit("run-b", seq)
		}
	}
	release()
	mustOK(t, s.Checkpoint(ctx, newRun("run-a"), nil), "barrier")

	if rows := eventRows(t, s, "run-a"); rows > 8 {
		t.Errorf("run-a: 100 events in %d rows, want them packed (at most 8)", rows)
	}
	if rows := eventRows(t, s, "run-b"); rows < 2 || rows > 6 {
		t.Errorf("run-b: 39 events with a gap in %d rows, want 2 to 6", rows)
	}
	for runID, log := range want {
		_, _, last, err := s.LoadRun(ctx, runID)
		mustOK(t, err, "LoadRun")
		if last != log[len(log)-1].Seq {
			t.Errorf("%s: LoadRun's last seq %d, want %d", runID, last, log[len(log)-1].Seq)
		}
		for after := int64(0); after <= log[len(log)-1].Seq+1; after++ {
			for _, limit := range []int{0, 1, 3, 31, 32, 33, 200} {
				got, err := s.Events(ctx, runID, after, limit)
				mustOK(t, err, "Events")
				var ref []engine.Event
				for _, e := range log {
					if e.Seq > after && (limit <= 0 || len(ref) < limit) {
						ref = append(ref, e)
					}
				}
				if len(got) == 0 && len(ref) == 0 {
					continue
				}
				if !reflect.DeepEqual(got, ref) {
					t.Fatalf("%s: Events(after %d, limit %d) = %d events %v…, want %d", runID, after, limit,
						len(got), got[:min(len(got), 2)], len(ref))
				}
			}
		}
	}
}

// TestPackOverlappingStoredEventsKeepsTheRest: events whose seqs are stored
// already are skipped (as a duplicate row always was), one by one: a pack
// that overlaps the log does not take the new events down with it.
func TestPackOverlappingStoredEventsKeepsTheRest(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t)
	for _, id := range []string{"run-dup", "run-other"} {
		mustOK(t, s.CreateRun(ctx, newRun(id), nil, nil), "CreateRun "+id)
	}
	var written []int64
	s.OnCommit(func(evs []engine.Event, _ []*engine.Run) {
		for _, e := range evs {
			if e.RunID == "run-dup" {
				written = append(written, e.Seq)
			}
		}
	})
	// 1..10 in one commit (a pack), then 5 again, then 9..12 in one commit.
	release := holdWriter(t, s, ev("run-other", 1, "x"), nil)
	for seq := int64(1); seq <= 10; seq++ {
		s.Emit(packedEvent("run-dup", seq))
	}
	release()
	mustOK(t, s.Checkpoint(ctx, newRun("run-dup"), nil), "barrier")
	dup := packedEvent("run-dup", 5)
	dup.Content = "second 5"
	s.Emit(dup)
	mustOK(t, s.Checkpoint(ctx, newRun("run-dup"), nil), "barrier")
	release = holdWriter(t, s, ev("run-other", 2, "x"), nil)
	for seq := int64(9); seq <= 12; seq++ {
		e := packedEvent("run-dup", seq)
		e.Content = fmt.Sprintf("second %d", seq)
		s.Emit(e)
	}
	release()
	mustOK(t, s.Checkpoint(ctx, newRun("run-dup"), nil), "barrier")

	got, err := s.Events(ctx, "run-dup", 0, 0)
	mustOK(t, err, "Events")
	if len(got) != 12 {
		t.Fatalf("%d events, want 12", len(got))
	}
	for i, e := range got {
		want := packedEvent("run-dup", int64(i+1)).Content // the first 5, 9 and 10 stay
		if i+1 > 10 {
			want = fmt.Sprintf("second %d", i+1)
		}
		if e.Seq != int64(i+1) || e.Content != want {
			t.Errorf("event %d: seq %d content %q, want %q", i+1, e.Seq, e.Content, want)
		}
	}
	if !reflect.DeepEqual(written, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}) {
		t.Errorf("commit hooks saw %v written: the duplicates must not be reported", written)
	}
}

// FuzzExpandEvents: what packEvents writes ExpandEvents reads back as it
// was, and no bytes make ExpandEvents panic.
func FuzzExpandEvents(f *testing.F) {
	f.Add("n", "output", "hello", []byte(`{"a":1}`), int64(1700000000000000), uint8(3))
	f.Add("", "", "", []byte(nil), int64(-5), uint8(1))
	f.Add("node\x00", "t", "\xff\xfe", []byte(`null`), int64(0), uint8(31))
	f.Fuzz(func(t *testing.T, node, typ, content string, data []byte, ts int64, count uint8) {
		k := int64(count%maxPack) + 1
		first := engine.Event{RunID: "r", Seq: 7, NodeID: "first", Type: "t", Content: "c", Timestamp: fromMicros(1)}
		want := []engine.Event{first}
		var rest []*engine.Event
		for i := int64(1); i < k; i++ {
			e := engine.Event{RunID: "r", Seq: 7 + i, NodeID: node, Type: typ, Content: fmt.Sprint(content, i),
				Timestamp: fromMicros(ts + i)}
			if len(data) > 0 && i%2 == 1 {
				e.Data = json.RawMessage(data)
			}
			want = append(want, e)
			rest = append(rest, &want[len(want)-1])
		}
		var more []byte
		if k > 1 {
			more = packEvents(nil, rest)
		}
		got, err := ExpandEvents(nil, first, k, more)
		if err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip: got %+v, want %+v", got, want)
		}
		// Whatever the bytes: an error or events, never a panic.
		_, _ = ExpandEvents(nil, first, int64(count), []byte(content))
		_, _ = ExpandEvents(nil, first, int64(count), data)
	})
}
