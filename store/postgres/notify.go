package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store/internal/commit"
)

// Live events across processes. Every commit that wrote events or run
// headers sends, in its own transaction, a notification naming the runs it
// touched (PostgreSQL delivers it only if, and once, that commit happens).
// A store opened WithRemoteCommits listens, reads what other processes
// committed and passes it to its OnCommit hooks, as if it had committed it
// itself: a server shows live the runs that another process drives.

// notifyChannel is the LISTEN/NOTIFY channel of commit notices.
const notifyChannel = "switchyard_commits"

// cancelChannel carries the id of a run whose cancel was just requested.
const cancelChannel = "switchyard_cancels"

// OnCancelRequest registers h, called (on the listening goroutine; it must
// not block) whenever any process requests a cancel, so the owner looks for
// cancel requests at once instead of at its next poll. Only a store opened
// WithRemoteCommits listens; h is also called after each reconnect, as
// requests may have come while no connection listened.
func (s *Store) OnCancelRequest(h func()) {
	s.cancelMu.Lock()
	defer s.cancelMu.Unlock()
	s.cancelHooks = append(s.cancelHooks, h)
}

func (s *Store) cancelRequested() {
	s.cancelMu.Lock()
	hooks := slices.Clone(s.cancelHooks)
	s.cancelMu.Unlock()
	for _, h := range hooks {
		h()
	}
}

// maxNote keeps a notice under PostgreSQL's 8000-byte payload limit.
const maxNote = 7000

// notice is the payload of one notification.
type notice struct {
	Origin string      `json:"o"` // the committing Store, to skip its own notices
	Runs   []noticeRun `json:"r"`
}

type noticeRun struct {
	ID      string `json:"i"`
	FromSeq int64  `json:"s,omitempty"` // lowest seq appended (0: no events)
	Header  bool   `json:"h,omitempty"` // the run header was written
}

// commitNotes builds the notification payloads of batch: the runs it
// touches, in first-touched order, split to fit the payload limit.
func (s *Store) commitNotes(batch []op) []string {
	idx := map[string]int{}
	var runs []noticeRun
	touch := func(id string) *noticeRun {
		i, ok := idx[id]
		if !ok {
			i = len(runs)
			idx[id] = i
			runs = append(runs, noticeRun{ID: id})
		}
		return &runs[i]
	}
	seq := func(r *noticeRun, sq int64) {
		if r.FromSeq == 0 || sq < r.FromSeq {
			r.FromSeq = sq
		}
	}
	for i := range batch {
		o := &batch[i]
		switch o.Kind {
		case commit.Event:
			seq(touch(o.Ev.RunID), o.Ev.Seq)
		case commit.Sync:
			if o.Run != nil {
				touch(o.Run.ID).Header = true
			}
			for j := range o.Evs {
				seq(touch(o.Evs[j].RunID), o.Evs[j].Seq)
			}
		}
	}
	if len(runs) == 0 {
		return nil
	}
	var notes []string
	n := notice{Origin: s.id}
	size := 0
	flush := func() {
		b, _ := json.Marshal(n) // strings and numbers: cannot fail
		notes = append(notes, string(b))
		n.Runs, size = nil, 0
	}
	for _, r := range runs {
		l := len(r.ID) + 40
		if size+l > maxNote && len(n.Runs) > 0 {
			flush()
		}
		n.Runs = append(n.Runs, r)
		size += l
	}
	flush()
	return notes
}

// listener follows other processes' commits for a Store opened
// WithRemoteCommits.
type listener struct {
	s *Store
	// next is, per run, the seq of the next event to deliver. A run enters
	// it with its first notice, leaves it when it ends.
	next map[string]int64
}

// defaultListenRetry is the pause before reconnecting a lost listener.
const defaultListenRetry = time.Second

// listen runs until ctx ends: LISTEN on a connection of its own, deliver
// each notice, and after a lost connection reconnect and catch up the
// runs it follows (notices sent while it was away are lost; the events are
// not).
func (s *Store) listen(ctx context.Context) {
	defer close(s.listenDone)
	l := &listener{s: s, next: map[string]int64{}}
	for ctx.Err() == nil {
		err := l.session(ctx)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("postgres: live events from other processes interrupted; reconnecting", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.listenRetry):
		}
	}
}

