-- +goose Up
-- rejection: the approval note in effect for a node's visit ($REJECTION_REASON).
-- decision: a human decision stored atomically with its claim, so a crash
-- between claiming an approval and applying it does not lose the answer.
ALTER TABLE node_states ADD COLUMN rejection TEXT NOT NULL DEFAULT '';
ALTER TABLE node_states ADD COLUMN decision TEXT;

-- +goose Down
ALTER TABLE node_states DROP COLUMN decision;
ALTER TABLE node_states DROP COLUMN rejection;
