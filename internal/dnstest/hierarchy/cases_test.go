package hierarchy_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest/hierarchy"
)

// first is the first address of this package's loopback block,
// 127.0.0.20-39: the standard hierarchy takes hierarchy.StandardAddrs
// from it, Unbound listens on the last.
const first = 20

// noEDE marks a case whose answer carries no Extended DNS Error.
const noEDE = -1

// resolverCase is one question to a resolver over the hierarchy and the
// answer it must give.
type resolverCase struct {
	name  string
	qtype uint16
	rcode int
	// answer is the answer section in order, each record as
	// "owner TTL TYPE rdata" with the zone's TTL: a resolver's TTL may
	// be lower (time spent in a cache), never higher.
	answer []string
	// soa is the owner of the SOA a negative answer carries in its
	// authority section ("" for none).
	soa string
	// ede is the Extended DNS Error of a SERVFAIL (noEDE for none).
	ede int
	// pending, when set, says why Tern's resolver does not give this
	// answer yet (work under way elsewhere): a failure then skips the
	// case instead of failing it.
	pending string
	// maxQueries bounds the upstream queries (0: not checked), where
	// the count is what the case is about (loops, lame servers).
	maxQueries int
}

// cases are the resolutions the hierarchy is there for, each named by
// what it exercises.
var cases = []struct {
	what string
	resolverCase
}{
	{"delegations with glue, two A records (Tern and NSD serve the zone)", resolverCase{name: "host.example.tld.", qtype: dns.TypeA,
		answer: []string{"host.example.tld. 300 A 192.0.2.1", "host.example.tld. 300 A 192.0.2.2"}, ede: noEDE, maxQueries: 6}},
	{"TXT", resolverCase{name: "host.example.tld.", qtype: dns.TypeTXT,
		answer: []string{`host.example.tld. 300 TXT "host" "example.tld"`}, ede: noEDE}},
	{"MX", resolverCase{name: "host.example.tld.", qtype: dns.TypeMX,
		answer: []string{"host.example.tld. 300 MX 10 host.example.tld."}, ede: noEDE}},
	{"NS of a child zone, from the child", resolverCase{name: "example.tld.", qtype: dns.TypeNS,
		answer: []string{"example.tld. 3600 NS ns1.example.tld.", "example.tld. 3600 NS ns2.example.tld."}, ede: noEDE}},
	{"SOA of a TLD (Knot)", resolverCase{name: "tld.", qtype: dns.TypeSOA,
		answer: []string{"tld. 3600 SOA ns1.nic.tld. hostmaster.nic.tld. 1 3600 900 604800 900"}, ede: noEDE}},
	{"NODATA (Tern or NSD)", resolverCase{name: "host.example.tld.", qtype: dns.TypeAAAA, soa: "example.tld.", ede: noEDE}},
	{"NXDOMAIN (Tern or NSD)", resolverCase{name: "nx.example.tld.", qtype: dns.TypeA, rcode: dns.RcodeNameError, soa: "example.tld.", ede: noEDE}},
	{"NXDOMAIN from a TLD (Knot)", resolverCase{name: "nx.tld.", qtype: dns.TypeA, rcode: dns.RcodeNameError, soa: "tld.", ede: noEDE}},
	{"NXDOMAIN from the root (Tern)", resolverCase{name: "nosuchtld.", qtype: dns.TypeA, rcode: dns.RcodeNameError, soa: ".", ede: noEDE}},
	{"NODATA from a TLD (NSD)", resolverCase{name: "ns1.nic.net.", qtype: dns.TypeAAAA, soa: "net.", ede: noEDE}},
	{"delegation with glue to Knot", resolverCase{name: "www.example.net.", qtype: dns.TypeA,
		answer: []string{"www.example.net. 150 A 192.0.2.91"}, ede: noEDE}},
	{"NS name out of bailiwick, resolved (Knot)", resolverCase{name: "www.cdn.net.", qtype: dns.TypeA,
		answer: []string{"www.cdn.net. 250 A 192.0.2.80"}, ede: noEDE, maxQueries: 12}},
	{"NODATA behind an out-of-bailiwick NS (Knot)", resolverCase{name: "www.cdn.net.", qtype: dns.TypeAAAA, soa: "cdn.net.", ede: noEDE}},
	{"NS name out of bailiwick, resolved (NSD)", resolverCase{name: "www.noglue.tld.", qtype: dns.TypeA,
		answer: []string{"www.noglue.tld. 400 A 192.0.2.100"}, ede: noEDE}},
	{"CNAME into another zone", resolverCase{name: "www.example.tld.", qtype: dns.TypeA,
		answer: []string{"www.example.tld. 200 CNAME www.cdn.net.", "www.cdn.net. 250 A 192.0.2.80"}, ede: noEDE}},
	{"CNAME asked for", resolverCase{name: "www.example.tld.", qtype: dns.TypeCNAME,
		answer: []string{"www.example.tld. 200 CNAME www.cdn.net."}, ede: noEDE}},
	{"CNAME chain across three zones and three implementations", resolverCase{name: "chain.example.tld.", qtype: dns.TypeA,
		answer: []string{"chain.example.tld. 200 CNAME c1.cdn.net.", "c1.cdn.net. 250 CNAME c2.example.net.", "c2.example.net. 150 A 192.0.2.90"}, ede: noEDE}},
	{"CNAME to a name that does not exist (RFC 6604)", resolverCase{name: "broken.example.tld.", qtype: dns.TypeA, rcode: dns.RcodeNameError,
		answer: []string{"broken.example.tld. 200 CNAME nx.cdn.net."}, soa: "cdn.net.", ede: noEDE}},
	{"DNAME into another zone", resolverCase{name: "www.alias.example.tld.", qtype: dns.TypeA,
		answer: []string{"alias.example.tld. 200 DNAME cdn.net.", "www.alias.example.tld. 200 CNAME www.cdn.net.", "www.cdn.net. 250 A 192.0.2.80"}, ede: noEDE}},
	{"truncated over UDP, asked again over TCP", resolverCase{name: "big.example.tld.", qtype: dns.TypeTXT, answer: bigTXT(), ede: noEDE}},
	{"an RRset of more than 100 records (CVE-2024-1737)", resolverCase{name: "many.example.tld.", qtype: dns.TypeA, rcode: dns.RcodeServerFailure, ede: 22, maxQueries: 6}},
	{"wildcard", resolverCase{name: "a.b.wild.example.tld.", qtype: dns.TypeA,
		answer: []string{"a.b.wild.example.tld. 300 A 192.0.2.7"}, ede: noEDE}},
	{"wildcard NODATA", resolverCase{name: "x.wild.example.tld.", qtype: dns.TypeAAAA, soa: "example.tld.", ede: noEDE}},
	{"empty non-terminal", resolverCase{name: "wild.example.tld.", qtype: dns.TypeA, soa: "example.tld.", ede: noEDE}},
	{"one lame server of two (REFUSED)", resolverCase{name: "www.partlame.tld.", qtype: dns.TypeA,
		answer: []string{"www.partlame.tld. 500 A 192.0.2.110"}, ede: noEDE, maxQueries: 6}},
	{"one unresponsive server of two", resolverCase{name: "www.partdead.tld.", qtype: dns.TypeA,
		answer: []string{"www.partdead.tld. 600 A 192.0.2.120"}, ede: noEDE, maxQueries: 8}},
	{"every server lame (REFUSED)", resolverCase{name: "www.lame.tld.", qtype: dns.TypeA, rcode: dns.RcodeServerFailure, ede: 22, maxQueries: 8}},
	{"every server unresponsive", resolverCase{name: "www.dead.tld.", qtype: dns.TypeA, rcode: dns.RcodeServerFailure, ede: 22, maxQueries: 8}},
	{"nothing listening (port unreachable)", resolverCase{name: "www.closed.tld.", qtype: dns.TypeA, rcode: dns.RcodeServerFailure, ede: 23, maxQueries: 8}},
	{"CNAME loop across zones", resolverCase{name: "loopa.example.tld.", qtype: dns.TypeA, rcode: dns.RcodeServerFailure, ede: 0, maxQueries: 12}},
	{"answers with a wrong ID and from a wrong port ignored (RFC 5452 §9.1)", resolverCase{name: hierarchy.EvilSpoof, qtype: dns.TypeA,
		answer: []string{hierarchy.EvilSpoof + " 300 A 192.0.2.200"}, ede: noEDE}},
	{"records out of bailiwick dropped (RFC 2181 §5.4.1)", resolverCase{name: hierarchy.EvilPoison, qtype: dns.TypeA,
		answer: []string{hierarchy.EvilPoison + " 300 A 192.0.2.201"}, ede: noEDE}},
	{"empty truncated answer, asked again over TCP (RFC 7766 §5)", resolverCase{name: hierarchy.EvilTruncated, qtype: dns.TypeA,
		answer: []string{hierarchy.EvilTruncated + " 300 A 192.0.2.202"}, ede: noEDE}},
	{"upward referral: lame", resolverCase{name: hierarchy.EvilUpward, qtype: dns.TypeA, rcode: dns.RcodeServerFailure, ede: 22, maxQueries: 8}},
	{"NXDOMAIN from a hand-written server", resolverCase{name: "nx.evil.tld.", qtype: dns.TypeA, rcode: dns.RcodeNameError, soa: "evil.tld.", ede: noEDE}},
	{"DS of a delegated zone, from the parent (RFC 4035 §3.1.4.1)", resolverCase{name: "example.tld.", qtype: dns.TypeDS, soa: "tld.", ede: noEDE}},
	{"NS at a child apex behind an out-of-bailiwick NS", resolverCase{name: "cdn.net.", qtype: dns.TypeNS,
		answer: []string{"cdn.net. 3600 NS ns-cdn.example.tld."}, ede: noEDE}},
	{"wildcard CNAME into another zone", resolverCase{name: "x.wc.example.tld.", qtype: dns.TypeA,
		answer: []string{"x.wc.example.tld. 200 CNAME www.cdn.net.", "www.cdn.net. 250 A 192.0.2.80"}, ede: noEDE}},
	{"DNAME asked for", resolverCase{name: "alias.example.tld.", qtype: dns.TypeDNAME,
		answer: []string{"alias.example.tld. 200 DNAME cdn.net."}, ede: noEDE}},
	{"question in mixed case", resolverCase{name: "HoSt.ExAmPlE.tLd.", qtype: dns.TypeA,
		answer: []string{"host.example.tld. 300 A 192.0.2.1", "host.example.tld. 300 A 192.0.2.2"}, ede: noEDE}},
	{"CNAME chain of 11 links across zones", resolverCase{name: "l0.chain11.example.tld.", qtype: dns.TypeA, answer: chainAnswer(11), ede: noEDE}},
	{"CNAME chain of 12 links: over the limit", resolverCase{name: "l0.chain12.example.tld.", qtype: dns.TypeA, rcode: dns.RcodeServerFailure, ede: 0, maxQueries: 50}},
	{"in-bailiwick NS without glue", resolverCase{name: "www.glueless.tld.", qtype: dns.TypeA, rcode: dns.RcodeServerFailure, ede: 22, maxQueries: 6}},
	{"delegation loop (tsuNAME)", resolverCase{name: "www.loop1.tld.", qtype: dns.TypeA, rcode: dns.RcodeServerFailure, ede: 22, maxQueries: 50}},
}

