package auth

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnssec"
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// chainZone is a zone of wildcard CNAME chains: *.wNN CNAME x.w(NN+1)
// for NN up to MaxChain, so that x.w01 follows MaxChain wildcard CNAMEs
// and stops at the chain limit, and x.w02 follows MaxChain-1 of them to
// the wildcard A at *.w13: MaxChain wildcard expansions either way. The
// nNN chain ends, after MaxChain-1 links, in an NXDOMAIN for n10a, which
// the same NSEC covers as x.n10 (a proof written twice unless the answer
// remembers every proof it wrote).
func chainZone() string {
	var b strings.Builder
	b.WriteString("$ORIGIN chain.test.\n$TTL 3600\n@ SOA ns1 host 1 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\n")
	for i := 1; i <= MaxChain; i++ {
		fmt.Fprintf(&b, "*.w%02d CNAME x.w%02d\n", i, i+1)
	}
	fmt.Fprintf(&b, "*.w%02d A 192.0.2.2\n", MaxChain+1)
	for i := 1; i < MaxChain-1; i++ {
		fmt.Fprintf(&b, "*.n%02d CNAME x.n%02d\n", i, i+1)
	}
	fmt.Fprintf(&b, "*.n%02d CNAME n10a\n", MaxChain-1)
	return b.String()
}

// signedZone signs text (origin chain.test.) with a fresh ECDSA key,
// with NSEC or NSEC3, and compiles it.
func signedZone(t testing.TB, text, origin string, nsec3 bool) *zone.Zone {
	t.Helper()
	var rrs []dns.RR
	zp := dns.NewZoneParser(strings.NewReader(text), origin, "test")
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		rrs = append(rrs, rr)
	}
	if err := zp.Err(); err != nil {
		t.Fatal(err)
	}
	key, err := dnssec.GenerateKey(origin, 257, dns.ECDSAP256SHA256, 3600, nil)
	if err != nil {
		t.Fatal(err)
	}
	key.SignZone = true
	signed, err := dnssec.SignZone(context.Background(), rrs, origin, []*dnssec.Key{key}, dnssec.Options{NSEC3: nsec3}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, rr := range signed {
		out.WriteString(rr.String() + "\n")
	}
	z, err := zone.Read(strings.NewReader(out.String()), "signed", origin)
	if err != nil {
		t.Fatal(err)
	}
	if !z.Signed {
		t.Fatal("zone not recognised as signed")
	}
	return z
}

// TestWildcardChainProofs checks RFC 4035 §3.1.3.3 and RFC 5155 §7.2.6
// on the longest chains MaxChain allows: every wildcard-expanded RRset of
// the answer (its RRSIG has fewer labels than its owner) has the NSEC
// covering its owner, or the NSEC3 covering its next closer name, in the
// authority section, and no record appears twice; or, over UDP only, the
// answer is truncated (RFC 4035 §3.1.1), never a partial proof with TC
// clear.
func TestWildcardChainProofs(t *testing.T) {
	for _, nsec3 := range []bool{false, true} {
		z := signedZone(t, chainZone(), "chain.test.", nsec3)
		r := New(zone.NewSet(z), Options{UDPPayload: 65535})
		for _, tc := range []struct {
			qname    string
			expanded int // wildcard-expanded RRsets in the whole answer
			rcode    int
		}{
			{"x.w01.chain.test.", MaxChain, dns.RcodeSuccess},
			{"x.w02.chain.test.", MaxChain, dns.RcodeSuccess},
			{"x.n01.chain.test.", MaxChain - 1, dns.RcodeNameError},
		} {
			for _, tr := range []struct {
				name string
				tcp  bool
				size uint16
			}{{"tcp", true, 65535}, {"udp-64k", false, 65535}, {"udp-1232", false, 1232}} {
				t.Run(fmt.Sprintf("nsec3=%v/%s/%s", nsec3, tc.qname, tr.name), func(t *testing.T) {
					m := query(tc.qname, dns.TypeA)
					m.SetEdns0(tr.size, true)
					resp := ask(t, r, m, tr.tcp)
					if resp.Truncated {
						if tr.size < 65535 {
							return // RFC 4035 §3.1.1: no room for every proof
						}
						t.Fatalf("truncated with room for every proof")
					}
					if resp.Rcode != tc.rcode {
						t.Fatalf("rcode %d, want %d", resp.Rcode, tc.rcode)
					}
					if n := checkWildcardProofs(t, resp, nsec3); n != tc.expanded {
						t.Errorf("%d wildcard-expanded RRsets, want %d", n, tc.expanded)
					}
				})
			}
		}
	}
}

// checkWildcardProofs reports every wildcard-expanded RRset of resp's
// answer section without its proof in the authority section, and every
// record written twice; it returns the number of expanded RRsets.
func checkWildcardProofs(t *testing.T, resp *dns.Msg, nsec3 bool) int {
	t.Helper()
	for _, sec := range [][]dns.RR{resp.Answer, resp.Ns, resp.Extra} {
		seen := map[string]bool{}
		for _, rr := range sec {
			if s := rr.String(); seen[s] {
				t.Errorf("written twice: %s", s)
			} else {
				seen[s] = true
			}
		}
	}
	expanded := 0
	for _, rr := range resp.Answer {
		sig, ok := rr.(*dns.RRSIG)
		if !ok {
			continue
		}
		owner := strings.ToLower(sig.Hdr.Name)
		labels := dns.SplitDomainName(owner)
		if int(sig.Labels) >= len(labels) {
			continue
		}
		expanded++
		// RFC 5155 §7.2.6: the next closer name is the owner cut to one
		// label more than the wildcard's parent (the RRSIG's labels).
		nextCloser := dns.Fqdn(strings.Join(labels[len(labels)-int(sig.Labels)-1:], "."))
		if !hasCover(resp.Ns, owner, nextCloser, nsec3) {
			t.Errorf("%s: expanded from a wildcard, no proof in the authority section", owner)
		}
	}
	return expanded
}

// hasCover reports whether ns holds an NSEC covering name (RFC 4035
// §3.1.3.3) or an NSEC3 covering nextCloser.
func hasCover(ns []dns.RR, name, nextCloser string, nsec3 bool) bool {
	for _, rr := range ns {
		switch x := rr.(type) {
		case *dns.NSEC3:
			if nsec3 && x.Cover(nextCloser) {
				return true
			}
		case *dns.NSEC:
			owner, next := strings.ToLower(x.Hdr.Name), strings.ToLower(x.NextDomain)
			after := wire.CanonicalLess(owner, name)
			before := wire.CanonicalLess(name, next)
			// The last NSEC of the chain points back at the apex.
			last := !wire.CanonicalLess(owner, next)
			if !nsec3 && (after && before || last && after) {
				return true
			}
		}
	}
	return false
}
