package resolve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest"

	"github.com/tern-dns/tern/internal/upstream"
)

// key is what a fake server's canned answer is found by. Qtype 0 matches
// every type and every name at or below Name.
type key struct {
	server string
	name   string
	qtype  uint16
}

// fake is an Exchanger with canned answers: the hierarchy a test needs,
// without sockets. A question without an answer times out.
type fake struct {
	answers map[key]*dns.Msg
	// unreachable are the addresses whose queries fail as an ICMP port
	// unreachable makes them fail.
	unreachable map[string]bool
	asked       []key
	// mu, when set, guards asked for concurrent tests.
	mu *sync.Mutex
	// recursive are the questions asked with RD=1, by index in asked.
	recursive map[int]bool
	// sent are the names as sent, case included, by index in asked;
	// exact are the questions whose answer had to repeat the case.
	sent  []string
	exact map[int]bool
	// caseless are the addresses that do not echo a name's case: an
	// answer to them must repeat fails (as upstream drops it).
	caseless map[string]bool
}

// ExchangeOptions is Exchange, noting how each question was asked (RD,
// case).
// rrs parses records (dnstest.RRs).
var rrs = dnstest.RRs

func (f *fake) ExchangeOptions(ctx context.Context, server netip.AddrPort, q dns.Question, opt upstream.Options) (*dns.Msg, upstream.Report, error) {
	if f.mu != nil {
		f.mu.Lock()
		defer f.mu.Unlock()
	}
	if opt.Recursive {
		if f.recursive == nil {
			f.recursive = map[int]bool{}
		}
		f.recursive[len(f.asked)] = true
	}
	if opt.ExactCase {
		if f.exact == nil {
			f.exact = map[int]bool{}
		}
		f.exact[len(f.asked)] = true
	}
	f.sent = append(f.sent, q.Name)
	m, err := f.exchange(server, q)
	if err == nil && opt.ExactCase && f.caseless[server.Addr().String()] {
		// Its answer spelt the name otherwise: dropped, none came.
		return nil, upstream.Report{}, fmt.Errorf("fake: %s lowercased %s: %w", server, q.Name, context.DeadlineExceeded)
	}
	return m, upstream.Report{}, err
}

func (f *fake) Exchange(ctx context.Context, server netip.AddrPort, q dns.Question) (*dns.Msg, error) {
	m, _, err := f.ExchangeOptions(ctx, server, q, upstream.Options{})
	return m, err
}

// exchange answers q from the canned answers.
func (f *fake) exchange(server netip.AddrPort, q dns.Question) (*dns.Msg, error) {
	k := key{server.Addr().String(), dns.CanonicalName(q.Name), q.Qtype}
	f.asked = append(f.asked, k)
	if f.unreachable[k.server] {
		return nil, fmt.Errorf("fake: udp to %s: %w", server, syscall.ECONNREFUSED)
	}
	m, ok := f.answers[k]
	for n := k.name; !ok; {
		if m, ok = f.answers[key{k.server, n, 0}]; ok || n == "." {
			break
		}
		_, n, _ = strings.Cut(n, ".")
		if n == "" {
			n = "."
		}
	}
	if !ok {
		return nil, fmt.Errorf("fake: %v: %w", k, context.DeadlineExceeded)
	}
	r := m.Copy()
	r.Question = []dns.Question{q}
	r.Response = true
	return r, nil
}

// askedOf returns the addresses asked, in order.
func (f *fake) askedOf() []string {
	var s []string
	for _, k := range f.asked {
		s = append(s, k.server)
	}
	return s
}

// The canned answers: AA answers, negative answers and referrals.
func answer(t testing.TB, records ...string) *dns.Msg {
	return &dns.Msg{MsgHdr: dns.MsgHdr{Authoritative: true}, Answer: rrs(t, records...)}
}

func negative(t testing.TB, rcode int, soa string) *dns.Msg {
	return &dns.Msg{MsgHdr: dns.MsgHdr{Authoritative: true, Rcode: rcode}, Ns: rrs(t, soa)}
}

func referral(t testing.TB, ns []string, glue ...string) *dns.Msg {
	return &dns.Msg{Ns: rrs(t, ns...), Extra: rrs(t, glue...)}
}

const (
	root   = "10.0.0.1"
	gtld   = "10.0.0.2" // com. and net.
	exCom  = "10.0.0.3" // example.com.
	exNet  = "10.0.0.4" // example.net.
	exCom2 = "10.0.0.5" // example.com.'s second server
	evil   = "10.6.6.6"
)

