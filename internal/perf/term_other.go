//go:build !linux

package perf

// IsTerminal reports false off Linux: the progress line is opt-in there
// (-progress on).
func IsTerminal(fd uintptr) bool { return false }
