package auth

import (
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/zone"
)

// BenchmarkBigZone answers from a zone of 200,000 names (the bench
// harness's bigzone workload uses 1,000,000; the lookup is a map probe
// either way), cycling through names so the caches see a spread.
func BenchmarkBigZone(b *testing.B) {
	const n = 200000
	var sb strings.Builder
	sb.WriteString("$ORIGIN big.test.\n$TTL 3600\n@ SOA ns1 host 1 2 3 4 60\n@ NS ns1\nns1 A 192.0.2.1\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "h%d A 10.%d.%d.%d\n", i, i>>16, (i>>8)&255, i&255)
	}
	z, err := zone.Read(strings.NewReader(sb.String()), "big.zone", "big.test.")
	if err != nil {
		b.Fatal(err)
	}
	r := New(zone.NewSet(z), Options{})
	pkts := make([][]byte, 1024)
	for i := range pkts {
		m := query(fmt.Sprintf("h%d.big.test.", (i*7919)%n), dns.TypeA)
		m.SetEdns0(1232, false)
		pkts[i], _ = m.Pack()
	}
	var s Scratch
	out := make([]byte, 0, BufferSize)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if r.Answer(&s, pkts[i&1023], out, false) == nil {
			b.Fatal("no answer")
		}
		i++
	}
}
