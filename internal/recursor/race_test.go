//go:build race

package recursor

// raceEnabled: the race detector is on (sync.Pool then drops some of
// what it is given, and its instrumentation moves variables to the heap:
// allocation counts mean nothing).
const raceEnabled = true
