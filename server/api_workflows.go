package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/store"
)

// WorkflowSource lists workflows kept outside the database, such as the
// YAML files of the workflows folder; GET /api/workflows lists them beside
// the drawn ones. Give them ids that cannot collide with database ids
// (uuids), e.g. "yaml.deploy".
type WorkflowSource interface {
	ListWorkflows(ctx context.Context) ([]Workflow, error)
}

// WorkflowGetter is optionally implemented by a WorkflowSource so that
// GET /api/workflows/{id} finds its workflows; engine.ErrNotFound if unknown.
type WorkflowGetter interface {
	GetWorkflow(ctx context.Context, id string) (*Workflow, error)
}

// WorkflowStarter is optionally implemented by a WorkflowSource so that
// POST /api/runs {workflowId} can start its workflows; engine.ErrNotFound
// if unknown. opt.WorkflowID must stay "" (it names database workflows).
type WorkflowStarter interface {
	StartWorkflow(ctx context.Context, e *engine.Engine, id string, opt engine.StartOptions) (*engine.Run, error)
}

// Workflow is a workflow as the API shows it. Lists omit Graph.
type Workflow struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Kind        string          `json:"kind"`
	Version     int             `json:"version"`
	Graph       json.RawMessage `json:"graph,omitempty"`
	// Source is a YAML workflow's text.
	Source string `json:"source,omitempty"`
	// SourceHash is a YAML workflow's version stamp: the hex SHA-256 of
	// Source, the baseHash of a save (GET only).
	SourceHash string `json:"sourceHash,omitempty"`
	// Editable marks YAML workflows the server saves (PUT with source or
	// edits); false under serve --read-only-workflows (GET only).
	Editable bool `json:"editable,omitempty"`
	// Path is the file a workflow from a WorkflowSource comes from.
	Path string `json:"path,omitempty"`
	// ReadOnly marks workflows the API cannot save (files).
	ReadOnly bool `json:"readOnly,omitempty"`
	// RunBlocker says why a source workflow cannot run here (its errors,
	// a provider that is not configured or not shipped); "" if it can.
	RunBlocker string `json:"runBlocker,omitempty"`
	// Problems of a source workflow (YAML file): its loader diagnostics,
	// file:line in the messages. Lists carry only the errors, which keep
	// it from running.
	Problems  []graph.Problem `json:"problems,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

// savedWorkflow is a saved workflow with its graph's problems: saving
// never rejects a graph with errors (work in progress), it reports them.
type savedWorkflow struct {
	Workflow
	Problems []graph.Problem `json:"problems"`
}

type workflowVersionJSON struct {
	WorkflowID  string          `json:"workflowId"`
	Version     int             `json:"version"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Kind        string          `json:"kind"`
	Graph       json.RawMessage `json:"graph,omitempty"`
	Source      string          `json:"source,omitempty"`
	CreatedAt   time.Time       `json:"createdAt"`
}

func toWorkflow(w *store.Workflow) Workflow {
	out := Workflow{ID: w.ID, Name: w.Name, Description: w.Description, Kind: w.Kind, Version: w.Version,
		CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt}
	out.Graph, out.Source = splitDefinition(w.Kind, w.Definition)
	return out
}

// splitDefinition returns a definition as a graph (kind graph) or as YAML
// source text (other kinds: a JSON string, or an object with a "source"
// field as the engine snapshots YAML runs).
func splitDefinition(kind string, def json.RawMessage) (json.RawMessage, string) {
	if len(def) == 0 {
		return nil, ""
	}
	if kind == engine.KindGraph {
		return def, ""
	}
	var src string
	if json.Unmarshal(def, &src) == nil {
		return nil, src
	}
	var obj struct {
		Source string `json:"source"`
	}
	if json.Unmarshal(def, &obj) == nil {
		return nil, obj.Source
	}
	return nil, ""
}

type workflowRequest struct {
	Name        *string         `json:"name"`
	Description *string         `json:"description"`
	Kind        string          `json:"kind"`
	Graph       json.RawMessage `json:"graph"`
	Version     int             `json:"version"`
}

