package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/switchyard/switchyard/engine"
)

// forkRequest is the body of POST /api/runs/{id}/fork.
type forkRequest struct {
	NodeID string            `json:"nodeId"`
	Pinned map[string]string `json:"pinned"`
	Input  *string           `json:"input"`
}

// forkOf names the run a fork came from and the node it starts at.
type forkOf struct {
	RunID  string `json:"runId"`
	NodeID string `json:"nodeId"`
}

// forkRun is POST /api/runs/{id}/fork: a new run of the same workflow
// from nodeId, reusing the stored results of every node upstream of it
// (pinned: edited outputs for some of them). 201 with the new run; 409
// while the run has not ended; 400 for a node that cannot be forked from
// or pinned.
func (s *Server) forkRun(c echo.Context) error {
	id, err := runIDParam(c, "id")
	if err != nil {
		return err
	}
	var req forkRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if req.NodeID == "" {
		return badRequest("nodeId is required: the node to run from")
	}
	ctx := c.Request().Context()
	run, err := s.e.Fork(ctx, id, req.NodeID, engine.ForkOptions{Pinned: req.Pinned, Input: req.Input})
	switch {
	case errors.Is(err, engine.ErrNotFound):
		return newErr(http.StatusNotFound, CodeNotFound, "run %s not found", id)
	case errors.Is(err, engine.ErrRunNotEnded):
		return newErr(http.StatusConflict, CodeConflict, "%v", err)
	case errors.Is(err, engine.ErrNotForkable):
		return badRequest("%v", err)
	case err != nil:
		return startErr(err)
	}
	d, err := s.runDetail(ctx, run.ID)
	if err != nil {
		return err
	}
	d.ForkOf = &forkOf{RunID: id, NodeID: req.NodeID}
	c.Response().Header().Set("Location", "/api/runs/"+run.ID)
	return c.JSON(http.StatusCreated, d)
}

// forkOfRun reads whether a run is a fork: a fork's first event says
// (GET /api/runs/{id} only: one small read, not on the hot paths).
func (s *Server) forkOfRun(ctx context.Context, runID string) *forkOf {
	evs, err := s.st.Events(ctx, runID, 0, 1)
	if err != nil {
		return nil
	}
	if p, n := engine.ForkOf(evs); p != "" {
		return &forkOf{RunID: p, NodeID: n}
	}
	return nil
}

// markForks sets ForkOf on the forks in a list of runs, so the runs list
// can link each to its parent: one query for the page (a read of each
// run's first event cost a 50-run page 1.3 ms more at half a million runs).
func (s *Server) markForks(ctx context.Context, runs []runSummary) {
	if len(runs) == 0 {
		return
	}
	ids := make([]string, len(runs))
	for i := range runs {
		ids[i] = runs[i].RunID
	}
	firsts, err := s.st.FirstEvents(ctx, ids, engine.EvRunForked)
	if err != nil {
		// The list still answers: only its links to parents are missing.
		slog.Warn("runs list: reading which runs are forks", "err", err)
		return
	}
	for i := range runs {
		if ev, ok := firsts[runs[i].RunID]; ok {
			if p, n := engine.ForkOf([]engine.Event{ev}); p != "" {
				runs[i].ForkOf = &forkOf{RunID: p, NodeID: n}
			}
		}
	}
}
