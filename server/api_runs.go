package server

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
)

// runSummary is a run in lists: its header without definition or nodes.
type runSummary struct {
	RunID            string                   `json:"runId"`
	WorkflowID       string                   `json:"workflowId,omitempty"`
	Kind             string                   `json:"kind"`
	Status           engine.RunStatus         `json:"status"`
	Input            string                   `json:"input"`
	WaitingForInput  bool                     `json:"waitingForInput"`
	CurrentNodeID    string                   `json:"currentNodeId,omitempty"`
	PendingApprovals []engine.PendingApproval `json:"pendingApprovals"`
	Error            string                   `json:"error,omitempty"`
	CreatedAt        time.Time                `json:"createdAt"`
	UpdatedAt        time.Time                `json:"updatedAt"`
	FinishedAt       *time.Time               `json:"finishedAt,omitempty"`
	// Usage is the run's token totals (engine.Run.Usage), always present.
	Usage engine.Usage `json:"usage"`
	// ForkOf names the run this one was forked from (POST .../fork): in
	// GET /api/runs/{id} and in lists of runs (markForks).
	ForkOf *forkOf `json:"forkOf,omitempty"`
}

// runDetail is one run with everything the UI needs to show it: outputs,
// the graph it ran and every node's state.
type runDetail struct {
	runSummary
	Outputs map[string]string `json:"outputs"`
	Graph   json.RawMessage   `json:"graph,omitempty"`
	// Source is the YAML text of a YAML run.
	Source string     `json:"source,omitempty"`
	Nodes  []nodeJSON `json:"nodes"`
	// WorkDir is the folder the run works in (its workspace or worktree);
	// Branch the git branch of a worktree the run got for isolation.
	WorkDir string `json:"workDir,omitempty"`
	Branch  string `json:"branch,omitempty"`
}

