//go:build race

package server

// raceEnabled: the race detector is on (sync.Pool then drops some of
// what it is given, so pooled paths allocate).
const raceEnabled = true
