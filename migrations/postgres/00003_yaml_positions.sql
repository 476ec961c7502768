-- Where the canvas shows the nodes of YAML workflow files (SQLite's
-- 00008_yaml_positions): by workflow id (yaml.<escaped path>) and node id.

-- +goose Up
CREATE TABLE yaml_positions (
    workflow_id TEXT NOT NULL,
    node_id     TEXT NOT NULL,
    x           DOUBLE PRECISION NOT NULL,
    y           DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (workflow_id, node_id)
);

-- +goose Down
DROP TABLE yaml_positions;
