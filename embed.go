// Package switchyard embeds the assets that ship inside the binary: the
// built web UI and the SQL migrations.
package switchyard

import "embed"

// Migrations holds the numbered SQL migrations of both stores, applied at
// start-up: migrations/sqlite/*.sql (store/sqlite) and
// migrations/postgres/*.sql (store/postgres).
//
//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var Migrations embed.FS
