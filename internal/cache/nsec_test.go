package cache

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// nsec is an NSEC record of owner to next with TTL ttl and a stand-in
// RRSIG.
func nsec(owner, next string, ttl uint32) []dns.RR {
	return []dns.RR{
		&dns.NSEC{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeNSEC, Class: dns.ClassINET, Ttl: ttl}, NextDomain: next, TypeBitMap: []uint16{dns.TypeA}},
		&dns.RRSIG{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeRRSIG, Class: dns.ClassINET, Ttl: ttl}, TypeCovered: dns.TypeNSEC, Algorithm: dns.ED25519, SignerName: "example.", Signature: "AAAA"},
	}
}

func nsec3(owner string, iterations uint16, ttl uint32) []dns.RR {
	return []dns.RR{&dns.NSEC3{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeNSEC3, Class: dns.ClassINET, Ttl: ttl}, Hash: dns.SHA1, Iterations: iterations, NextDomain: "00000000000000000000000000000000", HashLength: 20}}
}

// TestDenialsOrder: the record found for a name is its own or the last
// before it in canonical order (RFC 4034 §6.1: labels from the right,
// case folded, a name before the names below it), wrapping around to
// the last; records expire by their TTL and the cap given.
func TestDenialsOrder(t *testing.T) {
	now := time.Unix(1e9, 0)
	d := NewDenials(0, func() time.Time { return now })
	for _, n := range [][2]string{{"example.", "a.example."}, {"a.example.", "Z.a.example."}, {"z.a.example.", "*.z.example."}, {"*.z.example.", "example."}} {
		d.Add("example.", nsec(n[0], n[1], 300), 3600)
	}
	d.Add("example.", nsec("b.example.", "c.example.", 3600), 60) // capped at 60 s
	for _, tc := range []struct{ name, owner string }{
		{"example.", "example."},
		{"0.example.", "example."},
		{"A.example.", "a.example."},
		{"yy.a.example.", "a.example."},
		{"z.a.example.", "z.a.example."},
		{"a.z.a.example.", "z.a.example."},
		{"bb.example.", "b.example."},
		{"y.example.", "b.example."},
		{"z.example.", "b.example."},
		{"a.z.example.", "*.z.example."},
		{"zz.example.", "*.z.example."},
		{"other.", "*.z.example."}, // before every owner: the last
	} {
		got, ok := d.NSEC("example.", tc.name)
		if !ok || got.Records[0].Header().Name != tc.owner {
			t.Errorf("NSEC(%s): %v %v, want %s", tc.name, ok, got.Records, tc.owner)
		}
	}
	if z, ok := d.Closest("x.y.example."); !ok || z != "example." {
		t.Errorf("Closest: %q %v", z, ok)
	}
	if _, ok := d.Closest("example.org."); ok {
		t.Error("Closest found a zone for example.org.")
	}
	now = now.Add(61 * time.Second)
	if got, ok := d.NSEC("example.", "bb.example."); ok {
		t.Errorf("past its cap: %v", got.Records)
	}
	if got, ok := d.NSEC("example.", "0.example."); !ok || got.TTL != 239 {
		t.Errorf("TTL left %d %v, want 239", got.TTL, ok)
	}
	// Another kind of record: the zone starts again.
	d.Add("example.", nsec3("ABC.example.", 0, 300), 300)
	if _, ok := d.NSEC("example.", "a.example."); ok {
		t.Error("NSEC still found after an NSEC3 was added")
	}
	if it, _, ok := d.NSEC3Params("example."); !ok || it != 0 {
		t.Errorf("NSEC3Params: %d %v", it, ok)
	}
	// Not directly below the zone: refused.
	d.Add("example.", nsec3("ABD.sub.example.", 0, 300), 300)
	d.Add("example.", nsec3("ABE.example.", 0, 300), 300)
	for _, tc := range []struct{ hash, owner string }{{"abc", "ABC.example."}, {"ABD", "ABC.example."}, {"ABF", "ABE.example."}, {"00", "ABE.example."}} {
		if got, ok := d.NSEC3("example.", tc.hash); !ok || got.Records[0].Header().Name != tc.owner {
			t.Errorf("NSEC3(%s): %v %v, want %s", tc.hash, ok, got.Records, tc.owner)
		}
	}
	// Other parameters replace the zone's.
	d.Add("example.", nsec3("ABG.example.", 5, 300), 300)
	if got, ok := d.NSEC3("example.", "ABF"); !ok || got.Records[0].Header().Name != "ABG.example." {
		t.Errorf("after new parameters: %v %v", got.Records, ok)
	}
}

// TestDenialsBound: the index stays within its size; the expired records
// go first, then the largest zone.
func TestDenialsBound(t *testing.T) {
	now := time.Unix(1e9, 0)
	d := NewDenials(64<<10, func() time.Time { return now })
	d.Add("small.", nsec("small.", "a.small.", 3600), 3600)
	d.Add("old.", nsec("old.", "a.old.", 10), 3600)
	now = now.Add(time.Minute)
	for i := range 1000 {
		d.Add("big.", nsec(fmt.Sprintf("n%d.big.", i), fmt.Sprintf("n%d.big.", i+1), 3600), 3600)
		if d.Bytes() > 64<<10 {
			t.Fatalf("%d bytes after %d records", d.Bytes(), i)
		}
	}
	if _, ok := d.NSEC("small.", "b.small."); !ok {
		t.Error("the small zone went")
	}
	if _, ok := d.Closest("x.old."); ok {
		t.Error("the expired zone stayed")
	}
}

// BenchmarkDenialsNSEC: finding the NSEC record of a name in a zone of
// 10,000 records, in parallel (the read lock shared).
func BenchmarkDenialsNSEC(b *testing.B) {
	d := NewDenials(64<<20, nil)
	names := make([]string, 10000)
	for i := range names {
		names[i] = fmt.Sprintf("n%05d.example.", i)
	}
	asked := make([]string, len(names))
	for i := range names {
		d.Add("example.", nsec(names[i], names[(i+1)%len(names)], 3600), 3600)
		asked[i] = "x." + names[i]
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			if _, ok := d.NSEC("example.", asked[i%len(asked)]); !ok {
				b.Fatal("not found")
			}
		}
	})
}
