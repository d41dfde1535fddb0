package zone

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// benchZone is a zone of n names with an A record each and an MX and a
// TXT at every tenth, the shape of the ordinary zones loads are timed on.
func benchZone(n int) []byte {
	var b bytes.Buffer
	b.WriteString("$ORIGIN bench.test.\n$TTL 300\n@ SOA ns h 1 7200 3600 1209600 300\n@ NS ns\nns A 192.0.2.1\n")
	for i := range n {
		fmt.Fprintf(&b, "h%d A 192.0.%d.%d\n", i, i>>8&255, i&255)
		if i%10 == 0 {
			fmt.Fprintf(&b, "    MX 10 ns\n    TXT \"name %d\"\n", i)
		}
	}
	return b.Bytes()
}

// BenchmarkLoad times a load through each reader: the fast one, and
// miekg/dns's (which zones with $INCLUDE or $GENERATE take), with the
// load-time checks and warnings.
func BenchmarkLoad(b *testing.B) {
	text := benchZone(50000)
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if _, err := Read(bytes.NewReader(text), "bench.zone", "bench.test"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("miekg", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			// A plain io.Reader cannot be read twice: no fast reader.
			if _, err := Read(struct{ io.Reader }{bytes.NewReader(text)}, "bench.zone", "bench.test"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
