package server

import (
	"context"
	"net/http"
	"time"

	"github.com/switchyard/switchyard/engine"
)

// RunWorkflowNamer is optionally implemented by a WorkflowSource whose
// runs are stored without a workflow id (YAML runs: the runs table's
// workflow_id only names drawn workflows). It lets GET /api/runs?workflowId=
// filter by the source's ids, and run responses name the workflow a run
// came from.
type RunWorkflowNamer interface {
	// OwnsWorkflowID reports whether id is one of the source's ids, even
	// one whose workflow is gone (its runs are not).
	OwnsWorkflowID(id string) bool
	// WorkflowIDOfRun returns the id of the source's workflow r was
	// started from, or "".
	WorkflowIDOfRun(r *engine.Run) string
}

// Scanning for the runs of a source workflow: the store cannot filter on
// the definition, so runs are read newest first in pages and matched here,
// up to maxSourceRunScan runs per request.
const (
	sourceRunPage    = 250
	maxSourceRunScan = 10000
)

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
// and before. Runs created in the same microsecond as the last one of a
// page are read again and de-duplicated, so none is skipped.
func (s *Server) listSourceRuns(ctx context.Context, n RunWorkflowNamer, f engine.RunFilter) ([]*engine.Run, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	out := []*engine.Run{}
	seen := map[string]bool{}
	before := f.Before
	scanned := 0
	for scanned < maxSourceRunScan {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		page, err := s.st.ListRuns(ctx, engine.RunFilter{Status: f.Status, Before: before, Limit: sourceRunPage})
		if err != nil {
			return nil, err
		}
		progress := false
		for _, r := range page {
			if seen[r.ID] {
				continue
			}
			seen[r.ID] = true
			progress = true
			scanned++
			if r.Kind == engine.KindYAML && n.WorkflowIDOfRun(r) == f.WorkflowID {
				out = append(out, r)
				if len(out) == limit {
					return out, nil
				}
			}
		}
		if len(page) < sourceRunPage {
			return out, nil
		}
		last := page[len(page)-1].CreatedAt
		next := last.Add(time.Microsecond) // again from the last one's microsecond
		if !progress || (!before.IsZero() && !next.Before(before)) {
			next = last // a whole page in one microsecond: move on
		}
		before = next
	}
	s.log.Warn("run history of a workflow file: stopped scanning", "workflowId", f.WorkflowID,
		"scanned", scanned, "found", len(out))
	return out, nil
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
