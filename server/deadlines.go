package server

import (
	"bytes"
	"io"
	"net/http"
	"time"

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
// upgrades are long too and are told apart by their Upgrade header.
func longRoute(path string) bool {
	switch path {
	case "/api/run", "/api/run-stream", "/api/resume", "/api/resume-stream":
		return true
	}
	return false
}

// readDeadline bounds the time to read the whole request, before anything
// else runs: a body trickling in byte by byte (even toward a 401) ends at
// the deadline. Websocket upgrades have no body and manage their own
// deadlines once hijacked.
func (s *Server) readDeadline(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !isUpgrade(c.Request()) {
			rc := http.NewResponseController(c.Response().Writer)
			_ = rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
		}
		return next(c)
	}
}

// longRoutes gives ordinary requests a write deadline, and long ones their
// body read in full at once (within the read deadline) and then no deadline
// at all: a read deadline left on the connection would cancel the request
// when it fires during the wait.
func (s *Server) longRoutes(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if isUpgrade(r) {
			return next(c)
		}
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
