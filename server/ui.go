package server

import (
	"bytes"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

const noUIPage = `<!doctype html><meta charset="utf-8"><title>Switchyard</title>
<p>This switchyard was built without its web UI (<code>-tags noui</code>). The API is at <a href="/api/openapi.json">/api/openapi.json</a>.</p>
`

// serveUI serves the embedded UI with single-page routing: a path that
// names no file gets index.html, so the UI's own routes load. Hashed
// assets are cached forever; index.html is revalidated on every load.
func (s *Server) serveUI(c echo.Context) error {
	r := c.Request()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return newErr(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "%s is not allowed here", r.Method)
	}
	if s.cfg.UI == nil {
		c.Response().Header().Set("Cache-Control", "no-cache")
		return c.HTML(http.StatusOK, noUIPage)
	}
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name == "" || name == "index.html" {
		return s.serveIndex(c)
	}
	data, err := fs.ReadFile(s.cfg.UI, name)
	if err != nil {
		if strings.HasPrefix(name, "assets/") {
			// A missing hashed asset must not come back as HTML: the
			// browser would report a confusing type error instead of a 404.
			return newErr(http.StatusNotFound, CodeNotFound, "no such file: /%s", name)
		}
		return s.serveIndex(c)
	}
	h := c.Response().Header()
	if strings.HasPrefix(name, "assets/") {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(c.Response(), r, name, time.Time{}, bytes.NewReader(data))
	return nil
}

func (s *Server) serveIndex(c echo.Context) error {
	data, err := fs.ReadFile(s.cfg.UI, "index.html")
	if err != nil {
		return newErr(http.StatusNotFound, CodeNotFound, "the UI has no index.html")
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-cache")
	h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	http.ServeContent(c.Response(), c.Request(), "index.html", time.Time{}, bytes.NewReader(data))
	return nil
}
