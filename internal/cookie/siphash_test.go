package cookie

import (
	"encoding/binary"
	"testing"
)

// TestSipHash24 checks the reference implementation's vectors
// (vectors.h of SipHash's repository: key 00..0f, message 00..n-1, the
// output's bytes little-endian) and the paper's example (Appendix A: a
// 15-byte message).
func TestSipHash24(t *testing.T) {
	var key [16]byte
	for i := range key {
		key[i] = byte(i)
	}
	k0, k1 := binary.LittleEndian.Uint64(key[:]), binary.LittleEndian.Uint64(key[8:])
	msg := make([]byte, 64)
	for i := range msg {
		msg[i] = byte(i)
	}
	for _, c := range []struct {
		n    int
		want uint64
	}{
		{0, 0x726fdb47dd0e0e31},
		{1, 0x74f839c593dc67fd},
		{15, 0xa129ca6149be45e5}, // the paper's example
		{63, 0x958a324ceb064572},
	} {
		if got := SipHash24(k0, k1, msg[:c.n]); got != c.want {
			t.Errorf("SipHash24(%d bytes) = %#x, want %#x", c.n, got, c.want)
		}
	}
}

func BenchmarkSipHash24(b *testing.B) {
	// A server cookie's input for an IPv6 client: 8+8+16 bytes.
	msg := make([]byte, 32)
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		SipHash24(1, 2, msg)
	}
}
