package resolve

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/dnssec"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/upstream"
	"github.com/tern-dns/tern/internal/validator"
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// authFake is an Exchanger whose servers are Tern's authoritative engine
// in-process, one zone per address: a signed hierarchy without sockets.
type authFake struct {
	servers map[netip.Addr]*auth.Worker
	// asked counts the questions asked, by type.
	asked map[uint16]int
	// edit, if set, changes each answer of the server at addr (an
	// attacker on the path) before the resolver reads it.
	edit func(addr netip.Addr, a *dns.Msg)
}

func (f *authFake) ExchangeOptions(ctx context.Context, s netip.AddrPort, q dns.Question, opt upstream.Options) (*dns.Msg, upstream.Report, error) {
	if f.asked == nil {
		f.asked = map[uint16]int{}
	}
	f.asked[q.Qtype]++
	w, ok := f.servers[s.Addr()]
	if !ok {
		return nil, upstream.Report{}, fmt.Errorf("authFake: no server at %s: %w", s, context.DeadlineExceeded)
	}
	m := new(dns.Msg)
	m.SetQuestion(q.Name, q.Qtype)
	m.RecursionDesired = false
	m.SetEdns0(4096, opt.DNSSEC)
	pkt, err := m.Pack()
	if err != nil {
		return nil, upstream.Report{}, err
	}
	out := w.Answer(server.NewRequest(pkt, netip.MustParseAddrPort("192.0.2.9:53"), true, nil), make([]byte, 0, server.BufferSize))
	a := new(dns.Msg)
	if err := a.Unpack(out); err != nil {
		return nil, upstream.Report{}, err
	}
	if f.edit != nil {
		f.edit(s.Addr(), a)
	}
	return a, upstream.Report{}, nil
}

func (f *authFake) Exchange(ctx context.Context, s netip.AddrPort, q dns.Question) (*dns.Msg, error) {
	m, _, err := f.ExchangeOptions(ctx, s, q, upstream.Options{DNSSEC: true})
	return m, err
}

// signTime is when the test hierarchy is signed; it is validated at
// checkTime, inside the signatures' validity.
var (
	signTime  = time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	checkTime = signTime.Add(24 * time.Hour)
)

// signedHierarchy signs and serves: the root (10.0.1.1), test.
// (10.0.1.2), which delegates signed.test. (10.0.1.3, with DS; its
// chain.signed.test. is a CNAME to www.wrongds.test.),
// unsigned.test. (10.0.1.4, without DS), broken.test. (10.0.1.5, with
// DS, its www record changed after signing) and wrongds.test. (10.0.1.6,
// with the DS of a key it does not hold). It returns the Exchanger and
// the root's DS, the trust anchor. opts sign test. and signed.test.
// (NSEC or NSEC3, with or without opt-out).
func signedHierarchy(t testing.TB, opts dnssec.Options) (*authFake, []*dns.DS) {
	t.Helper()
	return signedHierarchyAlg(t, opts, dns.ED25519)
}

