// Package prefetch asks the CPU to start loading memory that will be read
// soon. The answer path uses it to overlap the cache misses of a batch of
// queries (see zone.Ahead and auth.Ahead); Go has no prefetch intrinsic
// outside the runtime.
package prefetch

import "unsafe"

// Line starts loading the cache line at p into all cache levels and
// returns at once; unlike a load it never waits for the line, and it
// never faults, so p may point anywhere.
//
//go:noescape
func Line(p unsafe.Pointer)
