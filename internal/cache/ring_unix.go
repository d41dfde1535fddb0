//go:build unix

package cache

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// mapped returns size bytes for a Responses' ring or sets, mapped from
// the kernel beside the Go heap and unmapped when r is collected. In the
// heap they counted whole as live data, and GOGC let as much garbage
// again stay resident, though they are resident only as they are written.
// They hold no pointers, so the collector need not see them. The
// memory is reachable only through r's slices, so a method reading or
// writing it keeps r reachable until it is done (Get and Put end with
// runtime.KeepAlive(r)): one whose last use of r came before its last
// access to the memory could have it unmapped under that access, were
// r then unreachable (the caller having dropped it).
func mapped(r *Responses, size int) []byte {
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return make([]byte, size)
	}
	runtime.AddCleanup(r, func(b []byte) { unix.Munmap(b) }, b)
	return b
}
