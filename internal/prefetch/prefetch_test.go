package prefetch

import (
	"testing"
	"unsafe"
)

// TestLines: Range's span starts at the line of the first byte and ends
// after the last, so it covers every line the bytes touch, once.
func TestLines(t *testing.T) {
	for _, tc := range []struct {
		addr, n   uintptr
		wantLines int
	}{
		{0x1000, 0, 0},
		{0x1000, 1, 1},
		{0x1000, 64, 1},
		{0x1000, 65, 2},
		{0x103f, 2, 2},
		{0x1020, 96, 2},
		{0x1020, 97, 3},
	} {
		first, end := lines(tc.addr, tc.n)
		count := 0
		for a := first; a < end; a += lineSize {
			if a+lineSize <= tc.addr || a >= tc.addr+tc.n {
				t.Errorf("lines(%#x, %d): line %#x holds none of the bytes", tc.addr, tc.n, a)
			}
			count++
		}
		if first%lineSize != 0 || count != tc.wantLines {
			t.Errorf("lines(%#x, %d) = %#x, %#x: %d lines, want %d", tc.addr, tc.n, first, end, count, tc.wantLines)
		}
	}
}

// TestNoFault: prefetching never faults, whatever the address: nil, an
// unmapped page, past the end of an object. A fault would kill the test.
func TestNoFault(t *testing.T) {
	b := make([]byte, 10)
	end := uintptr(unsafe.Pointer(&b[0])) + 10
	for _, a := range []uintptr{0, 8, 0xdead0000, ^uintptr(0) &^ 63, end, end + 4096} {
		Line(a)
		Range(a, 200)
	}
}
