package server

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
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

// Inbox pages: GET /api/approvals answers DefaultApprovalsPage items at a
// time (limit up to MaxApprovalsPage), oldest first; X-Total-Count says how
// many wait in all and X-Next-Cursor, on a full page, where to read on
// (after=<cursor>).
const (
	DefaultApprovalsPage = 1000
	MaxApprovalsPage     = 10000
	// inboxReadPage is how many run headers one store read takes.
	inboxReadPage = 1000
)

// listApprovals answers GET /api/approvals: every node waiting for a
// decision across all workflows and runs, oldest first (the one waiting
// longest is the one to answer first), a page at a time.
//
// Every paused and running run is read (in pages of the store's newest-
// first order), since the oldest approval may be in any of them: reading
// only the newest thousand runs lost the oldest approvals beyond them.
func (s *Server) listApprovals(c echo.Context) error {
	ctx := c.Request().Context()
	limit := DefaultApprovalsPage
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > MaxApprovalsPage {
			return badRequest("limit must be an integer from 1 to %d, not %q", MaxApprovalsPage, truncate(v, 40))
		}
		limit = n
	}
	var after *inboxCursor
	if v := c.QueryParam("after"); v != "" {
		cur, err := parseInboxCursor(v)
		if err != nil {
			return badRequest("after must be a cursor from X-Next-Cursor, not %q", truncate(v, 80))
		}
		after = &cur
	}
	var runs []*engine.Run
	// A run with a waiting node is paused; a run whose other branches still
	// work may show running while one of them waits.
	for _, st := range []engine.RunStatus{engine.StatusPaused, engine.StatusRunning} {
		rs, err := s.allRuns(ctx, st)
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
	sort.SliceStable(out, func(i, j int) bool { return cursorOf(out[i]).before(cursorOf(out[j])) })
	total := len(out)
	if after != nil {
		i := sort.Search(len(out), func(i int) bool { return after.before(cursorOf(out[i])) })
		out = out[i:]
	}
	h := c.Response().Header()
	h.Set("X-Total-Count", strconv.Itoa(total))
	if len(out) > limit {
		out = out[:limit]
		h.Set("X-Next-Cursor", cursorOf(out[len(out)-1]).String())
	}
	return c.JSON(http.StatusOK, out)
}

// allRuns reads every run of a status, a store page at a time. The store
// lists newest first with a strict created-before bound: the next page
// starts just after the last one's time, and runs seen already (created in
// the same microsecond) are skipped.
func (s *Server) allRuns(ctx context.Context, st engine.RunStatus) ([]*engine.Run, error) {
	var out []*engine.Run
	seen := map[string]bool{}
	f := engine.RunFilter{Status: st, Limit: inboxReadPage}
	for {
		rs, err := s.st.ListRuns(ctx, f)
		if err != nil {
			return nil, err
		}
		fresh := 0
		for _, r := range rs {
			if !seen[r.ID] {
				seen[r.ID] = true
				out = append(out, r)
				fresh++
			}
		}
		if len(rs) < inboxReadPage || fresh == 0 {
			return out, nil
		}
		f.Before = rs[len(rs)-1].CreatedAt.Add(time.Microsecond)
	}
}

// inboxCursor is an item's place in the inbox order: since, run, node.
type inboxCursor struct {
	since         time.Time
	runID, nodeID string
}

func cursorOf(it approvalItem) inboxCursor {
	return inboxCursor{since: it.Since, runID: it.RunID, nodeID: it.NodeID}
}

func (a inboxCursor) before(b inboxCursor) bool {
	if !a.since.Equal(b.since) {
		return a.since.Before(b.since)
	}
	if a.runID != b.runID {
		return a.runID < b.runID
	}
	return a.nodeID < b.nodeID
}

// String is the cursor as X-Next-Cursor sends it: opaque to clients.
func (a inboxCursor) String() string {
	raw := a.since.UTC().Format(time.RFC3339Nano) + "\n" + a.runID + "\n" + a.nodeID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func parseInboxCursor(v string) (inboxCursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return inboxCursor{}, err
	}
	parts := strings.SplitN(string(raw), "\n", 3)
	if len(parts) != 3 {
		return inboxCursor{}, errors.New("malformed cursor")
	}
	t, err := time.Parse(time.RFC3339Nano, parts[0])
	if err != nil {
		return inboxCursor{}, err
	}
	return inboxCursor{since: t, runID: parts[1], nodeID: parts[2]}, nil
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
