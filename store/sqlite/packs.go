package sqlite

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/switchyard/switchyard/engine"
)

// Event packs. A run_events row holds the events of one run that reach one
// commit together (at most maxPack, consecutive seqs, one owner): its own
// columns are the first event, n counts the events and more holds the
// others (packEvents' form). The single writer is what bounds SQLite's
// throughput (at 8 cores it ran 94 % of a core while the others idled),
// and a row costs it about as much whatever it holds: a short run's twelve
// events took twelve rows, and take 4.7 on average under `load runs`.
// With the writer's memory of owners and tails (writer.fenced, .tails)
// that is a quarter less of the writer's CPU per run.

// maxPack bounds the events of one row. Events(after) reads from the row
// holding after+1, so it decodes and drops at most this many it skips.
const maxPack = 32

// packFormat is the first byte of more: the form of what follows.
const packFormat = 1

// heldEvent is an emitted event waiting in wtx.held, and where to say
// whether it was written (its op's Written: wtx cannot name the op type,
// which is defined through it).
type heldEvent struct {
	ev      *engine.Event
	written *bool
}

// flushRun writes the held events of runID.
func (t *wtx) flushRun(runID string) error {
	ops, ok := t.held[runID]
	if !ok {
		return nil
	}
	delete(t.held, runID)
	return t.writeHeld(ops)
}

// flushAll writes every run's held events.
func (t *wtx) flushAll() error {
	for id := range t.held {
		if err := t.flushRun(id); err != nil {
			return err
		}
	}
	return nil
}

