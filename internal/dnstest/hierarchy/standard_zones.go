package hierarchy

import (
	"fmt"
	"strings"
)

// The standard hierarchy's addresses, as offsets from its first. Each server is
// one implementation listening on one or more of them; every address
// serves all the zones of its server (as shared hosting does), so a zone
// whose parent is served on the same address would be answered without
// its referral: the layout keeps each parent and child on different
// implementations.
const (
	// AddrRoot: Tern (in-process), the root zone.
	AddrRoot = 0
	// AddrKnot and AddrKnot2: knotd, tld., cdn.net. and example.net.
	AddrKnot  = 1
	AddrKnot2 = 6
	// AddrNSD and AddrNSD2: nsd, net., example.tld. (beside Tern) and
	// noglue.tld.; AddrNSD2 is also the lame server of lame.tld. and
	// ns1.partlame.tld. (nsd serves neither zone nor their parents and
	// answers REFUSED).
	AddrNSD  = 2
	AddrNSD2 = 4
	// AddrTern: Tern (in-process), example.tld., partlame.tld. and
	// partdead.tld.
	AddrTern = 3
	// AddrDrop reads queries and never answers (UDP and TCP): the
	// unresponsive server of dead.tld. and ns1.partdead.tld.
	AddrDrop = 5
	// AddrClosed has nothing listening: the kernel answers ICMP port
	// unreachable (a connection refused), the server of closed.tld.
	AddrClosed = 7
	// AddrEvil: a misbehaving server of evil.tld. and upward.tld.
	// (evil.go).
	AddrEvil = 8
	// StandardAddrs is the number of addresses the hierarchy takes.
	StandardAddrs = 9
)

// Implementation names a server of the hierarchy.
type Implementation string

// The implementations serving the hierarchy.
const (
	Tern Implementation = "tern"
	Knot Implementation = "knot"
	NSD  Implementation = "nsd"
)

// binaries are the programs of the peers.
var binaries = map[Implementation]string{Knot: "knotd", NSD: "nsd"}

// serverSpec is one server: an implementation, its addresses (offsets)
// and the zones it serves.
type serverSpec struct {
	name  string
	impl  Implementation
	addrs []int
	zones []string
}

// standardServers is the layout. A peer missing from the machine is replaced by
// an in-process Tern on the same addresses with the same zones.
var standardServers = []serverSpec{
	{"root", Tern, []int{AddrRoot}, []string{"."}},
	{"knot", Knot, []int{AddrKnot, AddrKnot2}, []string{"tld.", "cdn.net.", "example.net."}},
	{"nsd", NSD, []int{AddrNSD, AddrNSD2}, []string{"net.", "example.tld.", "noglue.tld."}},
	{"sld", Tern, []int{AddrTern}, []string{"example.tld.", "partlame.tld.", "partdead.tld."}},
}

