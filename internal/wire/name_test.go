package wire

import (
	"testing"

	"github.com/miekg/dns"
)

// TestNameText: NameText writes what dns.UnpackDomainName writes, escapes
// included, and refuses what is not a whole uncompressed name;
// AppendNameText appends the same after what its buffer holds, and
// leaves that alone when it refuses.
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
		longName(255),
	} {
		want, _, err := dns.UnpackDomainName(name, 0)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if got, ok := NameText(name); !ok || got != want {
			t.Errorf("%q: %q %v, want %q", name, got, ok, want)
		}
		if got, ok := AppendNameText([]byte("x"), name); !ok || string(got) != "x"+want {
			t.Errorf("%q: AppendNameText %q %v, want %q", name, got, ok, "x"+want)
		}
	}
	for _, bad := range [][]byte{
		nil,
		[]byte("\x03www"),         // no root label
		[]byte("\x05www\x00"),     // a label past the end
		[]byte("\x03www\xc0\x0c"), // a compression pointer
		longName(256),             // one octet over 255 in wire form
	} {
		if got, ok := NameText(bad); ok {
			t.Errorf("%q: %q, want false", bad, got)
		}
		if got, ok := AppendNameText([]byte("x"), bad); ok || string(got) != "x" {
			t.Errorf("%q: AppendNameText %q %v, want \"x\", false", bad, got, ok)
		}
	}
	buf := make([]byte, 0, MaxName)
	name := []byte("\x03www\x07example\x03tld\x00")
	if n := testing.AllocsPerRun(100, func() { buf, _ = AppendNameText(buf[:0], name) }); n != 0 {
		t.Errorf("AppendNameText with room: %v allocations", n)
	}
}

// FuzzNameText: on any octets, a name NameText takes is one
// dns.UnpackDomainName takes too (a whole uncompressed name of at most
// 255 octets in wire form), written the same.
func FuzzNameText(f *testing.F) {
	f.Add([]byte("\x03www\x07example\x03tld\x00"))
	f.Add([]byte("\x04a b\\\x00"))
	f.Add([]byte("\x03www\xc0\x0c"))
	f.Fuzz(func(t *testing.T, name []byte) {
		got, ok := NameText(name)
		if !ok {
			return
		}
		want, _, err := dns.UnpackDomainName(name, 0)
		if err != nil || got != want {
			t.Errorf("%q: NameText %q, dns.UnpackDomainName %q, %v", name, got, want, err)
		}
	})
}

// BenchmarkNameText is the resolver's question name made from a query's.
func BenchmarkNameText(b *testing.B) {
	name := []byte("\x0fc0-7555983aa92f\x04wild\x05alpha\x00")
	for b.Loop() {
		NameText(name)
	}
}

// longName is a name of n octets in wire form (n > 2): labels of 63 'a's
// and one shorter, then the root label.
func longName(n int) []byte {
	var out []byte
	for left := n - 1; left > 0; {
		l := min(63, left-1)
		if left-(l+1) == 1 {
			l-- // no label of length 0 before the root's
		}
		out = append(out, byte(l))
		for range l {
			out = append(out, 'a')
		}
		left -= l + 1
	}
	return append(out, 0)
}
