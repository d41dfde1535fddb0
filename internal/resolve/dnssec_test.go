package resolve

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/upstream"
)

// doFake is a fake that notes the DO bit of each question.
type doFake struct {
	*fake
	do []bool
}

func (f *doFake) ExchangeOptions(ctx context.Context, server netip.AddrPort, q dns.Question, opt upstream.Options) (*dns.Msg, upstream.Report, error) {
	f.do = append(f.do, opt.DNSSEC)
	return f.fake.ExchangeOptions(ctx, server, q, opt)
}

// TestDO: the authorities are asked with DO=1 (RFC 4035 §3.2.1) unless
// Options.NoDNSSEC.
func TestDO(t *testing.T) {
	for _, off := range []bool{false, true} {
		f := &doFake{fake: world(t)}
		r := New(f, Options{Hints: []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr(root)}, Why: "root hint"}}, NoDNSSEC: off})
		if _, err := r.Resolve(context.Background(), "www.example.com.", dns.TypeA); err != nil {
			t.Fatal(err)
		}
		if len(f.do) == 0 || slices.Contains(f.do, off) {
			t.Errorf("NoDNSSEC %v: DO bits %v", off, f.do)
		}
	}
}

// Signatures and proofs of the signed answers below: RDATA that need not
// verify (nothing validates yet), only be kept with the right RRset.
const (
	sigA     = "www.example.com. 300 IN RRSIG A 13 3 300 20300101000000 20200101000000 1 example.com. AAAA"
	sigCNAME = "alias.example.com. 300 IN RRSIG CNAME 13 3 300 20300101000000 20200101000000 1 example.com. AAAA"
	sigNetA  = "www.example.net. 300 IN RRSIG A 13 3 300 20300101000000 20200101000000 2 example.net. AAAA"
	soaCom   = "example.com. 300 IN SOA ns1.example.com. h.example.com. 1 2 3 4 300"
	sigSOA   = "example.com. 300 IN RRSIG SOA 13 2 300 20300101000000 20200101000000 1 example.com. AAAA"
	nsecNX   = "mx.example.com. 300 IN NSEC www.example.com. A RRSIG NSEC"
	sigNSEC  = "mx.example.com. 300 IN RRSIG NSEC 13 3 300 20300101000000 20200101000000 1 example.com. AAAA"
	nsec3    = "2vptu5timamqttgl4luu9kg21e0aor3s.example.com. 300 IN NSEC3 1 0 0 - 2VPTU5TIMAMQTTGL4LUU9KG21E0AOR3T A RRSIG"
	sigNSEC3 = "2vptu5timamqttgl4luu9kg21e0aor3s.example.com. 300 IN RRSIG NSEC3 13 3 300 20300101000000 20200101000000 1 example.com. AAAA"
	wildA    = "x.wild.example.com. 300 IN A 192.0.2.7"
	sigWildA = "x.wild.example.com. 300 IN RRSIG A 13 3 300 20300101000000 20200101000000 1 example.com. AAAA"
	nsecWild = "w.example.com. 300 IN NSEC y.wild.example.com. A RRSIG NSEC"
	sigNWild = "w.example.com. 300 IN RRSIG NSEC 13 3 300 20300101000000 20200101000000 1 example.com. AAAA"
	dsCom    = "example.com. 3600 IN DS 1234 13 2 ABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABAB"
	sigDS    = "example.com. 3600 IN RRSIG DS 13 2 3600 20300101000000 20200101000000 5 com. AAAA"
)

