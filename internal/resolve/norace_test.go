//go:build !race

package resolve_test

// raceEnabled: the race detector is on (its instrumentation makes frames
// larger: stack depths mean nothing).
const raceEnabled = false