// signedHierarchyAlg is signedHierarchy with every signed zone's key of
// algorithm alg.
func signedHierarchyAlg(t testing.TB, opts dnssec.Options, alg uint8) (*authFake, []*dns.DS) {
	t.Helper()
	f := &authFake{servers: map[netip.Addr]*auth.Worker{}}
	serve := func(addr, origin, text string, sign bool, opts dnssec.Options, tamper func(dns.RR)) []*dns.DS {
		var rrs []dns.RR
		zp := dns.NewZoneParser(strings.NewReader(text), origin, "")
		for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
			rrs = append(rrs, rr)
		}
		if err := zp.Err(); err != nil {
			t.Fatal(err)
		}
		var ds []*dns.DS
		if sign {
			k, err := dnssec.GenerateKey(origin, dns.ZONE|dns.SEP, alg, 3600, nil)
			if err != nil {
				t.Fatal(err)
			}
			k.SignZone = true
			if rrs, err = dnssec.SignZone(context.Background(), rrs, origin, []*dnssec.Key{k}, opts, signTime); err != nil {
				t.Fatal(err)
			}
			ds = []*dns.DS{k.DNSKEY.ToDS(dns.SHA256)}
		}
		var b strings.Builder
		for _, rr := range rrs {
			if tamper != nil {
				tamper(rr)
			}
			fmt.Fprintln(&b, rr.String())
		}
		z, err := zone.Read(strings.NewReader(b.String()), origin, origin)
		if err != nil {
			t.Fatal(err)
		}
		f.servers[netip.MustParseAddr(addr)] = auth.New(zone.NewSet(z), auth.Options{}).NewWorker(true, 0)
		return ds
	}
	child := func(name string, ds []*dns.DS) string {
		var b strings.Builder
		for _, d := range ds {
			d.Hdr = dns.RR_Header{Name: name, Rrtype: dns.TypeDS, Class: dns.ClassINET, Ttl: 3600}
			fmt.Fprintln(&b, d.String())
		}
		return b.String()
	}
	signedDS := serve("10.0.1.3", "signed.test.", `$TTL 300
@ SOA ns h 1 7200 3600 1209600 300
@ NS ns
ns A 10.0.1.3
www A 192.0.2.1
*.wild A 192.0.2.7
chain CNAME www.wrongds.test.
`, true, opts, nil)
	serve("10.0.1.4", "unsigned.test.", `$TTL 300
@ SOA ns h 1 7200 3600 1209600 300
@ NS ns
ns A 10.0.1.4
www A 192.0.2.2
`, false, opts, nil)
	brokenDS := serve("10.0.1.5", "broken.test.", `$TTL 300
@ SOA ns h 1 7200 3600 1209600 300
@ NS ns
ns A 10.0.1.5
www A 192.0.2.3
`, true, dnssec.Options{}, func(rr dns.RR) {
		if a, ok := rr.(*dns.A); ok && a.Hdr.Name == "www.broken.test." {
			a.A = netip.MustParseAddr("192.0.2.66").AsSlice()
		}
	})
	serve("10.0.1.6", "wrongds.test.", `$TTL 300
@ SOA ns h 1 7200 3600 1209600 300
@ NS ns
ns A 10.0.1.6
www A 192.0.2.4
`, true, opts, nil)
	// The DS test. publishes for wrongds.test. is another key's.
	other, err := dnssec.GenerateKey("wrongds.test.", dns.ZONE|dns.SEP, dns.ED25519, 3600, nil)
	if err != nil {
		t.Fatal(err)
	}
	testDS := serve("10.0.1.2", "test.", `$TTL 3600
@ SOA a.nic h 1 7200 3600 1209600 300
@ NS a.nic
a.nic A 10.0.1.2
signed NS ns.signed
ns.signed A 10.0.1.3
unsigned NS ns.unsigned
ns.unsigned A 10.0.1.4
broken NS ns.broken
ns.broken A 10.0.1.5
wrongds NS ns.wrongds
ns.wrongds A 10.0.1.6
`+child("signed.test.", signedDS)+child("broken.test.", brokenDS)+child("wrongds.test.", []*dns.DS{other.DNSKEY.ToDS(dns.SHA256)}), true, opts, nil)
	rootDS := serve("10.0.1.1", ".", `$TTL 86400
. SOA a.root. h. 1 7200 3600 1209600 300
. NS a.root.
a.root. A 10.0.1.1
test. NS a.nic.test.
a.nic.test. A 10.0.1.2
`+child("test.", testDS), true, dnssec.Options{}, nil)
	return f, rootDS
}

// TestValidate: answers of the signed hierarchy validated from the root's
// DS: Secure, Insecure under an unsigned delegation (its absence of DS
// proved), Bogus with the EDE saying why; test. and signed.test. signed
// with NSEC, NSEC3, and NSEC3 with opt-out (the unsigned delegation left
// out of the chain, its DS absence proved by the covering opt-out NSEC3).
func TestValidate(t *testing.T) {
	for _, opts := range []dnssec.Options{{}, {NSEC3: true}, {NSEC3: true, OptOut: true}} {
		t.Run(fmt.Sprintf("NSEC3 %v opt-out %v", opts.NSEC3, opts.OptOut), func(t *testing.T) { validateHierarchy(t, opts) })
	}
}