// world is a small hierarchy: the root delegates com. and net. to
// a.gtld.net (glue in the root's bailiwick), com. delegates example.com.
// with in-zone glue, net. delegates example.net.
func world(t testing.TB) *fake {
	return &fake{answers: map[key]*dns.Msg{
		{root, ".", dns.TypeNS}: priming(t, ". 518400 IN NS a.root.", "a.root. 518400 IN A "+root),
		{root, "com.", 0}:       referral(t, []string{"com. 172800 IN NS a.gtld.net."}, "a.gtld.net. 172800 IN A "+gtld),
		{root, "net.", 0}:       referral(t, []string{"net. 172800 IN NS a.gtld.net."}, "a.gtld.net. 172800 IN A "+gtld),
		{gtld, "example.com.", 0}: referral(t, []string{"example.com. 3600 IN NS ns1.example.com."},
			"ns1.example.com. 3600 IN A "+exCom),
		{gtld, "example.net.", 0}: referral(t, []string{"example.net. 3600 IN NS ns.example.net."},
			"ns.example.net. 3600 IN A "+exNet),
		{exCom, "www.example.com.", dns.TypeA}:   answer(t, "www.example.com. 300 IN A 192.0.2.1"),
		{exCom, "www.example.com.", dns.TypeTXT}: negative(t, 0, "example.com. 300 IN SOA ns1.example.com. h.example.com. 1 2 3 4 300"),
		{exCom, "nx.example.com.", 0}:            negative(t, dns.RcodeNameError, "example.com. 300 IN SOA ns1.example.com. h.example.com. 1 2 3 4 300"),
		{exNet, "ns.example.net.", dns.TypeA}:    answer(t, "ns.example.net. 300 IN A "+exNet),
		{exNet, "www.example.net.", dns.TypeA}:   answer(t, "www.example.net. 300 IN A 192.0.2.2"),
	}}
}

// resolver returns a Resolver asking f, with the root as its hint, primed
// (the queries of the priming forgotten by f and steps), without QNAME
// minimisation (TestMinimise shows it). Servers of similar speed are asked
// in the order of their delegation (no random draw), so that tests can
// list them.
func resolver(t testing.TB, f *fake, l Limits, steps *[]Step) *Resolver {
	r := New(f, Options{
		Hints:      []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr(root)}, Why: "root hint"}},
		Limits:     l,
		Trace:      func(s Step) { *steps = append(*steps, s) },
		Infra:      NewInfra(InfraOptions{Rand: func(int) int { return 0 }}),
		NoMinimise: true,
	})
	if err := r.Prime(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.asked, *steps = nil, nil
	return r
}

// priming is the answer to a priming query: the root's NS records in the
// answer section, then addresses.
func priming(t testing.TB, ns string, extra ...string) *dns.Msg {
	m := answer(t, strings.Split(ns, "\n")...)
	m.Extra = rrs(t, extra...)
	return m
}

