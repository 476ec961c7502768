package server

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/llm"
)

// The compatibility API answers AgentFlow's web client
// (CodeSignal/learn_bespoke-agentflow, apps/web) in its own shapes: POST
// /api/run runs a graph until it pauses or ends and answers with the whole
// state; the -stream variants send the log as Server-Sent Events. Graphs go
// out as AgentFlow's WorkflowGraph (packages/types/src/index.ts):
// {nodes: [{id, type, x, y, data}], connections: [{source, target,
// sourceHandle, targetHandle}]}, and errors as {error: message, code}
// (apps/web/src/services/api.ts does new Error(payload.error)).

// afNode is AgentFlow's WorkflowNode: x and y at the top of the node.
type afNode struct {
	ID   string         `json:"id"`
	Type string         `json:"type"`
	X    float64        `json:"x"`
	Y    float64        `json:"y"`
	Data graph.NodeData `json:"data"`
}

// afConnection is AgentFlow's WorkflowConnection: no id.
type afConnection struct {
	Source       string `json:"source"`
	Target       string `json:"target"`
	SourceHandle string `json:"sourceHandle,omitempty"`
	TargetHandle string `json:"targetHandle,omitempty"`
}

// afGraph is AgentFlow's WorkflowGraph.
type afGraph struct {
	Nodes       []afNode       `json:"nodes"`
	Connections []afConnection `json:"connections"`
}

// toAgentFlow writes a graph in AgentFlow's shape; node data (agent names,
// prompts, collapsed and every field Switchyard does not know) is kept.
func toAgentFlow(g *graph.Graph) *afGraph {
	out := &afGraph{Nodes: make([]afNode, 0, len(g.Nodes)), Connections: make([]afConnection, 0, len(g.Edges))}
	for _, n := range g.Nodes {
		out.Nodes = append(out.Nodes, afNode{ID: n.ID, Type: n.Type, X: n.Position.X, Y: n.Position.Y, Data: n.Data})
	}
	for _, e := range g.Edges {
		out.Connections = append(out.Connections, afConnection{Source: e.Source, Target: e.Target,
			SourceHandle: e.SourceHandle, TargetHandle: e.TargetHandle})
	}
	return out
}

// agentFlowOf reads a stored graph (current shape) as AgentFlow's; nil if
// there is none.
func agentFlowOf(def json.RawMessage) *afGraph {
	if len(def) == 0 {
		return nil
	}
	var g graph.Graph
	if err := json.Unmarshal(def, &g); err != nil {
		return nil
	}
	return toAgentFlow(&g)
}

// compatWorkflow is r's stored graph in AgentFlow's shape, for any client
// that reloads the run (a YAML run's DAG as a read-only graph, as the UI
// shows it). Every answer of a run carries it, and runs share their
// definitions, so it is made once per definition: decoding the graph
// again was a few percent of a compat run's CPU. Answers only encode it.
func (s *Server) compatWorkflow(r *engine.Run) *afGraph {
	if r.Kind != engine.KindGraph && r.Kind != engine.KindYAML {
		return nil
	}
	h := sha256.New()
	h.Write([]byte(r.Kind))
	h.Write([]byte{0})
	h.Write(r.Definition)
	var key [32]byte
	h.Sum(key[:0])
	if e := s.afGraphs.get(key); e.g != nil {
		return e.g
	}
	var g *afGraph
	if r.Kind == engine.KindGraph {
		g = agentFlowOf(r.Definition)
	} else {
		g = agentFlowOf(yamlRunGraph(r.Definition))
	}
	if g != nil {
		s.afGraphs.put(key, afEntry{g: g, size: len(r.Definition)})
	}
	return g
}

// afEntry is an AgentFlow graph and the size of the definition it was
// made from, which stands for its own in the cache's bound.
type afEntry struct {
	g    *afGraph
	size int
}

// compatLog is one log line.
type compatLog struct {
	Timestamp time.Time `json:"timestamp"`
	NodeID    string    `json:"nodeId"`
	Type      string    `json:"type"`
	Content   string    `json:"content"`
}

// compatState is a run's outputs and node statuses by node id.
type compatState struct {
	Outputs      map[string]string `json:"outputs"`
	NodeStatuses map[string]string `json:"nodeStatuses"`
}

// compatResult is the answer of /api/run, /api/resume and GET /api/run/{id}.
type compatResult struct {
	RunID            string                   `json:"runId"`
	Status           engine.RunStatus         `json:"status"`
	Logs             []compatLog              `json:"logs"`
	State            compatState              `json:"state"`
	WaitingForInput  bool                     `json:"waitingForInput"`
	CurrentNodeID    *string                  `json:"currentNodeId"`
	PendingApprovals []engine.PendingApproval `json:"pendingApprovals"`
	Error            string                   `json:"error,omitempty"`
	Workflow         *afGraph                 `json:"workflow"`
}

