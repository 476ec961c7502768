package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/switchyard/switchyard/engine"
)

// MaxRunWait bounds how long POST /api/workflows/{id}/runs may wait for
// the run it starts.
const MaxRunWait = 10 * time.Minute

// workflowRunRequest is the body of POST /api/workflows/{id}/runs.
type workflowRunRequest struct {
	Input *string `json:"input"`
	// Wait is how long to wait for the run to end or pause: a duration
	// ("90s", "2m") or a number of seconds; absent or 0 answers at once.
	Wait json.RawMessage `json:"wait"`
}

// workflowRunResponse is the run as the caller needs it: its status and,
// once it ended or paused, its outputs.
type workflowRunResponse struct {
	runSummary
	Outputs map[string]string `json:"outputs"`
	// Done is true when the run ended or paused within the wait.
	Done bool `json:"done"`
}

// parseWait reads wait: a JSON number of seconds or a duration string.
func parseWait(raw json.RawMessage) (time.Duration, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return 0, nil
	}
	var d time.Duration
	var secs float64
	if err := json.Unmarshal(raw, &secs); err == nil {
		d = time.Duration(secs * float64(time.Second))
	} else {
		var str string
		if err := json.Unmarshal(raw, &str); err != nil {
			return 0, fmt.Errorf("wait must be a number of seconds or a duration such as \"90s\"")
		}
		if d, err = time.ParseDuration(str); err != nil {
			return 0, fmt.Errorf("wait %q: %v", str, err)
		}
	}
	if d < 0 {
		return 0, fmt.Errorf("wait must not be negative")
	}
	if d > MaxRunWait {
		return 0, fmt.Errorf("wait is at most %s", MaxRunWait)
	}
	return d, nil
}

// runWorkflow is POST /api/workflows/{id}/runs: start a saved workflow
// (drawn or YAML) and, with wait, answer when the run ends or pauses:
// 200 with its status and outputs; 202 when it is still running at the
// end of the wait (or without one), with Location to follow it.
func (s *Server) runWorkflow(c echo.Context) error {
	id := c.Param("id")
	var req workflowRunRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	wait, err := parseWait(req.Wait)
	if err != nil {
		return badRequest("%v", err)
	}
	opt := engine.StartOptions{WorkDir: s.workDir()}
	if req.Input != nil {
		opt.Input = *req.Input
	}
	run, err := s.startWorkflow(c.Request().Context(), id, opt)
	if err != nil {
		return startErr(err)
	}
	c.Response().Header().Set("Location", "/api/runs/"+run.ID)
	if wait > 0 {
		ctx, cancel := s.longCtx(c.Request().Context())
		ctx, cancelWait := context.WithTimeout(ctx, wait)
		_, werr := s.e.Wait(ctx, run.ID)
		cancelWait()
		cancel()
		if werr != nil && ctx.Err() == nil && !s.draining() {
			return engineErr(werr)
		}
	}
	d, err := s.runDetail(context.WithoutCancel(c.Request().Context()), run.ID)
	if err != nil {
		return err
	}
	res := workflowRunResponse{runSummary: d.runSummary, Outputs: d.Outputs}
	res.Done = res.Status.Terminal() || res.Status == engine.StatusPaused
	// The wait had no deadline; the answer has one, as ordinary ones do.
	_ = http.NewResponseController(c.Response().Writer).SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	if res.Done {
		return c.JSON(http.StatusOK, res)
	}
	return c.JSON(http.StatusAccepted, res)
}
