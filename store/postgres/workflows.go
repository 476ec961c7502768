package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/internal/commit"
)

// writeTx runs fn in a transaction of its own. store.Workflow writes need no
// ordering with run events, so they bypass the write queue; concurrent
// saves serialize on the workflow's row.
func (s *Store) writeTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if s.w.Closed() {
		return store.ErrClosed
	}
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// CreateWorkflow stores w as version 1 (an id is assigned if w.ID is empty)
// and returns what was stored. ErrConflict if the id is taken; an error
// matching engine.ErrInvalidWorkflow for a missing name, unknown kind or
// invalid definition.
func (s *Store) CreateWorkflow(ctx context.Context, w store.Workflow) (*store.Workflow, error) {
	if err := store.ValidateWorkflow(&w); err != nil {
		return nil, fmt.Errorf("postgres: create workflow: %w", err)
	}
	if w.ID == "" {
		w.ID = uuid.NewString()
	}
	now := commit.NormTime(s.now())
	w.Version, w.CreatedAt, w.UpdatedAt = 1, now, now
	w.Definition = append(json.RawMessage(nil), w.Definition...)
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO workflows (id, name, description, kind, definition,
version, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, 1, $6, $6) ON CONFLICT (id) DO NOTHING`,
			w.ID, w.Name, w.Description, w.Kind, string(w.Definition), now)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("id is taken: %w", engine.ErrConflict)
		}
		return insertVersion(ctx, tx, &w, now)
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: create workflow %s: %w", w.ID, err)
	}
	return &w, nil
}

func insertVersion(ctx context.Context, tx pgx.Tx, w *store.Workflow, at time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO workflow_versions (workflow_id, version, name, description,
kind, definition, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		w.ID, w.Version, w.Name, w.Description, w.Kind, string(w.Definition), at)
	return err
}

// UpdateWorkflow saves w as the next version of workflow w.ID, provided its
// current version is expectVersion: a stale editor gets ErrConflict
// instead of overwriting someone else's save. ErrNotFound if unknown.
func (s *Store) UpdateWorkflow(ctx context.Context, w store.Workflow, expectVersion int) (*store.Workflow, error) {
	if err := store.ValidateWorkflow(&w); err != nil {
		return nil, fmt.Errorf("postgres: update workflow %s: %w", w.ID, err)
	}
	now := commit.NormTime(s.now())
	w.Definition = append(json.RawMessage(nil), w.Definition...)
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		var created time.Time
		// Two concurrent saves of one version: the second waits for the
		// first's row lock, then finds the version moved on.
		err := tx.QueryRow(ctx, `UPDATE workflows SET name = $1, description = $2, kind = $3,
definition = $4, version = version + 1, updated_at = $5 WHERE id = $6 AND version = $7
RETURNING version, created_at`, w.Name, w.Description, w.Kind, string(w.Definition), now,
			w.ID, expectVersion).Scan(&w.Version, &created)
		if errors.Is(err, pgx.ErrNoRows) {
			var current int
			err := tx.QueryRow(ctx, `SELECT version FROM workflows WHERE id = $1`, w.ID).Scan(&current)
			if errors.Is(err, pgx.ErrNoRows) {
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
		w.CreatedAt, w.UpdatedAt = created.UTC(), now
		return insertVersion(ctx, tx, &w, now)
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: update workflow %s: %w", w.ID, err)
	}
	return &w, nil
}

// DeleteWorkflow deletes a workflow and its versions. Its runs are kept,
// with no workflow id. ErrNotFound if unknown.
func (s *Store) DeleteWorkflow(ctx context.Context, id string) error {
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM workflows WHERE id = $1`, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return engine.ErrNotFound
		}
		// Its runs stay, without a workflow id.
		_, err = tx.Exec(ctx, `UPDATE runs SET workflow_id = NULL WHERE workflow_id = $1`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: delete workflow %s: %w", id, err)
	}
	return nil
}

// GetWorkflow returns the current version of a workflow; ErrNotFound if
// unknown.
func (s *Store) GetWorkflow(ctx context.Context, id string) (*store.Workflow, error) {
	var (
		w                store.Workflow
		def              string
		created, updated time.Time
	)
	err := s.pool.QueryRow(ctx, `SELECT id, name, description, kind, definition, version,
created_at, updated_at FROM workflows WHERE id = $1`, id).Scan(&w.ID, &w.Name, &w.Description,
		&w.Kind, &def, &w.Version, &created, &updated)
	if errors.Is(err, pgx.ErrNoRows) {
		err = engine.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get workflow %s: %w", id, err)
	}
	w.Definition = json.RawMessage(def)
	w.CreatedAt, w.UpdatedAt = created.UTC(), updated.UTC()
	return &w, nil
}

// ListWorkflows lists every workflow, most recently updated first, without
// definitions (use GetWorkflow).
func (s *Store) ListWorkflows(ctx context.Context) ([]*store.Workflow, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, name, description, kind, version, created_at,
updated_at FROM workflows ORDER BY updated_at DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("postgres: list workflows: %w", err)
	}
	defer rows.Close()
	out := []*store.Workflow{}
	for rows.Next() {
		var w store.Workflow
		if err := rows.Scan(&w.ID, &w.Name, &w.Description, &w.Kind, &w.Version, &w.CreatedAt, &w.UpdatedAt); err != nil {
			return nil, fmt.Errorf("postgres: list workflows: %w", err)
		}
		w.CreatedAt, w.UpdatedAt = w.CreatedAt.UTC(), w.UpdatedAt.UTC()
		out = append(out, &w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list workflows: %w", err)
	}
	return out, nil
}

// ListVersions lists the saved versions of a workflow, newest first,
// without definitions (use GetVersion). ErrNotFound if unknown.
func (s *Store) ListVersions(ctx context.Context, id string) ([]store.WorkflowVersion, error) {
	rows, err := s.pool.Query(ctx, `SELECT version, name, description, kind, created_at
FROM workflow_versions WHERE workflow_id = $1 ORDER BY version DESC`, id)
	if err != nil {
		return nil, fmt.Errorf("postgres: list versions of workflow %s: %w", id, err)
	}
	defer rows.Close()
	var out []store.WorkflowVersion
	for rows.Next() {
		v := store.WorkflowVersion{WorkflowID: id}
		if err := rows.Scan(&v.Version, &v.Name, &v.Description, &v.Kind, &v.CreatedAt); err != nil {
			return nil, fmt.Errorf("postgres: list versions of workflow %s: %w", id, err)
		}
		v.CreatedAt = v.CreatedAt.UTC()
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list versions of workflow %s: %w", id, err)
	}
	if len(out) == 0 { // every stored workflow has at least version 1
		return nil, fmt.Errorf("postgres: list versions of workflow %s: %w", id, engine.ErrNotFound)
	}
	return out, nil
}

// GetVersion returns version v of a workflow; ErrNotFound if either is
// unknown.
func (s *Store) GetVersion(ctx context.Context, id string, v int) (*store.WorkflowVersion, error) {
	wv := store.WorkflowVersion{WorkflowID: id, Version: v}
	var def string
	err := s.pool.QueryRow(ctx, `SELECT name, description, kind, definition, created_at
FROM workflow_versions WHERE workflow_id = $1 AND version = $2`, id, v).Scan(&wv.Name, &wv.Description,
		&wv.Kind, &def, &wv.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		err = engine.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get version %d of workflow %s: %w", v, id, err)
	}
	wv.Definition = json.RawMessage(def)
	wv.CreatedAt = wv.CreatedAt.UTC()
	return &wv, nil
}
