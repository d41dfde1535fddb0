package auth

import (
	"fmt"
	"os"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/zone"
)

// rootZone is the real signed root zone shipped beside the project.
const rootZone = "../../../shared/data/root.zone"

func rootResponder(tb testing.TB) *Responder {
	tb.Helper()
	if _, err := os.Stat(rootZone); err != nil {
		tb.Skip("no root zone at", rootZone)
	}
	z, err := zone.Load(rootZone, ".")
	if err != nil {
		tb.Fatal(err)
	}
	return New(zone.NewSet(z), Options{})
}

// TestRootZone checks the answers of the bench workloads on the real root
// zone: a referral with DS, NXDOMAIN with its NSEC proof, both with DO,
// and that they allocate nothing.
func TestRootZone(t *testing.T) {
	r := rootResponder(t)
	resp := ask(t, r, doQuery("www.example.com.", dns.TypeA, true), false)
	if resp.Rcode != 0 || resp.Authoritative || len(resp.Answer) != 0 {
		t.Fatalf("referral: %v", resp.MsgHdr)
	}
	if got := shape(resp.Ns); got != "com. DS, com. NS, com. NS, com. NS, com. NS, com. NS, com. NS, com. NS, com. NS, com. NS, com. NS, com. NS, com. NS, com. NS, com. RRSIG(DS)" {
		t.Errorf("com. referral authority: %s", got)
	}
	if len(resp.Extra) < 13 {
		t.Errorf("com. referral: %d additional records, want the glue", len(resp.Extra))
	}
	resp = ask(t, r, doQuery("nonexistent-tld-xyz.", dns.TypeA, true), false)
	if resp.Rcode != dns.RcodeNameError || !resp.Authoritative {
		t.Fatalf("nxdomain: %v", resp.MsgHdr)
	}
	if got := shape(resp.Ns); got != ". NSEC, . RRSIG(NSEC), . RRSIG(SOA), . SOA, nokia. NSEC, nokia. RRSIG(NSEC)" {
		t.Errorf("nxdomain authority: %s", got)
	}
	for _, q := range []string{"www.example.com.", "nonexistent-tld-xyz."} {
		pkt, _ := doQuery(q, dns.TypeA, true).Pack()
		var s Scratch
		out := make([]byte, 0, BufferSize)
		if n := testing.AllocsPerRun(50, func() { r.Answer(&s, pkt, out, false) }); n != 0 {
			t.Errorf("%s: %v allocations", q, n)
		}
	}
}

func BenchmarkRoot(b *testing.B) {
	r := rootResponder(b)
	for _, tc := range []struct {
		name  string
		qname string
		do    bool
	}{
		{"referral", "www.example.com.", false},
		{"referral-DO", "www.example.com.", true},
		{"nxdomain", "nonexistent-tld-xyz.", false},
		{"nxdomain-DO", "nonexistent-tld-xyz.", true},
	} {
		pkt, _ := doQuery(tc.qname, dns.TypeA, tc.do).Pack()
		b.Run(tc.name, func(b *testing.B) {
			var s Scratch
			out := make([]byte, 0, BufferSize)
			b.ReportAllocs()
			for b.Loop() {
				r.Answer(&s, pkt, out, false)
			}
		})
	}
}

// TestPrecomputedReferrals compares, for every delegation of the root
// zone, the precomputed referral with the one built record by record.
func TestPrecomputedReferrals(t *testing.T) {
	fast := rootResponder(t)
	z, err := zone.Load(rootZone, ".")
	if err != nil {
		t.Fatal(err)
	}
	slow := &Responder{payload: DefaultUDPPayload}
	// Not prepared: no blocks.
	unprepared := &published{set: zone.NewSet(z)}
	unprepared.zones[zone.ShardOf(z.Origin)] = map[string]*served{string(z.Origin): {z: z}}
	slow.zones.Store(unprepared)
	n := 0
	z.Nodes(func(d *zone.Node) {
		if d.Flags&zone.Delegation == 0 {
			return
		}
		n++
		for _, do := range []bool{false, true} {
			for _, tcp := range []bool{false, true} {
				q := doQuery("www.Sub."+zone.NameString(d.Name), dns.TypeA, do)
				a, b := ask(t, fast, q, tcp), ask(t, slow, q, tcp)
				if a.String() != b.String() {
					t.Fatalf("%s do=%v tcp=%v:\nprecomputed:\n%v\nbuilt:\n%v", q.Question[0].Name, do, tcp, a, b)
				}
			}
		}
	})
	if n < 1000 {
		t.Errorf("only %d delegations compared", n)
	}
	// Negative answers: the precomputed SOA block against the built one.
	for i := 0; i < 300; i++ {
		for _, do := range []bool{false, true} {
			q := doQuery(fmt.Sprintf("www.nx%d-%c.", i, 'a'+i%26), dns.TypeA, do)
			if i%10 == 0 {
				q = doQuery(".", dns.TypeTXT, do) // NODATA at the apex
			}
			a, b := ask(t, fast, q, false), ask(t, slow, q, false)
			if a.String() != b.String() {
				t.Fatalf("%s do=%v:\nprecomputed:\n%v\nbuilt:\n%v", q.Question[0].Name, do, a, b)
			}
		}
	}
}
