// Package switchyard embeds the assets that ship inside the binary: the
// built web UI and the SQL migrations.
package switchyard

import "embed"

// Migrations holds the numbered SQL migrations, applied at start-up.
//
//go:embed migrations/*.sql
var Migrations embed.FS
