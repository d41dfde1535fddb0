package wire

import (
	"testing"

	"github.com/miekg/dns"
)

// TestNameText: NameText writes what dns.UnpackDomainName writes, escapes
// included, and refuses what is not a whole uncompressed name.
func TestNameText(t *testing.T) {
	for _, name := range [][]byte{
		{0},
		[]byte("\x03www\x07example\x03tld\x00"),
		[]byte("\x03WwW\x01-\x01_\x00"),
		[]byte("\x03a.b\x00"),           // a dot inside a label
		[]byte("\x04a b\\\x00"),         // a space and a backslash
		[]byte("\x05a@;()\x02\"'\x00"),  // the other specials
		[]byte("\x02\x00\xff\x01~\x00"), // octets outside printable ASCII
		append(append([]byte{63}, make([]byte, 63)...), 0),
	} {
		want, _, err := dns.UnpackDomainName(name, 0)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if got, ok := NameText(name); !ok || got != want {
			t.Errorf("%q: %q %v, want %q", name, got, ok, want)
		}
	}
	for _, bad := range [][]byte{
		nil,
		[]byte("\x03www"),         // no root label
		[]byte("\x05www\x00"),     // a label past the end
		[]byte("\x03www\xc0\x0c"), // a compression pointer
	} {
		if got, ok := NameText(bad); ok {
			t.Errorf("%q: %q, want false", bad, got)
		}
	}
}

// BenchmarkNameText is the resolver's question name made from a query's.
func BenchmarkNameText(b *testing.B) {
	name := []byte("\x0fc0-7555983aa92f\x04wild\x05alpha\x00")
	for b.Loop() {
		NameText(name)
	}
}
