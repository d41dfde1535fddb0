package hierarchy_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/dnstest/hierarchy"
	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/upstream"
)

// ternResolver is Tern's resolver over the hierarchy, answering as a
// response on the wire would: the Result's sections and rcode, and on a
// failure the Extended DNS Error of its reason (RFC 8914).
type ternResolver struct {
	r *resolve.Resolver
}

func newTernResolver(t *testing.T, h *hierarchy.Standard) *ternResolver {
	return newTernResolverOpt(t, h, resolve.Options{})
}

// newTernResolverOpt is newTernResolver with options (a cache, a clock);
// the hints and port are the hierarchy's.
func newTernResolverOpt(t *testing.T, h *hierarchy.Standard, opt resolve.Options) *ternResolver {
	t.Helper()
	hints, err := resolve.LoadHints(h.HintsFile)
	if err != nil {
		t.Fatal(err)
	}
	opt.Hints, opt.Port = hints, h.Port
	return &ternResolver{resolve.New(&upstream.Client{}, opt)}
}

// resolve returns the response and the number of upstream queries.
func (tr *ternResolver) resolve(name string, qtype uint16) (*dns.Msg, int) {
	res, err := tr.r.Resolve(context.Background(), name, qtype)
	m := new(dns.Msg).SetQuestion(name, qtype)
	m.Response, m.RecursionAvailable = true, true
	m.Rcode, m.Answer, m.Ns = res.Rcode, res.Answer, res.Authority
	m.SetEdns0(1232, false)
	var e *resolve.Error
	if errors.As(err, &e) {
		o := m.IsEdns0()
		code, text := e.EDE()
		o.Option = append(o.Option, &dns.EDNS0_EDE{InfoCode: code, ExtraText: text})
	}
	return m, res.Queries
}

// testResolve resolves every case through Tern's resolver from the local
// root, over servers of Tern, Knot and NSD: each case with a resolver of
// its own and an empty cache, as a freshly started tern serve has, so
// that the number of upstream queries is the case's alone.
func testResolve(t *testing.T, e *env) {
	h := e.h
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			t.Parallel()
			tr := newTernResolverOpt(t, h, resolve.Options{Cache: cache.New(cache.Options{Size: 1 << 20})})
			m, queries := tr.resolve(c.name, c.qtype)
			errs := c.check(m)
			if c.maxQueries > 0 && queries > c.maxQueries {
				errs = append(errs, fmt.Sprintf("%d upstream queries, want at most %d", queries, c.maxQueries))
			}
			c.report(t, errs, fmt.Sprintf("%d upstream queries; response:\n%v", queries, m))
		})
	}
}

// testResolveWithoutCache: the resolver without a cache (tern resolve
// gives it one for the run since 2026-12-03) on a chain of 11 CNAME links across two zones, which a
// resolver must follow (Unbound does, Tern's served resolver does).
func testResolveWithoutCache(t *testing.T, e *env) {
	c := resolverCase{name: "l0.chain11.example.tld.", qtype: dns.TypeA, answer: chainAnswer(11), ede: noEDE}
	// With a cache for the run, as tern resolve has, the chain is
	// followed within the query limit.
	tr := newTernResolverOpt(t, e.h, resolve.Options{Cache: cache.New(cache.Options{})})
	m, queries := tr.resolve(c.name, c.qtype)
	if errs := c.check(m); len(errs) > 0 {
		t.Errorf("with a cache: %v (%d upstream queries)", errs, queries)
	}
	c.pending = "without a cache nothing learnt is kept within a resolution: each link resolves cdn.net.'s " +
		"out-of-bailiwick NS name again from the root, and the 11 links take more than the 50 upstream queries allowed"
	tr = newTernResolver(t, e.h)
	m, queries = tr.resolve(c.name, c.qtype)
	c.report(t, c.check(m), fmt.Sprintf("%d upstream queries; response:\n%v", queries, m))
}