// graphDefinition decodes (normalizing legacy shapes) and validates a
// graph for saving; problems are reported, not refused.
func graphDefinition(raw json.RawMessage) (json.RawMessage, []graph.Problem, error) {
	g, warns, err := decodeGraph(raw)
	if err != nil {
		return nil, nil, err
	}
	probs := graph.CapProblems(append(warns, graph.Validate(g)...))
	def, err := json.Marshal(g)
	if err != nil {
		return nil, nil, fmt.Errorf("encode graph: %w", err)
	}
	return def, nonNilProblems(probs), nil
}

func nonNilProblems(p []graph.Problem) []graph.Problem {
	if p == nil {
		return []graph.Problem{}
	}
	return p
}

func (s *Server) listWorkflows(c echo.Context) error {
	ctx := c.Request().Context()
	ws, err := s.st.ListWorkflows(ctx)
	if err != nil {
		return engineErr(err)
	}
	out := make([]Workflow, 0, len(ws))
	for _, w := range ws {
		out = append(out, toWorkflow(w))
	}
	if s.cfg.Workflows != nil {
		extra, err := s.cfg.Workflows.ListWorkflows(ctx)
		if err != nil {
			s.log.Warn("list workflow source", "dir", s.cfg.WorkflowsDir, "err", err)
		}
		for _, w := range extra {
			w.Graph = nil
			w.Source = ""
			out = append(out, w)
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].UpdatedAt.After(out[j].UpdatedAt) })
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) createWorkflow(c echo.Context) error {
	var req workflowRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if req.Kind != "" && req.Kind != engine.KindGraph {
		return badRequest("kind %q cannot be created here: only %q workflows are saved through the API", req.Kind, engine.KindGraph)
	}
	if req.Name == nil || strings.TrimSpace(*req.Name) == "" {
		return badRequest("name is required")
	}
	def, probs, err := graphDefinition(req.Graph)
	if err != nil {
		return err
	}
	w := store.Workflow{Name: strings.TrimSpace(*req.Name), Kind: engine.KindGraph, Definition: def}
	if req.Description != nil {
		w.Description = *req.Description
	}
	saved, err := s.st.CreateWorkflow(c.Request().Context(), w)
	if err != nil {
		return engineErr(err)
	}
	c.Response().Header().Set("Location", "/api/workflows/"+saved.ID)
	return c.JSON(http.StatusCreated, savedWorkflow{Workflow: toWorkflow(saved), Problems: probs})
}

func (s *Server) getWorkflow(c echo.Context) error {
	id, err := workflowIDParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	w, err := s.st.GetWorkflow(ctx, id)
	if errors.Is(err, engine.ErrNotFound) {
		if g, ok := s.cfg.Workflows.(WorkflowGetter); ok {
			sw, gerr := g.GetWorkflow(ctx, id)
			if gerr == nil {
				return c.JSON(http.StatusOK, sw)
			}
			if !errors.Is(gerr, engine.ErrNotFound) {
				return gerr
			}
		}
		return newErr(http.StatusNotFound, CodeNotFound, "workflow %s not found", id)
	}
	if err != nil {
		return engineErr(err)
	}
	return c.JSON(http.StatusOK, toWorkflow(w))
}

// updateWorkflow saves the next version. The request carries the version
// it edited; a stale one gets 409 so two tabs never overwrite each other.
func (s *Server) updateWorkflow(c echo.Context) error {
	id, err := workflowIDParam(c)
	if err != nil {
		return err
	}
	var req workflowRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if req.Version <= 0 {
		return badRequest("version is required: the version of the workflow you edited")
	}
	ctx := c.Request().Context()
	cur, err := s.st.GetWorkflow(ctx, id)
	if errors.Is(err, engine.ErrNotFound) {
		if rerr := s.readOnlySourceErr(ctx, id, "saved"); rerr != nil {
			return rerr
		}
		return newErr(http.StatusNotFound, CodeNotFound, "workflow %s not found", id)
	}
	if err != nil {
		return engineErr(err)
	}
	if req.Kind != "" && req.Kind != cur.Kind {
		return badRequest("kind cannot change (workflow %s is %q)", id, cur.Kind)
	}
	w := *cur
	if req.Name != nil {
		if strings.TrimSpace(*req.Name) == "" {
			return badRequest("name must not be empty")
		}
		w.Name = strings.TrimSpace(*req.Name)
	}
	if req.Description != nil {
		w.Description = *req.Description
	}
	probs := []graph.Problem{}
	if len(req.Graph) > 0 && string(req.Graph) != "null" {
		if cur.Kind != engine.KindGraph {
			return badRequest("workflow %s is %q: it has no graph", id, cur.Kind)
		}
		if w.Definition, probs, err = graphDefinition(req.Graph); err != nil {
			return err
		}
	} else if cur.Kind == engine.KindGraph {
		if _, probs, err = graphDefinition(cur.Definition); err != nil {
			probs = []graph.Problem{}
		}
	}
	saved, err := s.st.UpdateWorkflow(ctx, w, req.Version)
	if errors.Is(err, engine.ErrConflict) {
		now, gerr := s.st.GetWorkflow(ctx, id)
		if gerr == nil {
			return newErr(http.StatusConflict, CodeConflict,
				"workflow %s was saved elsewhere: it is at version %d, you edited version %d; reload it before saving",
				id, now.Version, req.Version)
		}
	}
	if err != nil {
		return engineErr(err)
	}
	return c.JSON(http.StatusOK, savedWorkflow{Workflow: toWorkflow(saved), Problems: probs})
}

