package wire

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/miekg/dns"
)

// wireName packs a presentation name into uncompressed wire form.
func wireName(tb testing.TB, s string) []byte {
	tb.Helper()
	buf := make([]byte, 256)
	n, err := dns.PackDomainName(dns.Fqdn(s), buf, 0, nil, false)
	if err != nil {
		tb.Fatalf("%s: %v", s, err)
	}
	return buf[:n]
}

// rrTail is the TYPE..RDATA of a record whose RDATA is prefix then name.
func rrTail(rtype uint16, prefix, name []byte) []byte {
	t := make([]byte, 10, 10+len(prefix)+len(name))
	binary.BigEndian.PutUint16(t, rtype)
	binary.BigEndian.PutUint16(t[2:], ClassINET)
	binary.BigEndian.PutUint32(t[4:], 3600)
	t = append(t, prefix...)
	t = append(t, name...)
	binary.BigEndian.PutUint16(t[8:], uint16(len(t)-10))
	return t
}

// parsedQuestion returns a query for name and type parsed into q, and the
// raw question bytes the Builder copies.
func parsedQuestion(tb testing.TB, q *Query, name string, qtype uint16) []byte {
	tb.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	pkt := pack(tb, m)
	if res, _ := q.Parse(pkt); res != Answer {
		tb.Fatalf("%s does not parse", name)
	}
	return pkt[HeaderLen:q.QuestionEnd]
}

// BenchmarkBuilder writes a small answer (one MX and the exchange's
// address, the shape of most answers with names in RDATA) and a large one
// (1000 MX records and their addresses, a 64 KiB TCP answer).
func BenchmarkBuilder(b *testing.B) {
	var q Query
	raw := parsedQuestion(b, &q, "example.test.", dns.TypeMX)
	addr := []byte{0, TypeA, 0, ClassINET, 0, 0, 14, 16, 0, 4, 192, 0, 2, 1}
	for _, n := range []int{1, 1000} {
		targets := make([][]byte, n)
		tails := make([][]byte, n)
		for i := range targets {
			targets[i] = wireName(b, fmt.Sprintf("mx%04d.example.test.", i))
			tails[i] = rrTail(TypeMX, []byte{0, 10}, targets[i])
		}
		b.Run(fmt.Sprintf("mx%d", n), func(b *testing.B) {
			var bld Builder
			buf := make([]byte, 0, 70000)
			b.ReportAllocs()
			for b.Loop() {
				bld.Reset(buf, 65535)
				bld.Header(1, FlagQR|FlagAA)
				bld.Question(raw, &q)
				for _, t := range tails {
					bld.RRAt(HeaderLen, t)
				}
				bld.CountAnswer(n)
				for _, t := range targets {
					bld.RR(t, addr)
				}
				bld.CountAdditional(n)
				bld.Finish()
			}
		})
	}
}
