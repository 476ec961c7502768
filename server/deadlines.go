package server

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
)

// Connection limits (see Config).
const (
	DefaultBodyTimeout  = 30 * time.Second
	DefaultWriteTimeout = 2 * time.Minute
	DefaultMaxConns     = 4096
)

// longRoute reports whether a request may legitimately last long: the
// compatibility routes that wait for a run (and stream it). Websocket
// handshakes are long too (see isWebsocketHandshake).
func longRoute(path string) bool {
	switch path {
	case "/api/run", "/api/run-stream", "/api/resume", "/api/resume-stream":
		return true
	}
	// POST /api/workflows/{id}/runs may wait for its run (wait).
	return strings.HasPrefix(path, "/api/workflows/") && strings.HasSuffix(path, "/runs")
}

// isWebsocketHandshake reports whether c is a websocket handshake the
// server will take over: a GET on a websocket route that asks for the
// upgrade (Connection: upgrade and Upgrade: websocket). An Upgrade header
// anywhere else is just a header: it must not change any deadline, or any
// client could hold a connection with it.
func isWebsocketHandshake(c echo.Context) bool {
	r := c.Request()
	if r.Method != http.MethodGet {
		return false
	}
	switch c.Path() {
	case "/api/ws", "/api/runs/:id/ws":
		return websocket.IsWebSocketUpgrade(r)
	}
	return false
}

// readDeadline bounds the time to read the whole request, before anything
// else runs: a body trickling in byte by byte (even toward a 401) ends at
// the deadline. It holds for websocket handshakes too: once hijacked, the
// websocket sets its own read deadline (the pong wait) before reading.
func (s *Server) readDeadline(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		rc := http.NewResponseController(c.Response().Writer)
		_ = rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
		return next(c)
	}
}

// longRoutes gives ordinary requests a write deadline, and long ones their
// body read in full at once (within the read deadline) and then no deadline
// at all: a read deadline left on the connection would cancel the request
// when it fires during the wait. Long routes set a write deadline per write
// (streamSSE) or before their answer (waitAndAnswer); websockets per frame.
func (s *Server) longRoutes(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if isWebsocketHandshake(c) {
			return next(c)
		}
		r := c.Request()
		rc := http.NewResponseController(c.Response().Writer)
		if !longRoute(r.URL.Path) {
			_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
			return next(c)
		}
		if r.Body != nil && r.Body != http.NoBody {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				return bodyError(err)
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		_ = rc.SetReadDeadline(time.Time{})
		return next(c)
	}
}
