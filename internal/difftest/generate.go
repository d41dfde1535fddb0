package difftest

import (
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// nameInfo is what the generator knows about one owner name.
type nameInfo struct {
	zone  string
	types []uint16
}

// probeTypes are asked at every name whether or not it has them, so that
// both positive answers and NODATA (RFC 2308 section 2.2) are covered.
func probeTypes() []uint16 {
	return []uint16{
		dns.TypeA, dns.TypeAAAA, dns.TypeMX, dns.TypeTXT, dns.TypeNS,
		dns.TypeSOA, dns.TypeCNAME, dns.TypeDS, dns.TypeANY,
	}
}

// outsideNames belong to no served zone; an authoritative-only server
// answers them REFUSED (RFC 1035 section 4.1.1 allows refusing for policy;
// Knot and NSD both do).
func outsideNames() []string {
	return []string{
		".", "test.", "example.com.", "foo.example.org.", "xexample.test.",
		"example.testx.", "www.example.net.", "gen.test.example.",
	}
}

// Generate derives a deterministic list of queries from zones: every
// owner name with its own types and the probe types, missing names below
// existing names, wildcards, empty non-terminals, delegations and DNAMEs,
// names outside every zone, mixed-case QNAMEs, and a spread of transports
// and EDNS payload sizes. The same zones always give the same list.
func Generate(zones []*Zone) []Query {
	names := map[string]*nameInfo{}
	var order []string
	add := func(zone, name string, t uint16) {
		n, ok := names[name]
		if !ok {
			n = &nameInfo{zone: zone}
			names[name] = n
			order = append(order, name)
		}
		if t != 0 && !slices.Contains(n.types, t) {
			n.types = append(n.types, t)
		}
	}
	for _, z := range zones {
		if z.Origin == bigZone {
			// Its thousands of names would swamp the list; it gets the
			// few queries of bigQueries instead.
			continue
		}
		for _, rr := range z.Records {
			h := rr.Header()
			owner := dns.CanonicalName(h.Name)
			add(z.Origin, owner, h.Rrtype)
			// Every ancestor up to the apex exists, as an empty
			// non-terminal if nothing else (RFC 8499 section 7).
			for p := parent(owner); dns.IsSubDomain(z.Origin, p) && p != owner; p = parent(p) {
				add(z.Origin, p, 0)
				if p == z.Origin {
					break
				}
			}
		}
	}
	slices.Sort(order)

	var base []Query
	q := func(cat, name string, types ...uint16) {
		for _, t := range types {
			base = append(base, Query{Name: name, Type: t, Category: cat})
		}
	}
	isCut := func(name string) bool {
		n := names[name]
		return n != nil && n.zone != name && slices.Contains(n.types, dns.TypeNS)
	}
	for _, name := range order {
		n := names[name]
		cat := category(name, n, isCut)
		types := slices.Clone(n.types)
		for _, t := range probeTypes() {
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
		q(cat, name, types...)
		// A missing name directly below each existing one: NXDOMAIN, or a
		// wildcard, DNAME or referral answer depending on what is above.
		below := under("nx-probe", name)
		switch {
		case strings.HasPrefix(name, "*."):
			// Wildcard owners: names the wildcard synthesizes for, one
			// and two labels down (RFC 4592 section 3.3.1).
			rest := strings.TrimPrefix(name, "*.")
			q("wildcard-synth", under("foo", rest), dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeMX, dns.TypeCNAME, dns.TypeNS, dns.TypeANY, dns.TypeSRV)
			q("wildcard-synth", under("a.b", rest), dns.TypeA, dns.TypeTXT)
			q("wildcard-below", under("nx", name), dns.TypeA)
		case slices.Contains(n.types, dns.TypeDNAME):
			q("dname-below", under("www", name), dns.TypeA, dns.TypeAAAA, dns.TypeMX, dns.TypeTXT, dns.TypeCNAME)
			q("dname-below", under("mail", name), dns.TypeMX, dns.TypeA)
			q("dname-below", under("a.b", name), dns.TypeA)
		case isCut(name):
			q("below-delegation", under("www", name), dns.TypeA, dns.TypeNS, dns.TypeDS)
			q("below-delegation", under("a.b", name), dns.TypeMX)
		default:
			q("nxdomain", below, dns.TypeA, dns.TypeTXT)
		}
	}
	for _, name := range outsideNames() {
		q("outside", name, dns.TypeA, dns.TypeSOA, dns.TypeNS)
	}

	out := vary(base)
	out = append(out, protocolQueries()...)
	for _, z := range zones {
		if z.Origin == bigZone {
			out = append(out, bigQueries()...)
		}
	}
	return out
}

// bigZone is the origin of the zone with the 1000-record MX RRset.
const bigZone = "big.test."

// bigQueries ask for big.test.'s huge RRset in every transport and size,
// and for a few of its names.
func bigQueries() []Query {
	var out []Query
	for _, v := range []struct {
		net  string
		edns uint16
	}{{"tcp", 0}, {"tcp", 1232}, {"tcp", 65535}, {"udp", 0}, {"udp", 1232}, {"udp", 65535}} {
		for _, t := range []uint16{dns.TypeMX, dns.TypeANY, dns.TypeAAAA} {
			out = append(out, Query{Name: "huge.big.test.", Type: t, Net: v.net, EDNS: v.edns, Category: "huge"})
		}
	}
	for _, n := range []string{"mx1.huge.big.test.", "mx999.huge.big.test.", "MX500.Huge.Big.Test.", "nx.huge.big.test.", "big.test."} {
		out = append(out, Query{Name: n, Type: dns.TypeAAAA, Net: "udp", EDNS: 1232, Category: "huge"})
	}
	return out
}

// protocolQueries exercise header and EDNS handling rather than zone
// lookups: DO echo, EDNS versions, opcodes, classes and unknown types.
func protocolQueries() []Query {
	var out []Query
	for _, net := range []string{"udp", "tcp"} {
		p := func(q Query) {
			q.Net, q.Category = net, "protocol"
			if q.Type == 0 {
				q.Type = dns.TypeA
			}
			out = append(out, q)
		}
		p(Query{Name: "www.example.test.", EDNS: 1232, DO: true})
		p(Query{Name: "nothere.example.test.", EDNS: 1232, DO: true})
		p(Query{Name: "sub.example.test.", Type: dns.TypeNS, EDNS: 4096, DO: true})
		p(Query{Name: "www.example.test.", EDNS: 1232, EDNSVersion: 1})
		p(Query{Name: "example.com.", EDNS: 1232, EDNSVersion: 1})
		p(Query{Name: "www.example.test.", EDNS: 256})
		p(Query{Name: "bigtxt.example.test.", Type: dns.TypeTXT, EDNS: 256})
		p(Query{Name: "bigtxt.example.test.", Type: dns.TypeTXT, EDNS: 512})
		p(Query{Name: "www.example.test.", Type: 65280, EDNS: 1232})
		p(Query{Name: "www.example.test.", Type: dns.TypeNULL, EDNS: 1232})
		p(Query{Name: "www.example.test.", Opcode: dns.OpcodeStatus, EDNS: 1232})
		p(Query{Name: "www.example.test.", Opcode: dns.OpcodeIQuery})
		p(Query{Name: "www.example.test.", Class: dns.ClassCHAOS, Type: dns.TypeTXT})
		p(Query{Name: "www.example.test.", Class: dns.ClassANY, EDNS: 1232})
		p(Query{Name: "www.example.test.", Class: dns.ClassHESIOD})
		p(Query{Name: "www.example.test.", Type: dns.TypeRRSIG, EDNS: 1232})
		// RRSIG at the apex (several signed types), at an alias (not
		// followed) and at a wildcard; NSEC at an alias.
		p(Query{Name: "example.test.", Type: dns.TypeRRSIG, EDNS: 1232})
		p(Query{Name: "alias.example.test.", Type: dns.TypeRRSIG, EDNS: 1232, DO: true})
		p(Query{Name: "alias.example.test.", Type: dns.TypeNSEC, EDNS: 1232})
		p(Query{Name: "x.wild.example.test.", Type: dns.TypeRRSIG, EDNS: 1232, DO: true})
		p(Query{Name: "www.example.test.", Type: dns.TypeNSEC, EDNS: 1232})
		p(Query{Name: "example.test.", Type: dns.TypeDNSKEY, EDNS: 1232, DO: true})
		p(Query{Name: "www.example.test.", Type: dns.TypeOPT, EDNS: 1232})
		for _, m := range []string{"two-opt", "opt-owner", "unknown-option", "no-question",
			"two-questions", "answer-in-query", "qr-set", "trailing", "short", "header-z", "opt-z", "cd-ad"} {
			p(Query{Name: "www.example.test.", EDNS: 1232, Mutate: m})
		}
		p(Query{Name: "www.example.test.", Mutate: "no-question"})
		// Zone transfers without an ACL that allows them (RFC 5936
		// section 6: a server may refuse).
		p(Query{Name: "example.test.", Type: dns.TypeAXFR, EDNS: 1232})
		p(Query{Name: "example.test.", Type: dns.TypeIXFR, EDNS: 1232})
		p(Query{Name: "nothere.test.", Type: dns.TypeAXFR})
		p(Query{Name: "example.test.", Type: dns.TypeMAILB})
		p(Query{Name: "example.test.", Opcode: dns.OpcodeNotify, Type: dns.TypeSOA})
		p(Query{Name: "example.test.", Opcode: dns.OpcodeUpdate, Type: dns.TypeSOA})
	}
	return out
}

// vary sends every base query once over UDP with a 1232-octet payload and
// once more in a rotating transport and EDNS variant, mixes the case of a
// quarter of the QNAMEs and sets RD on a third.
func vary(base []Query) []Query {
	// Deterministic variation: a local generator with a fixed seed, so the
	// list is reproducible and no global random state is touched.
	rng := rand.New(rand.NewPCG(20261202, 0x20))
	variants := []struct {
		net  string
		edns uint16
	}{{"udp", 0}, {"udp", 4096}, {"tcp", 0}, {"tcp", 1232}}
	// Large answers also meet the sizes around the usual limits: the
	// minimum of RFC 6891 section 6.2.5, a common path MTU, the maximum.
	bigVariants := append(variants[:len(variants):len(variants)], []struct {
		net  string
		edns uint16
	}{{"udp", 512}, {"udp", 1400}, {"udp", 65535}}...)
	var out []Query
	for i, b := range base {
		if rng.IntN(4) == 0 {
			b.Name = mixCase(b.Name, rng.Uint64())
		}
		b.RD = i%3 == 0
		// Every query once over UDP with the common 1232-octet payload
		// (the DNS Flag Day 2020 value) ...
		first := b
		first.Net, first.EDNS = "udp", 1232
		out = append(out, first)
		// ... and once more in a rotating variant; large or ANY answers
		// get every variant, since truncation is where servers differ.
		if big(b) {
			for _, v := range bigVariants {
				x := b
				x.Net, x.EDNS = v.net, v.edns
				out = append(out, x)
			}
			continue
		}
		v := variants[i%len(variants)]
		x := b
		x.Net, x.EDNS = v.net, v.edns
		out = append(out, x)
	}
	return out
}

// big reports whether q asks for an answer that may not fit 512 octets.
func big(q Query) bool {
	n := strings.ToLower(q.Name)
	for _, p := range []string{"bigtxt.", "many.", "bigdeleg.", "www.bigdeleg.", "bigmx."} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return q.Type == dns.TypeANY
}

// category classifies an existing name for the summary.
func category(name string, n *nameInfo, isCut func(string) bool) string {
	switch {
	case name == n.zone:
		return "apex"
	case strings.HasPrefix(name, "*."):
		return "wildcard-owner"
	case len(n.types) == 0:
		return "empty-non-terminal"
	case isCut(name):
		return "delegation"
	case slices.Contains(n.types, dns.TypeCNAME):
		return "cname"
	case slices.Contains(n.types, dns.TypeDNAME):
		return "dname"
	}
	for p := parent(name); p != n.zone && p != "."; p = parent(p) {
		if isCut(p) {
			return "glue"
		}
	}
	return "existing"
}

// under returns the name formed by putting labels in front of name, which
// may be the root.
func under(labels, name string) string {
	if name == "." {
		return labels + "."
	}
	return labels + "." + name
}

// parent returns the name one label up ("." stays ".").
func parent(name string) string {
	if name == "." {
		return "."
	}
	i, end := dns.NextLabel(name, 0)
	if end {
		return "."
	}
	return name[i:]
}