// records returns the records in zone-file form, tabs as spaces.
func records(rrs []dns.RR) []string {
	var s []string
	for _, rr := range rrs {
		s = append(s, rrString(rr))
	}
	return s
}

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name      string
		qname     string
		qtype     uint16
		setup     func(t *testing.T, f *fake)
		limits    Limits
		rcode     int
		answer    []string
		authority []string
		asked     []string // the servers asked, in order, when given
		reason    Reason   // the failure expected
		ede       uint16   // its EDE INFO-CODE
		extra     string   // a text its EXTRA-TEXT contains
		check     func(t *testing.T, f *fake, steps []Step)
	}{{
		name: "referrals followed with in-bailiwick glue", qname: "www.example.com.", qtype: dns.TypeA,
		answer: []string{"www.example.com. 300 IN A 192.0.2.1"},
		asked:  []string{root, gtld, exCom},
		check: func(t *testing.T, f *fake, steps []Step) {
			if len(steps[1].GlueUsed) != 1 || steps[1].Outcome != "referral to example.com. (NS ns1.example.com.)" {
				t.Errorf("step 2: %+v", steps[1])
			}
		},
	}, {
		name: "NODATA passed through", qname: "www.example.com.", qtype: dns.TypeTXT,
		authority: []string{"example.com. 300 IN SOA ns1.example.com. h.example.com. 1 2 3 4 300"},
	}, {
		name: "NXDOMAIN passed through", qname: "nx.example.com.", qtype: dns.TypeA, rcode: dns.RcodeNameError,
		authority: []string{"example.com. 300 IN SOA ns1.example.com. h.example.com. 1 2 3 4 300"},
	}, {
		name: "out-of-bailiwick glue ignored, the NS name resolved", qname: "www.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			// com. may not vouch for an address in net.
			f.answers[key{gtld, "example.com.", 0}] = referral(t, []string{"example.com. 3600 IN NS ns.example.net."},
				"ns.example.net. 3600 IN A "+evil)
			f.answers[key{exNet, "www.example.com.", dns.TypeA}] = answer(t, "www.example.com. 300 IN A 192.0.2.1")
		},
		answer: []string{"www.example.com. 300 IN A 192.0.2.1"},
		asked:  []string{root, gtld, root, gtld, exNet, exNet},
		check: func(t *testing.T, f *fake, steps []Step) {
			if want := []string{"ns.example.net. 3600 IN A " + evil}; !slices.Equal(steps[1].GlueIgnored, want) {
				t.Errorf("glue ignored %q, want %q", steps[1].GlueIgnored, want)
			}
			if steps[2].Depth != 1 || steps[5].Why != "address of ns.example.net. resolved" {
				t.Errorf("steps %+v", steps)
			}
		},
	}, {
		name: "CNAME across zones, out-of-bailiwick answer records dropped", qname: "www.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			f.answers[key{exCom, "www.example.com.", dns.TypeA}] = answer(t,
				"www.example.com. 300 IN CNAME www.example.net.", "www.example.net. 300 IN A "+evil)
		},
		answer: []string{"www.example.com. 300 IN CNAME www.example.net.", "www.example.net. 300 IN A 192.0.2.2"},
		asked:  []string{root, gtld, exCom, root, gtld, exNet},
		check: func(t *testing.T, f *fake, steps []Step) {
			if steps[2].Dropped != 1 {
				t.Errorf("step 3 dropped %d records, want 1", steps[2].Dropped)
			}
		},
	}, {
		name: "CNAME chain within a zone", qname: "a.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			f.answers[key{exCom, "a.example.com.", dns.TypeA}] = answer(t,
				"a.example.com. 300 IN CNAME b.example.com.", "b.example.com. 300 IN CNAME www.example.com.", "www.example.com. 300 IN A 192.0.2.1")
		},
		answer: []string{"a.example.com. 300 IN CNAME b.example.com.", "b.example.com. 300 IN CNAME www.example.com.", "www.example.com. 300 IN A 192.0.2.1"},
		asked:  []string{root, gtld, exCom},
	}, {
		name: "DNAME within a zone: the CNAME made from it, not the server's", qname: "www.a.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			f.answers[key{exCom, "www.a.example.com.", dns.TypeA}] = answer(t, "a.example.com. 300 IN DNAME b.example.com.",
				"www.a.example.com. 0 IN CNAME www.b.example.com.", "www.b.example.com. 300 IN A 192.0.2.1")
		},
		answer: []string{"a.example.com. 300 IN DNAME b.example.com.", "www.a.example.com. 300 IN CNAME www.b.example.com.", "www.b.example.com. 300 IN A 192.0.2.1"},
		asked:  []string{root, gtld, exCom},
		check: func(t *testing.T, f *fake, steps []Step) {
			if want := "answer, 3 records, DNAME a.example.com. -> b.example.com."; steps[2].Outcome != want {
				t.Errorf("outcome %q, want %q", steps[2].Outcome, want)
			}
		},
	}, {
		name: "DNAME into another zone: a forged CNAME beside it ignored", qname: "www.a.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			f.answers[key{exCom, "www.a.example.com.", dns.TypeA}] = answer(t, "a.example.com. 300 IN DNAME example.net.",
				"www.a.example.com. 300 IN CNAME evil.example.com.", "evil.example.com. 300 IN A "+evil)
		},
		answer: []string{"a.example.com. 300 IN DNAME example.net.", "www.a.example.com. 300 IN CNAME www.example.net.", "www.example.net. 300 IN A 192.0.2.2"},
		asked:  []string{root, gtld, exCom, root, gtld, exNet},
	}, {
		name: "DNAME without a CNAME (RFC 2672 server)", qname: "www.a.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			f.answers[key{exCom, "www.a.example.com.", dns.TypeA}] = answer(t, "a.example.com. 60 IN DNAME example.net.")
		},
		answer: []string{"a.example.com. 60 IN DNAME example.net.", "www.a.example.com. 60 IN CNAME www.example.net.", "www.example.net. 300 IN A 192.0.2.2"},
		asked:  []string{root, gtld, exCom, root, gtld, exNet},
	}, {
		name: "DNAME, QTYPE CNAME: the synthesized CNAME is the answer", qname: "www.a.example.com.", qtype: dns.TypeCNAME,
		setup: func(t *testing.T, f *fake) {
			f.answers[key{exCom, "www.a.example.com.", dns.TypeCNAME}] = answer(t, "a.example.com. 60 IN DNAME example.net.",
				"www.a.example.com. 60 IN CNAME www.example.net.")
		},
		answer: []string{"a.example.com. 60 IN DNAME example.net.", "www.a.example.com. 60 IN CNAME www.example.net."},
		asked:  []string{root, gtld, exCom},
	}, {
		name: "DNAME, QTYPE DNAME at its owner", qname: "a.example.com.", qtype: dns.TypeDNAME,
		setup: func(t *testing.T, f *fake) {
			f.answers[key{exCom, "a.example.com.", dns.TypeDNAME}] = answer(t, "a.example.com. 60 IN DNAME example.net.")
		},
		answer: []string{"a.example.com. 60 IN DNAME example.net."},
		asked:  []string{root, gtld, exCom},
	}, {
		name: "DNAME making a name too long: YXDOMAIN", qname: long + ".a.example.com.", qtype: dns.TypeA, rcode: dns.RcodeYXDomain,
		setup: func(t *testing.T, f *fake) {
			m := answer(t, "a.example.com. 60 IN DNAME "+label63+".example.net.")
			m.Rcode = dns.RcodeYXDomain
			f.answers[key{exCom, long + ".a.example.com.", dns.TypeA}] = m
		},
		answer: []string{"a.example.com. 60 IN DNAME " + label63 + ".example.net."},
		asked:  []string{root, gtld, exCom},
	}, {
		name: "DNAME links count toward the CNAME limit", qname: "x.d0.example.com.", qtype: dns.TypeA, limits: Limits{CNAMEs: 3},
		setup:  func(t *testing.T, f *fake) { chain(t, f, "x.", "d", "DNAME") },
		reason: CNAMELimit, ede: 0, extra: "a chain of more than 3 CNAME and DNAME links",
	}, {
		name: "DNAME loop stopped", qname: "x.a.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			f.answers[key{exCom, "x.a.example.com.", dns.TypeA}] = answer(t, "a.example.com. 300 IN DNAME b.example.com.", "b.example.com. 300 IN DNAME a.example.com.")
		},
		reason: CNAMELoop, ede: 0, extra: "comes back to x.a.example.com.",
	}, {
		name: "CNAME to a name below a cut of the same zone: resolved from there", qname: "www.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			sub := referral(t, []string{"sub.example.com. 3600 IN NS ns.sub.example.com."}, "ns.sub.example.com. 3600 IN A "+exCom2)
			m := answer(t, "www.example.com. 300 IN CNAME www.sub.example.com.")
			m.Ns = sub.Ns
			f.answers[key{exCom, "www.example.com.", dns.TypeA}] = m
			f.answers[key{exCom, "sub.example.com.", 0}] = sub
			f.answers[key{exCom2, "www.sub.example.com.", dns.TypeA}] = answer(t, "www.sub.example.com. 300 IN A 192.0.2.9")
		},
		answer: []string{"www.example.com. 300 IN CNAME www.sub.example.com.", "www.sub.example.com. 300 IN A 192.0.2.9"},
		asked:  []string{root, gtld, exCom, root, gtld, exCom, exCom2},
	}, {
		name: "CNAME to a NODATA in the same zone", qname: "a.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			m := answer(t, "a.example.com. 300 IN CNAME b.example.com.")
			m.Ns = rrs(t, "example.com. 300 IN SOA ns1.example.com. h.example.com. 1 2 3 4 300")
			f.answers[key{exCom, "a.example.com.", dns.TypeA}] = m
		},
		answer:    []string{"a.example.com. 300 IN CNAME b.example.com."},
		authority: []string{"example.com. 300 IN SOA ns1.example.com. h.example.com. 1 2 3 4 300"},
		asked:     []string{root, gtld, exCom},
	}, {
		name: "CNAME loop across zones stopped", qname: "a.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			f.answers[key{exCom, "a.example.com.", dns.TypeA}] = answer(t, "a.example.com. 300 IN CNAME b.example.net.")
			f.answers[key{exNet, "b.example.net.", dns.TypeA}] = answer(t, "b.example.net. 300 IN CNAME a.example.com.")
		},
		reason: CNAMELoop, ede: 0, extra: "CNAME loop: the CNAME chain comes back to a.example.com.",
	}, {
		name: "CNAME chain limit", qname: "c0.example.com.", qtype: dns.TypeA, limits: Limits{CNAMEs: 3},
		setup:  func(t *testing.T, f *fake) { chain(t, f, "", "c", "CNAME") },
		reason: CNAMELimit, ede: 0, extra: "CNAME chain limit: a chain of more than 3 CNAME and DNAME links",
	}, {
		name: "lame server (REFUSED) skipped", qname: "www.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			twoServers(t, f)
			f.answers[key{exCom, "www.example.com.", dns.TypeA}] = &dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeRefused}}
		},
		answer: []string{"www.example.com. 300 IN A 192.0.2.9"},
		asked:  []string{root, gtld, exCom, exCom2},
	}, {
		name: "lame server (answer without AA) skipped", qname: "www.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			twoServers(t, f)
			f.answers[key{exCom, "www.example.com.", dns.TypeA}].Authoritative = false
		},
		answer: []string{"www.example.com. 300 IN A 192.0.2.9"},
		asked:  []string{root, gtld, exCom, exCom2},
	}, {
		name: "upward referral is lame", qname: "www.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			twoServers(t, f)
			f.answers[key{exCom, "www.example.com.", dns.TypeA}] = referral(t, []string{". 3600 IN NS a.root."}, "a.root. 3600 IN A "+root)
		},
		answer: []string{"www.example.com. 300 IN A 192.0.2.9"},
		asked:  []string{root, gtld, exCom, exCom2},
	}, {
		name: "unreachable server retried once", qname: "www.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			delete(f.answers, key{exCom, "www.example.com.", dns.TypeA})
		},
		reason: NoReachableAuthority, ede: 22, extra: "no server of example.com. answered usefully",
		asked: []string{root, gtld, exCom, exCom},
	}, {
		name: "every server unreachable: Network Error", qname: "www.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			twoServers(t, f)
			f.unreachable = map[string]bool{exCom: true, exCom2: true}
		},
		reason: NetworkError, ede: 23, extra: "www.example.com.: network error: no server of example.com. answered usefully: 10.0.0.3 unreachable, 10.0.0.5 unreachable",
		asked: []string{root, gtld, exCom, exCom2, exCom, exCom2},
	}, {
		name: "one server unreachable, one silent: No Reachable Authority", qname: "www.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			twoServers(t, f)
			f.unreachable = map[string]bool{exCom: true}
			delete(f.answers, key{exCom2, "www.example.com.", dns.TypeA})
		},
		reason: NoReachableAuthority, ede: 22,
		asked: []string{root, gtld, exCom, exCom2, exCom, exCom2},
	}, {
		name: "one server unreachable, one lame: No Reachable Authority", qname: "www.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			twoServers(t, f)
			f.unreachable = map[string]bool{exCom: true}
			f.answers[key{exCom2, "www.example.com.", dns.TypeA}] = &dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeServerFailure}}
		},
		reason: NoReachableAuthority, ede: 22, extra: "no server of example.com. answered usefully: 10.0.0.3 unreachable, 10.0.0.5 lame (rcode SERVFAIL)",
		asked: []string{root, gtld, exCom, exCom2, exCom},
	}, {
		name: "upstream query limit", qname: "www.example.com.", qtype: dns.TypeA, limits: Limits{Queries: 2},
		reason: QueryLimit, ede: 0, extra: "upstream query limit: more than 2 upstream queries",
		asked: []string{root, gtld},
	}, {
		name: "referral limit", qname: "www.example.com.", qtype: dns.TypeA, limits: Limits{Referrals: 1},
		reason: ReferralLimit, ede: 0, extra: "referral limit: more than 1 referrals",
	}, {
		name: "NS names resolved per delegation limited (NXNSAttack)", qname: "www.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			var ns []string
			for i := range 9 {
				ns = append(ns, fmt.Sprintf("example.com. 3600 IN NS ns%d.example.net.", i))
			}
			f.answers[key{gtld, "example.com.", 0}] = referral(t, ns)
			f.answers[key{exNet, "example.net.", 0}] = negative(t, dns.RcodeNameError, "example.net. 300 IN SOA ns.example.net. h.example.net. 1 2 3 4 300")
		},
		limits: Limits{Queries: 100},
		reason: NoReachableAuthority, ede: 22, extra: "no reachable authority: limit of 5 NS names per delegation hit; no server of example.com. answered usefully: ns0.example.net. no address",
		check: func(t *testing.T, f *fake, steps []Step) {
			names := map[string]bool{}
			for _, k := range f.asked {
				if strings.HasSuffix(k.name, ".example.net.") {
					names[k.name] = true
				}
			}
			if len(names) != 5 {
				t.Errorf("%d NS names resolved, want 5: %v", len(names), names)
			}
		},
	}, {
		name: "oversized RRset: the server is lame", qname: "www.example.com.", qtype: dns.TypeA, limits: Limits{RRset: 3},
		setup: func(t *testing.T, f *fake) {
			twoServers(t, f)
			f.answers[key{exCom, "www.example.com.", dns.TypeA}] = answer(t, "www.example.com. 300 IN A 192.0.2.1",
				"www.example.com. 300 IN A 192.0.2.2", "www.example.com. 300 IN A 192.0.2.3", "www.example.com. 300 IN A 192.0.2.4")
		},
		answer: []string{"www.example.com. 300 IN A 192.0.2.9"},
		asked:  []string{root, gtld, exCom, exCom2},
		check: func(t *testing.T, f *fake, steps []Step) {
			if want := "lame: an RRset of 4 records (www.example.com. A), limit 3"; steps[2].Outcome != want {
				t.Errorf("outcome %q, want %q", steps[2].Outcome, want)
			}
		},
	}, {
		name: "answer all out of bailiwick: the server is lame", qname: "www.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			twoServers(t, f)
			f.answers[key{exCom, "www.example.com.", dns.TypeA}] = answer(t, "www.example.net. 300 IN A "+evil)
		},
		answer: []string{"www.example.com. 300 IN A 192.0.2.9"},
		asked:  []string{root, gtld, exCom, exCom2},
	}, {
		name: "cyclic glueless delegations stop", qname: "www.example.com.", qtype: dns.TypeA,
		setup: func(t *testing.T, f *fake) {
			// example.com. is served by ns.example.net., whose zone is
			// served by ns.example.com.: neither can be found.
			f.answers[key{gtld, "example.com.", 0}] = referral(t, []string{"example.com. 3600 IN NS ns.example.net."})
			f.answers[key{gtld, "example.net.", 0}] = referral(t, []string{"example.net. 3600 IN NS ns.example.com."})
		},
		reason: NoReachableAuthority, ede: 22, extra: "no reachable authority: sub-resolutions nested 4 deep hit; no server of example.com. answered usefully: ns.example.net. not resolved (no reachable authority)",
		check: func(t *testing.T, f *fake, steps []Step) {
			// The nesting limit, not the query budget, stops it.
			if d := slices.MaxFunc(steps, func(a, b Step) int { return a.Depth - b.Depth }).Depth; d != DefaultLimits.Depth {
				t.Errorf("deepest step at depth %d, want %d", d, DefaultLimits.Depth)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := world(t)
			if tc.setup != nil {
				tc.setup(t, f)
			}
			var steps []Step
			res, err := resolver(t, f, tc.limits, &steps).Resolve(context.Background(), tc.qname, tc.qtype)
			if tc.reason != 0 {
				var e *Error
				if !errors.As(err, &e) || e.Reason != tc.reason {
					t.Fatalf("error %v, want reason %v", err, tc.reason)
				}
				if code, text := e.EDE(); code != tc.ede || !strings.Contains(text, tc.extra) {
					t.Errorf("EDE %d %q, want %d with %q", code, text, tc.ede, tc.extra)
				}
				if res.Rcode != dns.RcodeServerFailure {
					t.Errorf("rcode %s with an error", dns.RcodeToString[res.Rcode])
				}
			} else if err != nil {
				t.Fatal(err)
			} else {
				if res.Rcode != tc.rcode {
					t.Errorf("rcode %s, want %s", dns.RcodeToString[res.Rcode], dns.RcodeToString[tc.rcode])
				}
				if got := records(res.Answer); !slices.Equal(got, tc.answer) {
					t.Errorf("answer\n%q\nwant\n%q", got, tc.answer)
				}
				if got := records(res.Authority); !slices.Equal(got, tc.authority) {
					t.Errorf("authority\n%q\nwant\n%q", got, tc.authority)
				}
			}
			if tc.asked != nil && !slices.Equal(f.askedOf(), tc.asked) {
				t.Errorf("asked %q, want %q", f.askedOf(), tc.asked)
			}
			if res.Queries != len(f.asked) || len(steps) != len(f.asked) {
				t.Errorf("%d queries counted, %d traced, %d sent", res.Queries, len(steps), len(f.asked))
			}
			if l := cmp.Or(tc.limits.Queries, DefaultLimits.Queries); len(f.asked) > l {
				t.Errorf("%d queries sent, limit %d", len(f.asked), l)
			}
			if slices.Contains(f.askedOf(), evil) {
				t.Errorf("an address from out-of-bailiwick records was asked: %q", f.askedOf())
			}
			if tc.check != nil {
				tc.check(t, f, steps)
			}
		})
	}
}

