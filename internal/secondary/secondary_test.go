package secondary

import (
	"errors"
	"testing"
)

// TestNewer: RFC 1982 §3.2 serial order, wrapping at 2^32.
func TestNewer(t *testing.T) {
	for _, tc := range []struct {
		a, b uint32
		want bool
	}{
		{2, 1, true},
		{1, 1, false},
		{1, 2, false},
		{0, 0xffffffff, true}, // wrapped
		{0xffffffff, 0, false},
		{0x80000000, 0, false}, // 2^31 apart: not comparable
		{0x7fffffff, 0, true},
	} {
		if got := newer(tc.a, tc.b); got != tc.want {
			t.Errorf("newer(%d, %d) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestRcodeError(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"dns: bad xfr rcode: 5", "answered REFUSED"},
		{"dns: bad xfr rcode: 9", "answered NOTAUTH"},
		{"read tcp: connection reset", "read tcp: connection reset"},
	} {
		if got := rcodeError(errors.New(tc.in)).Error(); got != tc.want {
			t.Errorf("rcodeError(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
