package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"github.com/switchyard/switchyard/engine"
)

// Websocket close codes beyond RFC 6455's.
const (
	// CloseTooSlow closes a client that fell too far behind; it reconnects
	// with after=<last seq it got>.
	CloseTooSlow = 4000
)

const (
	wsReadLimit  = 4096 // clients only send control frames; anything bigger is abuse
	replayPage   = 512
	closeTimeout = time.Second // how long a close waits for the client's answer
)

var errTooSlow = errors.New("client too slow")

// follower streams one run's committed events in seq order, without gaps
// or duplicates: it subscribes first, replays from the store, then streams
// live events, skipping what it already sent and filling any gap from the
// store.
type follower struct {
	s     *Server
	runID string
	sub   *runSub
	last  int64 // highest seq sent
	// batch, if set, wraps the sending of a batch of events (a page of
	// replay, or what one commit delivered) so they leave in one write.
	batch func(send func() error) error
}

// inBatch runs fn as one batch.
func (f *follower) inBatch(fn func() error) error {
	if f.batch == nil {
		return fn()
	}
	return f.batch(fn)
}

// followRun subscribes to a run's events after seq after. The caller must
// call stop.
func (s *Server) followRun(runID string, after int64) *follower {
	return &follower{s: s, runID: runID, sub: s.hub.subscribeRun(runID), last: after}
}

func (f *follower) stop() { f.s.hub.unsubscribeRun(f.sub) }

// sendFunc sends one event; le is set for live events (pre-encoded).
type sendFunc func(ev *engine.Event, le *liveEvent) error

// run sends events until one of:
//   - the run ended and its terminal run_status event was sent (returns nil);
//   - until is closed: the store is drained and run returns nil;
//   - ctx ends (its error), the client fell behind (errTooSlow), or send fails.
//
// terminal tells whether the run was already over when the caller looked
// (after subscribing): then everything is in the store.
func (f *follower) run(ctx context.Context, terminal bool, until <-chan struct{}, send sendFunc) error {
	ended, err := f.catchUp(ctx, 0, send)
	if err != nil || ended || terminal {
		return err
	}
	for {
		if f.sub.q.over.tripped() {
			return errTooSlow
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.sub.q.over.ch:
			return errTooSlow
		case <-until:
			_, err := f.catchUp(ctx, 0, send)
			return err
		case <-f.sub.q.notify:
			var ended bool
			items := f.sub.q.take()
			err := f.inBatch(func() (err error) {
				ended, err = f.sendLive(ctx, items, send)
				return err
			})
			if err != nil || ended {
				return err
			}
		}
	}
}

// sendLive sends queued live events, fetching any gap from the store; it
// reports whether the run's terminal event was sent.
func (f *follower) sendLive(ctx context.Context, items []*liveEvent, send sendFunc) (bool, error) {
	for _, le := range items {
		if f.sub.q.over.tripped() {
			return false, errTooSlow
		}
		seq := le.ev.Seq
		if seq <= f.last {
			continue
		}
		if seq > f.last+1 {
			// A gap: fetch what is missing from the store.
			ended, err := f.catchUp(ctx, seq, send)
			if err != nil || ended {
				return ended, err
			}
		}
		if err := send(&le.ev, le); err != nil {
			return false, err
		}
		f.last = seq
		if isTerminalEvent(&le.ev) {
			return true, nil
		}
	}
	return false, nil
}

// catchUp sends stored events after f.last (and before upTo, if > 0). It
// reports whether it sent the run's terminal status event.
func (f *follower) catchUp(ctx context.Context, upTo int64, send sendFunc) (bool, error) {
	for {
		if upTo == 0 {
			// Live events queued so far are committed, so the read below
			// returns them: drop them, or a long replay would overflow the
			// queue. What arrives after this stays queued for the live loop.
			f.sub.q.take()
		}
		limit := replayPage
		if upTo > 0 {
			limit = int(min(upTo-f.last-1, replayPage))
			if limit <= 0 {
				return false, nil
			}
		}
		evs, err := f.s.st.Events(ctx, f.runID, f.last, limit)
		if err != nil {
			return false, fmt.Errorf("read events: %w", err)
		}
		var ended, stop bool
		err = f.inBatch(func() error {
			for i := range evs {
				ev := &evs[i]
				if upTo > 0 && ev.Seq >= upTo {
					stop = true
					return nil
				}
				if err := send(ev, nil); err != nil {
					return err
				}
				f.last = ev.Seq
				if isTerminalEvent(ev) {
					ended = true
					return nil
				}
			}
			return nil
		})
		if err != nil || ended || stop || len(evs) < limit {
			return ended, err
		}
	}
}

func isTerminalEvent(ev *engine.Event) bool {
	return ev.Type == engine.EvRunStatus && ev.NodeID == engine.SystemNodeID &&
		engine.RunStatus(ev.Content).Terminal()
}

