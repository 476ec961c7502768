package server

import (
	"context"
	"net/http"
	"sort"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/yamlflow"
)

// approvalItem is one node waiting for a human, with what the inbox shows.
type approvalItem struct {
	RunID        string    `json:"runId"`
	NodeID       string    `json:"nodeId"`
	WorkflowID   string    `json:"workflowId,omitempty"`
	WorkflowName string    `json:"workflowName"`
	Kind         string    `json:"kind"`
	Prompt       string    `json:"prompt"`
	Input        string    `json:"input"`
	RunInput     string    `json:"runInput"`
	Since        time.Time `json:"since"`
	// Tool is set when an agent's tool call waits (approve_tools).
	Tool *engine.ToolApproval `json:"tool,omitempty"`
}

// maxInboxRuns bounds the runs the inbox reads per status.
const maxInboxRuns = 1000

// listApprovals answers GET /api/approvals: every node waiting for a
// decision across all workflows and runs, oldest first (the one waiting
// longest is the one to answer first).
func (s *Server) listApprovals(c echo.Context) error {
	ctx := c.Request().Context()
	var runs []*engine.Run
	// A run with a waiting node is paused; a run whose other branches still
	// work may show running while one of them waits.
	for _, st := range []engine.RunStatus{engine.StatusPaused, engine.StatusRunning} {
		rs, err := s.st.ListRuns(ctx, engine.RunFilter{Status: st, Limit: maxInboxRuns})
		if err != nil {
			return engineErr(err)
		}
		runs = append(runs, rs...)
	}
	names := s.workflowNames(ctx)
	out := []approvalItem{}
	for _, r := range runs {
		if len(r.PendingApprovals) == 0 {
			continue
		}
		wid := s.sourceWorkflowID(r)
		name := names[wid]
		if name == "" {
			name = definitionName(r)
		}
		for _, p := range r.PendingApprovals {
			out = append(out, approvalItem{RunID: r.ID, NodeID: p.NodeID, WorkflowID: wid, WorkflowName: name,
				Kind: r.Kind, Prompt: p.Prompt, Input: p.Input, RunInput: r.Input, Since: p.Since, Tool: p.Tool})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Since.Equal(out[j].Since) {
			return out[i].Since.Before(out[j].Since)
		}
		if out[i].RunID != out[j].RunID {
			return out[i].RunID < out[j].RunID
		}
		return out[i].NodeID < out[j].NodeID
	})
	return c.JSON(http.StatusOK, out)
}

// workflowNames maps workflow ids (drawn and of the workflow source) to
// their names. A source that fails to list is logged and left out.
func (s *Server) workflowNames(ctx context.Context) map[string]string {
	names := map[string]string{}
	if ws, err := s.st.ListWorkflows(ctx); err == nil {
		for _, w := range ws {
			names[w.ID] = w.Name
		}
	} else {
		s.log.Warn("list workflows for names", "err", err)
	}
	if s.cfg.Workflows != nil {
		extra, err := s.cfg.Workflows.ListWorkflows(ctx)
		if err != nil {
			s.log.Warn("list workflow source", "dir", s.cfg.WorkflowsDir, "err", err)
		}
		for _, w := range extra {
			names[w.ID] = w.Name
		}
	}
	return names
}

// definitionName names a run whose workflow is gone or was never saved
// (runs of an inline graph): a YAML run by the name in its source.
func definitionName(r *engine.Run) string {
	if r.Kind == engine.KindYAML {
		_, src := splitDefinition(r.Kind, r.Definition)
		if wf, _, _ := yamlflow.Parse("run", []byte(src)); wf != nil && wf.Name != "" {
			return wf.Name
		}
	}
	return "Unsaved workflow"
}
