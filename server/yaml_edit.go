package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/yamldir"
	"github.com/switchyard/switchyard/yamledit"
	"github.com/switchyard/switchyard/yamlflow"
)

// Editing YAML workflow files (issue #17): PUT /api/workflows/{id} for a
// yaml.* id saves the file's new text or applies structured edits to it,
// POST /api/workflows/yaml creates a file, POST /api/yaml/validate checks
// text as it is typed, POST /api/workflows/{id}/yaml converts a drawn
// workflow to YAML text, and /api/workflows/{id}/positions keeps where
// the canvas shows a file's nodes (outside the file). Writes follow the
// auth middleware like every route (a token off loopback) and are refused
// with 403 under serve --read-only-workflows.

// CodeInvalidEdit is a structured edit that cannot be applied.
const CodeInvalidEdit = "invalid_edit"

// registerYAMLEditRoutes adds the routes of YAML editing.
func (s *Server) registerYAMLEditRoutes(e *echo.Echo) {
	if y, ok := s.cfg.Workflows.(*YAMLWorkflows); ok {
		y.editable.Store(!s.cfg.ReadOnlyWorkflows)
		switch db, ok := any(s.cfg.Store).(positionDB); {
		case ok && db != nil:
			y.positions = &yamlPositions{db: db}
		case s.cfg.YAMLPositionsFile != "":
			y.positions = newYAMLPositions(s.cfg.YAMLPositionsFile)
		}
	}
	e.POST("/api/workflows/yaml", s.createYAML)
	e.POST("/api/yaml/validate", s.validateYAML)
	e.POST("/api/workflows/:id/yaml", s.convertToYAML)
	e.GET("/api/workflows/:id/positions", s.getYAMLPositions)
	e.PUT("/api/workflows/:id/positions", s.putYAMLPositions)
}

// putWorkflow is PUT /api/workflows/{id}: YAML files are saved here,
// drawn workflows by updateWorkflow.
func (s *Server) putWorkflow(c echo.Context) error {
	if y, ok := s.cfg.Workflows.(*YAMLWorkflows); ok && y.OwnsWorkflowID(c.Param("id")) {
		return s.saveYAML(c)
	}
	return s.updateWorkflow(c)
}

// yamlEditor is the folder edits go to, or the error saying why there is
// none (403 read-only, 404 no folder).
func (s *Server) yamlEditor() (*YAMLWorkflows, error) {
	y, ok := s.cfg.Workflows.(*YAMLWorkflows)
	if !ok {
		return nil, newErr(http.StatusNotFound, CodeNotFound, "this server has no YAML workflow folder (serve --workflows DIR)")
	}
	if s.cfg.ReadOnlyWorkflows {
		return nil, newErr(http.StatusForbidden, CodeForbidden,
			"YAML workflows are read-only on this server (serve --read-only-workflows): edit the files instead")
	}
	return y, nil
}

// yamlSaveRequest is the body of PUT /api/workflows/{id} for a YAML file:
// the whole new text (source) or edits, and the hash of the text the
// editor started from.
type yamlSaveRequest struct {
	Source   *string         `json:"source"`
	Edits    []yamledit.Edit `json:"edits"`
	BaseHash string          `json:"baseHash"`
	// A drawn workflow's save (WorkflowWrite), refused with a hint.
	Version int             `json:"version"`
	Graph   json.RawMessage `json:"graph"`
}

// yamlConflictBody is the 409 of a save whose base is not the file's
// text: the text sent (yours: the source, or the edits applied to the
// base when the server still has it), the file's text now (disk) and, when
// known, the text the editor started from (base).
type yamlConflictBody struct {
	Error    errorDetail `json:"error"`
	Yours    string      `json:"yours,omitempty"`
	Disk     string      `json:"disk"`
	DiskHash string      `json:"diskHash"`
	Base     *string     `json:"base,omitempty"`
}

// MaxYAMLEdits bounds the structured edits of one save. An editor sends
// one or a few per change; applying each re-reads the text, so thousands
// in one request cost minutes (5,000 addNode edits took 84 s).
const MaxYAMLEdits = 500

// yamlEditHook, when set (tests), is called before each edit is applied.
var yamlEditHook func(ctx context.Context, i int)

