//go:build !amd64

package zone

import "unsafe"

// prefetch does nothing where there is no assembly version: the lookups
// then take their cache misses one after another, which is only slower.
func prefetch(p unsafe.Pointer) {}