func validateHierarchy(t *testing.T, opts dnssec.Options) {
	f, anchor := signedHierarchy(t, opts)
	for _, tc := range []struct {
		name  string
		qtype uint16
		rcode int
		sec   cache.Security
		ede   uint16
	}{
		{"www.signed.test.", dns.TypeA, dns.RcodeSuccess, cache.Secure, 0},
		{"x.wild.signed.test.", dns.TypeA, dns.RcodeSuccess, cache.Secure, 0},
		{"nx.signed.test.", dns.TypeA, dns.RcodeNameError, cache.Secure, 0},
		{"www.signed.test.", dns.TypeTXT, dns.RcodeSuccess, cache.Secure, 0},
		{"signed.test.", dns.TypeDNSKEY, dns.RcodeSuccess, cache.Secure, 0},
		{"www.unsigned.test.", dns.TypeA, dns.RcodeSuccess, cache.Insecure, 0},
		{"nx.unsigned.test.", dns.TypeA, dns.RcodeNameError, cache.Insecure, 0},
		{"www.broken.test.", dns.TypeA, dns.RcodeSuccess, cache.Bogus, wire.EDEDNSSECBogus},
		{"nx.test.", dns.TypeA, dns.RcodeNameError, cache.Secure, 0},
		{"www.wrongds.test.", dns.TypeA, dns.RcodeSuccess, cache.Bogus, wire.EDEDNSKEYMissing},
	} {
		if opts.OptOut && tc.rcode == dns.RcodeNameError {
			// RFC 5155 §9.2: an NXDOMAIN proved by an opt-out NSEC3
			// may hide an unsigned delegation: not authenticated.
			tc.sec = cache.Insecure
		}
		for _, withCache := range []bool{false, true} {
			opt := Options{
				Hints:      []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr("10.0.1.1")}, Why: "root hint"}},
				Validate:   true,
				Anchors:    validator.Anchors{".": anchor},
				Validator:  validator.Options{Now: func() time.Time { return checkTime }},
				NoMinimise: !withCache,
			}
			if withCache {
				opt.Cache = cache.New(cache.Options{})
			}
			r := New(f, opt)
			for round := range 2 {
				res, err := r.Resolve(context.Background(), tc.name, tc.qtype)
				if err != nil {
					t.Fatalf("%s %s: %v", tc.name, dns.TypeToString[tc.qtype], err)
				}
				if res.Rcode != tc.rcode || res.Security != tc.sec || res.EDE != tc.ede {
					t.Errorf("%s %s (cache %v, round %d): rcode %s security %v EDE %d (%s), want %s %v EDE %d", tc.name, dns.TypeToString[tc.qtype], withCache, round,
						dns.RcodeToString[res.Rcode], res.Security, res.EDE, res.Why, dns.RcodeToString[tc.rcode], tc.sec, tc.ede)
				}
			}
		}
	}
}

