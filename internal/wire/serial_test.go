package wire

import "testing"

// TestSerialCompare: RFC 1982 §3.2 order, wrapping at 2^32, with the
// undefined case (2^31 apart) answered -1 in both orders.
func TestSerialCompare(t *testing.T) {
	for _, tc := range []struct {
		a, b uint32
		want int
	}{
		{1, 1, 0},
		{2, 1, 1},
		{1, 2, -1},
		{0, 0xffffffff, 1}, // wrapped: 0 follows 2^32-1
		{0xffffffff, 0, -1},
		{5, 0xfffffff0, 1},
		{0x7fffffff, 0, 1}, // 2^31-1 ahead: the largest step still greater
		{0, 0x7fffffff, -1},
		{0x80000000, 0, -1}, // 2^31 apart: undefined, neither greater
		{0, 0x80000000, -1},
		{0xffffffff, 0x7fffffff, -1},
		{0x80000001, 0, -1}, // beyond 2^31 ahead: behind
	} {
		if got := SerialCompare(tc.a, tc.b); got != tc.want {
			t.Errorf("SerialCompare(%#x, %#x) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