// check compares a resolver's response m with the case, on the wire:
// rcode, the answer section record by record (TTLs at most the zone's),
// the SOA of a negative answer and the Extended DNS Error of a failure.
func (c resolverCase) check(m *dns.Msg) []string {
	var errs []string
	if m.Rcode != c.rcode {
		errs = append(errs, fmt.Sprintf("rcode %s, want %s", dns.RcodeToString[m.Rcode], dns.RcodeToString[c.rcode]))
	}
	got := make([]string, len(m.Answer))
	for i, rr := range m.Answer {
		got[i] = rrText(rr)
	}
	if len(got) != len(c.answer) {
		errs = append(errs, fmt.Sprintf("answer %q, want %q", got, c.answer))
	} else {
		for i, want := range c.answer {
			wr, err := dns.NewRR(want)
			if err != nil {
				panic(err) // the table is wrong
			}
			g := m.Answer[i]
			if noTTL(g) != noTTL(wr) || g.Header().Ttl > wr.Header().Ttl || g.Header().Ttl == 0 {
				errs = append(errs, fmt.Sprintf("answer %d: %q, want %q (TTL at most %d, not 0)", i, got[i], want, wr.Header().Ttl))
			}
		}
	}
	soas := soaOwners(m)
	if c.soa != "" && !slices.Equal(soas, []string{c.soa}) || c.soa == "" && len(soas) > 0 {
		errs = append(errs, fmt.Sprintf("authority SOA of %q, want %q", soas, c.soa))
	}
	if ede := edeOf(m); ede != c.ede {
		errs = append(errs, fmt.Sprintf("EDE %d, want %d", ede, c.ede))
	}
	return errs
}

