package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// RevokeSession records that session id (a sign-in cookie's id) was ended
// on the server; it stays refused until exp, its own expiry. Expired
// records are removed on the way.
func (s *Store) RevokeSession(ctx context.Context, id string, exp time.Time) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM revoked_sessions WHERE expires_at <= ?`, toMicros(s.now())); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO revoked_sessions (id, expires_at) VALUES (?, ?)
ON CONFLICT (id) DO NOTHING`, id, toMicros(exp))
		return err
	})
	if err != nil {
		return fmt.Errorf("store: revoke session: %w", err)
	}
	return nil
}

// RevokedSessions returns the sessions ended on the server that have not
// expired yet, with their expiry.
func (s *Store) RevokedSessions(ctx context.Context) (map[string]time.Time, error) {
	rows, err := s.rd().QueryContext(ctx, `SELECT id, expires_at FROM revoked_sessions WHERE expires_at > ?`, toMicros(s.now()))
	if err != nil {
		return nil, fmt.Errorf("store: revoked sessions: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var id string
		var exp int64
		if err := rows.Scan(&id, &exp); err != nil {
			return nil, fmt.Errorf("store: revoked sessions: %w", err)
		}
		out[id] = fromMicros(exp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: revoked sessions: %w", err)
	}
	return out, nil
}