type compatRunRequest struct {
	Graph json.RawMessage `json:"graph"`
	Input *string         `json:"input"`
}

type compatResumeRequest struct {
	RunID string `json:"runId"`
	Input struct {
		Decision string `json:"decision"`
		Note     string `json:"note"`
	} `json:"input"`
}

func toLog(ev *engine.Event) compatLog {
	return compatLog{Timestamp: ev.Timestamp, NodeID: ev.NodeID, Type: compatType(ev), Content: ev.Content}
}

// Log types of the compatibility routes that the engine's log names
// otherwise. AgentFlow's client draws every entry whose type contains
// "llm_error" as an error and marks a completed run with one as Failed
// (apps/web/src/app/workflow-editor.ts, handleRunResult), so an LLM call
// that was retried and then answered must not look like one.
const (
	// compatLLMRetry is a failed attempt that is retried.
	compatLLMRetry = "llm_retry"
	// compatLLMFailed is a call that failed for good: the node's error
	// entry that follows says so once (the client shows that one).
	compatLLMFailed = "llm_failed"
)

// compatType is ev's type as AgentFlow's client should read it.
func compatType(ev *engine.Event) string {
	if ev.Type != engine.EvLLMError {
		return ev.Type
	}
	var d struct {
		Final bool `json:"final"`
	}
	if json.Unmarshal(ev.Data, &d) == nil && d.Final {
		return compatLLMFailed
	}
	return compatLLMRetry
}

// compatResultOf reads a run's state and whole log.
func (s *Server) compatResultOf(ctx context.Context, runID string) (*compatResult, error) {
	r, nodes, err := s.e.Snapshot(ctx, runID)
	if err != nil {
		return nil, runErr(runID, err)
	}
	return s.compatResultFrom(ctx, r, nodes, nil)
}

// compatResultFrom is compatResultOf with the run's state already read;
// it reads the whole log unless evs is it.
func (s *Server) compatResultFrom(ctx context.Context, r *engine.Run, nodes []*engine.NodeState, evs []engine.Event) (*compatResult, error) {
	runID := r.ID
	if evs == nil {
		var err error
		if evs, err = s.st.Events(ctx, runID, 0, 0); err != nil {
			return nil, runErr(runID, err)
		}
	}
	res := &compatResult{RunID: r.ID, Status: r.Status, Logs: make([]compatLog, 0, len(evs)),
		State:           compatState{Outputs: map[string]string{}, NodeStatuses: map[string]string{}},
		WaitingForInput: r.WaitingForInput, PendingApprovals: r.PendingApprovals, Error: r.Error}
	if res.PendingApprovals == nil {
		res.PendingApprovals = []engine.PendingApproval{}
	}
	if r.CurrentNodeID != "" {
		id := r.CurrentNodeID
		res.CurrentNodeID = &id
	}
	res.Workflow = s.compatWorkflow(r)
	for i := range evs {
		res.Logs = append(res.Logs, toLog(&evs[i]))
	}
	for _, n := range nodes {
		res.State.NodeStatuses[n.NodeID] = nodeStatus(n.Status)
		if n.Status == engine.NodeCompleted {
			res.State.Outputs[n.NodeID] = n.Output
		}
	}
	return res, nil
}

