package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchyard/switchyard/store"
)

// YAMLPositions returns the canvas positions of the nodes of YAML
// workflow id (yaml.<escaped path>), by node id; empty when none are kept.
func (s *Store) YAMLPositions(ctx context.Context, workflowID string) (map[string]store.NodePosition, error) {
	rows, err := s.pool.Query(ctx, `SELECT node_id, x, y FROM yaml_positions WHERE workflow_id = $1`, workflowID)
	if err != nil {
		return nil, fmt.Errorf("postgres: yaml positions: %w", err)
	}
	defer rows.Close()
	out := map[string]store.NodePosition{}
	for rows.Next() {
		var id string
		var p store.NodePosition
		if err := rows.Scan(&id, &p.X, &p.Y); err != nil {
			return nil, fmt.Errorf("postgres: yaml positions: %w", err)
		}
		out[id] = p
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: yaml positions: %w", err)
	}
	return out, nil
}

// SetYAMLPositions replaces the positions of YAML workflow id's nodes
// (none: forgets them), in one transaction.
func (s *Store) SetYAMLPositions(ctx context.Context, workflowID string, pos map[string]store.NodePosition) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM yaml_positions WHERE workflow_id = $1`, workflowID); err != nil {
			return err
		}
		for id, p := range pos {
			if _, err := tx.Exec(ctx, `INSERT INTO yaml_positions (workflow_id, node_id, x, y) VALUES ($1, $2, $3, $4)`,
				workflowID, id, p.X, p.Y); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: set yaml positions: %w", err)
	}
	return nil
}
