package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/switchyard/switchyard/store"
)

// YAMLPositions returns the canvas positions of the nodes of YAML
// workflow id (yaml.<escaped path>), by node id; empty when none are kept.
func (s *Store) YAMLPositions(ctx context.Context, workflowID string) (map[string]store.NodePosition, error) {
	rows, err := s.rd().QueryContext(ctx, `SELECT node_id, x, y FROM yaml_positions WHERE workflow_id = ?`, workflowID)
	if err != nil {
		return nil, fmt.Errorf("store: yaml positions: %w", err)
	}
	defer rows.Close()
	out := map[string]store.NodePosition{}
	for rows.Next() {
		var id string
		var p store.NodePosition
		if err := rows.Scan(&id, &p.X, &p.Y); err != nil {
			return nil, fmt.Errorf("store: yaml positions: %w", err)
		}
		out[id] = p
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: yaml positions: %w", err)
	}
	return out, nil
}

// SetYAMLPositions replaces the positions of YAML workflow id's nodes
// (none: forgets them).
func (s *Store) SetYAMLPositions(ctx context.Context, workflowID string, pos map[string]store.NodePosition) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM yaml_positions WHERE workflow_id = ?`, workflowID); err != nil {
			return err
		}
		for id, p := range pos {
			if _, err := tx.ExecContext(ctx, `INSERT INTO yaml_positions (workflow_id, node_id, x, y) VALUES (?, ?, ?, ?)`,
				workflowID, id, p.X, p.Y); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: set yaml positions: %w", err)
	}
	return nil
}
