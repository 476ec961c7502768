//go:build !race

package yamledit

const raceEnabled = false