// chain makes exCom answer the name below+p0.example.com. with a chain of
// five links of type typ (p0 to p1, ..., p4 to p5) and an A record of
// below+p5.example.com.
func chain(t *testing.T, f *fake, below, p, typ string) {
	var rrs []string
	for i := range 5 {
		rrs = append(rrs, fmt.Sprintf("%s%d.example.com. 300 IN %s %s%d.example.com.", p, i, typ, p, i+1))
	}
	rrs = append(rrs, fmt.Sprintf("%s%s5.example.com. 300 IN A 192.0.2.1", below, p))
	f.answers[key{exCom, below + p + "0.example.com.", dns.TypeA}] = answer(t, rrs...)
}

// label63 is a label of 63 octets, the longest; long is three of them.
var (
	label63 = strings.Repeat("l", 63)
	long    = label63 + "." + label63 + "." + label63
)

// twoServers gives example.com. a second server, exCom2, that answers.
func twoServers(t testing.TB, f *fake) {
	f.answers[key{gtld, "example.com.", 0}] = referral(t,
		[]string{"example.com. 3600 IN NS ns1.example.com.", "example.com. 3600 IN NS ns2.example.com."},
		"ns1.example.com. 3600 IN A "+exCom, "ns2.example.com. 3600 IN A "+exCom2)
	f.answers[key{exCom2, "www.example.com.", dns.TypeA}] = answer(t, "www.example.com. 300 IN A 192.0.2.9")
}