func (s *Server) saveYAML(c echo.Context) error {
	id, err := workflowIDParam(c)
	if err != nil {
		return err
	}
	y, err := s.yamlEditor()
	if err != nil {
		return err
	}
	var req yamlSaveRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	switch {
	case req.Source == nil && req.Edits == nil && (req.Version != 0 || req.Graph != nil):
		return badRequest("workflow %s is a YAML file: saving a version and graph is read-only for it; send {source or edits, baseHash}", id)
	case req.BaseHash == "":
		return badRequest("baseHash is required: the hex SHA-256 of the text you started from (sourceHash of GET /api/workflows/%s)", id)
	case req.Source == nil && req.Edits == nil:
		return badRequest("send source (the whole new text) or edits")
	case req.Source != nil && req.Edits != nil:
		return badRequest("send source or edits, not both")
	case len(req.Edits) > MaxYAMLEdits:
		return newErr(http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
			"%d edits in one save; the limit is %d: send the whole text (source) instead", len(req.Edits), MaxYAMLEdits)
	}
	ctx := c.Request().Context()
	var src []byte
	if req.Source != nil {
		src = []byte(*req.Source)
	} else {
		// The edits are applied here, outside the folder's write lock (a
		// save of another file does not wait for them), to the text the
		// editor started from; Save then writes the result only if the
		// file is still that text.
		cur, err := y.f.Get(ctx, id)
		if err != nil {
			return err
		}
		if yamldir.Hash([]byte(cur.Source)) != req.BaseHash {
			return s.yamlConflict(c, y, &req, &yamldir.ConflictError{Path: cur.Path, Disk: []byte(cur.Source)})
		}
		if src, err = applyEdits(ctx, []byte(cur.Source), req.Edits); err != nil {
			return editError(err)
		}
	}
	if _, _, err := parseYAMLText(ctx, id, src); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return cancelled(err)
	}
	old, saved, err := y.f.Save(ctx, id, req.BaseHash, src, nil)
	var conflict *yamldir.ConflictError
	switch {
	case errors.As(err, &conflict):
		return s.yamlConflict(c, y, &req, conflict)
	case err != nil:
		return err
	}
	added, removed := lineChanges(string(old), string(saved))
	if string(old) == string(saved) {
		return s.answerYAML(c, y, id, http.StatusOK)
	}
	s.log.Info("yaml workflow saved", "route", "PUT /api/workflows/:id", "id", id, "file", y.pathOf(ctx, id),
		"mode", map[bool]string{true: "source", false: "edits"}[req.Source != nil], "diff", fmt.Sprintf("+%d -%d lines", added, removed))
	return s.answerYAMLWrite(c, y, id, http.StatusOK)
}

