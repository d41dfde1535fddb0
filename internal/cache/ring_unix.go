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
// memory is reachable only through r's slices: whoever calls r's methods
// keeps r itself reachable while they run (every worker and the TCP
// spares pool hold theirs for their lifetime), or the cleanup could
// unmap it under a Get that copied the slice header and dropped r.
func mapped(r *Responses, size int) []byte {
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return make([]byte, size)
	}
	runtime.AddCleanup(r, func(b []byte) { unix.Munmap(b) }, b)
	return b
}