// standardZones holds each zone's master file; {N} stands for the address at
// offset N. TTLs differ by zone and record so that a test can tell which
// record a TTL came from; negative TTLs are the SOA MINIMUM (below the
// SOA TTL everywhere, RFC 2308 §5).
var standardZones = map[string]string{
	".": `$TTL 86400
. SOA a.root. hostmaster.root. 1 1800 900 604800 3600
. NS a.root.
a.root. A {0}
tld. 172800 NS ns1.nic.tld.
ns1.nic.tld. 172800 A {1}
net. 172800 NS ns1.nic.net.
ns1.nic.net. 172800 A {2}
`,
	// tld.: a delegation with glue to two servers (Tern and NSD), one
	// without glue to a name in another TLD, lame, unresponsive and
	// refusing delegations, partly lame and partly unresponsive ones,
	// and one half of a delegation loop (tsuNAME).
	"tld.": `$TTL 3600
tld. SOA ns1.nic.tld. hostmaster.nic.tld. 1 3600 900 604800 900
tld. NS ns1.nic.tld.
ns1.nic.tld. A {1}
example.tld. NS ns1.example.tld.
example.tld. NS ns2.example.tld.
ns1.example.tld. A {3}
ns2.example.tld. A {2}
noglue.tld. NS ns-noglue.example.net.
lame.tld. NS ns.lame.tld.
ns.lame.tld. A {4}
partlame.tld. NS ns1.partlame.tld.
partlame.tld. NS ns2.partlame.tld.
ns1.partlame.tld. A {4}
ns2.partlame.tld. A {3}
dead.tld. NS ns.dead.tld.
ns.dead.tld. A {5}
partdead.tld. NS ns1.partdead.tld.
partdead.tld. NS ns2.partdead.tld.
ns1.partdead.tld. A {5}
ns2.partdead.tld. A {3}
closed.tld. NS ns.closed.tld.
ns.closed.tld. A {7}
loop1.tld. NS ns.loop2.net.
glueless.tld. NS ns.glueless.tld.
evil.tld. NS ns.evil.tld.
ns.evil.tld. A {8}
upward.tld. NS ns.upward.tld.
ns.upward.tld. A {8}
`,
	// net.: cdn.net. is served by a name out of net.'s bailiwick (no
	// glue can be given), example.net. has glue, loop2.net. is the other
	// half of the loop.
	"net.": `$TTL 3600
net. SOA ns1.nic.net. hostmaster.nic.net. 1 3600 900 604800 900
net. NS ns1.nic.net.
ns1.nic.net. A {2}
cdn.net. NS ns-cdn.example.tld.
example.net. NS ns.example.net.
ns.example.net. A {6}
loop2.net. NS ns.loop1.tld.
`,
	"example.tld.": `$TTL 3600
example.tld. SOA ns1.example.tld. hostmaster.example.tld. 1 3600 900 604800 600
example.tld. NS ns1.example.tld.
example.tld. NS ns2.example.tld.
ns1.example.tld. A {3}
ns2.example.tld. A {2}
ns-cdn.example.tld. A {6}
host.example.tld. 300 A 192.0.2.1
host.example.tld. 300 A 192.0.2.2
host.example.tld. 300 TXT "host" "example.tld"
host.example.tld. 300 MX 10 host.example.tld.
www.example.tld. 200 CNAME www.cdn.net.
chain.example.tld. 200 CNAME c1.cdn.net.
broken.example.tld. 200 CNAME nx.cdn.net.
loopa.example.tld. 200 CNAME loopb.cdn.net.
alias.example.tld. 200 DNAME cdn.net.
*.wild.example.tld. 300 A 192.0.2.7
*.wc.example.tld. 200 CNAME www.cdn.net.
` + bigRRsets + chains("example.tld.", 0),
	"cdn.net.": `$TTL 3600
cdn.net. SOA ns-cdn.example.tld. hostmaster.cdn.net. 1 3600 900 604800 120
cdn.net. NS ns-cdn.example.tld.
www.cdn.net. 250 A 192.0.2.80
c1.cdn.net. 250 CNAME c2.example.net.
loopb.cdn.net. 250 CNAME loopa.example.tld.
` + chains("cdn.net.", 1),
	"example.net.": `$TTL 3600
example.net. SOA ns.example.net. hostmaster.example.net. 1 3600 900 604800 180
example.net. NS ns.example.net.
ns.example.net. A {6}
ns-noglue.example.net. A {2}
c2.example.net. 150 A 192.0.2.90
www.example.net. 150 A 192.0.2.91
`,
	"noglue.tld.": `$TTL 3600
noglue.tld. SOA ns-noglue.example.net. hostmaster.noglue.tld. 1 3600 900 604800 240
noglue.tld. NS ns-noglue.example.net.
www.noglue.tld. 400 A 192.0.2.100
`,
	"partlame.tld.": `$TTL 3600
partlame.tld. SOA ns2.partlame.tld. hostmaster.partlame.tld. 1 3600 900 604800 300
partlame.tld. NS ns1.partlame.tld.
partlame.tld. NS ns2.partlame.tld.
ns1.partlame.tld. A {4}
ns2.partlame.tld. A {3}
www.partlame.tld. 500 A 192.0.2.110
`,
	"partdead.tld.": `$TTL 3600
partdead.tld. SOA ns2.partdead.tld. hostmaster.partdead.tld. 1 3600 900 604800 300
partdead.tld. NS ns1.partdead.tld.
partdead.tld. NS ns2.partdead.tld.
ns1.partdead.tld. A {5}
ns2.partdead.tld. A {3}
www.partdead.tld. 600 A 192.0.2.120
`,
}

// bigRRsets are example.tld.'s large RRsets: big.example.tld. TXT (30
// records, 2 KB: truncated over UDP at 1232 bytes and asked again over
// TCP) and many.example.tld. A (101 records: one more than the 100 BIND
// accepts since CVE-2024-1737, and Tern's resolver with it).
var bigRRsets = func() string {
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "big.example.tld. 300 TXT \"record %02d of a TXT RRset too large for a UDP answer of 1232 bytes\"\n", i)
	}
	for i := range 101 {
		fmt.Fprintf(&b, "many.example.tld. 300 A 198.51.100.%d\n", i)
	}
	return b.String()
}()

// ChainLinks are the lengths of the CNAME chains of the hierarchy: a
// chain of n links starts at l0.chainN.example.tld. and goes back and
// forth between example.tld. and cdn.net. (each link a new resolution
// from the root's referrals) to its last name, which has an A record
// (192.0.2.N). 11 links are the most the modern resolvers follow
// (Unbound's max-query-restarts, Tern's Limits.CNAMEs).
var ChainLinks = []int{11, 12}

// chains returns the records of the CNAME chains owned by origin: the
// links whose index has the parity given (example.tld. holds the even
// ones, cdn.net. the odd ones).
func chains(origin string, parity int) string {
	var b strings.Builder
	zone := func(i int) string {
		if i%2 == 0 {
			return "example.tld."
		}
		return "cdn.net."
	}
	for _, n := range ChainLinks {
		for i := parity; i <= n; i += 2 {
			owner := fmt.Sprintf("l%d.chain%d.%s", i, n, origin)
			if i == n {
				fmt.Fprintf(&b, "%s 300 A 192.0.2.%d\n", owner, n)
				continue
			}
			fmt.Fprintf(&b, "%s 300 CNAME l%d.chain%d.%s\n", owner, i+1, n, zone(i+1))
		}
	}
	return b.String()
}
