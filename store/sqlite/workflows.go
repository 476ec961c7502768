package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/internal/commit"
)

// writeTx runs fn in a transaction on the writer pool. Workflow writes
// need no ordering with run events, so they bypass the queue; Store.wmu
// still serializes them with the writer's batches.
func (s *Store) writeTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.w.Closed() {
		return store.ErrClosed
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return storageErr(err)
	}
	return storageErr(tx.Commit())
}

// CreateWorkflow stores w as version 1 (an id is assigned if w.ID is empty)
// and returns what was stored. ErrConflict if the id is taken; an error
// matching engine.ErrInvalidWorkflow for a missing name, unknown kind or
// invalid definition.
func (s *Store) CreateWorkflow(ctx context.Context, w store.Workflow) (*store.Workflow, error) {
	if err := store.ValidateWorkflow(&w); err != nil {
		return nil, fmt.Errorf("store: create workflow: %w", err)
	}
	if w.ID == "" {
		w.ID = uuid.NewString()
	}
	now := commit.NormTime(s.now())
	w.Version, w.CreatedAt, w.UpdatedAt = 1, now, now
	w.Definition = append(json.RawMessage(nil), w.Definition...)
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO workflows (id, name, description, kind, definition,
version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT (id) DO NOTHING`,
			w.ID, w.Name, w.Description, w.Kind, string(w.Definition), toMicros(now), toMicros(now))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("id is taken: %w", engine.ErrConflict)
		}
		return insertVersion(ctx, tx, &w, now)
	})
	if err != nil {
		return nil, fmt.Errorf("store: create workflow %s: %w", w.ID, err)
	}
	return &w, nil
}

func insertVersion(ctx context.Context, tx *sql.Tx, w *store.Workflow, at time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO workflow_versions (workflow_id, version, name, description,
kind, definition, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		w.ID, w.Version, w.Name, w.Description, w.Kind, string(w.Definition), toMicros(at))
	return err
}

// UpdateWorkflow saves w (name, description, kind, definition) as the next
// version of workflow w.ID, provided its current version is expectVersion:
// a stale editor gets ErrConflict instead of overwriting someone else's
// save. The previous versions stay available through GetVersion.
func (s *Store) UpdateWorkflow(ctx context.Context, w store.Workflow, expectVersion int) (*store.Workflow, error) {
	if err := store.ValidateWorkflow(&w); err != nil {
		return nil, fmt.Errorf("store: update workflow %s: %w", w.ID, err)
	}
	now := commit.NormTime(s.now())
	w.Definition = append(json.RawMessage(nil), w.Definition...)
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var created int64
		err := tx.QueryRowContext(ctx, `UPDATE workflows SET name = ?, description = ?, kind = ?,
definition = ?, version = version + 1, updated_at = ? WHERE id = ? AND version = ?
RETURNING version, created_at`, w.Name, w.Description, w.Kind, string(w.Definition), toMicros(now),
			w.ID, expectVersion).Scan(&w.Version, &created)
		if errors.Is(err, sql.ErrNoRows) {
			var current int
			err := tx.QueryRowContext(ctx, `SELECT version FROM workflows WHERE id = ?`, w.ID).Scan(&current)
			if errors.Is(err, sql.ErrNoRows) {
				return engine.ErrNotFound
			}
			if err != nil {
				return err
			}
			return fmt.Errorf("version %d was expected but the current one is %d: %w",
				expectVersion, current, engine.ErrConflict)
		}
		if err != nil {
			return err
		}
		w.CreatedAt, w.UpdatedAt = fromMicros(created), now
		return insertVersion(ctx, tx, &w, now)
	})
	if err != nil {
		return nil, fmt.Errorf("store: update workflow %s: %w", w.ID, err)
	}
	return &w, nil
}

// DeleteWorkflow deletes a workflow and its versions. Its runs are kept,
// with no workflow id. ErrNotFound if unknown.
func (s *Store) DeleteWorkflow(ctx context.Context, id string) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM workflows WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return engine.ErrNotFound
		}
		// Its runs stay, without a workflow id.
		_, err = tx.ExecContext(ctx, `UPDATE runs SET workflow_id = NULL WHERE workflow_id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: delete workflow %s: %w", id, err)
	}
	return nil
}