// nodeJSON is one node's state in a run (the executor's private wait
// state is left out).
type nodeJSON struct {
	NodeID     string     `json:"nodeId"`
	Status     string     `json:"status"`
	Input      string     `json:"input,omitempty"`
	Output     string     `json:"output,omitempty"`
	Handle     string     `json:"handle,omitempty"`
	Error      string     `json:"error,omitempty"`
	Visits     int        `json:"visits"`
	Attempts   int        `json:"attempts"`
	StartedAt  *time.Time `json:"startedAt,omitempty"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

func toSummary(r *engine.Run) runSummary {
	pa := r.PendingApprovals
	if pa == nil {
		pa = []engine.PendingApproval{}
	}
	return runSummary{RunID: r.ID, WorkflowID: r.WorkflowID, Kind: r.Kind, Status: r.Status, Input: r.Input,
		WaitingForInput: r.WaitingForInput, CurrentNodeID: r.CurrentNodeID, PendingApprovals: pa,
		Error: r.Error, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, FinishedAt: r.FinishedAt, Usage: finiteUsage(r.Usage)}
}

// finiteUsage leaves out a cost that is not a finite number: JSON cannot
// encode one, and an older version could store +Inf (an absurd price), which
// then made every list of runs fail.
func finiteUsage(u engine.Usage) engine.Usage {
	if u.CostUSD != nil && (math.IsInf(*u.CostUSD, 0) || math.IsNaN(*u.CostUSD)) {
		u.CostUSD = nil
	}
	return u
}

func nodeStatus(s engine.NodeStatus) string {
	if s == engine.NodeIdle {
		return "idle"
	}
	return string(s)
}

func toDetail(r *engine.Run, nodes []*engine.NodeState) *runDetail {
	d := &runDetail{runSummary: toSummary(r), Outputs: map[string]string{}, Nodes: make([]nodeJSON, 0, len(nodes))}
	d.Graph, d.Source = splitDefinition(r.Kind, r.Definition)
	for _, n := range nodes {
		if n.Status == engine.NodeCompleted {
			d.Outputs[n.NodeID] = n.Output
		}
		d.Nodes = append(d.Nodes, nodeJSON{NodeID: n.NodeID, Status: nodeStatus(n.Status), Input: n.Input,
			Output: n.Output, Handle: n.Handle, Error: n.Error, Visits: n.Visits, Attempts: n.Attempts,
			StartedAt: n.StartedAt, FinishedAt: n.FinishedAt})
	}
	return d
}

// runDetail reads a run's current state (live from the engine if it runs here).
func (s *Server) runDetail(ctx context.Context, runID string) (*runDetail, error) {
	r, nodes, err := s.e.Snapshot(ctx, runID)
	if err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			return nil, newErr(http.StatusNotFound, CodeNotFound, "run %s not found", runID)
		}
		return nil, engineErr(err)
	}
	d := toDetail(r, nodes)
	d.WorkDir, d.Branch = r.WorkDir, s.e.WorktreeBranch(r)
	s.decorateYAMLRun(d, r) // YAML runs: source workflow id and DAG projection (yaml_runs.go)
	return d, nil
}

func (s *Server) listRuns(c echo.Context) error {
	q := c.QueryParams()
	f := engine.RunFilter{Status: engine.RunStatus(q.Get("status")), WorkflowID: q.Get("workflowId")}
	if f.WorkflowID != "" && !validWorkflowID(f.WorkflowID) {
		return badRequest("invalid workflowId %q", truncate(f.WorkflowID, 80))
	}
	switch f.Status {
	case "", engine.StatusPending, engine.StatusRunning, engine.StatusPaused, engine.StatusCompleted,
		engine.StatusFailed, engine.StatusCancelled, engine.StatusInterrupted:
	default:
		return badRequest("unknown status %q", truncate(string(f.Status), 40))
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 1000 {
			return badRequest("limit must be an integer from 1 to 1000, not %q", truncate(v, 40))
		}
		f.Limit = n
	}
	if v := q.Get("before"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return badRequest("before must be an RFC 3339 time (a run's createdAt), not %q", truncate(v, 60))
		}
		f.Before = t
	}
	// Runs of a workflow source's workflows (YAML files) are stored without
	// a workflow id: they are matched on their definition (yaml_runs.go).
	var runs []*engine.Run
	var err error
	if n := s.runNamer(); n != nil && f.WorkflowID != "" && n.OwnsWorkflowID(f.WorkflowID) {
		runs, err = s.listSourceRuns(c.Request().Context(), n, f)
	} else {
		runs, err = s.st.ListRuns(c.Request().Context(), f)
	}
	if err != nil {
		return engineErr(err)
	}
	out := make([]runSummary, 0, len(runs))
	for _, r := range runs {
		sum := toSummary(r)
		sum.WorkflowID = s.sourceWorkflowID(r)
		out = append(out, sum)
	}
	s.markForks(c.Request().Context(), out)
	return c.JSON(http.StatusOK, out)
}

type createRunRequest struct {
	WorkflowID string          `json:"workflowId"`
	Graph      json.RawMessage `json:"graph"`
	Input      *string         `json:"input"`
}

// createRun starts a saved workflow or a graph given inline: 201 with the
// run, 400 with the problems of an invalid graph.
func (s *Server) createRun(c echo.Context) error {
	var req createRunRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	hasGraph := len(req.Graph) > 0 && string(req.Graph) != "null"
	if (req.WorkflowID == "") == !hasGraph {
		return badRequest("give exactly one of workflowId and graph")
	}
	ctx := c.Request().Context()
	opt := engine.StartOptions{WorkDir: s.workDir()}
	if req.Input != nil {
		opt.Input = *req.Input
	}
	var run *engine.Run
	var err error
	if hasGraph {
		pg, perr := s.prepareGraph(fromRequest, req.Graph, decodeRequestGraph, nil)
		if perr != nil {
			return perr
		}
		opt.WorkDir = s.cfg.GraphWorkDir
		run, err = s.e.StartPrepared(ctx, pg, opt)
	} else {
		run, err = s.startWorkflow(ctx, req.WorkflowID, opt)
	}
	if err != nil {
		return startErr(err)
	}
	d, err := s.runDetail(ctx, run.ID)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Location", "/api/runs/"+run.ID)
	return c.JSON(http.StatusCreated, d)
}

// startErr maps errors of starting a run.
func startErr(err error) error {
	var inv *engine.InvalidError
	if errors.As(err, &inv) {
		return &apiError{Status: http.StatusBadRequest, Code: CodeInvalidGraph,
			Message: "the graph has errors: " + firstError(inv.Problems), Problems: inv.Problems}
	}
	return engineErr(err)
}

func firstError(ps []graph.Problem) string {
	for _, p := range ps {
		if p.IsError() {
			return p.Message
		}
	}
	return "invalid"
}

// startWorkflow starts a saved workflow, or one of the workflow source's.
func (s *Server) startWorkflow(ctx context.Context, id string, opt engine.StartOptions) (*engine.Run, error) {
	if !validWorkflowID(id) {
		return nil, badRequest("invalid workflowId %q", truncate(id, 80))
	}
	w, err := s.st.GetWorkflow(ctx, id)
	if errors.Is(err, engine.ErrNotFound) {
		if st, ok := s.cfg.Workflows.(WorkflowStarter); ok {
			return st.StartWorkflow(ctx, s.e, id, opt)
		}
		return nil, newErr(http.StatusNotFound, CodeNotFound, "workflow %s not found", id)
	}
	if err != nil {
		return nil, err
	}
	if w.Kind != engine.KindGraph {
		if st, ok := s.cfg.Workflows.(WorkflowStarter); ok {
			return st.StartWorkflow(ctx, s.e, id, opt)
		}
		return nil, badRequest("workflow %s is %q: this server cannot start that kind", id, w.Kind)
	}
	pg, err := s.prepareGraph(fromSaved, w.Definition, func(raw []byte) (*graph.Graph, error) {
		g, _, err := graph.Decode(raw)
		if err != nil {
			return nil, badRequest("workflow %s: stored graph: %v", id, err)
		}
		return g, nil
	}, nil)
	if err != nil {
		return nil, err
	}
	opt.WorkflowID = w.ID
	opt.WorkDir = s.cfg.GraphWorkDir
	return s.e.StartPrepared(ctx, pg, opt)
}

// workDir is where bash/script nodes and agents of YAML runs started here
// work (drawn runs: Config.GraphWorkDir, or a workspace of their own).
func (s *Server) workDir() string {
	s.cwdOnce.Do(func() { s.cwd, _ = os.Getwd() }) // the server never changes directory
	return s.cwd
}

func (s *Server) getRun(c echo.Context) error {
	id, err := runIDParam(c, "id")
	if err != nil {
		return err
	}
	d, err := s.runDetail(c.Request().Context(), id)
	if err != nil {
		return err
	}
	d.ForkOf = s.forkOfRun(c.Request().Context(), id)
	return c.JSON(http.StatusOK, d)
}

// Page sizes of GET /api/runs/{id}/events.
const (
	DefaultEventsPage = 1000
	MaxEventsPage     = 10000
)

func (s *Server) runEvents(c echo.Context) error {
	id, err := runIDParam(c, "id")
	if err != nil {
		return err
	}
	after, err := afterParam(c)
	if err != nil {
		return err
	}
	// A page at a time: a long run's log is not one response of unbounded
	// size. A full page means there may be more after its last seq.
	limit := DefaultEventsPage
	if v := c.QueryParam("limit"); v != "" {
		limit, err = strconv.Atoi(v)
		if err != nil || limit <= 0 || limit > MaxEventsPage {
			return badRequest("limit must be an integer from 1 to %d, not %q", MaxEventsPage, truncate(v, 40))
		}
	}
	evs, err := s.st.Events(c.Request().Context(), id, after, limit)
	if err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			return newErr(http.StatusNotFound, CodeNotFound, "run %s not found", id)
		}
		return engineErr(err)
	}
	if evs == nil {
		evs = []engine.Event{}
	}
	return c.JSON(http.StatusOK, evs)
}

type decisionRequest struct {
	Decision string `json:"decision"`
	Note     string `json:"note"`
}

// decide answers a node waiting for approval: 400 for a decision that is
// not approve/reject, 409 if the node is not waiting or another answer won.
func (s *Server) decide(c echo.Context) error {
	id, err := runIDParam(c, "id")
	if err != nil {
		return err
	}
	nodeID, err := url.PathUnescape(c.Param("nodeId"))
	if err != nil || !validNodeID(nodeID) {
		return badRequest("invalid node id %q", truncate(c.Param("nodeId"), 80))
	}
	var req decisionRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if !validDecision(req.Decision) {
		return newErr(http.StatusBadRequest, CodeInvalidDecision, "decision must be \"approve\" or \"reject\", not %q", truncate(req.Decision, 40))
	}
	ctx := c.Request().Context()
	if _, err := s.e.Resume(ctx, id, nodeID, engine.Decision{Decision: req.Decision, Note: req.Note}); err != nil {
		return runErr(id, err)
	}
	d, err := s.runDetail(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

func validDecision(d string) bool {
	d = strings.ToLower(strings.TrimSpace(d))
	return d == "approve" || d == "reject"
}

// runErr maps engine errors on an existing run.
func runErr(runID string, err error) error {
	if errors.Is(err, engine.ErrNotFound) {
		return newErr(http.StatusNotFound, CodeNotFound, "run %s not found", runID)
	}
	return engineErr(err)
}

func (s *Server) cancelRun(c echo.Context) error {
	id, err := runIDParam(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.e.Cancel(ctx, id); err != nil {
		return runErr(id, err)
	}
	d, err := s.runDetail(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

// continueRun resumes an interrupted run (left so by --no-recover).
func (s *Server) continueRun(c echo.Context) error {
	id, err := runIDParam(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.e.Continue(ctx, id); err != nil {
		return runErr(id, err)
	}
	d, err := s.runDetail(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}