// report fails t with errs, the differences check found (with what, the
// response, logged), or skips it when the case is pending; with -v what
// is logged anyway.
func (c resolverCase) report(t *testing.T, errs []string, what string) {
	t.Helper()
	if len(errs) > 0 || testing.Verbose() {
		t.Log(what)
	}
	if len(errs) > 0 && c.pending != "" {
		t.Skipf("pending (%s): %s", c.pending, strings.Join(errs, "; "))
	}
	if len(errs) == 0 && c.pending != "" {
		t.Logf("passes although marked pending (%s): remove the mark", c.pending)
	}
	for _, e := range errs {
		t.Errorf("%s %s: %s", c.name, dns.Type(c.qtype), e)
	}
}

// edeOf returns the info code of m's Extended DNS Error, or noEDE.
func edeOf(m *dns.Msg) int {
	if o := m.IsEdns0(); o != nil {
		for _, opt := range o.Option {
			if e, ok := opt.(*dns.EDNS0_EDE); ok {
				return int(e.InfoCode)
			}
		}
	}
	return noEDE
}

// rrText is a record on one line, spaces for tabs, the class left out.
func rrText(rr dns.RR) string {
	f := strings.Fields(rr.String())
	if len(f) > 3 && f[2] == "IN" {
		f = append(f[:2], f[3:]...)
	}
	return strings.Join(f, " ")
}

