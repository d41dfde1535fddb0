package auth

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/zone"
)

// BenchmarkBigZone answers from a zone of 200,000 names (the bench
// harness's bigzone workload uses 1,000,000). "warm" cycles through 1024
// names, which stay in the CPU's caches; "spread" asks 65,536 random
// names, whose data does not, so each answer waits on the lookup's cache
// misses; "ahead" answers the same names in batches of 32 started ahead
// (Ahead), as a server worker does when its response cache misses often.
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
	const spread = 1 << 16
	pkts := make([][]byte, spread)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range pkts {
		name := (i * 7919) % n
		if i >= 1024 {
			name = rng.IntN(n)
		}
		m := query(fmt.Sprintf("h%d.big.test.", name), dns.TypeA)
		m.SetEdns0(1232, false)
		pkts[i], _ = m.Pack()
	}
	var s Scratch
	out := make([]byte, 0, BufferSize)
	run := func(b *testing.B, mask int) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if r.Answer(&s, pkts[i&mask], out, false) == nil {
				b.Fatal("no answer")
			}
			i++
		}
	}
	b.Run("warm", func(b *testing.B) { run(b, 1023) })
	b.Run("spread", func(b *testing.B) { run(b, spread-1) })
	b.Run("ahead", func(b *testing.B) {
		b.ReportAllocs()
		var as [32]Ahead
		i := 0
		for b.Loop() {
			k := i & 31
			if k == 0 {
				for j := range as {
					r.Start(&s, &as[j], pkts[(i+j)&(spread-1)])
				}
				for step := 0; step < Steps; step++ {
					for j := range as {
						r.Step(&s, &as[j])
					}
				}
			}
			if r.AnswerAhead(&s, &as[k], pkts[i&(spread-1)], out) == nil {
				b.Fatal("no answer")
			}
			i++
		}
	})
}
