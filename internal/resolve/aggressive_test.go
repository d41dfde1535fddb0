package resolve

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/dnssec"
	"github.com/tern-dns/tern/internal/validator"
)

// validatingResolver is a validating Resolver with a cache over the
// signed hierarchy f, on the clock *now (the signatures checked at
// checkTime), its Options changed by edit when not nil.
func validatingResolver(f *authFake, anchor []*dns.DS, now *time.Time, edit func(*Options)) *Resolver {
	clock := func() time.Time { return *now }
	opt := Options{
		Hints:     []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr("10.0.1.1")}}},
		Now:       clock,
		Cache:     cache.New(cache.Options{Now: clock}),
		Validate:  true,
		Anchors:   validator.Anchors{".": anchor},
		Validator: validator.Options{Now: func() time.Time { return checkTime }},
	}
	if edit != nil {
		edit(&opt)
	}
	return New(f, opt)
}

// aggressiveResolver is validatingResolver with NoAggressiveNSEC off.
func aggressiveResolver(f *authFake, anchor []*dns.DS, now *time.Time, off bool) *Resolver {
	return validatingResolver(f, anchor, now, func(o *Options) { o.NoAggressiveNSEC = off })
}

// total is the number of questions f was asked since it was reset.
func (f *authFake) total() int {
	n := 0
	for _, c := range f.asked {
		n += c
	}
	return n
}

// sameSpan returns a name below zone, not want, whose NSEC3 hash (no
// salt, no iterations, as Tern's signer makes them) the NSEC3 record
// covering want's hash covers too, found among res's records.
func sameSpan(t *testing.T, res *Result, zone, want string) string {
	t.Helper()
	h := dns.HashName(want, dns.SHA1, 0, "")
	for _, rr := range res.Authority {
		n, ok := rr.(*dns.NSEC3)
		if !ok || !n.Cover(want) {
			continue
		}
		for i := range 100000 {
			name := fmt.Sprintf("x%d.%s", i, zone)
			if name != want && n.Cover(name) {
				return name
			}
		}
		t.Fatalf("no name in the span of %s (%s)", n.Hdr.Name, h)
	}
	t.Fatalf("no NSEC3 covers %s (%s) in %v", want, h, res.Authority)
	return ""
}

// TestAggressiveNSEC: after one validated NXDOMAIN, another name in the
// same NSEC or NSEC3 span (and a name below it) is answered NXDOMAIN,
// Secure, with the zone's SOA and the proof with their RRSIGs, and no
// authority is asked (RFC 8198 §5.1); a NODATA likewise for another
// type of a name whose NSEC is known. Not from an Opt-Out span (RFC 5155
// §9.2), not from an unsigned zone's answers, not past the SOA's
// MINIMUM (§5.4), and not with NoAggressiveNSEC.
func TestAggressiveNSEC(t *testing.T) {
	for _, opts := range []dnssec.Options{{}, {NSEC3: true}, {NSEC3: true, OptOut: true}} {
		t.Run(fmt.Sprintf("NSEC3 %v opt-out %v", opts.NSEC3, opts.OptOut), func(t *testing.T) {
			f, anchor := signedHierarchy(t, opts)
			now := checkTime
			r := aggressiveResolver(f, anchor, &now, false)
			first, err := r.Resolve(context.Background(), "nx.signed.test.", dns.TypeA)
			if err != nil || first.Rcode != dns.RcodeNameError {
				t.Fatalf("nx.signed.test.: %v %v", err, first)
			}
			others := []string{"nz.signed.test.", "a.b.nz.signed.test."}
			if opts.NSEC3 {
				other := sameSpan(t, first, "signed.test.", "nx.signed.test.")
				others = []string{other, "a.b." + other}
			}
			want := cache.Secure
			if opts.OptOut {
				want = cache.Insecure
				// Every NSEC3 record of signed.test. learned from
				// Secure NODATA answers: the Opt-Out span is known,
				// and still proves no NXDOMAIN.
				for _, name := range []string{"signed.test.", "ns.signed.test.", "www.signed.test.", "wild.signed.test.", "*.wild.signed.test."} {
					if res, err := r.Resolve(context.Background(), name, dns.TypeTXT); err != nil || res.Security != cache.Secure {
						t.Fatalf("%s TXT: %v %v (%s)", name, err, res.Security, res.Why)
					}
				}
			}
			for _, name := range others {
				f.asked = nil
				res, err := r.Resolve(context.Background(), name, dns.TypeA)
				if err != nil || res.Rcode != dns.RcodeNameError || res.Security != want {
					t.Fatalf("%s: %v rcode %d security %v (%s)", name, err, res.Rcode, res.Security, res.Why)
				}
				if opts.OptOut {
					// No synthesis from an Opt-Out span.
					if f.total() == 0 {
						t.Errorf("%s: NXDOMAIN synthesised from an Opt-Out NSEC3", name)
					}
					continue
				}
				if f.total() != 0 {
					t.Errorf("%s: %d upstream queries (%v), want none", name, f.total(), f.asked)
				}
				checkProof(t, name, res)
			}
			if opts.OptOut {
				return
			}
			// NODATA: another type at a name whose denial is known.
			if _, err := r.Resolve(context.Background(), "www.signed.test.", dns.TypeAAAA); err != nil {
				t.Fatal(err)
			}
			f.asked = nil
			res, err := r.Resolve(context.Background(), "www.signed.test.", dns.TypeTXT)
			if err != nil || res.Rcode != dns.RcodeSuccess || len(res.Answer) != 0 || res.Security != cache.Secure || f.total() != 0 {
				t.Errorf("www.signed.test. TXT: %v rcode %d answer %v security %v, %d upstream queries", err, res.Rcode, res.Answer, res.Security, f.total())
			}
			checkProof(t, "www.signed.test. TXT", res)
			// RFC 8198 §5.4: not past the SOA's MINIMUM (300).
			now = now.Add(301 * time.Second)
			f.asked = nil
			if res, err := r.Resolve(context.Background(), others[0], dns.TypeAAAA); err != nil || res.Rcode != dns.RcodeNameError || f.total() == 0 {
				t.Errorf("%s past the SOA MINIMUM: %v rcode %d, %d upstream queries", others[0], err, res.Rcode, f.total())
			}
		})
	}
}

