package server

import (
	"context"
	"net/http"

	"github.com/switchyard/switchyard/engine"
)

// RunWorkflowNamer is optionally implemented by a WorkflowSource whose
// runs may be stored without a workflow id (YAML runs stored before the
// store kept their workflow, or started by `switchyard run`). It names
// those runs in the store (GET /api/runs?workflowId= is then one indexed
// query), and run responses name the workflow a run came from.
type RunWorkflowNamer interface {
	// OwnsWorkflowID reports whether id is one of the source's ids, even
	// one whose workflow is gone (its runs are not).
	OwnsWorkflowID(id string) bool
	// WorkflowIDOfRun returns the id of the source's workflow r was
	// started from, or "".
	WorkflowIDOfRun(r *engine.Run) string
}

// sourceRunNaming bounds how many runs stored without a workflow id one
// list request names before it lists (the rest are named by later
// requests, or at start-up: serve names them all in the background).
const sourceRunNaming = 1000

func (s *Server) runNamer() RunWorkflowNamer {
	n, _ := s.cfg.Workflows.(RunWorkflowNamer)
	return n
}

// sourceWorkflowID names the source workflow of a run stored without a
// workflow id ("" if none).
func (s *Server) sourceWorkflowID(r *engine.Run) string {
	if r.WorkflowID != "" {
		return r.WorkflowID
	}
	if n := s.runNamer(); n != nil {
		return n.WorkflowIDOfRun(r)
	}
	return ""
}

// decorateYAMLRun completes a YAML run's detail: the workflow it came
// from and its DAG as a read-only graph.
func (s *Server) decorateYAMLRun(d *runDetail, r *engine.Run) {
	if r.Kind != engine.KindYAML {
		return
	}
	d.WorkflowID = s.sourceWorkflowID(r)
	if len(d.Graph) == 0 {
		d.Graph = yamlRunGraph(r.Definition)
	}
}

// listSourceRuns lists the runs of a source workflow (see
// RunWorkflowNamer), newest first, honouring the filter's status, limit
// and before. Runs are stored with their workflow id (yamldir starts them
// so), so this is the store's one indexed query; runs stored without one
// (before the store knew YAML runs' workflows, or started by `switchyard
// run`) are named first, a probe of an index that is empty once they are.
func (s *Server) listSourceRuns(ctx context.Context, n RunWorkflowNamer, f engine.RunFilter) ([]*engine.Run, error) {
	if _, err := s.st.NameRuns(ctx, n.WorkflowIDOfRun, sourceRunNaming); err != nil {
		return nil, err
	}
	return s.st.ListRuns(ctx, f)
}

// readOnlySourceErr explains why a source workflow cannot be saved or
// deleted; nil if id is not one of the source's.
func (s *Server) readOnlySourceErr(ctx context.Context, id, what string) error {
	g, ok := s.cfg.Workflows.(WorkflowGetter)
	if !ok {
		return nil
	}
	w, err := g.GetWorkflow(ctx, id)
	if err != nil || w == nil {
		return nil
	}
	where := w.Path
	if where == "" {
		where = "outside the database"
	}
	return newErr(http.StatusBadRequest, CodeBadRequest,
		"workflow %s is read-only (%s): it cannot be %s through the API; edit the file instead", id, where, what)
}
