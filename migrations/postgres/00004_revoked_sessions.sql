-- Sessions ended on the server (POST /api/logout), as SQLite's migration
-- 00006: a signed cookie stays refused, by every process and after a
-- restart, until its own expiry, when the row may go.

-- +goose Up
CREATE TABLE revoked_sessions (
    id         TEXT        NOT NULL PRIMARY KEY,
    expires_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE revoked_sessions;