// TestSignedKept: the RRSIGs of every RRset a resolution uses, and the
// NSEC and NSEC3 proofs of negative and wildcard answers, are in its
// Result as a DO response carries them (RFC 4035 §3.1), each RRset
// followed by its signatures; records the answer does not use, and their
// signatures, are not. A second resolution answers the same from the
// cache without a query, but for a wildcard answer's proof (not cached).
func TestSignedKept(t *testing.T) {
	for _, tc := range []struct {
		name                string
		qname               string
		qtype               uint16
		setup               func(t *testing.T, f *fake)
		rcode               int
		answer, authority   []string
		cachedAuthority     []string // when not authority
		cachedAuthorityNone bool
	}{{
		name:  "an RRset and its RRSIG; an unrelated RRSIG dropped",
		qname: "www.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			f.answers[key{exCom, "www.example.com.", dns.TypeA}] = answer(t, "www.example.com. 300 IN A 192.0.2.1", sigA,
				"www.example.com. 300 IN RRSIG AAAA 13 3 300 20300101000000 20200101000000 1 example.com. AAAA")
		},
		answer: []string{"www.example.com. 300 IN A 192.0.2.1", sigA},
	}, {
		name:  "a CNAME chain across zones, each link with its RRSIG",
		qname: "alias.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			f.answers[key{exCom, "alias.example.com.", dns.TypeA}] = answer(t, "alias.example.com. 300 IN CNAME www.example.net.", sigCNAME)
			f.answers[key{exNet, "www.example.net.", dns.TypeA}] = answer(t, "www.example.net. 300 IN A 192.0.2.2", sigNetA)
		},
		answer: []string{"alias.example.com. 300 IN CNAME www.example.net.", sigCNAME, "www.example.net. 300 IN A 192.0.2.2", sigNetA},
	}, {
		name:  "NXDOMAIN: the SOA, NSEC and their RRSIGs",
		qname: "nx.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			m := negative(t, dns.RcodeNameError, soaCom)
			m.Ns = append(m.Ns, rrs(t, sigSOA, nsecNX, sigNSEC)...)
			f.answers[key{exCom, "nx.example.com.", 0}] = m
		},
		rcode:     dns.RcodeNameError,
		authority: []string{soaCom, sigSOA, nsecNX, sigNSEC},
	}, {
		name:  "NODATA: the SOA, NSEC3 and their RRSIGs",
		qname: "www.example.com.", qtype: dns.TypeTXT,
		setup: func(t *testing.T, f *fake) {
			m := negative(t, dns.RcodeSuccess, soaCom)
			m.Ns = append(m.Ns, rrs(t, sigSOA, nsec3, sigNSEC3)...)
			f.answers[key{exCom, "www.example.com.", dns.TypeTXT}] = m
		},
		authority: []string{soaCom, sigSOA, nsec3, sigNSEC3},
	}, {
		name:  "a wildcard answer with the NSEC that no closer name matched",
		qname: "x.wild.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			m := answer(t, wildA, sigWildA)
			m.Ns = rrs(t, "example.com. 3600 IN NS ns1.example.com.", nsecWild, sigNWild)
			f.answers[key{exCom, "x.wild.example.com.", dns.TypeA}] = m
		},
		answer:              []string{wildA, sigWildA},
		authority:           []string{nsecWild, sigNWild},
		cachedAuthorityNone: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := world(t)
			tc.setup(t, f)
			clk := &fakeClock{time.Unix(1_800_000_000, 0)}
			r, _ := tracing(f, Options{Cache: cache.New(cache.Options{Now: clk.now}), Now: clk.now, NoMinimise: true})
			check := func(when string, res *Result, authority []string) {
				t.Helper()
				if res.Rcode != tc.rcode || !slices.Equal(records(res.Answer), tc.answer) || !slices.Equal(records(res.Authority), authority) {
					t.Errorf("%s: %s\nanswer %q\nauthority %q\nwant %s\nanswer %q\nauthority %q", when, dns.RcodeToString[res.Rcode], records(res.Answer), records(res.Authority),
						dns.RcodeToString[tc.rcode], tc.answer, authority)
				}
			}
			res, err := r.Resolve(context.Background(), tc.qname, tc.qtype)
			if err != nil {
				t.Fatal(err)
			}
			check("resolved", res, tc.authority)
			f.asked = nil
			res, err = r.Resolve(context.Background(), tc.qname, tc.qtype)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.authority
			if tc.cachedAuthorityNone {
				want = nil
			}
			check("from the cache", res, want)
			if len(f.asked) != 0 {
				t.Errorf("asked again: %v", f.asked)
			}
		})
	}
}

