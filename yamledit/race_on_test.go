//go:build race

package yamledit

// raceEnabled: the race detector makes the property test's many parses
// about twenty times slower; it then tries a sample of the edits.
const raceEnabled = true
