package sqlite

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
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

// TestWriterForgetsRunsOnPrune: what the writer knows of runs' logs and
// owners (so it can leave out the guards of an event row) is dropped once
// a prune deleted runs, and a deleted run's late event is skipped, not a
// foreign key error that fails its batch.
func TestWriterForgetsRunsOnPrune(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t)
	r := newRun("run-pruned")
	r.Owner, r.LeaseUntil = "A", t0.Add(time.Hour)
	mustOK(t, s.CreateRun(ctx, r, nil, []*engine.Event{{RunID: r.ID, Seq: 1, NodeID: "n", Type: "x", Timestamp: t0, Owner: "A"}}), "CreateRun")
	mustOK(t, s.CreateRun(ctx, newRun("run-kept"), nil, nil), "CreateRun")
	for seq := int64(2); seq <= 4; seq++ {
		e := packedEvent(r.ID, seq)
		e.Owner = "A"
		s.Emit(e)
	}
	fin := *r
	fin.Status, fin.FinishedAt = engine.StatusCompleted, &t0
	mustOK(t, s.Checkpoint(ctx, &fin, nil), "finish")
	if s.w.tails[r.ID] != 5 {
		t.Fatalf("writer's tail of the run: %d, want 5", s.w.tails[r.ID])
	}
	got, err := s.PruneRuns(ctx, store.Prune{Before: t0.Add(time.Hour)})
	mustOK(t, err, "PruneRuns")
	if got.Runs != 1 || got.Events != 4 {
		t.Fatalf("pruned %+v, want 1 run and its 4 events", got)
	}
	s.Emit(packedEvent(r.ID, 5))
	s.Emit(packedEvent("run-kept", 1))
	mustOK(t, s.Checkpoint(ctx, newRun("run-kept"), nil), "barrier")
	if _, ok := s.w.tails[r.ID]; ok {
		t.Errorf("the writer still knows the pruned run's log")
	}
	evs, err := s.Events(ctx, "run-kept", 0, 0)
	mustOK(t, err, "Events")
	if len(evs) != 1 {
		t.Errorf("run-kept: %d events, want the one emitted beside the pruned run's", len(evs))
	}
}

// TestWriterSeesOtherProcessesWrites: two stores on one file (two
// processes): once B takes a run over, A's late events are skipped even
// though A's writer had checked A as the owner before, and a log B wrote
// meanwhile is not overwritten by A's idea of where it ends.
func TestWriterSeesOtherProcessesWrites(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "switchyard.db")
	a, b := openAt(t, path), openAt(t, path)
	r := newRun("run-shared")
	mustOK(t, a.CreateRun(ctx, r, nil, nil), "CreateRun")
	mustOK(t, a.AcquireRun(ctx, r.ID, "A", "", t0, t0.Add(time.Second)), "AcquireRun A")
	for seq := int64(1); seq <= 3; seq++ {
		e := packedEvent(r.ID, seq)
		e.Owner = "A"
		a.Emit(e)
	}
	hdr := *r
	hdr.Owner = "A"
	mustOK(t, a.Checkpoint(ctx, &hdr, nil), "A's barrier")

	// B takes the run over (A's lease ran out) and writes on.
	mustOK(t, b.AcquireRun(ctx, r.ID, "B", "", t0.Add(time.Minute), t0.Add(time.Hour)), "AcquireRun B")
	for seq := int64(4); seq <= 5; seq++ {
		e := packedEvent(r.ID, seq)
		e.Owner, e.Content = "B", fmt.Sprintf("from B %d", seq)
		b.Emit(e)
	}
	hdr.Owner = "B"
	mustOK(t, b.Checkpoint(ctx, &hdr, nil), "B's barrier")

	for _, seq := range []int64{4, 6} { // over B's log, and past it
		late := packedEvent(r.ID, seq)
		late.Owner, late.Content = "A", "late from A"
		a.Emit(late)
	}
	mustOK(t, a.CreateRun(ctx, newRun("run-a-barrier"), nil, nil), "A's barrier")
	evs, err := b.Events(ctx, r.ID, 0, 0)
	mustOK(t, err, "Events")
	if len(evs) != 5 || evs[3].Content != "from B 4" || evs[4].Content != "from B 5" {
		t.Fatalf("log after the takeover: %+v", evs)
	}
}

// TestEventPacksDownMigration: going down from migration 00012 is refused
// while a row holds several events (SQL cannot unpack them, and an older
// binary would read only the first), and goes through once none does.
func TestEventPacksDownMigration(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "switchyard.db")
	s := openAt(t, path)
	mustOK(t, s.CreateRun(ctx, newRun("run-packed"), nil, []*engine.Event{packedEvent("run-packed", 1), packedEvent("run-packed", 2)}), "CreateRun")
	if rows := eventRows(t, s, "run-packed"); rows != 1 {
		t.Fatalf("a run created with 2 events: %d rows, want 1 pack", rows)
	}
	mustOK(t, s.Close(), "Close")

	db, p := openMigrations(t, path)
	if _, err := p.DownTo(ctx, 11); err == nil || !strings.Contains(err.Error(), "CHECK constraint") {
		t.Fatalf("down to 11 with a pack stored: %v, want a CHECK constraint failure", err)
	}
	if v, err := p.GetDBVersion(ctx); err != nil || v != 12 {
		t.Fatalf("after the refused down: version %d, %v; want 12", v, err)
	}
	_, err := db.ExecContext(ctx, `DELETE FROM run_events WHERE n > 1`)
	mustOK(t, err, "delete packs")
	_, err = p.DownTo(ctx, 11)
	mustOK(t, err, "down to 11 without packs")
	var cols int
	mustOK(t, db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('run_events') WHERE name IN ('n', 'more')`).Scan(&cols), "columns")
	if cols != 0 {
		t.Errorf("after down: %d of n and more left", cols)
	}
}
