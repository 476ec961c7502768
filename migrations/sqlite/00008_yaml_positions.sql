-- Where the canvas shows the nodes of YAML workflow files. Positions are
-- not written into the user's files; they are kept here, by workflow id
-- (yaml.<escaped path>: the file's path in the --workflows folder) and
-- node id.

-- +goose Up
CREATE TABLE yaml_positions (
    workflow_id TEXT NOT NULL,
    node_id     TEXT NOT NULL,
    x           REAL NOT NULL,
    y           REAL NOT NULL,
    PRIMARY KEY (workflow_id, node_id)
);

-- +goose Down
DROP TABLE yaml_positions;
