//go:build race

package resolver

// raceEnabled reports whether the race detector is on; it changes
// allocation counts.
const raceEnabled = true
