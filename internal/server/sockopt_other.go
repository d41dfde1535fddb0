//go:build !linux && !darwin && !freebsd

package server

// dontFragment leaves the kernel's default here: this system has no
// option the server knows to forbid fragmentation (see sockopt_linux.go).
func dontFragment(fd int, network string) error { return nil }