// compatStart decodes, checks and starts a graph: 400 for an invalid
// graph, 503 when it has agent nodes and no LLM is configured.
// keepLog: the run's log is kept in memory for the answer (see
// waitAndAnswer).
func (s *Server) compatStart(c echo.Context, keepLog bool) (*engine.Run, error) {
	var req compatRunRequest
	if err := decodeBody(c, &req); err != nil {
		return nil, err
	}
	pg, err := s.prepareGraph(fromCompat, req.Graph, decodeRequestGraph, func(g *graph.Graph) error {
		if probs := graph.Validate(g); graph.HasErrors(probs) {
			return &apiError{Status: http.StatusBadRequest, Code: CodeInvalidGraph,
				Message: "the graph has errors: " + firstError(probs), Problems: probs}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !s.llmOK && pg.HasAgent() {
		return nil, newErr(http.StatusServiceUnavailable, CodeNoLLM,
			"the graph has agent nodes but no LLM is configured: set OPENAI_API_KEY or OPENAI_BASE_URL")
	}
	opt := engine.StartOptions{WorkDir: s.cfg.GraphWorkDir, KeepLog: keepLog}
	if req.Input != nil {
		opt.Input = *req.Input
	}
	run, err := s.e.StartPrepared(c.Request().Context(), pg, opt)
	if err != nil {
		return nil, startErr(err)
	}
	return run, nil
}

// waitAndAnswer waits until the run pauses or ends (or shutdown begins)
// and answers with its state.
func (s *Server) waitAndAnswer(c echo.Context, runID string) error {
	ctx, cancel := s.longCtx(c.Request().Context())
	defer cancel()
	// A run that ends here is answered from the engine's memory (its end
	// is durable by then), its log too when the engine kept it (a run
	// started by this request); otherwise the log is read from the store.
	r, nodes, evs, err := s.e.WaitLog(ctx, runID)
	if err != nil && !s.draining() {
		return err
	}
	var res *compatResult
	if err == nil {
		res, err = s.compatResultFrom(context.WithoutCancel(c.Request().Context()), r, nodes, evs)
	} else { // shutting down: the state as it is now
		res, err = s.compatResultOf(context.WithoutCancel(c.Request().Context()), runID)
	}
	if err != nil {
		return err
	}
	// The wait had no deadline; the answer has one, as ordinary ones do.
	_ = http.NewResponseController(c.Response().Writer).SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	return c.JSON(http.StatusOK, res)
}

func (s *Server) compatRun(c echo.Context) error {
	run, err := s.compatStart(c, true)
	if err != nil {
		return err
	}
	return s.waitAndAnswer(c, run.ID)
}

func (s *Server) compatGetRun(c echo.Context) error {
	id, err := runIDParam(c, "runId")
	if err != nil {
		return err
	}
	res, err := s.compatResultOf(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

// beginResume checks a compat resume request and marks the run as being
// resumed, so a second concurrent resume gets 409 at once.
func (s *Server) beginResume(c echo.Context) (string, engine.Decision, func(), error) {
	var req compatResumeRequest
	if err := decodeBody(c, &req); err != nil {
		return "", engine.Decision{}, nil, err
	}
	if !validRunID(req.RunID) {
		return "", engine.Decision{}, nil, badRequest("invalid runId %q: expected a uuid", truncate(req.RunID, 80))
	}
	if !validDecision(req.Input.Decision) {
		return "", engine.Decision{}, nil, newErr(http.StatusBadRequest, CodeInvalidDecision,
			"input.decision must be \"approve\" or \"reject\", not %q", truncate(req.Input.Decision, 40))
	}
	s.resumingMu.Lock()
	if s.resuming[req.RunID] {
		s.resumingMu.Unlock()
		return "", engine.Decision{}, nil, newErr(http.StatusConflict, CodeConflict, "run %s is already being resumed", req.RunID)
	}
	s.resuming[req.RunID] = true
	s.resumingMu.Unlock()
	done := func() {
		s.resumingMu.Lock()
		delete(s.resuming, req.RunID)
		s.resumingMu.Unlock()
	}
	return req.RunID, engine.Decision{Decision: req.Input.Decision, Note: req.Input.Note}, done, nil
}

func (s *Server) compatResume(c echo.Context) error {
	runID, d, done, err := s.beginResume(c)
	if err != nil {
		return err
	}
	defer done()
	if _, err := s.e.Resume(c.Request().Context(), runID, "", d); err != nil {
		return runErr(runID, err)
	}
	return s.waitAndAnswer(c, runID)
}

// compatRunStream starts a graph and streams its log as Server-Sent Events
// until it pauses or ends.
func (s *Server) compatRunStream(c echo.Context) error {
	run, err := s.compatStart(c, false)
	if err != nil {
		return err
	}
	f := s.followRun(run.ID, 0)
	defer f.stop()
	return s.streamSSE(c, f)
}

func (s *Server) compatResumeStream(c echo.Context) error {
	runID, d, done, err := s.beginResume(c)
	if err != nil {
		return err
	}
	defer done()
	ctx := c.Request().Context()
	// Subscribe before resuming and stream only what follows the pause.
	f := s.followRun(runID, 0)
	defer f.stop()
	_, _, last, err := s.st.LoadRun(ctx, runID)
	if err != nil {
		return runErr(runID, err)
	}
	f.last = last
	if _, err := s.e.Resume(ctx, runID, "", d); err != nil {
		return runErr(runID, err)
	}
	return s.streamSSE(c, f)
}

type sseMessage struct {
	Type    string        `json:"type"`
	RunID   string        `json:"runId,omitempty"`
	Entry   *compatLog    `json:"entry,omitempty"`
	Result  *compatResult `json:"result,omitempty"`
	Message string        `json:"message,omitempty"`
}

// streamSSE sends start, one log message per event and done (or error).
func (s *Server) streamSSE(c echo.Context, f *follower) error {
	w := c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// Each message must be taken within WSWriteTimeout: a client that stops
	// reading would otherwise hold the connection (and this handler) until
	// the run ends, or forever once the kernel's buffers are full.
	rc := http.NewResponseController(w.Writer)
	send := func(m sseMessage) error {
		raw, err := json.Marshal(m)
		if err != nil {
			return err
		}
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.WSWriteTimeout))
		if _, err := fmt.Fprintf(w, "data: %s\n\n", raw); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err := send(sseMessage{Type: "start", RunID: f.runID}); err != nil {
		return nil
	}
	ctx, cancel := s.longCtx(c.Request().Context())
	defer cancel()
	// The run left its loop (paused or ended): all its events are durable.
	settled := make(chan struct{})
	go func() {
		defer close(settled)
		_, _ = s.e.Wait(ctx, f.runID)
	}()
	err := f.run(ctx, false, settled, func(ev *engine.Event, _ *liveEvent) error {
		l := toLog(ev)
		return send(sseMessage{Type: "log", Entry: &l})
	})
	if err == nil {
		select { // the terminal event may precede the final checkpoint
		case <-settled:
		case <-ctx.Done():
		}
		if ctx.Err() != nil { // Wait gave up: shutdown or the client left
			err = ctx.Err()
		}
	}
	switch {
	case errors.Is(err, errTooSlow):
		_ = send(sseMessage{Type: "error", Message: "client too slow; read the run with GET /api/run/" + f.runID})
		return nil
	case err != nil && s.draining():
		_ = send(sseMessage{Type: "error", Message: "server shutting down; the run stays resumable: GET /api/run/" + f.runID})
		return nil
	case err != nil && c.Request().Context().Err() != nil:
		return nil // client went away
	case isTimeout(err):
		s.log.Info("event stream: client stopped reading; stream ended", "run", f.runID)
		return nil
	case err != nil:
		s.log.Warn("event stream failed", "run", f.runID, "err", err)
		_ = send(sseMessage{Type: "error", Message: err.Error()})
		return nil
	}
	res, err := s.compatResultOf(context.WithoutCancel(c.Request().Context()), f.runID)
	if err != nil {
		_ = send(sseMessage{Type: "error", Message: err.Error()})
		return nil
	}
	_ = send(sseMessage{Type: "done", Result: res})
	return nil
}

// defaultWorkflow is a starter graph: start → writer → approval → publisher,
// with rejections going back to the writer with the reviewer's note, in
// AgentFlow's shape with its nodes collapsed (as AgentFlow adds them), so
// the editor's expanded node width does not stack them on each other.
func (s *Server) defaultWorkflow(c echo.Context) error {
	g := toAgentFlow(DefaultWorkflow())
	for i := range g.Nodes {
		d := &g.Nodes[i].Data
		if d.Extra == nil {
			d.Extra = map[string]json.RawMessage{}
		}
		d.Extra["collapsed"] = json.RawMessage("true")
	}
	return c.JSON(http.StatusOK, g)
}

// DefaultWorkflow returns the starter graph offered to new users.
func DefaultWorkflow() *graph.Graph {
	node := func(id, typ string, x, y float64, d graph.NodeData) graph.Node {
		return graph.Node{ID: id, Type: typ, Position: graph.Position{X: x, Y: y}, Data: d}
	}
	edge := func(src, handle, dst string) graph.Edge {
		return graph.Edge{ID: "e-" + src + "-" + handle + "-" + dst, Source: src, Target: dst,
			SourceHandle: handle, TargetHandle: graph.HandleInput}
	}
	return &graph.Graph{
		Nodes: []graph.Node{
			node("start", graph.TypeStart, 0, 100, graph.NodeData{InitialInput: "Write a short product announcement for a new coffee grinder."}),
			node("writer", graph.TypeAgent, 280, 100, graph.NodeData{AgentName: "Writer",
				SystemPrompt: "You write clear, friendly marketing copy.",
				UserPrompt:   "{{PREVIOUS_OUTPUT}}\n\nIf there is reviewer feedback, address it: $REJECTION_REASON",
				Model:        llm.DefaultModel, ReasoningEffort: "low",
				Tools: &graph.Tools{}}),
			node("review", graph.TypeApproval, 560, 100, graph.NodeData{Prompt: "Publish this draft?"}),
			node("publisher", graph.TypeAgent, 840, 40, graph.NodeData{AgentName: "Publisher",
				SystemPrompt: "You format text for the web.",
				UserPrompt:   "Format this as a short HTML snippet:\n\n{{PREVIOUS_OUTPUT}}",
				Model:        llm.DefaultModel, ReasoningEffort: "low", Tools: &graph.Tools{}}),
		},
		Edges: []graph.Edge{
			edge("start", graph.HandleOutput, "writer"),
			edge("writer", graph.HandleOutput, "review"),
			edge("review", graph.HandleApprove, "publisher"),
			edge("review", graph.HandleReject, "writer"),
		},
	}
}