func (l *listener) session(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, l.s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel+"; LISTEN "+cancelChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	l.s.cancelRequested() // requests made while no connection listened
	l.s.listening.Store(true)
	defer l.s.listening.Store(false)
	// What was committed while no connection listened.
	if err := l.catchUp(ctx); err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel == cancelChannel {
			l.s.cancelRequested()
			continue
		}
		var nt notice
		if err := json.Unmarshal([]byte(n.Payload), &nt); err != nil {
			l.s.log.Warn("postgres: unreadable commit notice", "err", err)
			continue
		}
		if nt.Origin == l.s.id {
			continue // our own commit: the writer reported it
		}
		if err := l.deliver(ctx, nt.Runs); err != nil {
			return err
		}
	}
}

func (l *listener) catchUp(ctx context.Context) error {
	runs := make([]noticeRun, 0, len(l.next))
	for id := range l.next {
		runs = append(runs, noticeRun{ID: id, Header: true})
	}
	slices.SortFunc(runs, func(a, b noticeRun) int { return strings.Compare(a.ID, b.ID) })
	return l.deliver(ctx, runs)
}

// deliver reads, for each run, the events after the last one delivered and
// the header when it was written, and passes them to the hooks. The reads
// of all the runs of a notice go to the server in one round trip (two when
// it names runs not followed yet without events).
func (l *listener) deliver(ctx context.Context, runs []noticeRun) error {
	if len(runs) == 0 {
		return nil
	}
	// A header-only notice of a run not followed yet: its later events
	// start after what is stored now.
	start := map[string]int64{}
	pre := &pgx.Batch{}
	for _, r := range runs {
		if _, known := l.next[r.ID]; !known && r.FromSeq == 0 {
			pre.Queue(`SELECT coalesce(max(seq), 0) FROM run_events WHERE run_id = $1`, r.ID)
		}
	}
	if pre.Len() > 0 {
		br := l.s.pool.SendBatch(ctx, pre)
		for _, r := range runs {
			if _, known := l.next[r.ID]; !known && r.FromSeq == 0 {
				var last int64
				if err := br.QueryRow().Scan(&last); err != nil {
					_ = br.Close()
					return fmt.Errorf("last seq of run %s: %w", r.ID, err)
				}
				start[r.ID] = last + 1
			}
		}
		if err := br.Close(); err != nil {
			return err
		}
	}

	b := &pgx.Batch{}
	nexts := make([]int64, len(runs))
	for i, r := range runs {
		next, known := l.next[r.ID]
		if !known {
			next = max(r.FromSeq, 1)
			if r.FromSeq == 0 {
				next = start[r.ID]
			}
		}
		nexts[i] = next
		b.Queue(`SELECT seq, node_id, type, content, ts, data FROM run_events
WHERE run_id = $1 AND seq > $2 ORDER BY seq`, r.ID, next-1)
		if r.Header {
			b.Queue(`SELECT `+runColumns+` FROM runs WHERE id = $1`, r.ID)
		}
	}
	var events []engine.Event
	var headers []*engine.Run
	br := l.s.pool.SendBatch(ctx, b)
	defer br.Close() // every result is read below, or an error returned
	for i, r := range runs {
		evs, err := scanEvents(br, r.ID)
		if err != nil {
			return err
		}
		next := nexts[i]
		if len(evs) > 0 {
			next = evs[len(evs)-1].Seq + 1
			events = append(events, evs...)
		}
		l.next[r.ID] = next
		if !r.Header {
			continue
		}
		h, err := scanRun(br.QueryRow())
		if errors.Is(err, pgx.ErrNoRows) {
			delete(l.next, r.ID) // unknown (or gone): nothing to follow
			continue
		}
		if err != nil {
			return fmt.Errorf("run %s: %w", r.ID, err)
		}
		headers = append(headers, h)
		if h.Status.Terminal() {
			delete(l.next, r.ID) // nothing more will come
		}
	}
	if err := br.Close(); err != nil {
		return err
	}
	if len(events) > 0 || len(headers) > 0 {
		l.s.w.CallHooks(events, headers)
	}
	return nil
}

// scanEvents reads the events of the next query of br.
func scanEvents(br pgx.BatchResults, runID string) ([]engine.Event, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("events of run %s: %w", runID, err)
	}
	defer rows.Close()
	var events []engine.Event
	for rows.Next() {
		ev := engine.Event{RunID: runID}
		var data *string
		if err := rows.Scan(&ev.Seq, &ev.NodeID, &ev.Type, &ev.Content, &ev.Timestamp, &data); err != nil {
			return nil, fmt.Errorf("events of run %s: %w", runID, err)
		}
		ev.Timestamp = ev.Timestamp.UTC()
		if data != nil {
			ev.Data = json.RawMessage(*data)
		}
		events = append(events, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("events of run %s: %w", runID, err)
	}
	return events, nil
}
