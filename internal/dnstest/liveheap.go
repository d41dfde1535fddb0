package dnstest

import "runtime"

// LiveHeap is the heap in use after a full collection (two: the first
// may leave objects its finalizers kept), in bytes: the difference
// before and after building something is what it keeps, to the byte
// when nothing else runs, not a timing.
func LiveHeap() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
