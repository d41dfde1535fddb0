package hierarchy_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/dnstest/hierarchy"
	"github.com/tern-dns/tern/internal/resolve"
)

// clock is a test's clock, advanced by hand: TTLs then count down
// exactly, whatever the machine's load.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// testCache: answers, NXDOMAIN and NODATA come from the cache while their
// TTL runs (no upstream query, TTLs decreased by the time spent in the
// cache, the negative answer's SOA too: RFC 2308 §5), and are asked again
// once it has run out, from the delegation still cached (one query);
// failures are remembered for a while (RFC 9520).
func testCache(t *testing.T, e *env) {
	h := e.h
	clk := newClock()
	tr := newTernResolverOpt(t, h, resolve.Options{Now: clk.now, Cache: cache.New(cache.Options{Now: clk.now})})
	type step struct {
		advance time.Duration
		queries int // exact upstream queries; -1: at least one
		resolverCase
	}
	for _, tc := range []struct {
		what  string
		steps []step
	}{
		{"answer", []step{
			{0, -1, resolverCase{name: "host.example.tld.", qtype: dns.TypeA, ede: noEDE,
				answer: []string{"host.example.tld. 300 A 192.0.2.1", "host.example.tld. 300 A 192.0.2.2"}}},
			{100 * time.Second, 0, resolverCase{name: "host.example.tld.", qtype: dns.TypeA, ede: noEDE,
				answer: []string{"host.example.tld. 200 A 192.0.2.1", "host.example.tld. 200 A 192.0.2.2"}}},
			{250 * time.Second, 1, resolverCase{name: "host.example.tld.", qtype: dns.TypeA, ede: noEDE,
				answer: []string{"host.example.tld. 300 A 192.0.2.1", "host.example.tld. 300 A 192.0.2.2"}}},
		}},
		{"CNAME across zones", []step{
			{0, -1, resolverCase{name: "www.example.tld.", qtype: dns.TypeA, ede: noEDE,
				answer: []string{"www.example.tld. 200 CNAME www.cdn.net.", "www.cdn.net. 250 A 192.0.2.80"}}},
			{150 * time.Second, 0, resolverCase{name: "www.example.tld.", qtype: dns.TypeA, ede: noEDE,
				answer: []string{"www.example.tld. 50 CNAME www.cdn.net.", "www.cdn.net. 100 A 192.0.2.80"}}},
			// The CNAME has expired, its target not: one query.
			{60 * time.Second, 1, resolverCase{name: "www.example.tld.", qtype: dns.TypeA, ede: noEDE,
				answer: []string{"www.example.tld. 200 CNAME www.cdn.net.", "www.cdn.net. 40 A 192.0.2.80"}}},
		}},
		// What evil.tld.'s server slips in about example.net. (an
		// address, NS records and glue) is neither answered nor cached.
		{"poisoning attempt", []step{
			{0, -1, resolverCase{name: hierarchy.EvilPoison, qtype: dns.TypeA, ede: noEDE,
				answer: []string{hierarchy.EvilPoison + " 300 A 192.0.2.201"}}},
			{0, -1, resolverCase{name: "www.example.net.", qtype: dns.TypeA, ede: noEDE,
				answer: []string{"www.example.net. 150 A 192.0.2.91"}}},
		}},
		// RFC 9520 §3.2: a failure is remembered (5 s at first) and
		// answered from memory (EDE 13, Cached Error) without a query.
		{"failure (delegation loop)", []step{
			{0, -1, resolverCase{name: "www.loop1.tld.", qtype: dns.TypeA, rcode: dns.RcodeServerFailure, ede: 22}},
			{time.Second, 0, resolverCase{name: "www.loop1.tld.", qtype: dns.TypeA, rcode: dns.RcodeServerFailure, ede: 13}},
			{10 * time.Second, -1, resolverCase{name: "www.loop1.tld.", qtype: dns.TypeA, rcode: dns.RcodeServerFailure, ede: 22}},
		}},
		{"failure (lame)", []step{
			{0, -1, resolverCase{name: "www.lame.tld.", qtype: dns.TypeA, rcode: dns.RcodeServerFailure, ede: 22}},
			{time.Second, 0, resolverCase{name: "www.lame.tld.", qtype: dns.TypeA, rcode: dns.RcodeServerFailure, ede: 13}},
		}},
		// example.tld.'s negative TTL: min(SOA TTL 3600, MINIMUM 600).
		{"NXDOMAIN", []step{
			{0, -1, resolverCase{name: "nx.example.tld.", qtype: dns.TypeA, rcode: dns.RcodeNameError, soa: "example.tld.", ede: noEDE}},
			{100 * time.Second, 0, resolverCase{name: "nx.example.tld.", qtype: dns.TypeA, rcode: dns.RcodeNameError, soa: "example.tld.", ede: noEDE}},
			{600 * time.Second, 1, resolverCase{name: "nx.example.tld.", qtype: dns.TypeA, rcode: dns.RcodeNameError, soa: "example.tld.", ede: noEDE}},
		}},
		{"NODATA", []step{
			{0, -1, resolverCase{name: "host.example.tld.", qtype: dns.TypeAAAA, soa: "example.tld.", ede: noEDE}},
			{100 * time.Second, 0, resolverCase{name: "host.example.tld.", qtype: dns.TypeAAAA, soa: "example.tld.", ede: noEDE}},
			{600 * time.Second, 1, resolverCase{name: "host.example.tld.", qtype: dns.TypeAAAA, soa: "example.tld.", ede: noEDE}},
		}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			var soaTTL []uint32
			for i, s := range tc.steps {
				clk.advance(s.advance)
				m, queries := tr.resolve(s.name, s.qtype)
				errs := s.check(m)
				// check allows TTLs below the zone's; a hand-advanced
				// clock makes them exact.
				for j, rr := range m.Answer {
					if j < len(s.answer) {
						if want, _ := dns.NewRR(s.answer[j]); want != nil && rr.Header().Ttl != want.Header().Ttl {
							errs = append(errs, fmt.Sprintf("answer %d: TTL %d, want %d", j, rr.Header().Ttl, want.Header().Ttl))
						}
					}
				}
				if s.queries >= 0 && queries != s.queries || s.queries < 0 && queries == 0 {
					errs = append(errs, fmt.Sprintf("%d upstream queries, want %d (-1: some)", queries, s.queries))
				}
				for _, rr := range m.Ns {
					if rr.Header().Rrtype == dns.TypeSOA {
						soaTTL = append(soaTTL, rr.Header().Ttl)
					}
				}
				for _, e := range errs {
					t.Errorf("step %d (+%v) %s %s: %s", i, s.advance, s.name, dns.Type(s.qtype), e)
				}
				if len(errs) > 0 || testing.Verbose() {
					t.Logf("step %d: %d upstream queries; response:\n%v", i, queries, m)
				}
			}
			// Negative answers: the SOA's TTL is the negative TTL (600)
			// fresh, 500 from the cache 100 s later, 600 again when
			// asked anew.
			if tc.steps[0].soa != "" {
				if want := []uint32{600, 500, 600}; fmt.Sprint(soaTTL) != fmt.Sprint(want) {
					t.Errorf("SOA TTLs %v, want %v", soaTTL, want)
				}
			}
		})
	}
}
