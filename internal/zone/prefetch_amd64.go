package zone

import "unsafe"

// prefetch asks the CPU to start loading the cache line at p and returns
// at once; unlike a load it never waits for the line, nor faults. (Go has
// no prefetch intrinsic outside the runtime.)
//
//go:noescape
func prefetch(p unsafe.Pointer)