// writeHeld writes one run's emitted events, in order, as few rows as
// they allow: a row ends where the seqs stop following each other, the
// owner changes or it is full. Each op is marked Written or not.
func (t *wtx) writeHeld(ops []heldEvent) error {
	t.evs = t.evs[:0]
	for _, o := range ops {
		t.evs = append(t.evs, o.ev)
	}
	for evs := t.evs; len(ops) > 0; {
		k := packLen(evs)
		seg := ops[:k]
		ops = ops[k:]
		written, err := t.writeEvents(evs[:k], false)
		evs = evs[k:]
		if err != nil {
			return err
		}
		if written || len(seg) == 1 {
			for _, o := range seg {
				*o.written = written
			}
			continue
		}
		// Some seq of the pack is stored already: each event on its own,
		// as they were before packs, so the others are not lost.
		for _, o := range seg {
			if *o.written, err = t.writeEvents([]*engine.Event{o.ev}, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeEvents inserts evs (one run and owner, consecutive seqs, at most
// maxPack) as one row, and reports whether it did: not when the run is
// unknown, its owner is another, or one of the seqs is stored. created
// says the run was made in this transaction by evs' owner.
func (t *wtx) writeEvents(evs []*engine.Event, created bool) (bool, error) {
	e := evs[0]
	last := evs[len(evs)-1].Seq
	w := t.w
	tail, ok := w.tails[e.RunID]
	if created {
		tail, ok = 1, true
	}
	if !ok {
		// Once per run and process (or after forgetRuns): a log the writer
		// has not written yet in this process.
		if err := t.queryRow(sqlEventsTail, []any{e.RunID}, &tail); err != nil {
			return false, fmt.Errorf("append events %s#%d-%d: tail: %w", e.RunID, e.Seq, last, err)
		}
	}
	checkOwner := !created && !(e.Owner != "" && w.fenced[e.RunID] == e.Owner)
	checkOverlap := e.Seq < tail // fills a gap or repeats a seq: rare
	b := t.c.bind(insEvent[b2i(checkOwner)][b2i(checkOverlap)])
	b.text(e.RunID)
	b.int64(e.Seq)
	b.text(e.NodeID)
	b.text(e.Type)
	b.text(e.Content)
	b.int64(toMicros(e.Timestamp))
	b.textBytes(e.Data)
	b.int64(int64(len(evs)))
	if len(evs) > 1 {
		t.more = packEvents(t.more[:0], evs[1:])
		b.blob(t.more)
	} else {
		b.null()
	}
	if checkOwner {
		b.text(e.RunID)
		b.text(e.Owner)
		b.text(e.Owner)
	}
	if checkOverlap {
		b.text(e.RunID)
		b.int64(last)
		b.int64(e.Seq)
	}
	n, err := t.c.run(&b)
	if err != nil {
		return false, fmt.Errorf("append events %s#%d-%d: %w", e.RunID, e.Seq, last, err)
	}
	if n != 1 {
		return false, nil
	}
	if e.Owner != "" {
		w.fenced[e.RunID] = e.Owner
	}
	w.tails[e.RunID] = max(tail, last+1)
	return true, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// packEvents appends evs in more's form: packFormat, then per event its
// node id, type and content (each a uvarint length and the bytes), its
// time (a varint of Unix microseconds) and its data (a uvarint of its
// length plus one, 0 for none, and the bytes). Seqs are not stored: they
// follow the row's. Bytes, not JSON: content is whatever a step printed,
// kept as it came.
func packEvents(b []byte, evs []*engine.Event) []byte {
	b = append(b, packFormat)
	for _, e := range evs {
		b = binary.AppendUvarint(b, uint64(len(e.NodeID)))
		b = append(b, e.NodeID...)
		b = binary.AppendUvarint(b, uint64(len(e.Type)))
		b = append(b, e.Type...)
		b = binary.AppendUvarint(b, uint64(len(e.Content)))
		b = append(b, e.Content...)
		b = binary.AppendVarint(b, toMicros(e.Timestamp))
		if len(e.Data) == 0 {
			b = binary.AppendUvarint(b, 0)
		} else {
			b = binary.AppendUvarint(b, uint64(len(e.Data))+1)
			b = append(b, e.Data...)
		}
	}
	return b
}

var errBadPack = errors.New("malformed event pack")

// ExpandEvents appends the events of one run_events row to out: first (the
// row's own columns, as an event) and the n-1 others more holds. Tools
// that read the SQLite file directly (switchyard db copy, the fault
// tests) read events through it.
func ExpandEvents(out []engine.Event, first engine.Event, n int64, more []byte) ([]engine.Event, error) {
	out = append(out, first)
	if n <= 1 {
		return out, nil
	}
	if len(more) == 0 || more[0] != packFormat {
		return out, fmt.Errorf("run %s event %d: %w (format)", first.RunID, first.Seq, errBadPack)
	}
	b := more[1:]
	str := func() (string, bool) {
		l, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l {
			return "", false
		}
		s := string(b[k : k+int(l)])
		b = b[k+int(l):]
		return s, true
	}
	for i := int64(1); i < n; i++ {
		ev := engine.Event{RunID: first.RunID, Seq: first.Seq + i}
		var ok1, ok2, ok3 bool
		ev.NodeID, ok1 = str()
		ev.Type, ok2 = str()
		ev.Content, ok3 = str()
		ts, k := binary.Varint(b)
		if !ok1 || !ok2 || !ok3 || k <= 0 {
			return out, fmt.Errorf("run %s event %d: %w", first.RunID, ev.Seq, errBadPack)
		}
		b = b[k:]
		ev.Timestamp = fromMicros(ts)
		l, k := binary.Uvarint(b)
		if k <= 0 || (l > 0 && uint64(len(b)-k) < l-1) {
			return out, fmt.Errorf("run %s event %d: %w", first.RunID, ev.Seq, errBadPack)
		}
		b = b[k:]
		if l > 0 {
			ev.Data = append([]byte(nil), b[:l-1]...)
			b = b[l-1:]
		}
		out = append(out, ev)
	}
	if len(b) != 0 {
		return out, fmt.Errorf("run %s event %d: %w (trailing bytes)", first.RunID, first.Seq, errBadPack)
	}
	return out, nil
}

// writeCreated writes the events a run is created with, packed: the run
// was made in this transaction, so they are its first.
func (t *wtx) writeCreated(evs []engine.Event) error {
	t.evs = t.evs[:0]
	for i := range evs {
		t.evs = append(t.evs, &evs[i])
	}
	for all := t.evs; len(all) > 0; {
		k := packLen(all)
		written, err := t.writeEvents(all[:k], true)
		if err != nil {
			return err
		}
		if !written {
			return fmt.Errorf("events %d-%d of a new run: not written (seqs out of order?)", all[0].Seq, all[k-1].Seq)
		}
		all = all[k:]
	}
	return nil
}

// packLen is how many of evs (one run's, in order) the next row takes: up
// to where the seqs stop following each other, the owner changes, or
// maxPack.
func packLen(evs []*engine.Event) int {
	k := 1
	for k < len(evs) && k < maxPack && evs[k].Seq == evs[k-1].Seq+1 && evs[k].Owner == evs[0].Owner {
		k++
	}
	return k
}
