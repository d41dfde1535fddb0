package resolve

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
)

// fakeClock is the cache's clock, advanced by the tests.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// lookup is one resolution of a cached test: after the clock advanced by
// after, the servers asked (nil: none) and what came back.
type lookup struct {
	after     time.Duration
	qname     string
	qtype     uint16
	setup     func(t *testing.T, f *fake) // before the resolution
	asked     []string
	rcode     int
	answer    []string
	authority []string
	stale     bool
	fail      bool // a SERVFAIL with an error
	refresh   bool // Refresh instead of Resolve
	cacheOnly bool // Stale (the cache alone) instead of Resolve; fail: it has nothing
}

func TestCached(t *testing.T) {
	const soaTTL = "example.com. 300 IN SOA ns1.example.com. h.example.com. 1 2 3 4 300"
	wwwA := []string{"www.example.com. 300 IN A 192.0.2.1"}
	down := func(t *testing.T, f *fake) { f.answers = nil }
	for _, tc := range []struct {
		name    string
		opt     cache.Options
		setup   func(t *testing.T, f *fake)
		lookups []lookup
	}{{
		name: "a second resolution sends no query; TTLs decremented",
		lookups: []lookup{
			{qname: "www.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom}, answer: wwwA},
			{after: 100 * time.Second, qname: "www.example.com.", qtype: dns.TypeA, answer: []string{"www.example.com. 200 IN A 192.0.2.1"}},
		},
	}, {
		name: "Refresh asks the authority again (the delegation cached) and renews the entry",
		lookups: []lookup{
			{qname: "www.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom}, answer: wwwA},
			{after: 280 * time.Second, qname: "www.example.com.", qtype: dns.TypeA, refresh: true, asked: []string{exCom}, answer: wwwA},
			{after: 100 * time.Second, qname: "www.example.com.", qtype: dns.TypeA, answer: []string{"www.example.com. 200 IN A 192.0.2.1"}},
		},
	}, {
		name: "expired: asked again, from the cached delegation",
		lookups: []lookup{
			{qname: "www.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom}, answer: wwwA},
			{after: 300 * time.Second, qname: "www.example.com.", qtype: dns.TypeA, asked: []string{exCom}, answer: wwwA},
		},
	}, {
		name: "the closest cached delegation: another name of the zone asks its server only",
		lookups: []lookup{
			{qname: "www.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom}, answer: wwwA},
			{qname: "www.example.net.", qtype: dns.TypeA, asked: []string{root, gtld, exNet}, answer: []string{"www.example.net. 300 IN A 192.0.2.2"}},
			{qname: "nx.example.com.", qtype: dns.TypeA, asked: []string{exCom}, rcode: dns.RcodeNameError, authority: []string{soaTTL}},
			{qname: "ns.example.net.", qtype: dns.TypeA, asked: []string{exNet}, answer: []string{"ns.example.net. 300 IN A " + exNet}},
		},
	}, {
		name: "the delegation expired too: from the root",
		lookups: []lookup{
			{qname: "www.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom}, answer: wwwA},
			{after: 3600 * time.Second, qname: "www.example.com.", qtype: dns.TypeA, asked: []string{gtld, exCom}, answer: wwwA},
		},
	}, {
		name: "a DS is asked of the parent's servers (RFC 4035 §3.1.4.1), the cached ones",
		setup: func(t *testing.T, f *fake) {
			f.answers[key{gtld, "example.com.", dns.TypeDS}] = answer(t, "example.com. 3600 IN DS 1234 13 2 "+strings.Repeat("ab", 32))
		},
		lookups: []lookup{
			{qname: "www.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom}, answer: wwwA},
			{qname: "example.com.", qtype: dns.TypeDS, asked: []string{gtld}, answer: []string{"example.com. 3600 IN DS 1234 13 2 " + strings.Repeat("AB", 32)}},
		},
	}, {
		name: "NXDOMAIN cached for the name, any type (RFC 2308 §5)",
		lookups: []lookup{
			{qname: "nx.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom}, rcode: dns.RcodeNameError, authority: []string{soaTTL}},
			{after: 10 * time.Second, qname: "NX.example.com.", qtype: dns.TypeMX, rcode: dns.RcodeNameError,
				authority: []string{"example.com. 290 IN SOA ns1.example.com. h.example.com. 1 2 3 4 300"}},
			{after: 290 * time.Second, qname: "nx.example.com.", qtype: dns.TypeA, asked: []string{exCom}, rcode: dns.RcodeNameError, authority: []string{soaTTL}},
		},
	}, {
		name: "NXDOMAIN TTL: min(SOA TTL, MINIMUM)",
		setup: func(t *testing.T, f *fake) {
			f.answers[key{exCom, "nx.example.com.", 0}] = negative(t, dns.RcodeNameError, "example.com. 3600 IN SOA ns1.example.com. h.example.com. 1 2 3 4 60")
		},
		lookups: []lookup{
			// Told as cached: the SOA's TTL is its MINIMUM.
			{qname: "nx.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom}, rcode: dns.RcodeNameError,
				authority: []string{"example.com. 60 IN SOA ns1.example.com. h.example.com. 1 2 3 4 60"}},
			{after: 59 * time.Second, qname: "nx.example.com.", qtype: dns.TypeA, rcode: dns.RcodeNameError,
				authority: []string{"example.com. 1 IN SOA ns1.example.com. h.example.com. 1 2 3 4 60"}},
			{after: time.Second, qname: "nx.example.com.", qtype: dns.TypeA, asked: []string{exCom}, rcode: dns.RcodeNameError,
				authority: []string{"example.com. 60 IN SOA ns1.example.com. h.example.com. 1 2 3 4 60"}},
		},
	}, {
		name: "NODATA cached per name and type",
		lookups: []lookup{
			{qname: "www.example.com.", qtype: dns.TypeTXT, asked: []string{root, gtld, exCom}, authority: []string{soaTTL}},
			{qname: "www.example.com.", qtype: dns.TypeTXT, authority: []string{soaTTL}},
			{qname: "www.example.com.", qtype: dns.TypeA, asked: []string{exCom}, answer: wwwA},
		},
	}, {
		name: "MaxTTL clamps, what clients are told too",
		opt:  cache.Options{MaxTTL: 100},
		lookups: []lookup{
			{qname: "www.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom}, answer: []string{"www.example.com. 100 IN A 192.0.2.1"}},
			{after: 99 * time.Second, qname: "www.example.com.", qtype: dns.TypeA, answer: []string{"www.example.com. 1 IN A 192.0.2.1"}},
			// The delegations (3600) and the root's NS records clamped
			// too: primed again.
			{after: time.Second, qname: "www.example.com.", qtype: dns.TypeA, asked: []string{root, root, gtld, exCom}, answer: []string{"www.example.com. 100 IN A 192.0.2.1"}},
		},
	}, {
		name: "MinTTL clamps, what clients are told too",
		opt:  cache.Options{MinTTL: 60},
		setup: func(t *testing.T, f *fake) {
			f.answers[key{exCom, "www.example.com.", dns.TypeA}] = answer(t, "www.example.com. 5 IN A 192.0.2.1")
		},
		lookups: []lookup{
			{qname: "www.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom}, answer: []string{"www.example.com. 60 IN A 192.0.2.1"}},
			{after: 30 * time.Second, qname: "www.example.com.", qtype: dns.TypeA, answer: []string{"www.example.com. 30 IN A 192.0.2.1"}},
		},
	}, {
		name: "a CNAME chain across zones answered from the cache",
		setup: func(t *testing.T, f *fake) {
			f.answers[key{exCom, "alias.example.com.", dns.TypeA}] = answer(t, "alias.example.com. 300 IN CNAME www.example.net.")
		},
		lookups: []lookup{
			{qname: "alias.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom, root, gtld, exNet},
				answer: []string{"alias.example.com. 300 IN CNAME www.example.net.", "www.example.net. 300 IN A 192.0.2.2"}},
			{qname: "alias.example.com.", qtype: dns.TypeA,
				answer: []string{"alias.example.com. 300 IN CNAME www.example.net.", "www.example.net. 300 IN A 192.0.2.2"}},
		},
	}, {
		name: "a cached DNAME redirects the other names below its owner (RFC 6672)",
		setup: func(t *testing.T, f *fake) {
			f.answers[key{exCom, "alias.example.com.", 0}] = answer(t, "alias.example.com. 300 IN DNAME example.net.",
				"www.alias.example.com. 300 IN CNAME www.example.net.")
		},
		lookups: []lookup{
			{qname: "www.alias.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom, exCom, root, gtld, exNet},
				answer: []string{"alias.example.com. 300 IN DNAME example.net.", "www.alias.example.com. 300 IN CNAME www.example.net.", "www.example.net. 300 IN A 192.0.2.2"}},
			// example.com.'s server is not asked again; ns.example.net.
			// was glue only, so example.net.'s is.
			{after: 100 * time.Second, qname: "ns.alias.example.com.", qtype: dns.TypeA, asked: []string{exNet},
				answer: []string{"alias.example.com. 200 IN DNAME example.net.", "ns.alias.example.com. 200 IN CNAME ns.example.net.", "ns.example.net. 300 IN A " + exNet}},
		},
	}, {
		name: "glue is not an answer (RFC 2181 §5.4.1): asked of the zone",
		setup: func(t *testing.T, f *fake) {
			f.answers[key{exCom, "ns1.example.com.", dns.TypeA}] = answer(t, "ns1.example.com. 3600 IN A "+exCom)
		},
		lookups: []lookup{
			{qname: "www.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom}, answer: wwwA},
			{qname: "ns1.example.com.", qtype: dns.TypeA, asked: []string{exCom}, answer: []string{"ns1.example.com. 3600 IN A " + exCom}},
			{qname: "ns1.example.com.", qtype: dns.TypeA, answer: []string{"ns1.example.com. 3600 IN A " + exCom}},
		},
	}, {
		name: "out-of-bailiwick records are not cached",
		setup: func(t *testing.T, f *fake) {
			f.answers[key{exCom, "www.example.com.", dns.TypeA}] = answer(t, "www.example.com. 300 IN A 192.0.2.1", "www.example.net. 300 IN A "+evil)
		},
		lookups: []lookup{
			{qname: "www.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom}, answer: wwwA},
			{qname: "www.example.net.", qtype: dns.TypeA, asked: []string{root, gtld, exNet}, answer: []string{"www.example.net. 300 IN A 192.0.2.2"}},
		},
	}, {
		name: "cached servers that fail: from the root once more",
		lookups: []lookup{
			{qname: "www.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom}, answer: wwwA},
			{after: 300 * time.Second, qname: "www.example.com.", qtype: dns.TypeA,
				setup: func(t *testing.T, f *fake) {
					delete(f.answers, key{exCom, "www.example.com.", dns.TypeA})
					f.answers[key{exCom2, "www.example.com.", dns.TypeA}] = answer(t, wwwA...)
					f.answers[key{gtld, "example.com.", 0}] = referral(t, []string{"example.com. 3600 IN NS ns2.example.com."}, "ns2.example.com. 3600 IN A "+exCom2)
				},
				asked: []string{exCom, exCom, root, gtld, exCom2}, answer: wwwA},
		},
	}, {
		name: "serve-stale off: every server down is a SERVFAIL",
		lookups: []lookup{
			{qname: "www.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom}, answer: wwwA},
			// example.com.'s delegation expired too; com.'s is live.
			{after: 4000 * time.Second, qname: "www.example.com.", qtype: dns.TypeA, setup: down, asked: []string{gtld, gtld, root, root}, fail: true},
		},
	}, {
		name: "serve-stale on: every server down is a stale answer with TTL 30 (RFC 8767 §4)",
		opt:  cache.Options{Stale: 24 * time.Hour},
		lookups: []lookup{
			{qname: "www.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom}, answer: wwwA},
			{after: 4000 * time.Second, qname: "www.example.com.", qtype: dns.TypeA, setup: down, asked: []string{gtld, gtld, root, root},
				answer: []string{"www.example.com. 30 IN A 192.0.2.1"}, stale: true},
			// The failure is remembered (RFC 9520, failcache.go): the
			// next query is answered stale at once, as RFC 8767's
			// failure recheck timer asks.
			{after: time.Second, qname: "www.example.com.", qtype: dns.TypeA,
				answer: []string{"www.example.com. 30 IN A 192.0.2.1"}, stale: true},
		},
	}, {
		name: "serve-stale on: a stale NXDOMAIN, through the cached delegation first",
		opt:  cache.Options{Stale: 24 * time.Hour},
		lookups: []lookup{
			{qname: "nx.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom}, rcode: dns.RcodeNameError, authority: []string{soaTTL}},
			{after: 300 * time.Second, qname: "nx.example.com.", qtype: dns.TypeA, setup: down, asked: []string{exCom, exCom, root, root},
				rcode: dns.RcodeNameError, authority: []string{"example.com. 30 IN SOA ns1.example.com. h.example.com. 1 2 3 4 300"}, stale: true},
		},
	}, {
		name: "Stale answers from the cache alone: live, then stale within the window, then nothing (RFC 8767 §5's client response timer)",
		opt:  cache.Options{Stale: time.Hour},
		lookups: []lookup{
			{qname: "www.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom}, answer: wwwA},
			{after: 100 * time.Second, qname: "www.example.com.", qtype: dns.TypeA, cacheOnly: true, answer: []string{"www.example.com. 200 IN A 192.0.2.1"}},
			{after: 300 * time.Second, qname: "WWW.example.com.", qtype: dns.TypeA, cacheOnly: true, answer: []string{"www.example.com. 30 IN A 192.0.2.1"}, stale: true},
			{qname: "other.example.com.", qtype: dns.TypeA, cacheOnly: true, fail: true},
			{after: time.Hour, qname: "www.example.com.", qtype: dns.TypeA, cacheOnly: true, fail: true},
		},
	}, {
		name: "serve-stale on: a live answer is not stale; past the window it is gone",
		opt:  cache.Options{Stale: time.Hour},
		lookups: []lookup{
			{qname: "www.example.com.", qtype: dns.TypeA, asked: []string{root, gtld, exCom}, answer: wwwA},
			{after: 299 * time.Second, qname: "www.example.com.", qtype: dns.TypeA, setup: down, answer: []string{"www.example.com. 1 IN A 192.0.2.1"}},
			{after: 301*time.Second + time.Hour, qname: "www.example.com.", qtype: dns.TypeA, asked: []string{gtld, gtld, root, root}, fail: true},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := world(t)
			if tc.setup != nil {
				tc.setup(t, f)
			}
			clk := &fakeClock{time.Unix(1_800_000_000, 0)}
			opt := tc.opt
			opt.Now = clk.now
			r := New(f, Options{
				Hints: []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr(root)}, Why: "root hint"}},
				Cache: cache.New(opt),
				Now:   clk.now,
			})
			if err := r.Prime(context.Background()); err != nil {
				t.Fatal(err)
			}
			for i, l := range tc.lookups {
				clk.t = clk.t.Add(l.after)
				if l.setup != nil {
					l.setup(t, f)
				}
				f.asked = nil
				resolve := r.Resolve
				if l.refresh {
					resolve = r.Refresh
				}
				var res *Result
				var err error
				if l.cacheOnly {
					var ok bool
					if res, ok = r.Stale(l.qname, l.qtype); !ok {
						err = errors.New("no answer in the cache")
					}
				} else {
					res, err = resolve(context.Background(), l.qname, l.qtype)
				}
				if (err != nil) != l.fail {
					t.Fatalf("lookup %d: error %v, want failure %v", i, err, l.fail)
				}
				if got := f.askedOf(); !slices.Equal(got, l.asked) {
					t.Errorf("lookup %d: asked %v, want %v", i, got, l.asked)
				}
				if l.fail {
					continue
				}
				if res.Rcode != l.rcode || !slices.Equal(records(res.Answer), l.answer) || !slices.Equal(records(res.Authority), l.authority) || res.Stale != l.stale {
					t.Errorf("lookup %d: got %s %q %q stale %v,\nwant %s %q %q stale %v", i,
						dns.RcodeToString[res.Rcode], records(res.Answer), records(res.Authority), res.Stale,
						dns.RcodeToString[l.rcode], l.answer, l.authority, l.stale)
				}
				if res.Queries != len(l.asked) {
					t.Errorf("lookup %d: %d queries counted, %d asked", i, res.Queries, len(l.asked))
				}
			}
		})
	}
}

// lockedFake is a fake shared by goroutines.
type lockedFake struct {
	mu sync.Mutex
	f  *fake
}

func (l *lockedFake) Exchange(ctx context.Context, server netip.AddrPort, q dns.Question) (*dns.Msg, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Exchange(ctx, server, q)
}

// TestCachedConcurrent: resolutions sharing a Resolver and its cache from
// several goroutines (for the race detector) all get their answers.
func TestCachedConcurrent(t *testing.T) {
	r := New(&lockedFake{f: world(t)}, Options{
		Hints: []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr(root)}, Why: "root hint"}},
		Cache: cache.New(cache.Options{Stale: time.Hour}),
	})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				for _, q := range []struct {
					name  string
					qtype uint16
					rcode int
				}{{"www.example.com.", dns.TypeA, 0}, {"www.example.net.", dns.TypeA, 0}, {"nx.example.com.", dns.TypeA, dns.RcodeNameError}, {"www.example.com.", dns.TypeTXT, 0}} {
					res, err := r.Resolve(context.Background(), q.name, q.qtype)
					if err != nil || res.Rcode != q.rcode {
						t.Errorf("%s %s: %v %v", q.name, dns.Type(q.qtype), res, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestAnswerOffChainNotCached: records of an answer section that are not
// on the question's chain (its records, CNAMEs and DNAMEs) are not
// cached, though in the answering zone's bailiwick: com.'s server,
// answering for foo.com., slips in an A record of www.example.com., a
// name below a cut it is not authoritative for. Asked next, that name is
// resolved from example.com.'s server (it used to be answered from the
// cache, with the slipped-in address).
func TestAnswerOffChainNotCached(t *testing.T) {
	f := world(t)
	f.answers[key{gtld, "foo.com.", dns.TypeA}] = answer(t,
		"foo.com. 300 IN A 192.0.2.9",
		"www.example.com. 300 IN A 192.0.2.66",
		"foo.com. 300 IN RRSIG A 8 2 300 20300101000000 20200101000000 1 com. AAAA",
		"www.example.com. 300 IN RRSIG A 8 3 300 20300101000000 20200101000000 1 com. AAAA")
	clk := &fakeClock{time.Unix(1_800_000_000, 0)}
	r, _ := tracing(f, Options{Cache: cache.New(cache.Options{Now: clk.now}), Now: clk.now, NoMinimise: true})
	signed := []string{"foo.com. 300 IN A 192.0.2.9", "foo.com. 300 IN RRSIG A 8 2 300 20300101000000 20200101000000 1 com. AAAA"}
	res, err := r.Resolve(context.Background(), "foo.com.", dns.TypeA)
	checkResult(t, res, err, 0, signed)
	res, err = r.Resolve(context.Background(), "www.example.com.", dns.TypeA)
	checkResult(t, res, err, 0, []string{"www.example.com. 300 IN A 192.0.2.1"})
	// The chain's own records (and their signatures) are cached.
	f.asked = nil
	res, err = r.Resolve(context.Background(), "foo.com.", dns.TypeA)
	checkResult(t, res, err, 0, signed)
	if len(f.asked) != 0 {
		t.Errorf("foo.com. asked again: %v", f.asked)
	}
}

// TestClosestServers: the closest cached delegation of a name is read
// from the cache into the caller's space: each server with its own
// addresses (IPv4 and IPv6, none for a name without cached ones), in two
// allocations: all the addresses, and the name of the server the cache
// holds nothing for (the others are the cache's strings).
func TestClosestServers(t *testing.T) {
	c := cache.New(cache.Options{})
	put := func(rrs ...string) {
		t.Helper()
		var set []dns.RR
		for _, s := range rrs {
			rr, err := dns.NewRR(s)
			if err != nil {
				t.Fatal(err)
			}
			set = append(set, rr)
		}
		h := set[0].Header()
		c.Put(h.Name, h.Rrtype, cache.Entry{Records: set, Rank: cache.RankAdditional})
	}
	put("example.com. 300 IN NS ns1.example.com.", "example.com. 300 IN NS ns2.example.com.", "example.com. 300 IN NS ns.elsewhere.net.")
	put("ns1.example.com. 300 IN A 192.0.2.1")
	put("ns1.example.com. 300 IN AAAA 2001:db8::1")
	put("ns2.example.com. 300 IN A 192.0.2.2", "ns2.example.com. 300 IN A 192.0.2.3")
	ru := &run{r: &Resolver{cache: c}}
	var buf [4]Server
	zone, servers, ok := ru.closest(c.Lookup("www.example.com."), "www.example.com.", dns.TypeA, buf[:0])
	var got []string
	for _, s := range servers {
		got = append(got, fmt.Sprint(s.Name, s.Addrs))
	}
	want := []string{"ns1.example.com.[192.0.2.1 2001:db8::1]", "ns2.example.com.[192.0.2.2 192.0.2.3]", "ns.elsewhere.net.[]"}
	if zone != "example.com." || !ok || !slices.Equal(got, want) {
		t.Fatalf("closest: %s %v %q, want example.com. true %q", zone, ok, got, want)
	}
	if n := testing.AllocsPerRun(100, func() {
		ru.closest(c.Lookup("www.example.com."), "www.example.com.", dns.TypeA, buf[:0])
	}); n != 2 {
		t.Errorf("%v allocations, want 2 (the addresses, ns.elsewhere.net.)", n)
	}
}

// TestCachedAllocations: an answer from the cache costs the Result (its
// first record in it), the message cachedOf makes of the entry, and the
// records decoded from the entry (their slice, the A record, its address
// copied by miekg/dns): no deadline context, no slice for the answer.
func TestCachedAllocations(t *testing.T) {
	f := world(t)
	r := New(f, Options{Hints: []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr(root)}}}, Cache: cache.New(cache.Options{})})
	ctx := context.Background()
	if _, err := r.Resolve(ctx, "www.example.com.", dns.TypeA); err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(100, func() {
		res, err := r.Resolve(ctx, "www.example.com.", dns.TypeA)
		if err != nil || len(res.Answer) != 1 || res.Queries != 0 {
			t.Fatalf("%v %+v", err, res)
		}
	})
	if n > 6 {
		t.Errorf("%v allocations, want at most 6", n)
	}
}
