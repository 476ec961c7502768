-- A run's model token totals (and their cost, when a price table priced
-- them) are kept with its header: run lists show them without reading
-- any run's event log. cost_usd is NULL when no call was priced.

-- +goose Up
ALTER TABLE runs ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN completion_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN total_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cost_usd REAL;

-- +goose Down
ALTER TABLE runs DROP COLUMN cost_usd;
ALTER TABLE runs DROP COLUMN total_tokens;
ALTER TABLE runs DROP COLUMN completion_tokens;
ALTER TABLE runs DROP COLUMN prompt_tokens;
