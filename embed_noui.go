//go:build noui

package switchyard

import "io/fs"

// UI returns nil, false: this binary was built without the web UI
// (-tags noui); the server then serves only the API.
func UI() (ui fs.FS, ok bool) { return nil, false }
