package server

import (
	"encoding/json"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/switchyard/switchyard/yamldir"
)

// Disk changes of YAML workflow files, pushed to the UI: the server looks
// at its workflows folder every second (yamldir.Watch: a stat of every
// file, a read and hash of those whose size or time changed; no
// fsnotify, which is not a dependency and does not see every network or
// container file system) and announces each file created, changed or
// deleted as a workflow_changed message on GET /api/ws. Writes made
// through this server's API are announced at once, with the hash the
// write answered; the watcher seeing the same text later announces
// nothing more. An editor compares the hash with the text it has: its own
// write is not a change on disk.

// MsgWorkflowChanged is the type of the /api/ws message of a YAML file
// changed on disk.
const MsgWorkflowChanged = "workflow_changed"

// workflowChangedMsg is one workflow_changed message of GET /api/ws.
type workflowChangedMsg struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Path string `json:"path"`
	// Hash is the file's text's hex SHA-256 (sourceHash of GET
	// /api/workflows/{id}); absent when Deleted.
	Hash    string `json:"hash,omitempty"`
	Deleted bool   `json:"deleted,omitempty"`
}

// announcedFiles is the last hash announced of each file, so a change is
// announced once whether the API or the watcher saw it first.
type announcedFiles struct {
	mu   sync.Mutex
	last map[string]string // id -> hash ("-" deleted)
}

// fresh records c and reports whether it is news.
func (a *announcedFiles) fresh(c yamldir.Change) bool {
	v := c.Hash
	if c.Deleted {
		v = "-"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last == nil {
		a.last = map[string]string{}
	}
	if a.last[c.ID] == v {
		return false
	}
	a.last[c.ID] = v
	return true
}

// startYAMLWatch starts the folder watcher (until shutdown begins).
func (s *Server) startYAMLWatch() {
	y, ok := s.cfg.Workflows.(*YAMLWorkflows)
	if !ok || s.cfg.YAMLWatchInterval < 0 {
		return
	}
	// The first look, here: every change after New returns is seen.
	w := y.f.NewWatcher()
	if _, err := w.Poll(s.drainCtx); err != nil {
		s.log.Warn("yaml workflows: watching the folder failed; trying again", "dir", y.Dir(), "err", err)
	}
	s.bgWG.Add(1)
	go func() {
		defer s.bgWG.Done()
		w.Run(s.drainCtx, s.cfg.YAMLWatchInterval, func(cs []yamldir.Change) {
			for _, c := range cs {
				s.announceWorkflow(c, "disk")
			}
		})
	}()
}

// announceWorkflow sends workflow_changed for c to every /api/ws client,
// unless it was already announced.
func (s *Server) announceWorkflow(c yamldir.Change, by string) {
	if !s.announced.fresh(c) {
		return
	}
	raw, err := json.Marshal(workflowChangedMsg{Type: MsgWorkflowChanged, ID: c.ID, Path: c.Path, Hash: c.Hash, Deleted: c.Deleted})
	if err != nil {
		return
	}
	s.log.Debug("yaml workflow changed", "id", c.ID, "file", c.Path, "deleted", c.Deleted, "by", by)
	s.hub.broadcastStatus(raw)
}

// answerYAMLWrite answers a write of the file id made through the API
// as answerYAML does, announcing it first (other editors of the file
// learn of it; the one that wrote it finds its own hash).
func (s *Server) answerYAMLWrite(c echo.Context, y *YAMLWorkflows, id string, status int) error {
	w, err := y.GetWorkflow(c.Request().Context(), id)
	if err != nil {
		return err
	}
	s.announceWorkflow(yamldir.Change{ID: id, Path: w.Path, Hash: w.SourceHash}, "api")
	return c.JSON(status, w)
}
