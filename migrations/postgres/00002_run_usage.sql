-- A run's model token totals and their cost (NULL when nothing was
-- priced), kept with its header as in SQLite's 00007.

-- +goose Up
ALTER TABLE runs ADD COLUMN prompt_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN completion_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN total_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cost_usd DOUBLE PRECISION;

-- +goose Down
ALTER TABLE runs DROP COLUMN cost_usd;
ALTER TABLE runs DROP COLUMN total_tokens;
ALTER TABLE runs DROP COLUMN completion_tokens;
ALTER TABLE runs DROP COLUMN prompt_tokens;