// blocking is an Exchanger whose servers never answer.
type blocking struct{}

func (blocking) Exchange(ctx context.Context, _ netip.AddrPort, _ dns.Question) (*dns.Msg, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestTimeout: the total time of a resolution is bounded.
func TestTimeout(t *testing.T) {
	r := New(blocking{}, Options{Limits: Limits{Timeout: 50 * time.Millisecond}})
	_, err := r.Resolve(context.Background(), "www.example.com.", dns.TypeA)
	var e *Error
	if !errors.As(err, &e) || e.Reason != Timeout {
		t.Fatalf("error %v, want a timeout", err)
	}
	if e.Reason.EDE() != 22 {
		t.Errorf("EDE %d, want 22 (No Reachable Authority)", e.Reason.EDE())
	}
}

// TestSharedDeadline: the resolutions of one parent context whose
// deadlines, Timeout from their beginning rounded down to a multiple of
// Timeout/64, round alike share one deadline context, without
// allocating; a parent whose deadline comes first is the resolution's
// context; another parent gets its own, of an uncomparable type too; the
// shared context ends at its deadline.
func TestSharedDeadline(t *testing.T) {
	const timeout = 64 * time.Second
	const slot = timeout / deadlineSlots
	r := New(blocking{}, Options{Limits: Limits{Timeout: timeout}})
	bg := context.Background()
	before := time.Now()
	ctx, cancel := r.withTimeout(bg)
	cancel()
	d, ok := ctx.Deadline()
	if after := time.Now(); !ok || !d.After(before.Add(timeout-slot)) || d.After(after.Add(timeout)) {
		t.Errorf("deadline %v after the call, want within (%v, %v]", d.Sub(after), timeout-slot-after.Sub(before), timeout)
	}
	// A new slot's context when a second has passed (a loaded machine):
	// at most one more per second.
	changes := 0
	start := time.Now()
	if n := testing.AllocsPerRun(100, func() {
		c, cancel := r.withTimeout(bg)
		if c != ctx {
			changes++
			ctx = c
		}
		cancel()
	}); n != 0 {
		t.Errorf("%v allocations for a shared deadline, want 0", n)
	}
	if most := 1 + int(time.Since(start)/slot); changes > most {
		t.Errorf("%d contexts in 101 calls, want at most %d", changes, most)
	}

	sooner, cancelSooner := context.WithTimeout(bg, timeout/2)
	defer cancelSooner()
	if c, cancel := r.withTimeout(sooner); c != sooner {
		t.Errorf("a parent with a sooner deadline: %v, want the parent itself", c)
	} else {
		cancel()
	}

	type uncomparable struct {
		context.Context
		f func()
	}
	for _, p := range []context.Context{context.WithValue(bg, "k", "v"), uncomparable{bg, func() {}}, uncomparable{bg, func() {}}} {
		c, cancel := r.withTimeout(p)
		if c == ctx || c.Value("k") != p.Value("k") {
			t.Errorf("parent %v: shares the context of another parent", p)
		}
		cancel()
	}

	r = New(blocking{}, Options{Limits: Limits{Timeout: 64 * time.Millisecond}})
	c, cancel := r.withTimeout(bg)
	defer cancel()
	<-c.Done()
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Errorf("shared context ended with %v, want its deadline", c.Err())
	}
}