// noTTL is a record's text with owner and names lowercased and the TTL
// left out: the form answers are compared in.
func noTTL(rr dns.RR) string {
	rr = dns.Copy(rr)
	rr.Header().Ttl = 0
	return strings.ToLower(rrText(rr))
}

// rrsets returns the answer section as sorted TTL-less records: RRsets
// compared as sets, whatever their order.
func rrsets(rrs []dns.RR) []string {
	out := make([]string, len(rrs))
	for i, rr := range rrs {
		out[i] = noTTL(rr)
	}
	sort.Strings(out)
	return out
}

// env is what the tests share: the standard hierarchy, Tern's served
// resolver and Unbound over it, started once (each start of knotd, nsd
// and Unbound costs a second or two on a loaded machine).
type env struct {
	h       *hierarchy.Standard
	served  string // Tern's served resolver, host:port
	unbound string // Unbound, host:port, or "" and why in noUnbound
	// noUnbound says why Unbound is not running.
	noUnbound string
}

// needUnbound returns Unbound's address, or skips the test.
func (e *env) needUnbound(t *testing.T) string {
	t.Helper()
	if e.unbound == "" {
		t.Skip(e.noUnbound)
	}
	return e.unbound
}

// TestHierarchy runs the resolver tests over one standard hierarchy, one
// after the other: each takes care of the state it leaves in the served
// resolver and Unbound, whose caches they share.
func TestHierarchy(t *testing.T) {
	e := &env{h: hierarchy.StartStandard(t, first)}
	e.served = startServed(t, e.h)
	e.unbound, e.noUnbound = startUnbound(t, e.h)
	for _, tc := range []struct {
		name string
		run  func(*testing.T, *env)
	}{
		{"Resolve", testResolve}, {"ResolveWithoutCache", testResolveWithoutCache}, {"Cache", testCache},
		{"Served", testServed}, {"ServedTTLs", testServedTTLs}, {"Unbound", testUnbound}, {"UnboundGenerated", testUnboundGenerated},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, e) })
	}
}

// bigTXT is the answer for big.example.tld. TXT.
func bigTXT() []string {
	var out []string
	for i := range 30 {
		out = append(out, fmt.Sprintf(`big.example.tld. 300 TXT "record %02d of a TXT RRset too large for a UDP answer of 1232 bytes"`, i))
	}
	return out
}

// soaOwners returns the owners of the SOA records in m's authority
// section, lowercased.
func soaOwners(m *dns.Msg) []string {
	var soas []string
	for _, rr := range m.Ns {
		if rr.Header().Rrtype == dns.TypeSOA {
			soas = append(soas, strings.ToLower(rr.Header().Name))
		}
	}
	return soas
}

// chainAnswer is the answer at the end of the chain of n links.
func chainAnswer(n int) []string {
	var out []string
	zone := func(i int) string {
		if i%2 == 0 {
			return "example.tld."
		}
		return "cdn.net."
	}
	for i := range n {
		out = append(out, fmt.Sprintf("l%d.chain%d.%s 300 CNAME l%d.chain%d.%s", i, n, zone(i), i+1, n, zone(i+1)))
	}
	return append(out, fmt.Sprintf("l%d.chain%d.%s 300 A 192.0.2.%d", n, n, zone(n), n))
}
