package hierarchy_test

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/dnstest/hierarchy"
	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/upstream"
)

// servedAddr is where Tern's served resolver listens in these tests,
// beside Unbound's 127.0.0.39.
var servedAddr = netip.AddrFrom4([4]byte{127, 0, 0, 38})

// startServed serves Tern's resolver as `tern serve` with a [resolver]
// table builds it (cmd/tern newRecursor: the resolver with its RRset and
// negative cache behind internal/recursor, each worker's response cache
// in front), on servedAddr at the hierarchy's port, queries to loopback
// allowed (query-loopback = true). It returns the address to ask.
func startServed(t *testing.T, h *hierarchy.Standard) string {
	t.Helper()
	hints, err := resolve.LoadHints(h.HintsFile)
	if err != nil {
		t.Fatal(err)
	}
	r := resolve.New(&upstream.Client{}, resolve.Options{Hints: hints, Port: h.Port, Cache: cache.New(cache.Options{})})
	return hierarchy.StartRecursor(t, netip.AddrPortFrom(servedAddr, h.Port), r)
}

// testServed asks every case of the Tests list of Tern's served
// resolver, over UDP as a client would, and checks the responses on the
// wire: rcode, answer records, TTLs, the SOA of negative answers, the
// Extended DNS Error of failures.
func testServed(t *testing.T, e *env) {
	addr := e.served
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			t.Parallel()
			m, err := askResolver(addr, c.name, c.qtype)
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, dns.Type(c.qtype), err)
			}
			errs := c.check(m)
			if !m.Response || !m.RecursionAvailable || !m.RecursionDesired || m.Authoritative {
				errs = append(errs, fmt.Sprintf("flags qr=%v ra=%v rd=%v aa=%v, want qr ra rd, not aa", m.Response, m.RecursionAvailable, m.RecursionDesired, m.Authoritative))
			}
			c.report(t, errs, fmt.Sprintf("response:\n%v", m))
		})
	}
}

// testServedTTLs: a cached answer's TTLs go down with the time it has
// spent in the cache (RFC 1035 §4.1.3, RFC 2308 §5 for the SOA of a
// negative answer), whichever cache answers (the response cache or the
// RRset cache). Asked three times more than a second apart, every TTL
// is lower each time; a loaded machine only makes the time longer, never
// shorter. The questions include two asked nowhere else, so that their
// first answer is resolved and their later ones come from the response
// cache (the worker's that stored it; another's resolves from the RRset
// cache), which must age it from when it was built, not from when its
// worker stored it.
func testServedTTLs(t *testing.T, e *env) {
	addr := e.served
	qs := []struct {
		name  string
		qtype uint16
	}{
		{"host.example.tld.", dns.TypeA}, {"www.example.tld.", dns.TypeA}, {"nx.example.tld.", dns.TypeA}, {"host.example.tld.", dns.TypeAAAA},
		{"ns-noglue.example.net.", dns.TypeA}, {"ttl-nx.example.net.", dns.TypeA},
	}
	const rounds = 3
	ttls := make([][rounds][]uint32, len(qs))
	for round := range rounds {
		if round > 0 {
			time.Sleep(1100 * time.Millisecond)
		}
		for i, q := range qs {
			m, err := askResolver(addr, q.name, q.qtype)
			if err != nil {
				t.Fatal(err)
			}
			for _, rr := range append(m.Answer, m.Ns...) {
				ttls[i][round] = append(ttls[i][round], rr.Header().Ttl)
			}
		}
	}
	for i, q := range qs {
		for round := 1; round < rounds; round++ {
			before, then := ttls[i][round-1], ttls[i][round]
			if len(before) == 0 || len(before) != len(then) {
				t.Errorf("%s %s: TTLs %v then %v", q.name, dns.Type(q.qtype), before, then)
				continue
			}
			for j := range before {
				if then[j] >= before[j] {
					t.Errorf("%s %s: record %d: TTL %d, then %d after more than a second (TTLs of the %d asks: %v)",
						q.name, dns.Type(q.qtype), j, before[j], then[j], rounds, ttls[i])
				}
			}
		}
	}
}