// TestReferral: sort reads a referral into a delegation: its servers
// once each, those with glue first (each with its own addresses, in the
// order they came), glue out of the referring zone's bailiwick dropped
// (RFC 2181 §5.4.1) and told in the trace; in three allocations without
// a trace, whatever the number of servers (and one for NS2.example.com.'s
// canonical form).
func TestReferral(t *testing.T) {
	m := referral(t, []string{
		"example.com. 3600 IN NS ns.example.net.",
		"example.com. 3600 IN NS ns1.example.com.",
		"example.com. 3600 IN NS NS2.example.com.",
		"example.com. 3600 IN NS ns1.example.com.",
	},
		"ns2.example.com. 3600 IN A 192.0.2.2",
		"ns1.example.com. 3600 IN A 192.0.2.1",
		"ns.example.net. 3600 IN A 192.0.2.9",
		"ns2.example.com. 3600 IN AAAA 2001:db8::2",
		"other.example.com. 3600 IN A 192.0.2.3",
	)
	ru := &run{r: New(blocking{}, Options{})}
	q := dns.Question{Name: "www.example.com.", Qtype: dns.TypeA, Qclass: dns.ClassINET}
	var st Step
	ru.r.trace = func(Step) {}
	d, err := ru.sort(m, "com.", q, &st)
	if err != nil || d == nil || d.zone != "example.com." {
		t.Fatalf("%v %+v", err, d)
	}
	var got []string
	for _, s := range d.servers {
		got = append(got, fmt.Sprint(s.Name, s.Addrs, " ", s.Why))
	}
	want := []string{"ns1.example.com.[192.0.2.1] glue from com.", "ns2.example.com.[192.0.2.2 2001:db8::2] glue from com.", "ns.example.net.[] glue from com."}
	if !slices.Equal(got, want) {
		t.Errorf("servers %q, want %q", got, want)
	}
	if want := []string{"ns2.example.com. 3600 IN A 192.0.2.2", "ns1.example.com. 3600 IN A 192.0.2.1", "ns2.example.com. 3600 IN AAAA 2001:db8::2"}; !slices.Equal(st.GlueUsed, want) {
		t.Errorf("glue used %q, want %q", st.GlueUsed, want)
	}
	if want := []string{"ns.example.net. 3600 IN A 192.0.2.9"}; !slices.Equal(st.GlueIgnored, want) {
		t.Errorf("glue ignored %q, want %q", st.GlueIgnored, want)
	}
	ru.r.trace = nil
	if n := testing.AllocsPerRun(100, func() { ru.sort(m, "com.", q, &st) }); n != 4 {
		t.Errorf("%v allocations, want 4", n)
	}
}

