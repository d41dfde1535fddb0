package dnssec

import (
	"context"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// FuzzSignZone signs arbitrary zone content below a fixed SOA and checks
// that signing either fails cleanly or yields a zone whose signatures all
// verify, in canonical order, with a closed NSEC chain.
func FuzzSignZone(f *testing.F) {
	for _, line := range strings.Split(testZone, "\n")[3:] {
		f.Add(line, false)
	}
	f.Add("a.b NS x.\na.b.c A 192.0.2.1\n*.b TXT x", true)
	keys := testKeys(f, dns.ED25519)
	const head = "$ORIGIN example.com.\n$TTL 300\n@ SOA ns1 host 1 2 3 4 5\n@ NS ns1\n"
	f.Fuzz(func(t *testing.T, body string, nsec3 bool) {
		zp := dns.NewZoneParser(strings.NewReader(head+body), "example.com.", "fuzz")
		var rrs []dns.RR
		for rr, ok := zp.Next(); ok && len(rrs) < 64; rr, ok = zp.Next() {
			rrs = append(rrs, rr)
		}
		if zp.Err() != nil {
			return
		}
		out, err := SignZone(context.Background(), rrs, "example.com.", keys, Options{NSEC3: nsec3, Workers: 1}, testNow)
		if err != nil {
			return
		}
		verifyInGo(t, out, testNow)
		checkCanonicalOrder(t, out)
		if !nsec3 {
			var chain []*dns.NSEC
			for _, rr := range out {
				if n, ok := rr.(*dns.NSEC); ok {
					chain = append(chain, n)
				}
			}
			for i, n := range chain {
				next := chain[(i+1)%len(chain)].Hdr.Name
				if !strings.EqualFold(n.NextDomain, next) {
					t.Fatalf("NSEC at %s points to %s, next NSEC owner is %s", n.Hdr.Name, n.NextDomain, next)
				}
			}
		}
	})
}
