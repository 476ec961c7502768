//go:build !unix

package sqlite

import "context"

// lockFile: no file lock outside Unix; processes must not open a new
// database at the same moment there.
func lockFile(context.Context, string) (func(), error) { return func() {}, nil }