// TestUnsignedDelegationProofStripped: insecure delegations are proven,
// never assumed (RFC 4035 §5.2: a resolver goes insecure only where the
// parent proves, with signed NSEC or NSEC3, that no DS exists; RFC 5155
// §8.6, §8.9 with NSEC3 and opt-out). With every NSEC and NSEC3 record
// and their RRSIGs stripped from test.'s answers (the referral to
// unsigned.test. and the NODATA for its DS alike), www.unsigned.test. is
// bogus, not insecure; the same hierarchy unstripped is insecure.
func TestUnsignedDelegationProofStripped(t *testing.T) {
	denial := func(t uint16) bool { return t == dns.TypeNSEC || t == dns.TypeNSEC3 }
	strip := func(rrs []dns.RR) []dns.RR {
		var out []dns.RR
		for _, rr := range rrs {
			if sig, ok := rr.(*dns.RRSIG); ok && denial(sig.TypeCovered) || denial(rr.Header().Rrtype) {
				continue
			}
			out = append(out, rr)
		}
		return out
	}
	testServer := netip.MustParseAddr("10.0.1.2")
	for _, opts := range []dnssec.Options{{}, {NSEC3: true}, {NSEC3: true, OptOut: true}} {
		for _, stripped := range []bool{false, true} {
			f, anchor := signedHierarchy(t, opts)
			if stripped {
				f.edit = func(addr netip.Addr, a *dns.Msg) {
					if addr == testServer {
						a.Answer, a.Ns = strip(a.Answer), strip(a.Ns)
					}
				}
			}
			r := New(f, Options{
				Hints:     []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr("10.0.1.1")}, Why: "root hint"}},
				Validate:  true,
				Anchors:   validator.Anchors{".": anchor},
				Validator: validator.Options{Now: func() time.Time { return checkTime }},
				Cache:     cache.New(cache.Options{}),
			})
			res, err := r.Resolve(context.Background(), "www.unsigned.test.", dns.TypeA)
			if err != nil {
				t.Fatalf("NSEC3 %v opt-out %v stripped %v: %v", opts.NSEC3, opts.OptOut, stripped, err)
			}
			// Bogus with EDE 12 (NSEC Missing) when stripped (the
			// recursor answers it SERVFAIL); insecure, no EDE, when not.
			want, wantEDE := cache.Insecure, uint16(0)
			if stripped {
				want, wantEDE = cache.Bogus, wire.EDENSECMissing
			}
			if res.Security != want || res.EDE != wantEDE {
				t.Errorf("NSEC3 %v opt-out %v stripped %v: rcode %s security %v EDE %d (%s), want %v EDE %d", opts.NSEC3, opts.OptOut, stripped,
					dns.RcodeToString[res.Rcode], res.Security, res.EDE, res.Why, want, wantEDE)
			}
			if testing.Verbose() {
				t.Logf("NSEC3 %v opt-out %v stripped %v: rcode %s security %v EDE %d (%s)", opts.NSEC3, opts.OptOut, stripped, dns.RcodeToString[res.Rcode], res.Security, res.EDE, res.Why)
			}
		}
	}
}

// TestValidateTrustKept: the chain's outcomes at zone cuts outlive the
// resolution (the Resolver's trustCache): without an RRset cache, a
// second resolution under the same cuts asks no DS or DNSKEY again, for
// a secure zone as for an unsigned delegation, and is validated alike.
func TestValidateTrustKept(t *testing.T) {
	f, anchor := signedHierarchy(t, dnssec.Options{})
	now := checkTime
	r := New(f, Options{
		Hints:     []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr("10.0.1.1")}}},
		Validate:  true,
		Anchors:   validator.Anchors{".": anchor},
		Validator: validator.Options{Now: func() time.Time { return now }},
	})
	for _, tc := range []struct {
		name string
		sec  cache.Security
	}{{"www.signed.test.", cache.Secure}, {"ns.signed.test.", cache.Secure}, {"www.unsigned.test.", cache.Insecure}, {"ns.unsigned.test.", cache.Insecure}} {
		f.asked = nil
		res, err := r.Resolve(context.Background(), tc.name, dns.TypeA)
		if err != nil || res.Security != tc.sec {
			t.Fatalf("%s: %v %v (%s)", tc.name, err, res.Security, res.Why)
		}
		if strings.HasPrefix(tc.name, "ns.") && (f.asked[dns.TypeDS] != 0 || f.asked[dns.TypeDNSKEY] != 0) {
			t.Errorf("%s: asked %d DS and %d DNSKEY again", tc.name, f.asked[dns.TypeDS], f.asked[dns.TypeDNSKEY])
		}
	}
	// Past the TTL of signed.test.'s DS and DNSKEY RRsets (3600 s), its
	// cut is validated again.
	now = now.Add(3601 * time.Second)
	f.asked = nil
	if res, err := r.Resolve(context.Background(), "www.signed.test.", dns.TypeA); err != nil || res.Security != cache.Secure || f.asked[dns.TypeDNSKEY] == 0 {
		t.Errorf("after the TTL: %v %v, %d DNSKEY queries", err, res.Security, f.asked[dns.TypeDNSKEY])
	}
}

