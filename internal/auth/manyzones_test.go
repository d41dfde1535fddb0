package auth

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/zone"
)

// manyZones returns n small zones, z0.test. to z(n-1).test., each with
// a SOA, an NS and www's address (as a hosting provider's are).
func manyZones(tb testing.TB, n int) *zone.Set {
	tb.Helper()
	zs := make([]*zone.Zone, n)
	for i := range zs {
		origin := fmt.Sprintf("z%d.test.", i)
		text := fmt.Sprintf("$ORIGIN %s\n$TTL 3600\n@ SOA ns1 host 1 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\nwww A 10.%d.%d.%d\n", origin, i>>16, (i>>8)&255, i&255)
		z, err := zone.Read(strings.NewReader(text), origin+"zone", origin)
		if err != nil {
			tb.Fatal(err)
		}
		zs[i] = z
	}
	return zone.NewSet(zs...)
}

// TestManyZonesZeroAllocs: finding the zone among 500 allocates
// nothing, for names in a zone and for names in none (REFUSED).
func TestManyZonesZeroAllocs(t *testing.T) {
	r := New(manyZones(t, 500), Options{})
	for _, qname := range []string{"www.z499.test.", "z0.test.", "www.nowhere.test."} {
		m := query(qname, dns.TypeA)
		m.SetEdns0(1232, false)
		pkt, _ := m.Pack()
		var s Scratch
		out := make([]byte, 0, BufferSize)
		if r.Answer(&s, pkt, out, false) == nil {
			t.Fatalf("%s: no answer", qname)
		}
		if n := testing.AllocsPerRun(100, func() { r.Answer(&s, pkt, out, false) }); n != 0 {
			t.Errorf("%s: %v allocations per query, want 0", qname, n)
		}
	}
}

// BenchmarkManyZones answers www.zK.test. A with 1 zone and with
// 100,000 served: "same" asks one name again and again (the zone
// lookup's cost: one map probe per label, whatever the number of
// zones), "spread" names in 65,536 zones drawn at random (each answer
// also waits on cache misses, as a server of many zones does).
// Building the 100,000 zones takes seconds (BenchmarkLoadManyZones).
func BenchmarkManyZones(b *testing.B) {
	for _, n := range []int{1, 100000} {
		r := New(manyZones(b, n), Options{})
		const spread = 1 << 16
		pkts := make([][]byte, spread)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range pkts {
			m := query(fmt.Sprintf("www.z%d.test.", rng.IntN(n)), dns.TypeA)
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
		b.Run(fmt.Sprintf("zones=%d/same", n), func(b *testing.B) { run(b, 0) })
		if n > 1 {
			b.Run(fmt.Sprintf("zones=%d/spread", n), func(b *testing.B) { run(b, spread-1) })
		}
	}
}

// BenchmarkLoadManyZones: reading 2,000 small zones and making the
// Responder of them, the cost of loading a hosting provider's zones.
func BenchmarkLoadManyZones(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		New(manyZones(b, 2000), Options{})
	}
}

// servedOf is p's served zone of origin, nil when none.
func servedOf(p *published, origin []byte) *served {
	return p.zones[zone.ShardOf(origin)][string(origin)]
}

// TestPublishChangedShards: publishing a set with one zone added and one
// removed beside 2,000 prepares and copies only the shards they fall in:
// every other shard's map is the one published before (a publication
// costs the shards changed, not the whole set); the zones are answered.
func TestPublishChangedShards(t *testing.T) {
	set := manyZones(t, 2000)
	r := New(set, Options{})
	before := r.zones.Load()
	extra := manyZones(t, 2001).Get([]byte("\x05z2000\x04test\x00"))
	gone := set.Get([]byte("\x02z7\x04test\x00"))
	if extra == nil || gone == nil {
		t.Fatal("zones missing")
	}
	r.Publish(set.With(map[string]*zone.Zone{string(extra.Origin): extra, string(gone.Origin): nil}))
	after := r.zones.Load()
	changed := map[int]bool{zone.ShardOf(extra.Origin): true, zone.ShardOf(gone.Origin): true}
	for i := range zone.SetShards {
		same := reflect.ValueOf(before.zones[i]).UnsafePointer() == reflect.ValueOf(after.zones[i]).UnsafePointer()
		if same == changed[i] {
			t.Errorf("shard %d: map kept %v, changed %v", i, same, changed[i])
		}
	}
	for name, want := range map[string]int{"www.z2000.test.": dns.RcodeSuccess, "www.z7.test.": dns.RcodeRefused, "www.z8.test.": dns.RcodeSuccess} {
		var s Scratch
		pkt, _ := query(name, dns.TypeA).Pack()
		m := new(dns.Msg)
		if err := m.Unpack(r.Answer(&s, pkt, make([]byte, 0, BufferSize), false)); err != nil || m.Rcode != want {
			t.Errorf("%s: %v %v, want %s", name, m, err, dns.RcodeToString[want])
		}
	}
}