// GetWorkflow returns the current version of a workflow; ErrNotFound if
// unknown.
func (s *Store) GetWorkflow(ctx context.Context, id string) (*store.Workflow, error) {
	var (
		w                store.Workflow
		def              string
		created, updated int64
	)
	err := s.rd().QueryRowContext(ctx, `SELECT id, name, description, kind, definition, version,
created_at, updated_at FROM workflows WHERE id = ?`, id).Scan(&w.ID, &w.Name, &w.Description,
		&w.Kind, &def, &w.Version, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		err = engine.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: get workflow %s: %w", id, err)
	}
	w.Definition = json.RawMessage(def)
	w.CreatedAt, w.UpdatedAt = fromMicros(created), fromMicros(updated)
	return &w, nil
}

// ListWorkflows lists every workflow, most recently updated first, without
// definitions (Definition is nil; use GetWorkflow).
func (s *Store) ListWorkflows(ctx context.Context) ([]*store.Workflow, error) {
	rows, err := s.rd().QueryContext(ctx, `SELECT id, name, description, kind, version, created_at,
updated_at FROM workflows ORDER BY updated_at DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("store: list workflows: %w", err)
	}
	defer rows.Close()
	out := []*store.Workflow{}
	for rows.Next() {
		var w store.Workflow
		var created, updated int64
		if err := rows.Scan(&w.ID, &w.Name, &w.Description, &w.Kind, &w.Version, &created, &updated); err != nil {
			return nil, fmt.Errorf("store: list workflows: %w", err)
		}
		w.CreatedAt, w.UpdatedAt = fromMicros(created), fromMicros(updated)
		out = append(out, &w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list workflows: %w", err)
	}
	return out, nil
}

// ListVersions lists the saved versions of a workflow, newest first,
// without definitions (use GetVersion). ErrNotFound if unknown.
func (s *Store) ListVersions(ctx context.Context, id string) ([]store.WorkflowVersion, error) {
	rows, err := s.rd().QueryContext(ctx, `SELECT version, name, description, kind, created_at
FROM workflow_versions WHERE workflow_id = ? ORDER BY version DESC`, id)
	if err != nil {
		return nil, fmt.Errorf("store: list versions of workflow %s: %w", id, err)
	}
	defer rows.Close()
	var out []store.WorkflowVersion
	for rows.Next() {
		v := store.WorkflowVersion{WorkflowID: id}
		var created int64
		if err := rows.Scan(&v.Version, &v.Name, &v.Description, &v.Kind, &created); err != nil {
			return nil, fmt.Errorf("store: list versions of workflow %s: %w", id, err)
		}
		v.CreatedAt = fromMicros(created)
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list versions of workflow %s: %w", id, err)
	}
	if len(out) == 0 { // every stored workflow has at least version 1
		return nil, fmt.Errorf("store: list versions of workflow %s: %w", id, engine.ErrNotFound)
	}
	return out, nil
}

// GetVersion returns version v of a workflow; ErrNotFound if either is
// unknown.
func (s *Store) GetVersion(ctx context.Context, id string, v int) (*store.WorkflowVersion, error) {
	wv := store.WorkflowVersion{WorkflowID: id, Version: v}
	var def string
	var created int64
	err := s.rd().QueryRowContext(ctx, `SELECT name, description, kind, definition, created_at
FROM workflow_versions WHERE workflow_id = ? AND version = ?`, id, v).Scan(&wv.Name, &wv.Description,
		&wv.Kind, &def, &created)
	if errors.Is(err, sql.ErrNoRows) {
		err = engine.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: get version %d of workflow %s: %w", v, id, err)
	}
	wv.Definition = json.RawMessage(def)
	wv.CreatedAt = fromMicros(created)
	return &wv, nil
}
