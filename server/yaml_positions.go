package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/store"
)

// Canvas positions of YAML workflow nodes live outside the user's files:
// in the database (table yaml_positions, keyed by workflow id, i.e. the
// file's path in the folder, and node id) when the store has it (SQLite
// and PostgreSQL do), else in a JSON file in the data folder
// (Config.YAMLPositionsFile, written atomically), else in memory.

// positionDB is a store that keeps YAML node positions.
type positionDB interface {
	YAMLPositions(ctx context.Context, workflowID string) (map[string]store.NodePosition, error)
	SetYAMLPositions(ctx context.Context, workflowID string, pos map[string]store.NodePosition) error
}

// Limits of the positions a client may store.
const (
	maxPositionNodes     = 10000
	maxPositionWorkflows = 10000
)

type yamlPositions struct {
	db   positionDB // when set, the rest is unused
	mu   sync.Mutex
	path string // "" = memory only
	m    map[string]map[string]graph.Position
	err  error // the file could not be read: writes refused, so it is not overwritten
}

func newYAMLPositions(path string) *yamlPositions {
	p := &yamlPositions{path: path, m: map[string]map[string]graph.Position{}}
	if path == "" {
		return p
	}
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		p.err = err
	default:
		if err := json.Unmarshal(raw, &p.m); err != nil {
			p.err = fmt.Errorf("%s: %w", path, err)
		}
		if p.m == nil {
			p.m = map[string]map[string]graph.Position{}
		}
	}
	return p
}

func (p *yamlPositions) get(ctx context.Context, id string) (map[string]graph.Position, error) {
	if p.db != nil {
		m, err := p.db.YAMLPositions(ctx, id)
		out := make(map[string]graph.Position, len(m))
		for k, v := range m {
			out[k] = graph.Position{X: v.X, Y: v.Y}
		}
		return out, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]graph.Position{}
	for k, v := range p.m[id] {
		out[k] = v
	}
	return out, nil
}

// set replaces the positions of workflow id (none: forgets it).
func (p *yamlPositions) set(ctx context.Context, id string, pos map[string]graph.Position) error {
	if p.db != nil {
		m := make(map[string]store.NodePosition, len(pos))
		for k, v := range pos {
			m[k] = store.NodePosition{X: v.X, Y: v.Y}
		}
		return p.db.SetYAMLPositions(ctx, id, m)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return fmt.Errorf("positions file unreadable, not overwriting it: %w", p.err)
	}
	if _, ok := p.m[id]; !ok && len(p.m) >= maxPositionWorkflows {
		return newErr(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "positions are kept for at most %d workflows", maxPositionWorkflows)
	}
	if len(pos) == 0 {
		delete(p.m, id)
	} else {
		p.m[id] = pos
	}
	if p.path == "" {
		return nil
	}
	raw, err := json.Marshal(p.m)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p.path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p.path), ".yaml-positions-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p.path)
}

// yamlPositionsBody is GET and PUT /api/workflows/{id}/positions: node id
// -> canvas position.
type yamlPositionsBody struct {
	Positions map[string]graph.Position `json:"positions"`
}

func (s *Server) positionsFor(c echo.Context) (*YAMLWorkflows, string, error) {
	id, err := workflowIDParam(c)
	if err != nil {
		return nil, "", err
	}
	y, ok := s.cfg.Workflows.(*YAMLWorkflows)
	if !ok || !y.OwnsWorkflowID(id) {
		return nil, "", badRequest("workflow %s is not a YAML workflow: a drawn workflow keeps positions in its graph", id)
	}
	if _, err := y.f.Source(c.Request().Context(), id); err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			return nil, "", newErr(http.StatusNotFound, CodeNotFound, "workflow %s not found", id)
		}
		return nil, "", err
	}
	return y, id, nil
}

func (s *Server) getYAMLPositions(c echo.Context) error {
	y, id, err := s.positionsFor(c)
	if err != nil {
		return err
	}
	pos, err := y.positions.get(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, yamlPositionsBody{Positions: pos})
}

func (s *Server) putYAMLPositions(c echo.Context) error {
	if _, err := s.yamlEditor(); err != nil {
		return err
	}
	y, id, err := s.positionsFor(c)
	if err != nil {
		return err
	}
	var req yamlPositionsBody
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if len(req.Positions) > maxPositionNodes {
		return newErr(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "at most %d node positions", maxPositionNodes)
	}
	for k := range req.Positions {
		if k == "" || len(k) > 256 {
			return badRequest("node ids in positions must be 1 to 256 bytes")
		}
	}
	ctx := c.Request().Context()
	if err := y.positions.set(ctx, id, req.Positions); err != nil {
		return err
	}
	s.log.Info("yaml workflow positions saved", "route", "PUT /api/workflows/:id/positions", "id", id, "nodes", len(req.Positions))
	pos, err := y.positions.get(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, yamlPositionsBody{Positions: pos})
}
