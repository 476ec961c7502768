package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/internal/commit"
)

// RevokeSession records that session id (a sign-in cookie's id) was ended
// on the server; it stays refused until exp, its own expiry. Expired
// records are removed on the way.
func (s *Store) RevokeSession(ctx context.Context, id string, exp time.Time) error {
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM revoked_sessions WHERE expires_at <= $1`, commit.NormTime(s.now())); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO revoked_sessions (id, expires_at) VALUES ($1, $2)
ON CONFLICT (id) DO NOTHING`, id, commit.NormTime(exp))
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: revoke session: %w", err)
	}
	return nil
}

// RevokedSessions returns the sessions ended on the server (by any
// process) that have not expired yet, with their expiry.
func (s *Store) RevokedSessions(ctx context.Context) (map[string]time.Time, error) {
	if s.w.Closed() {
		return nil, fmt.Errorf("postgres: revoked sessions: %w", store.ErrClosed)
	}
	rows, err := s.pool.Query(ctx, `SELECT id, expires_at FROM revoked_sessions WHERE expires_at > $1`, commit.NormTime(s.now()))
	if err != nil {
		return nil, fmt.Errorf("postgres: revoked sessions: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var id string
		var exp time.Time
		if err := rows.Scan(&id, &exp); err != nil {
			return nil, fmt.Errorf("postgres: revoked sessions: %w", err)
		}
		out[id] = exp.UTC()
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: revoked sessions: %w", err)
	}
	return out, nil
}
