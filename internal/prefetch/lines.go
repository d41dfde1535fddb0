package prefetch

// lineSize is the cache line size of the CPUs Tern runs on (x86-64 and
// most arm64 cores).
const lineSize = 64

// lines returns the address of the first cache line holding one of the n
// bytes at addr, and the end of those bytes: Range prefetches from first
// to end, a line at a time.
func lines(addr, n uintptr) (first, end uintptr) {
	return addr &^ (lineSize - 1), addr + n
}
