// Package prefetch asks the CPU to start loading memory that will be read
// soon. The answer path uses it to overlap the cache misses of a batch of
// queries (see zone.Ahead and auth.Ahead); Go has no prefetch intrinsic
// outside the runtime.
package prefetch

// Line starts loading the cache line holding addr into all cache levels
// and returns at once; unlike a load it never waits for the line, and it
// never faults, so addr may be any address (an integer, not a pointer:
// it may lie past the end of the object it was computed from).
func Line(addr uintptr)

// Range starts loading every cache line of the n bytes at addr.
func Range(addr uintptr, n uintptr) {
	for a, end := lines(addr, n); a < end; a += lineSize {
		Line(a)
	}
}
