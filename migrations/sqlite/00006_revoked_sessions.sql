-- Sessions ended on the server (POST /api/logout): a signed cookie stays
-- refused after a restart until its own expiry, when the row may go.

-- +goose Up
CREATE TABLE revoked_sessions (
    id         TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL -- unix microseconds, as other times
);

-- +goose Down
DROP TABLE revoked_sessions;