// applyEdits applies edits to src in order, stopping when ctx ends (the
// client left): an error leaves nothing applied.
func applyEdits(ctx context.Context, src []byte, edits []yamledit.Edit) ([]byte, error) {
	d, err := yamledit.Parse(src)
	if err != nil {
		return nil, err
	}
	for i, e := range edits {
		if yamlEditHook != nil {
			yamlEditHook(ctx, i)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if e.Op == yamledit.OpRestoreLines {
			// An undo computed by yamledit.Inverse from a text, not part
			// of the API's vocabulary of structured edits: a client that
			// has the text it wants saves it as source.
			return nil, &yamledit.Error{Index: i, Op: e.Op, Line: e.Line,
				Msg: "restoreLines is not accepted here: send the whole text as source instead"}
		}
		if err := d.Apply(e); err != nil {
			var ee *yamledit.Error
			if errors.As(err, &ee) {
				ee.Index = i
			}
			return nil, err
		}
	}
	return d.Bytes(), nil
}

// editError maps what applyEdits returns to API errors.
func editError(err error) error {
	var ee *yamledit.Error
	switch {
	case errors.As(err, &ee):
		return newErr(http.StatusBadRequest, CodeInvalidEdit, "%s", ee.Error())
	case errors.Is(err, yamledit.ErrParse):
		return newErr(http.StatusBadRequest, CodeInvalidEdit, "structured edits need a file that parses: %v; save the text instead", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return cancelled(err)
	}
	return err
}

// cancelled answers a request whose client left (or the server is
// stopping) before anything was written.
func cancelled(err error) error {
	return newErr(http.StatusServiceUnavailable, CodeUnavailable, "the request ended before it was done (%v); nothing was saved", err)
}

// yamlConflict answers 409 for a save whose base is not the file's text.
func (s *Server) yamlConflict(c echo.Context, y *YAMLWorkflows, req *yamlSaveRequest, conflict *yamldir.ConflictError) error {
	body := yamlConflictBody{Error: errorDetail{Code: CodeConflict, Message: conflict.Error() +
		": merge your change into the file's text (disk) and save again with baseHash " + yamldir.Hash(conflict.Disk)},
		Disk: string(conflict.Disk), DiskHash: yamldir.Hash(conflict.Disk)}
	if base, ok := y.served.get(req.BaseHash); ok {
		b := string(base)
		body.Base = &b
		if req.Source == nil && len(req.Edits) <= MaxYAMLEdits {
			if mine, err := applyEdits(c.Request().Context(), base, req.Edits); err == nil {
				body.Yours = string(mine)
			}
		}
	}
	if req.Source != nil {
		body.Yours = *req.Source
	}
	return c.JSON(http.StatusConflict, body)
}

// parseYAMLText parses YAML workflow text from a request under the limits
// graphs have: at most yamlflow.MaxFileSize bytes (413), one of the decode
// slots graphs use (parsing costs about a hundred times the text in
// memory: a few at a time, or 503), and the graph limits on nodes,
// dependencies and ids (413), on the workflow as parsed (includes expanded).
func parseYAMLText(ctx context.Context, name string, src []byte, opts ...yamlflow.ParseOption) (*yamlflow.Workflow, []yamlflow.Diagnostic, error) {
	if len(src) > yamlflow.MaxFileSize {
		return nil, nil, newErr(http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
			"the YAML text is %d bytes; the limit is %d", len(src), yamlflow.MaxFileSize)
	}
	release, err := acquireDecodeSlot(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	wf, diags, _ := yamlflow.Parse(name, src, opts...)
	if err := checkYAMLLimits(wf); err != nil {
		return nil, nil, newErr(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "workflow: %v", err)
	}
	return wf, diags, nil
}

// checkYAMLLimits is graph.CheckLimits for a YAML workflow: its nodes,
// its dependencies (edges) and the lengths of their ids.
func checkYAMLLimits(wf *yamlflow.Workflow) error {
	if wf == nil {
		return nil
	}
	if n := len(wf.Nodes); n > graph.MaxNodes {
		return &graph.LimitError{Message: fmt.Sprintf("it has %d nodes; the limit is %d", n, graph.MaxNodes)}
	}
	edges := 0
	for i, n := range wf.Nodes {
		if len(n.ID) > graph.MaxIDLength {
			return &graph.LimitError{Message: fmt.Sprintf("node %d: its id is %d bytes; ids may be at most %d", i, len(n.ID), graph.MaxIDLength)}
		}
		for _, d := range n.DependsOn {
			if len(d) > graph.MaxIDLength {
				return &graph.LimitError{Message: fmt.Sprintf("node %q: a depends_on id is %d bytes; ids may be at most %d", truncate(n.ID, 80), len(d), graph.MaxIDLength)}
			}
		}
		edges += len(n.DependsOn)
	}
	if edges > graph.MaxEdges {
		return &graph.LimitError{Message: fmt.Sprintf("it has %d dependencies (edges); the limit is %d", edges, graph.MaxEdges)}
	}
	return nil
}

// answerYAML answers with the workflow as GET /api/workflows/{id} shows it.
func (s *Server) answerYAML(c echo.Context, y *YAMLWorkflows, id string, status int) error {
	w, err := y.GetWorkflow(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(status, w)
}

type yamlCreateRequest struct {
	Path   string `json:"path"`
	Source string `json:"source"`
}

func (s *Server) createYAML(c echo.Context) error {
	y, err := s.yamlEditor()
	if err != nil {
		return err
	}
	var req yamlCreateRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, _, err := parseYAMLText(ctx, req.Path, []byte(req.Source)); err != nil {
		return err
	}
	id, err := y.f.Create(ctx, req.Path, []byte(req.Source))
	var pe *yamldir.PathError
	switch {
	case errors.As(err, &pe):
		return badRequest("%s", pe.Error())
	case errors.Is(err, yamldir.ErrExists):
		return newErr(http.StatusConflict, CodeConflict, "%v: choose another name, or open it and save with PUT /api/workflows/{id}", err)
	case err != nil:
		return err
	}
	s.log.Info("yaml workflow created", "route", "POST /api/workflows/yaml", "id", id, "file", req.Path,
		"diff", fmt.Sprintf("+%d -0 lines", strings.Count(req.Source, "\n")+boolInt(req.Source != "" && !strings.HasSuffix(req.Source, "\n"))))
	return s.answerYAMLWrite(c, y, id, http.StatusCreated)
}

// yamlProblem is a problem of YAML text with its column (the first
// non-blank character of its line) for editors.
type yamlProblem struct {
	graph.Problem
	Column int `json:"column,omitempty"`
}

type yamlValidateRequest struct {
	Source string `json:"source"`
	// Path names the file in messages (default "workflow.yaml").
	Path string `json:"path"`
}

type yamlValidateResponse struct {
	Valid    bool          `json:"valid"`
	Problems []yamlProblem `json:"problems"`
	// Graph is the canvas projection of the text (as GET gives it).
	Graph json.RawMessage `json:"graph"`
}

// includeDir is where include: blocks of the file at rel (a path in the
// workflows folder, "" for a new file) are looked up: beside it, never
// outside the folder.
func (s *Server) includeDir(rel string) string {
	y, ok := s.cfg.Workflows.(*YAMLWorkflows)
	if !ok {
		return ""
	}
	root := y.Dir()
	dir := filepath.Dir(filepath.Join(root, filepath.FromSlash(rel)))
	if r, err := filepath.Rel(root, dir); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return root
	}
	return dir
}

// validateYAML is POST /api/yaml/validate: the problems `switchyard
// validate` reports for the text, with lines and columns.
func (s *Server) validateYAML(c echo.Context) error {
	var req yamlValidateRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	name := req.Path
	if name == "" {
		name = "workflow.yaml"
	}
	var opts []yamlflow.ParseOption
	if dir := s.includeDir(req.Path); dir != "" {
		opts = append(opts, yamlflow.WithIncludeDir(dir))
	}
	wf, diags, err := parseYAMLText(c.Request().Context(), name, []byte(req.Source), opts...)
	if err != nil {
		return err
	}
	lines := strings.Split(req.Source, "\n")
	out := yamlValidateResponse{Problems: []yamlProblem{}, Graph: yamlflow.CanvasJSON(wf)}
	for _, p := range yamlflow.Problems(diags) {
		yp := yamlProblem{Problem: p}
		if p.Line > 0 && p.Line <= len(lines) {
			l := lines[p.Line-1]
			yp.Column = len([]rune(l)) - len([]rune(strings.TrimLeft(l, " \t"))) + 1
		}
		out.Problems = append(out.Problems, yp)
	}
	out.Valid = !graph.HasErrors(yamlflow.Problems(diags))
	return c.JSON(http.StatusOK, out)
}

type yamlConvertResponse struct {
	Source      string                 `json:"source"`
	Path        string                 `json:"path"`
	Unconverted []yamledit.Unconverted `json:"unconverted"`
	Problems    []graph.Problem        `json:"problems"`
}

// convertToYAML is POST /api/workflows/{id}/yaml: a drawn workflow as
// YAML text, with what could not be converted. It writes nothing.
func (s *Server) convertToYAML(c echo.Context) error {
	id, err := workflowIDParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	w, err := s.st.GetWorkflow(ctx, id)
	if errors.Is(err, engine.ErrNotFound) {
		if y, ok := s.cfg.Workflows.(*YAMLWorkflows); ok && y.OwnsWorkflowID(id) {
			return badRequest("workflow %s is already YAML", id)
		}
		return newErr(http.StatusNotFound, CodeNotFound, "workflow %s not found", id)
	}
	if err != nil {
		return engineErr(err)
	}
	if w.Kind != engine.KindGraph {
		return badRequest("workflow %s is %q, not a drawn graph", id, w.Kind)
	}
	g, _, err := decodeGraph(w.Definition)
	if err != nil {
		return err
	}
	src, unconv := yamledit.FromGraph(w.Name, w.Description, g)
	_, diags, _ := yamlflow.Parse(yamledit.FileName(w.Name), src)
	return c.JSON(http.StatusOK, yamlConvertResponse{Source: string(src), Path: yamledit.FileName(w.Name),
		Unconverted: unconv, Problems: nonNilProblems(yamlflow.Problems(diags))})
}

// servedTexts remembers the texts the server gave out or saved, by hash,
// so a 409 can include the base an editor started from. Bounded by count
// and bytes; the oldest go first.
type servedTexts struct {
	mu    sync.Mutex
	order []string
	m     map[string][]byte
	size  int
}

const (
	servedMaxTexts = 64
	servedMaxBytes = 16 << 20
)

func (t *servedTexts) put(src []byte) string {
	h := yamldir.Hash(src)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string][]byte{}
	}
	if _, ok := t.m[h]; ok || len(src) > servedMaxBytes {
		return h
	}
	t.m[h] = src
	t.order = append(t.order, h)
	t.size += len(src)
	for len(t.order) > servedMaxTexts || t.size > servedMaxBytes {
		old := t.order[0]
		t.order = t.order[1:]
		t.size -= len(t.m[old])
		delete(t.m, old)
	}
	return h
}

func (t *servedTexts) get(h string) ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.m[h]
	return b, ok
}

// lineChanges counts the lines added and removed between two texts (a
// line multiset difference: cheap, and exact for the usual edits).
func lineChanges(a, b string) (added, removed int) {
	count := map[string]int{}
	for _, l := range strings.SplitAfter(a, "\n") {
		if l != "" {
			count[l]++
		}
	}
	for _, l := range strings.SplitAfter(b, "\n") {
		if l == "" {
			continue
		}
		if count[l] > 0 {
			count[l]--
		} else {
			added++
		}
	}
	for _, n := range count {
		removed += n
	}
	return added, removed
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pathOf is the file of id as people see it, for logs.
func (y *YAMLWorkflows) pathOf(ctx context.Context, id string) string {
	w, err := y.f.Get(ctx, id)
	if err != nil {
		return id
	}
	return w.Path
}