func (s *Server) deleteWorkflow(c echo.Context) error {
	id, err := workflowIDParam(c)
	if err != nil {
		return err
	}
	if err := s.st.DeleteWorkflow(c.Request().Context(), id); err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			if rerr := s.readOnlySourceErr(c.Request().Context(), id, "deleted"); rerr != nil {
				return rerr
			}
			return newErr(http.StatusNotFound, CodeNotFound, "workflow %s not found", id)
		}
		return engineErr(err)
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) listVersions(c echo.Context) error {
	id, err := workflowIDParam(c)
	if err != nil {
		return err
	}
	vs, err := s.st.ListVersions(c.Request().Context(), id)
	if errors.Is(err, engine.ErrNotFound) {
		return newErr(http.StatusNotFound, CodeNotFound, "workflow %s not found", id)
	}
	if err != nil {
		return engineErr(err)
	}
	out := make([]workflowVersionJSON, 0, len(vs))
	for _, v := range vs {
		out = append(out, workflowVersionJSON{WorkflowID: v.WorkflowID, Version: v.Version, Name: v.Name,
			Description: v.Description, Kind: v.Kind, CreatedAt: v.CreatedAt})
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) getVersion(c echo.Context) error {
	id, err := workflowIDParam(c)
	if err != nil {
		return err
	}
	vs := c.Param("version")
	v, err := strconv.Atoi(vs)
	if err != nil || v <= 0 {
		return badRequest("version must be a positive integer, not %q", truncate(vs, 40))
	}
	ver, err := s.st.GetVersion(c.Request().Context(), id, v)
	if errors.Is(err, engine.ErrNotFound) {
		return newErr(http.StatusNotFound, CodeNotFound, "workflow %s has no version %d", id, v)
	}
	if err != nil {
		return engineErr(err)
	}
	out := workflowVersionJSON{WorkflowID: ver.WorkflowID, Version: ver.Version, Name: ver.Name,
		Description: ver.Description, Kind: ver.Kind, CreatedAt: ver.CreatedAt}
	out.Graph, out.Source = splitDefinition(ver.Kind, ver.Definition)
	return c.JSON(http.StatusOK, out)
}

type graphRequest struct {
	Graph json.RawMessage `json:"graph"`
}

type validateResponse struct {
	Valid    bool            `json:"valid"`
	Problems []graph.Problem `json:"problems"`
}

// validate reports a graph's problems (normalization warnings first).
func (s *Server) validate(c echo.Context) error {
	var req graphRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	g, warns, err := decodeGraph(req.Graph)
	if err != nil {
		return err
	}
	probs := nonNilProblems(graph.CapProblems(append(warns, graph.Validate(g)...)))
	return c.JSON(http.StatusOK, validateResponse{Valid: !graph.HasErrors(probs), Problems: probs})
}

type normalizeResponse struct {
	Graph    *graph.Graph    `json:"graph"`
	Problems []graph.Problem `json:"problems"`
}

// normalize returns a graph (legacy or current shape) in the current
// shape, with what normalization dropped and what validation found.
func (s *Server) normalize(c echo.Context) error {
	var req graphRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	g, warns, err := decodeGraph(req.Graph)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, normalizeResponse{Graph: g, Problems: nonNilProblems(graph.CapProblems(append(warns, graph.Validate(g)...)))})
}