// TestRootHints: the embedded hints hold the 13 root servers, each with an
// IPv4 and an IPv6 address.
func TestRootHints(t *testing.T) {
	h := RootHints()
	if len(h) != 13 {
		t.Fatalf("%d root servers, want 13", len(h))
	}
	for _, s := range h {
		if len(s.Addrs) != 2 || !strings.HasSuffix(s.Name, ".root-servers.net.") {
			t.Errorf("%+v", s)
		}
	}
	if s := NotIANARoot(h); s != "" {
		t.Errorf("the embedded hints: %s is not an IANA root server", s)
	}
	for hints, want := range map[string]string{
		". 1 IN NS a.root-servers.net.\na.root-servers.net. 1 IN A 198.41.0.4\n":                                   "",
		". 1 IN NS a.root-servers.net.\na.root-servers.net. 1 IN A 127.0.0.10\n":                                   "a.root-servers.net. 127.0.0.10",
		". 1 IN NS a.root-servers.net.\na.root-servers.net. 1 IN AAAA fd00::1\n":                                   "a.root-servers.net. fd00::1",
		". 1 IN NS ns.private.\nns.private. 1 IN A 198.41.0.4\n":                                                   "ns.private. 198.41.0.4",
		". 1 IN NS a.root-servers.net.\n. 1 IN NS x.\na.root-servers.net. 1 IN A 198.41.0.4\nx. 1 IN A 10.0.0.1\n": "x. 10.0.0.1",
	} {
		s, err := ParseHints(strings.NewReader(hints), "h")
		if err != nil {
			t.Fatal(err)
		}
		if got := NotIANARoot(s); got != want {
			t.Errorf("NotIANARoot(%q) = %q, want %q", hints, got, want)
		}
	}
	if _, err := ParseHints(strings.NewReader(". 1 IN NS a.\nb. 1 IN A 192.0.2.1\n"), "h"); err == nil {
		t.Error("hints without an address for their server accepted")
	}
	if _, err := ParseHints(strings.NewReader(". 1 IN NS a.\na. 1 IN A 192.0.2.300\n"), "h"); err == nil || !strings.Contains(err.Error(), "h: ") {
		t.Errorf("error %v, want one naming the file", err)
	}
}

