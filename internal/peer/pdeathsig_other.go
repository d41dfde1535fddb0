//go:build !linux

package peer

import "syscall"

// dieWithParent does nothing where the kernel has no parent-death
// signal: a killed test may leave its peers running there.
func dieWithParent(*syscall.SysProcAttr) {}
