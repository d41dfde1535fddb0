package rrl

import (
	"net/netip"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest"
)

// TestClassify reads responses as built by miekg/dns (compressed) and
// checks the kind and the name each is keyed by.
func TestClassify(t *testing.T) {
	msg := func(qname string, qtype uint16, rcode int, aa bool, ans, ns []string) []byte {
		m := new(dns.Msg)
		m.SetQuestion(qname, qtype)
		m.Response, m.Authoritative, m.Rcode = true, aa, rcode
		m.Answer = dnstest.RRs(t, ans...)
		m.Ns = dnstest.RRs(t, ns...)
		m.Compress = true
		b, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	soa := "example.test. 60 IN SOA ns1.example.test. host.example.test. 1 2 3 4 60"
	sig := func(owner string, labels int) string {
		return owner + " 60 IN RRSIG A 13 " + string(rune('0'+labels)) + " 60 20300101000000 20200101000000 1 example.test. AAAA"
	}
	cases := []struct {
		name string
		resp []byte
		kind Kind
		key  string // the name keyed by ("" for errors)
	}{
		{"positive", msg("www.example.test.", 1, 0, true, []string{"www.example.test. 60 IN A 192.0.2.1"}, nil), Positive, "www.example.test."},
		{"cname chain", msg("a.example.test.", 1, 0, true, []string{"a.example.test. 60 IN CNAME www.example.test.", "www.example.test. 60 IN A 192.0.2.1"}, nil), Positive, "a.example.test."},
		{"nxdomain", msg("nx.example.test.", 1, 3, true, nil, []string{soa}), NXDomain, "example.test."},
		{"nxdomain after cname", msg("c.example.test.", 1, 3, true, []string{"c.example.test. 60 IN CNAME nx.example.test."}, []string{soa}), NXDomain, "example.test."},
		{"nodata", msg("www.example.test.", 28, 0, true, nil, []string{soa}), NoData, "example.test."},
		{"referral", msg("a.sub.example.test.", 1, 0, false, nil, []string{"sub.example.test. 60 IN NS ns.sub.example.test."}), Referral, "sub.example.test."},
		{"ns with aa: not a referral", msg("www.example.test.", 28, 0, true, nil, []string{"example.test. 60 IN NS ns1.example.test."}), NoData, "www.example.test."},
		{"wildcard", msg("x.y.wild.example.test.", 1, 0, true, []string{"x.y.wild.example.test. 60 IN A 192.0.2.1", sig("x.y.wild.example.test.", 3)}, nil), Wildcard, "wild.example.test."},
		{"signed, not a wildcard", msg("www.example.test.", 1, 0, true, []string{"www.example.test. 60 IN A 192.0.2.1", sig("www.example.test.", 3)}, nil), Positive, "www.example.test."},
		{"servfail", msg("www.example.test.", 1, 2, false, nil, nil), Error, ""},
		{"refused", msg("www.example.com.", 1, 5, false, nil, nil), Error, ""},
		{"short", []byte{1, 2, 3}, Error, ""},
	}
	l := New(Config{Rate: 1, IPv4Prefix: 32})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, off, _, qend := Classify(c.resp)
			if k != c.kind {
				t.Fatalf("kind %v, want %v", k, c.kind)
			}
			if c.key == "" {
				return
			}
			if qend <= 12 || qend > len(c.resp) {
				t.Fatalf("qend %d", qend)
			}
			wire := make([]byte, 256)
			n, _ := dns.PackDomainName(c.key, wire, 0, nil, false)
			a := netip.MustParseAddr("192.0.2.1")
			got, ok1 := l.Key(a, k, 1, c.resp, off)
			exp, ok2 := l.Key(a, k, 1, wire[:n], 0)
			if !ok1 || !ok2 || got != exp {
				t.Errorf("keyed by another name than %s (off %d)", c.key, off)
			}
		})
	}
}
