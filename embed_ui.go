//go:build !noui

package switchyard

import (
	"embed"
	"io/fs"
)

// webDist is the built web UI (npm run build writes web/dist).
//
//go:embed all:web/dist
var webDist embed.FS

// UI returns the built web UI rooted at web/dist (index.html, assets/).
// ok is false in a UI-less build (-tags noui).
func UI() (ui fs.FS, ok bool) {
	sub, err := fs.Sub(webDist, "web/dist")
	if err != nil {
		return nil, false
	}
	return sub, true
}