// TestEDEText: the EXTRA-TEXT is bounded and stays UTF-8 when cut.
func TestEDEText(t *testing.T) {
	for _, tc := range []struct {
		name, detail string
		want         string
	}{
		{"a.", "short", "a.: timeout: short"},
		{"a.", strings.Repeat("x", 300), "a.: timeout: " + strings.Repeat("x", MaxExtraText-3-len("a.: timeout: ")) + "..."},
		// The cut falls inside the two octets of "é": both go.
		{"a.", strings.Repeat("x", MaxExtraText-3-len("a.: timeout: ")-1) + "é" + strings.Repeat("x", 100), "a.: timeout: " + strings.Repeat("x", MaxExtraText-3-len("a.: timeout: ")-1) + "..."},
	} {
		code, text := (&Error{Reason: Timeout, Name: tc.name, Detail: tc.detail}).EDE()
		if code != 22 || text != tc.want || len(text) > MaxExtraText || !utf8.ValidString(text) {
			t.Errorf("%d %q (%d octets), want 22 %q", code, text, len(text), tc.want)
		}
	}
}

// canned are answers a test adds to the world's, made once the test runs.
type canned map[key]func(t testing.TB) *dns.Msg

// tracedWorld returns the world with the answers added, and a Resolver
// asking it with opt (the root as its hint unless opt has hints), whose
// steps go to the slice returned.
func tracedWorld(t testing.TB, answers canned, opt Options) (*fake, *Resolver, *[]Step) {
	f := world(t)
	for k, m := range answers {
		f.answers[k] = m(t)
	}
	r, steps := tracing(f, opt)
	return f, r, steps
}

// tracing returns a Resolver asking f with opt (the root as its hint
// unless opt has hints), whose steps go to the slice returned.
func tracing(f *fake, opt Options) (*Resolver, *[]Step) {
	steps := new([]Step)
	if opt.Hints == nil {
		opt.Hints = []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr(root)}, Why: "root hint"}}
	}
	opt.Trace = func(s Step) { *steps = append(*steps, s) }
	return New(f, opt), steps
}

// checkResult checks a resolution's outcome: the failure reason, or a
// NOERROR with the answer records (zone-file form).
func checkResult(t *testing.T, res *Result, err error, reason Reason, answer []string) {
	t.Helper()
	var e *Error
	switch {
	case reason != 0:
		if !errors.As(err, &e) || e.Reason != reason {
			t.Errorf("error %v, want reason %v", err, reason)
		}
	case err != nil:
		t.Fatal(err)
	default:
		if got := records(res.Answer); res.Rcode != dns.RcodeSuccess || !slices.Equal(got, answer) {
			t.Errorf("%s %q, want NOERROR %q", dns.RcodeToString[res.Rcode], got, answer)
		}
	}
}