// TestProofsCached: the DS RRset of a referral, or the NSEC proving it
// has none, and the NSEC and NSEC3 RRsets of negative answers' proofs
// are cached under their owners with their RRSIGs, for the validator: a
// referral's at its rank (a DS question still goes to the parent's
// servers), an authoritative answer's at the authority section's.
func TestProofsCached(t *testing.T) {
	const (
		nsecNoDS = "example.com. 3600 IN NSEC f.com. NS RRSIG NSEC"
		sigNoDS  = "example.com. 3600 IN RRSIG NSEC 13 2 3600 20300101000000 20200101000000 5 com. AAAA"
	)
	for _, tc := range []struct {
		name     string
		referral []string // added to com.'s referral to example.com.
		qname    string
		qtype    uint16
		setup    func(t *testing.T, f *fake)
		owner    string
		t        uint16
		rank     cache.Rank
		records  []string
		sigs     []string
	}{
		{name: "a referral's DS", referral: []string{dsCom, sigDS}, qname: "www.example.com.", qtype: dns.TypeA,
			owner: "example.com.", t: dns.TypeDS, rank: cache.RankAdditional, records: []string{dsCom}, sigs: []string{sigDS}},
		{name: "a referral's proof of no DS", referral: []string{nsecNoDS, sigNoDS}, qname: "www.example.com.", qtype: dns.TypeA,
			owner: "example.com.", t: dns.TypeNSEC, rank: cache.RankAdditional, records: []string{nsecNoDS}, sigs: []string{sigNoDS}},
		{name: "an NXDOMAIN's NSEC", qname: "nx.example.com.", qtype: dns.TypeA,
			setup: func(t *testing.T, f *fake) {
				m := negative(t, dns.RcodeNameError, soaCom)
				m.Ns = append(m.Ns, rrs(t, sigSOA, nsecNX, sigNSEC)...)
				f.answers[key{exCom, "nx.example.com.", 0}] = m
			},
			owner: "mx.example.com.", t: dns.TypeNSEC, rank: cache.RankAuthority, records: []string{nsecNX}, sigs: []string{sigNSEC}},
		{name: "a NODATA's NSEC3", qname: "www.example.com.", qtype: dns.TypeTXT,
			setup: func(t *testing.T, f *fake) {
				m := negative(t, dns.RcodeSuccess, soaCom)
				m.Ns = append(m.Ns, rrs(t, sigSOA, nsec3, sigNSEC3)...)
				f.answers[key{exCom, "www.example.com.", dns.TypeTXT}] = m
			},
			owner: "2vptu5timamqttgl4luu9kg21e0aor3s.example.com.", t: dns.TypeNSEC3, rank: cache.RankAuthority, records: []string{nsec3}, sigs: []string{sigNSEC3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := world(t)
			m := f.answers[key{gtld, "example.com.", 0}]
			m.Ns = append(m.Ns, rrs(t, tc.referral...)...)
			if tc.setup != nil {
				tc.setup(t, f)
			}
			clk := &fakeClock{time.Unix(1_800_000_000, 0)}
			c := cache.New(cache.Options{Now: clk.now})
			r, _ := tracing(f, Options{Cache: c, Now: clk.now, NoMinimise: true})
			if _, err := r.Resolve(context.Background(), tc.qname, tc.qtype); err != nil {
				t.Fatal(err)
			}
			e, ok := c.Get(tc.owner, tc.t)
			if !ok || e.Rank != tc.rank || !slices.Equal(records(e.Records), tc.records) || !slices.Equal(records(e.Sigs), tc.sigs) {
				t.Errorf("cached %v %+v, want %q with %q at rank %d", ok, e, tc.records, tc.sigs, tc.rank)
			}
		})
	}
}

// TestRRsets: RRsets groups a section's records by owner (case aside)
// and type, each RRSIG with the RRset it covers.
func TestRRsets(t *testing.T) {
	in := rrs(t, "alias.example.com. 300 IN CNAME www.example.net.", sigCNAME, "WWW.example.net. 300 IN A 192.0.2.2", sigNetA, "www.example.net. 300 IN A 192.0.2.3", sigA)
	got := RRsets(in)
	type summary struct {
		name       string
		t          uint16
		recs, sigs int
	}
	var s []summary
	for _, set := range got {
		s = append(s, summary{set.Name, set.Type, len(set.Records), len(set.Sigs)})
	}
	want := []summary{{"alias.example.com.", dns.TypeCNAME, 1, 1}, {"www.example.net.", dns.TypeA, 2, 1}, {"www.example.com.", dns.TypeA, 0, 1}}
	if !slices.Equal(s, want) {
		t.Errorf("RRsets %v, want %v", s, want)
	}
}

// TestWithoutDNSSEC: a client without DO gets no RRSIG, NSEC or NSEC3
// (RFC 4035 §3.2.1), but the type it asked; the Result is unchanged.
func TestWithoutDNSSEC(t *testing.T) {
	res := &Result{Answer: rrs(t, "www.example.com. 300 IN A 192.0.2.1", sigA), Authority: rrs(t, soaCom, sigSOA, nsecNX, sigNSEC)}
	for _, tc := range []struct {
		qtype             uint16
		answer, authority []string
	}{
		{dns.TypeA, []string{"www.example.com. 300 IN A 192.0.2.1"}, []string{soaCom}},
		{dns.TypeRRSIG, []string{"www.example.com. 300 IN A 192.0.2.1", sigA}, []string{soaCom}},
	} {
		a, ns := res.WithoutDNSSEC(tc.qtype)
		if !slices.Equal(records(a), tc.answer) || !slices.Equal(records(ns), tc.authority) {
			t.Errorf("%s: %q %q, want %q %q", dns.Type(tc.qtype), records(a), records(ns), tc.answer, tc.authority)
		}
	}
	if len(res.Answer) != 2 || len(res.Authority) != 4 {
		t.Errorf("the Result changed: %v", res)
	}
}
