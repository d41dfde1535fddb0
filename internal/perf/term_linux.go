//go:build linux

package perf

import "golang.org/x/sys/unix"

// IsTerminal reports whether fd is a terminal, so that a self-rewriting
// progress line is not written into logs and pipes.
func IsTerminal(fd uintptr) bool {
	_, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
	return err == nil
}