func (s *Server) upgrader() *websocket.Upgrader {
	return &websocket.Upgrader{
		ReadBufferSize:  1024,
		WriteBufferSize: 16 * 1024,
		// checkOrigin already ran as middleware; this is the same rule, kept
		// so the upgrader can never fall back to a laxer default.
		CheckOrigin: sameOrigin,
	}
}

// wsConn wraps a websocket with keepalive and a reader that notices the
// client going away.
type wsConn struct {
	s    *Server
	c    *websocket.Conn
	cork *corkConn     // the connection under c
	gone chan struct{} // closed when the reader stops (client left or broke)
	// readErr is why the reader stopped; read only after gone is closed.
	readErr error
}

// batch sends what fn writes in one write to the network: a commit's
// worth of events costs one syscall per watcher instead of one per event.
func (w *wsConn) batch(fn func() error) error {
	w.cork.cork()
	err := fn()
	if ferr := w.cork.uncork(); err == nil {
		err = ferr
	}
	return err
}

// corkConn holds writes back while corked and sends them together when
// uncorked (or once corkLimit bytes are waiting). gorilla/websocket writes
// each frame with its own Write; everything it writes (control frames
// from other goroutines included) goes through here, in order, under mu.
type corkConn struct {
	net.Conn
	mu    sync.Mutex
	depth int // cork calls not yet matched by uncork
	buf   []byte
}

const corkLimit = 64 << 10

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.depth == 0 {
		return c.Conn.Write(p)
	}
	c.buf = append(c.buf, p...)
	if len(c.buf) >= corkLimit {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (c *corkConn) cork() {
	c.mu.Lock()
	c.depth++
	c.mu.Unlock()
}

// uncork ends one cork; the outermost sends what is waiting. A write
// error surfaces here (under the write deadline gorilla last set).
func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.depth > 0 {
		c.depth--
	}
	if c.depth > 0 {
		return nil
	}
	return c.flushLocked()
}

func (c *corkConn) flushLocked() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	if cap(c.buf) > 4*corkLimit {
		c.buf = nil // a huge replay page: do not keep its buffer
	} else {
		c.buf = c.buf[:0]
	}
	return err
}

// corkHijacker hands the websocket upgrader a corkConn.
type corkHijacker struct {
	http.ResponseWriter
	conn *corkConn
}

func (h *corkHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	h.conn = &corkConn{Conn: c}
	return h.conn, brw, nil
}

// startWS upgrades the request and starts the reader and the pinger.
// ctx ends when the client goes away or the server shuts down.
func (s *Server) startWS(c echo.Context) (*wsConn, context.Context, context.CancelFunc, error) {
	if !websocket.IsWebSocketUpgrade(c.Request()) {
		return nil, nil, nil, badRequest("this is a websocket endpoint: connect with a websocket client (Upgrade: websocket)")
	}
	hj := &corkHijacker{ResponseWriter: c.Response()}
	conn, err := s.upgrader().Upgrade(hj, c.Request(), nil)
	if err != nil {
		// The upgrader already answered with an HTTP error.
		return nil, nil, nil, err
	}
	c.Response().Status = http.StatusSwitchingProtocols
	w := &wsConn{s: s, c: conn, cork: hj.conn, gone: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	stopDrain := context.AfterFunc(s.drainCtx, cancel)
	conn.SetReadLimit(wsReadLimit)
	wait := s.cfg.PongWait
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(wait)) })
	go func() {
		// gone closes before ctx is cancelled: whoever sees ctx done
		// because the reader stopped also sees why (readErr).
		defer cancel()
		defer close(w.gone)
		for {
			if _, _, err := conn.NextReader(); err != nil {
				w.readErr = err
				if errors.Is(err, websocket.ErrReadLimit) {
					drainAfterClose(conn.UnderlyingConn())
				}
				return
			}
		}
	}()
	go func() {
		t := time.NewTicker(s.cfg.PingInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(s.cfg.WSWriteTimeout)); err != nil {
					cancel()
					return
				}
			}
		}
	}()
	return w, ctx, func() { stopDrain(); cancel() }, nil
}

// drainAfterClose reads what a client is still sending after the server
// closed the websocket (the rest of an oversized message) until the client
// hangs up or a short deadline passes: closing a socket with unread input
// sends a TCP reset, which can destroy the close frame (1009) before the
// client reads it.
func drainAfterClose(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(closeTimeout))
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}

func (w *wsConn) writeText(raw []byte) error {
	_ = w.c.SetWriteDeadline(time.Now().Add(w.s.cfg.WSWriteTimeout))
	return w.c.WriteMessage(websocket.TextMessage, raw)
}

