//go:build !amd64

// Package prefetch asks the CPU to start loading memory that will be read
// soon. The answer path uses it to overlap the cache misses of a batch of
// queries (see zone.Ahead and auth.Ahead); Go has no prefetch intrinsic
// outside the runtime.
package prefetch

// Line does nothing where there is no assembly version: the lookups then
// take their cache misses one after another, which is only slower.
func Line(addr uintptr) {}

// Range starts loading every cache line of the n bytes at addr.
func Range(addr uintptr, n uintptr) {
	for a, end := lines(addr, n); a < end; a += lineSize {
		Line(a)
	}
}