// TestValidateFindingsCached: what validation found of each RRset and
// negative answer is kept with its cache entry, and a resolution taking
// the data from the cache checks no signature again: with the
// validator's clock set back before the signatures' inception and the
// chain's outcomes forgotten, cached answers keep their state (a check
// would find every signature not yet valid, EDE 8), without a question
// upstream; bogus data keeps its EDE, and its records for a CD client.
// Bogus data goes after the cache's BogusTTL (60 s), sooner than its
// TTL, and is asked again; the secure answer stays.
func TestValidateFindingsCached(t *testing.T) {
	f, anchor := signedHierarchy(t, dnssec.Options{NSEC3: true})
	now, cacheNow := checkTime, time.Unix(1_800_000_000, 0)
	r := New(f, Options{
		Hints:     []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr("10.0.1.1")}}},
		Cache:     cache.New(cache.Options{Now: func() time.Time { return cacheNow }}),
		Validate:  true,
		Anchors:   validator.Anchors{".": anchor},
		Validator: validator.Options{Now: func() time.Time { return now }},
	})
	cases := []struct {
		name  string
		rcode int
		sec   cache.Security
		ede   uint16
	}{
		{"www.signed.test.", dns.RcodeSuccess, cache.Secure, 0},
		{"nx.signed.test.", dns.RcodeNameError, cache.Secure, 0},
		{"www.unsigned.test.", dns.RcodeSuccess, cache.Insecure, 0},
		{"www.broken.test.", dns.RcodeSuccess, cache.Bogus, wire.EDEDNSSECBogus},
	}
	check := func(when string) {
		t.Helper()
		for _, tc := range cases {
			res, err := r.Resolve(context.Background(), tc.name, dns.TypeA)
			if err != nil || res.Rcode != tc.rcode || res.Security != tc.sec || res.EDE != tc.ede || (tc.rcode == dns.RcodeSuccess && len(res.Answer) == 0) {
				t.Errorf("%s: %s: %v rcode %d security %v EDE %d (%s) answer %v", when, tc.name, err, res.Rcode, res.Security, res.EDE, res.Why, res.Answer)
			}
		}
	}
	check("first")
	now = signTime.Add(-2 * time.Hour)
	r.trusted = &trustCache{}
	f.asked = nil
	check("from the cache, clock before the signatures")
	if len(f.asked) != 0 {
		t.Errorf("asked upstream %v, want nothing", f.asked)
	}
	// The client-response timer's offline validation takes them too.
	if res, ok := r.Stale("www.signed.test.", dns.TypeA); !ok || res.Security != cache.Secure {
		t.Errorf("Stale: %v %v (%s)", ok, res.Security, res.Why)
	}
	now = checkTime
	cacheNow = cacheNow.Add(61 * time.Second)
	f.asked = nil
	check("past BogusTTL")
	if f.asked[dns.TypeA] != 1 {
		t.Errorf("past BogusTTL asked %d A questions, want 1 (the bogus name's): %v", f.asked[dns.TypeA], f.asked)
	}
}

// blockingFake is authFake but for the DNSKEY questions of the zones in
// block, which it never answers: it waits until the query's context ends.
// live counts those that came with time left.
type blockingFake struct {
	*authFake
	block map[string]bool
	live  atomic.Int32
}

func (b *blockingFake) ExchangeOptions(ctx context.Context, s netip.AddrPort, q dns.Question, opt upstream.Options) (*dns.Msg, upstream.Report, error) {
	if q.Qtype == dns.TypeDNSKEY && b.block[dns.CanonicalName(q.Name)] {
		if ctx.Err() == nil {
			b.live.Add(1)
		}
		<-ctx.Done()
		return nil, upstream.Report{}, ctx.Err()
	}
	return b.authFake.ExchangeOptions(ctx, s, q, opt)
}