func (w *wsConn) writeEvent(ev *engine.Event, le *liveEvent) error {
	if le != nil {
		le.encode()
		if le.err != nil {
			return le.err
		}
		_ = w.c.SetWriteDeadline(time.Now().Add(w.s.cfg.WSWriteTimeout))
		return w.c.WritePreparedMessage(le.pm)
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return w.writeText(raw)
}

// close sends a close frame, waits briefly for the client's answer and
// closes the connection. The close frame gets the write timeout, like any
// event: a client still reading its backlog is healthy, and cutting it off
// after closeTimeout would end its stream as abnormal (1006).
func (w *wsConn) close(code int, reason string) {
	if len(reason) > 120 {
		reason = reason[:120]
	}
	msg := websocket.FormatCloseMessage(code, reason)
	if err := w.c.WriteControl(websocket.CloseMessage, msg, time.Now().Add(w.s.cfg.WSWriteTimeout)); err == nil {
		select {
		case <-w.gone:
		case <-time.After(closeTimeout):
		}
	} else {
		w.s.log.Debug("websocket close frame not sent", "code", code, "err", err)
	}
	_ = w.c.Close()
	<-w.gone
}

// closeClientGone closes a connection whose client stopped: normally, or
// with 1009 for a message over the read limit. (gorilla sends that 1009
// itself, but gives up after a second if a write holds the connection;
// this one waits as long as any write.)
func (w *wsConn) closeClientGone() {
	select {
	case <-w.gone:
		if errors.Is(w.readErr, websocket.ErrReadLimit) {
			w.close(websocket.CloseMessageTooBig, "message too big")
			return
		}
	default:
	}
	w.close(websocket.CloseNormalClosure, "")
}

// runWS streams a run's events: GET /api/runs/{id}/ws?after=N.
func (s *Server) runWS(c echo.Context) error {
	runID, err := runIDParam(c, "id")
	if err != nil {
		return err
	}
	after, err := afterParam(c)
	if err != nil {
		return err
	}
	if s.draining() {
		return newErr(http.StatusServiceUnavailable, CodeUnavailable, "the server is shutting down")
	}
	f := s.followRun(runID, after)
	defer f.stop()
	// Read the header after subscribing: if it is terminal, every event is
	// in the store; otherwise the terminal event is still to come.
	hdr, err := s.st.GetRun(c.Request().Context(), runID)
	if err != nil {
		return engineErr(err)
	}
	s.wsWG.Add(1)
	defer s.wsWG.Done()
	// Counted before the handshake is answered, so a client that has
	// connected is always in the gauge.
	s.metrics.wsClients.WithLabelValues("run").Inc()
	defer s.metrics.wsClients.WithLabelValues("run").Dec()
	w, ctx, cancel, err := s.startWS(c)
	if err != nil {
		return wsStartErr(err)
	}
	defer cancel()

	f.batch = w.batch
	err = f.run(ctx, hdr.Status.Terminal(), nil, w.writeEvent)
	switch {
	case err == nil:
		w.close(websocket.CloseNormalClosure, "run ended")
	case errors.Is(err, errTooSlow) || isTimeout(err):
		s.log.Info("websocket client too slow", "run", runID, "lastSeq", f.last)
		w.close(CloseTooSlow, "too slow; reconnect with after="+strconv.FormatInt(f.last, 10))
	case s.draining():
		w.close(websocket.CloseGoingAway, "server shutting down")
	case ctx.Err() != nil: // client went away (or sent too much)
		w.closeClientGone()
	default:
		s.log.Warn("websocket stream failed", "run", runID, "err", err)
		w.close(websocket.CloseInternalServerErr, "stream failed; reconnect with after="+strconv.FormatInt(f.last, 10))
	}
	return nil
}

// statusWS streams run status changes: GET /api/ws.
func (s *Server) statusWS(c echo.Context) error {
	if s.draining() {
		return newErr(http.StatusServiceUnavailable, CodeUnavailable, "the server is shutting down")
	}
	sub := s.hub.subscribeStatus()
	defer s.hub.unsubscribeStatus(sub)
	s.wsWG.Add(1)
	defer s.wsWG.Done()
	s.metrics.wsClients.WithLabelValues("status").Inc() // before the handshake, as in runWS
	defer s.metrics.wsClients.WithLabelValues("status").Dec()
	w, ctx, cancel, err := s.startWS(c)
	if err != nil {
		return wsStartErr(err)
	}
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			if s.draining() {
				w.close(websocket.CloseGoingAway, "server shutting down")
			} else {
				w.closeClientGone()
			}
			return nil
		case <-sub.q.over.ch:
			w.close(CloseTooSlow, "too slow; reconnect")
			return nil
		case <-sub.q.notify:
			msgs := sub.q.take()
			err := w.batch(func() error {
				for _, raw := range msgs {
					if err := w.writeText(raw); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				w.close(websocket.CloseNormalClosure, "")
				return nil
			}
		}
	}
}

// wsStartErr reports our own refusals; the upgrader already answered
// its failures itself.
func wsStartErr(err error) error {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// afterParam reads ?after=N (default 0).
func afterParam(c echo.Context) (int64, error) {
	v := c.QueryParam("after")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("after must be a non-negative integer, not %q", truncate(v, 40))
	}
	return n, nil
}
