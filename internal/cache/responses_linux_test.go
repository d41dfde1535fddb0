package cache

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestResponsesClearUntouched: clearing a cache that holds nothing
// leaves its mapped sets as they are, not resident. The resolver's
// workers clear theirs at their first query; writing zeros over every
// set made the whole of them resident from the start (2 MiB for
// bench/run.sh's 32768 slots), whatever the cache later held.
func TestResponsesClearUntouched(t *testing.T) {
	c := NewResponses(1 << 16)
	c.Clear()
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(c.sets))), len(c.sets)*int(unsafe.Sizeof(respSet{})))
	vec := make([]byte, (len(b)+unix.Getpagesize()-1)/unix.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Skipf("mincore: %v", errno)
	}
	resident := 0
	for _, v := range vec {
		resident += int(v & 1)
	}
	if resident > 0 {
		t.Errorf("%d of %d pages of the sets resident after Clear of an empty cache", resident, len(vec))
	}
}
