package wire

import (
	"bytes"
	"testing"
)

// TestFormErr: the FORMERR answer to a datagram read only in part is its
// header with QR, the copied flags and rcode 1, and its question when the
// bytes read hold one whole (as Knot answers a malformed query); nothing
// for a response or less than a header.
func TestFormErr(t *testing.T) {
	// ID 0x1234, RD and CD and AA set (AA is not copied), one question
	// for a.test. A, one additional record.
	header := []byte{0x12, 0x34, 0x05, 0x10, 0, 1, 0, 0, 0, 0, 0, 1}
	question := []byte{1, 'a', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1}
	long := append(append(append([]byte(nil), header...), question...), make([]byte, 4096)...)
	// RD and CD copied, QR and rcode 1.
	want := []byte{0x12, 0x34, 0x81, 0x11, 0, 1, 0, 0, 0, 0, 0, 0}
	noQuestion := []byte{0x12, 0x34, 0x81, 0x11, 0, 0, 0, 0, 0, 0, 0, 0}
	cat := func(b ...[]byte) []byte { return bytes.Join(b, nil) }
	tests := []struct {
		name string
		pkt  []byte
		want []byte
	}{
		{"question echoed", long, cat(want, question)},
		{"question cut short", long[:HeaderLen+len(question)-1], noQuestion},
		{"header only", long[:HeaderLen], noQuestion},
		{"two questions", func() []byte {
			p := append([]byte(nil), long...)
			p[5] = 2
			return p
		}(), noQuestion},
		{"compressed question name", cat(header, []byte{0xc0, 12, 0, 1, 0, 1}), noQuestion},
		{"opcode NOTIFY kept", func() []byte {
			p := append([]byte(nil), long...)
			p[2] |= OpcodeNotify << 3
			return p
		}(), cat([]byte{0x12, 0x34, 0xa1, 0x11, 0, 1, 0, 0, 0, 0, 0, 0}, question)},
		{"response", func() []byte {
			p := append([]byte(nil), long...)
			p[2] |= 0x80
			return p
		}(), nil},
		{"shorter than a header", long[:HeaderLen-1], nil},
	}
	out := make([]byte, 0, 512)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := FormErr(tc.pkt, out)
			if !bytes.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("FormErr =\n% x\nwant\n% x", got, tc.want)
			}
		})
	}
	if n := testing.AllocsPerRun(100, func() { FormErr(long, out) }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}