// TestValidateTimeBound: the validation of one result takes at most one
// resolution's time (Limits.Timeout) altogether, whatever number of DS
// and DNSKEY fetches its chains need (250c586). A CNAME from signed.test.
// to www.wrongds.test. needs the keys of both zones, and neither answers
// its DNSKEY question: the first fetch uses up the time, the second has
// none left and asks nothing. Without the bound, each fetch would get a
// resolution's time of its own (two waits; more with longer chains).
func TestValidateTimeBound(t *testing.T) {
	f, anchor := signedHierarchy(t, dnssec.Options{})
	b := &blockingFake{authFake: f, block: map[string]bool{"signed.test.": true, "wrongds.test.": true}}
	r := New(b, Options{
		Hints:     []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr("10.0.1.1")}}},
		Limits:    Limits{Timeout: 300 * time.Millisecond},
		Cache:     cache.New(cache.Options{}),
		Validate:  true,
		Anchors:   validator.Anchors{".": anchor},
		Validator: validator.Options{Now: func() time.Time { return checkTime }},
	})
	res, err := r.Resolve(context.Background(), "chain.signed.test.", dns.TypeA)
	if err != nil || res.Security != cache.Bogus || res.EDE != wire.EDEDNSKEYMissing || len(res.Answer) == 0 {
		t.Fatalf("%v: security %v EDE %d (%s) answer %v, want bogus, EDE 9", err, res.Security, res.EDE, res.Why, res.Answer)
	}
	if n := b.live.Load(); n != 1 {
		t.Errorf("%d DNSKEY questions were waited on with time left, want 1: the validation's time is one resolution's", n)
	}
}

// TestValidateStale: a stale answer (RFC 8767, every authority of its
// zone gone) is validated as a fresh one: the bogus record stays bogus,
// the secure one secure.
func TestValidateStale(t *testing.T) {
	f, anchor := signedHierarchy(t, dnssec.Options{})
	now := checkTime
	clock := func() time.Time { return now }
	r := New(f, Options{
		Hints: []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr("10.0.1.1")}}},
		Now:   clock,
		// Bogus data kept past its TTL (not dropped after a minute as
		// by default) to be found stale, and checked again then.
		Cache:     cache.New(cache.Options{Stale: time.Hour, Now: clock, BogusTTL: time.Hour}),
		Validate:  true,
		Anchors:   validator.Anchors{".": anchor},
		Validator: validator.Options{Now: clock},
	})
	for _, tc := range []struct {
		name string
		sec  cache.Security
	}{{"www.broken.test.", cache.Bogus}, {"www.signed.test.", cache.Secure}} {
		if res, err := r.Resolve(context.Background(), tc.name, dns.TypeA); err != nil || res.Security != tc.sec {
			t.Fatalf("%s: %v %v", tc.name, err, res.Security)
		}
	}
	now = now.Add(301 * time.Second) // past the answers' TTL (300)
	delete(f.servers, netip.MustParseAddr("10.0.1.5"))
	delete(f.servers, netip.MustParseAddr("10.0.1.3"))
	for _, tc := range []struct {
		name string
		sec  cache.Security
	}{{"www.broken.test.", cache.Bogus}, {"www.signed.test.", cache.Secure}} {
		res, err := r.Resolve(context.Background(), tc.name, dns.TypeA)
		if err != nil || !res.Stale || res.Security != tc.sec {
			t.Errorf("%s stale: %v stale %v security %v (%s), want %v", tc.name, err, res.Stale, res.Security, res.Why, tc.sec)
		}
		// The client-response timer's answer (Resolver.Stale): the
		// secure one, never the bogus one.
		res, ok := r.Stale(tc.name, dns.TypeA)
		if ok != (tc.sec != cache.Bogus) || (ok && res.Security != tc.sec) {
			t.Errorf("%s Stale: ok %v security %v (%s)", tc.name, ok, res.Security, res.Why)
		}
	}
}

