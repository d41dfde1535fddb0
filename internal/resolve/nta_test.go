package resolve

import (
	"context"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/dnssec"
)

// TestNegativeTrustAnchor: below a negative trust anchor (RFC 7646) the
// bogus zone's data is Insecure, without EDE, and no DS or DNSKEY is
// fetched for it; other zones validate as before; an anchor inside a
// zone (no cut there) makes its names Insecure though their signer is
// above it; and nothing is synthesised there from NSEC records learned
// before the anchor was set. Replaced by
// SetNegativeAnchors (a reload), the zone is bogus again: no finding
// made under an anchor is kept in the cache, none made without it is
// taken under it.
func TestNegativeTrustAnchor(t *testing.T) {
	f, anchor := signedHierarchy(t, dnssec.Options{})
	now := checkTime
	r := validatingResolver(f, anchor, &now, func(o *Options) { o.NegativeAnchors = []string{"Broken.Test"} })
	type want struct {
		name  string
		qtype uint16
		rcode int
		sec   cache.Security
		ede   uint16
	}
	check := func(step string, cases []want) {
		t.Helper()
		for _, tc := range cases {
			f.asked = nil
			res, err := r.Resolve(context.Background(), tc.name, tc.qtype)
			if err != nil || res.Rcode != tc.rcode || res.Security != tc.sec || res.EDE != tc.ede {
				t.Errorf("%s: %s %s: %v rcode %d security %v EDE %d (%s), want rcode %d %v EDE %d", step, tc.name, dns.TypeToString[tc.qtype], err, res.Rcode, res.Security, res.EDE, res.Why, tc.rcode, tc.sec, tc.ede)
				continue
			}
			if tc.sec == cache.Insecure && (f.asked[dns.TypeDS] != 0 || f.asked[dns.TypeDNSKEY] != 0 || !strings.Contains(res.Why, "negative trust anchor")) {
				t.Errorf("%s: %s: %d DS and %d DNSKEY asked, why %q", step, tc.name, f.asked[dns.TypeDS], f.asked[dns.TypeDNSKEY], res.Why)
			}
		}
	}
	check("with the NTA", []want{
		{"www.broken.test.", dns.TypeA, dns.RcodeSuccess, cache.Insecure, 0},
		{"nx.broken.test.", dns.TypeA, dns.RcodeNameError, cache.Insecure, 0},
		{"www.signed.test.", dns.TypeA, dns.RcodeSuccess, cache.Secure, 0},
		{"nx.signed.test.", dns.TypeA, dns.RcodeNameError, cache.Secure, 0},
		{"www.wrongds.test.", dns.TypeA, dns.RcodeSuccess, cache.Bogus, 9},
	})
	r.SetNegativeAnchors(nil)
	check("without", []want{
		{"www.broken.test.", dns.TypeA, dns.RcodeSuccess, cache.Bogus, 6},
		{"nx.broken.test.", dns.TypeA, dns.RcodeNameError, cache.Secure, 0},
		{"www.wrongds.test.", dns.TypeA, dns.RcodeSuccess, cache.Bogus, 9},
	})
	// The findings the cache keeps from without the anchor are not
	// taken under it.
	r.SetNegativeAnchors([]string{"broken.test."})
	check("again", []want{
		{"www.broken.test.", dns.TypeA, dns.RcodeSuccess, cache.Insecure, 0},
		{"nx.broken.test.", dns.TypeA, dns.RcodeNameError, cache.Insecure, 0},
	})
	// signed.test.'s NSEC records are known (nx.signed.test. above): with
	// an NTA there, nz.signed.test. is asked, and Insecure.
	r.SetNegativeAnchors([]string{"signed.test."})
	f.asked = nil
	res, err := r.Resolve(context.Background(), "nz.signed.test.", dns.TypeA)
	if err != nil || res.Rcode != dns.RcodeNameError || res.Security != cache.Insecure || f.total() == 0 {
		t.Errorf("nz.signed.test. under an NTA: %v rcode %d security %v, %d queries", err, res.Rcode, res.Security, f.total())
	}
	r.SetNegativeAnchors([]string{"wild.signed.test."})
	check("inside a zone", []want{
		{"x.wild.signed.test.", dns.TypeA, dns.RcodeSuccess, cache.Insecure, 0},
		{"www.signed.test.", dns.TypeA, dns.RcodeSuccess, cache.Secure, 0},
	})
	r.SetNegativeAnchors([]string{"signed.test."})
	if _, ok := r.NegativeAnchor("a.b.signed.test."); !ok {
		t.Error("NegativeAnchor(a.b.signed.test.) not found")
	}
	if _, ok := r.NegativeAnchor("test."); ok {
		t.Error("NegativeAnchor(test.) found")
	}
}