// checkProof checks that a synthesised negative answer carries the SOA,
// NSEC or NSEC3 records and RRSIGs of each, with TTLs no longer than the
// SOA's MINIMUM.
func checkProof(t *testing.T, what string, res *Result) {
	t.Helper()
	var soa, denial, sigs int
	for _, rr := range res.Authority {
		switch rr.(type) {
		case *dns.SOA:
			soa++
		case *dns.NSEC, *dns.NSEC3:
			denial++
		case *dns.RRSIG:
			sigs++
		}
		if rr.Header().Ttl > 300 {
			t.Errorf("%s: TTL %d over the SOA MINIMUM: %v", what, rr.Header().Ttl, rr)
		}
	}
	if soa != 1 || denial == 0 || sigs != soa+denial {
		t.Errorf("%s: %d SOA, %d NSEC/NSEC3, %d RRSIG in %v", what, soa, denial, sigs, res.Authority)
	}
}

// TestAggressiveNSECOnlySecure: without validated records nothing is
// synthesised: an unsigned zone's NXDOMAINs, the same with the
// aggressive use turned off.
func TestAggressiveNSECOnlySecure(t *testing.T) {
	f, anchor := signedHierarchy(t, dnssec.Options{})
	for _, tc := range []struct {
		zone string
		off  bool
	}{{"unsigned.test.", false}, {"signed.test.", true}} {
		now := checkTime
		r := aggressiveResolver(f, anchor, &now, tc.off)
		if _, err := r.Resolve(context.Background(), "nx."+tc.zone, dns.TypeA); err != nil {
			t.Fatal(err)
		}
		f.asked = nil
		res, err := r.Resolve(context.Background(), "nz."+tc.zone, dns.TypeA)
		if err != nil || res.Rcode != dns.RcodeNameError || f.total() == 0 {
			t.Errorf("nz.%s (off %v): %v rcode %d, %d upstream queries, want some", tc.zone, tc.off, err, res.Rcode, f.total())
		}
	}
}

// BenchmarkAggressiveNSEC: a NXDOMAIN synthesised from the index for a
// new name each time (a random-subdomain flood), NSEC and NSEC3.
func BenchmarkAggressiveNSEC(b *testing.B) {
	for _, opts := range []dnssec.Options{{}, {NSEC3: true}} {
		b.Run(fmt.Sprintf("NSEC3=%v", opts.NSEC3), func(b *testing.B) {
			f, anchor := signedHierarchy(b, opts)
			now := checkTime
			r := aggressiveResolver(f, anchor, &now, false)
			// Learn the spans: enough names to meet every NSEC3 span.
			for i := range 200 {
				if _, err := r.Resolve(context.Background(), fmt.Sprintf("nzl%d.signed.test.", i), dns.TypeA); err != nil {
					b.Fatal(err)
				}
			}
			names := make([]string, 4096)
			for i := range names {
				names[i] = fmt.Sprintf("nz%d.signed.test.", i)
			}
			f.asked = nil
			b.ResetTimer()
			for i := range b.N {
				r.Resolve(context.Background(), names[i%len(names)], dns.TypeA)
			}
			b.StopTimer()
			if q := f.total(); q*100 > b.N {
				b.Errorf("%d upstream queries for %d questions", q, b.N)
			}
		})
	}
}

// TestNSECProofTLD: a name one label below the root covered by a root
// NSEC whose names share no label with it (closest encloser the root)
// once indexed out of range (TestRealRootZone's DS of every TLD through
// the resolver panicked); the proof of such a name is the root's.
func TestNSECProofTLD(t *testing.T) {
	d := cache.NewDenials(0, time.Now)
	for _, rr := range []string{"nokia. 86400 IN NSEC nom. NS DS RRSIG NSEC", ". 86400 IN NSEC aaa. NS SOA RRSIG NSEC DNSKEY"} {
		r, err := dns.NewRR(rr)
		if err != nil {
			t.Fatal(err)
		}
		d.Add(".", []dns.RR{r}, 86400)
	}
	proof, claim, ok := nsecProof(d, ".", "nosuch.")
	if !ok || claim != validator.NXDomain || len(proof) != 2 {
		t.Errorf("nosuch.: %v %v %v, want NXDOMAIN from the covering NSEC and the root's (wildcard *.)", proof, claim, ok)
	}
}