// TestValidateExpired: at a clock past the signatures' expiration the
// chain fails at its first step, the root's DNSKEY RRset: EDE 7,
// Signature Expired.
func TestValidateExpired(t *testing.T) {
	f, anchor := signedHierarchy(t, dnssec.Options{})
	r := New(f, Options{
		Hints:     []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr("10.0.1.1")}}},
		Validate:  true,
		Anchors:   validator.Anchors{".": anchor},
		Validator: validator.Options{Now: func() time.Time { return signTime.AddDate(1, 0, 0) }},
	})
	res, err := r.Resolve(context.Background(), "www.signed.test.", dns.TypeA)
	if err != nil || res.Security != cache.Bogus || res.EDE != wire.EDESignatureExpired {
		t.Fatalf("security %v EDE %d (%s), err %v; want bogus, EDE 7", res.Security, res.EDE, res.Why, err)
	}
}

// TestValidateOff: without Options.Validate nothing is checked.
func TestValidateOff(t *testing.T) {
	f, _ := signedHierarchy(t, dnssec.Options{})
	r := New(f, Options{Hints: []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr("10.0.1.1")}}}})
	res, err := r.Resolve(context.Background(), "www.broken.test.", dns.TypeA)
	if err != nil || res.Security != cache.Unchecked || len(res.Answer) == 0 {
		t.Fatalf("got %v %v %v", res.Security, res.Answer, err)
	}
}

// benchOptions are the validation benchmarks' Options over
// signedHierarchy, its root's DS the anchor, with a cache.
func benchOptions(anchor []*dns.DS, validate bool) Options {
	return Options{
		Hints:     []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr("10.0.1.1")}}},
		Validate:  validate,
		Anchors:   validator.Anchors{".": anchor},
		Validator: validator.Options{Now: func() time.Time { return checkTime }},
		Cache:     cache.New(cache.Options{}),
	}
}

// BenchmarkValidate: a resolution of a secure name with every record in
// the RRset cache (no upstream query), with and without validation: what
// validating a cached answer costs (its finding comes with the cached
// data: no signature is checked again).
func BenchmarkValidate(b *testing.B) {
	f, anchor := signedHierarchy(b, dnssec.Options{})
	for _, validate := range []bool{false, true} {
		b.Run(fmt.Sprintf("validate=%v", validate), func(b *testing.B) {
			r := New(f, benchOptions(anchor, validate))
			for range 2 {
				if _, err := r.Resolve(context.Background(), "www.signed.test.", dns.TypeA); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				r.Resolve(context.Background(), "www.signed.test.", dns.TypeA)
			}
		})
	}
}

// BenchmarkValidateCold: the bench's res-cold-v in process: every
// resolution a new name under a signed wildcard (ECDSA P-256 and
// Ed25519 keys, NSEC), the delegations and the chain of trust cached,
// aggressive NSEC off so that each name is asked and its answer (the
// wildcard expansion and the NSEC proving no closer name) validated.
func BenchmarkValidateCold(b *testing.B) {
	for _, alg := range []uint8{dns.ECDSAP256SHA256, dns.ED25519} {
		f, anchor := signedHierarchyAlg(b, dnssec.Options{}, alg)
		for _, validate := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/validate=%v", dns.AlgorithmToString[alg], validate), func(b *testing.B) {
				opt := benchOptions(anchor, validate)
				opt.NoAggressiveNSEC = true
				r := New(f, opt)
				if res, err := r.Resolve(context.Background(), "first.wild.signed.test.", dns.TypeA); err != nil || (validate && res.Security != cache.Secure) {
					b.Fatalf("%v %v %s", err, res.Security, res.Why)
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu := processCPU(b)
				for i := range b.N {
					res, err := r.Resolve(context.Background(), fmt.Sprintf("n%d.wild.signed.test.", i), dns.TypeA)
					if err != nil || len(res.Answer) == 0 || (validate && res.Security != cache.Secure) {
						b.Fatalf("%v %v %s", err, res.Security, res.Why)
					}
				}
				// CPU time, garbage collection included: what the
				// bench phase measures of a server, steadier than
				// ns/op on a loaded machine.
				b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// processCPU is the CPU time (user and system) the process has used, in
// nanoseconds.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Skip("getrusage:", err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
