package resolve_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/dnstest"
	localdns "github.com/tern-dns/tern/internal/dnstest/hierarchy"
	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/upstream"
)

// The local hierarchy: the root on the first address delegates tld. and
// net. to the second; tld. delegates example.tld. with glue to the third;
// net. delegates cdn.net. to ns1.example.tld., a name out of net.'s
// bailiwick (no usable glue: it is resolved); www.example.tld. is a CNAME
// to www.cdn.net. and alias.example.tld. a DNAME to cdn.net.
var hierarchy = []struct {
	server int // index of the address serving the zone
	origin string
	text   string
}{
	{0, ".", `
. SOA a.root. h.root. 1 7200 3600 1209600 300
. NS a.root.
a.root. A {0}
tld. NS ns.nic.tld.
net. NS ns.nic.tld.
ns.nic.tld. A {1}
`}, {1, "tld.", `
tld. SOA ns.nic.tld. h.nic.tld. 1 7200 3600 1209600 300
tld. NS ns.nic.tld.
ns.nic.tld. A {1}
example.tld. NS ns1.example.tld.
ns1.example.tld. A {2}
`}, {1, "net.", `
net. SOA ns.nic.tld. h.nic.tld. 1 7200 3600 1209600 300
net. NS ns.nic.tld.
cdn.net. NS ns1.example.tld.
`}, {2, "example.tld.", `
example.tld. SOA ns1.example.tld. h.example.tld. 1 7200 3600 1209600 300
example.tld. NS ns1.example.tld.
ns1.example.tld. A {2}
www.example.tld. CNAME www.cdn.net.
alias.example.tld. DNAME cdn.net.
`}, {2, "cdn.net.", `
cdn.net. SOA ns1.example.tld. h.example.tld. 1 7200 3600 1209600 300
cdn.net. NS ns1.example.tld.
www.cdn.net. A 192.0.2.80
`},
}

// startHierarchy serves the hierarchy on three loopback addresses of
// this package's block, 127.0.0.11-19, all on one port, and returns them
// and the port: 53 as in the real DNS, or, where port 53 cannot be bound
// (not root), a port the kernel picks, which the resolver is told
// (Options.Port).
func startHierarchy(t *testing.T) ([]netip.Addr, uint16) {
	t.Helper()
	var zones []localdns.Zone
	for _, z := range hierarchy {
		zones = append(zones, localdns.Zone{Server: z.server, Origin: z.origin, Text: z.text})
	}
	h := localdns.Start(t, 11, 19, 3, zones)
	return h.Addrs, h.Port
}

// free checks that the port of each address is free for UDP and TCP.
func free(addrs []netip.Addr, port uint16) error { return localdns.Free(addrs, port) }

// resolveTraced resolves name/qtype with opt and the hierarchy's root as
// the only hint, checks that the answer is a NOERROR with the records want (in
// zone-file form, tabs as spaces), and returns the steps taken, which it
// logs when the test fails or runs verbose.
func resolveTraced(t *testing.T, addrs []netip.Addr, port uint16, opt resolve.Options, name string, qtype uint16, want ...string) []resolve.Step {
	t.Helper()
	var steps []resolve.Step
	opt.Hints = []resolve.Server{{Name: "a.root.", Addrs: addrs[:1], Why: "root hint"}}
	opt.Port = port
	opt.Trace = func(s resolve.Step) { steps = append(steps, s) }
	r := resolve.New(&upstream.Client{}, opt)
	t.Cleanup(func() {
		if t.Failed() || testing.Verbose() {
			for _, s := range steps {
				t.Logf("%+v", s)
			}
		}
	})
	res, err := r.Resolve(context.Background(), name, qtype)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rr := range res.Answer {
		got = append(got, strings.Join(strings.Fields(rr.String()), " "))
	}
	if res.Rcode != dns.RcodeSuccess || !slices.Equal(got, want) {
		t.Fatalf("%s %q, want NOERROR %q", dns.RcodeToString[res.Rcode], got, want)
	}
	return steps
}

// TestHierarchy resolves through Tern's own authoritative servers: two
// referrals with glue, a CNAME into another zone, and that zone's NS name
// resolved because its glue would be out of bailiwick; with QNAME
// minimisation (the default) and without.
func TestHierarchy(t *testing.T) {
	addrs, port := startHierarchy(t)
	for _, tc := range []struct {
		noMinimise bool
		path       []string // depth, zone, question of each step
	}{{
		// Priming; root, tld., example.tld. (CNAME); root, net.
		// (referral to cdn.net. without usable glue); ns1.example.tld.
		// resolved from the root (depth 1); then cdn.net.'s server.
		// Each server is asked for the name one label below its zone,
		// with QTYPE A, until the name itself.
		path: []string{
			"0 . . NS",
			"0 . tld. A", "0 tld. example.tld. A", "0 example.tld. www.example.tld. A",
			"0 . net. A", "0 net. cdn.net. A",
			"1 . tld. A", "1 tld. example.tld. A", "1 example.tld. ns1.example.tld. A",
			"0 cdn.net. www.cdn.net. A",
		},
	}, {
		noMinimise: true,
		path: []string{
			"0 . . NS",
			"0 . www.example.tld. A", "0 tld. www.example.tld. A", "0 example.tld. www.example.tld. A",
			"0 . www.cdn.net. A", "0 net. www.cdn.net. A",
			"1 . ns1.example.tld. A", "1 tld. ns1.example.tld. A", "1 example.tld. ns1.example.tld. A",
			"0 cdn.net. www.cdn.net. A",
		},
	}} {
		t.Run(fmt.Sprintf("NoMinimise=%v", tc.noMinimise), func(t *testing.T) {
			steps := resolveTraced(t, addrs, port, resolve.Options{NoMinimise: tc.noMinimise}, "WWW.Example.TLD.", dns.TypeA,
				"www.example.tld. 3600 IN CNAME www.cdn.net.", "www.cdn.net. 3600 IN A 192.0.2.80")
			var path []string
			for _, s := range steps {
				path = append(path, fmt.Sprintf("%d %s %s %s", s.Depth, s.Zone, s.Question.Name, dns.Type(s.Question.Qtype)))
			}
			if !slices.Equal(path, tc.path) {
				t.Errorf("path\n%q\nwant\n%q", path, tc.path)
			}
		})
	}
}

// TestHierarchyDNAME: a DNAME answer from Tern's authoritative server,
// redirected into another zone. Minimised, the DNAME's owner is asked
// first (NODATA: the DNAME does not redirect its owner), then the name.
func TestHierarchyDNAME(t *testing.T) {
	addrs, port := startHierarchy(t)
	steps := resolveTraced(t, addrs, port, resolve.Options{}, "www.alias.example.tld.", dns.TypeA,
		"alias.example.tld. 3600 IN DNAME cdn.net.", "www.alias.example.tld. 3600 IN CNAME www.cdn.net.", "www.cdn.net. 3600 IN A 192.0.2.80")
	var got []string
	for _, s := range steps[3:5] {
		got = append(got, s.Question.Name+" "+s.Outcome)
	}
	if want := []string{"alias.example.tld. NODATA", "www.alias.example.tld. answer, 2 records, DNAME alias.example.tld. -> cdn.net."}; !slices.Equal(got, want) {
		t.Errorf("steps 4 and 5 %q, want %q", got, want)
	}
}

// TestHierarchyZones: with example.tld. a stub zone and cdn.net. a
// forward zone, both served from the third address, the resolution never
// goes to the root (not even to prime).
func TestHierarchyZones(t *testing.T) {
	addrs, port := startHierarchy(t)
	at := []netip.AddrPort{netip.AddrPortFrom(addrs[2], port)}
	steps := resolveTraced(t, addrs, port, resolve.Options{
		Stub:    []resolve.Zone{{Name: "example.tld.", Servers: at}},
		Forward: []resolve.Zone{{Name: "cdn.net.", Servers: at}},
	}, "www.example.tld.", dns.TypeA, "www.example.tld. 3600 IN CNAME www.cdn.net.", "www.cdn.net. 3600 IN A 192.0.2.80")
	var path []string
	for _, s := range steps {
		path = append(path, fmt.Sprintf("%s %s %s %s %v", s.Server, s.Zone, s.Question.Name, s.Why, s.Recursive))
	}
	want := []string{
		fmt.Sprintf("%s example.tld. www.example.tld. stub zone example.tld. false", at[0]),
		fmt.Sprintf("%s cdn.net. www.cdn.net. forwarder for cdn.net. true", at[0]),
	}
	if !slices.Equal(path, want) {
		t.Errorf("path\n%q\nwant\n%q", path, want)
	}
}

// TestHierarchyCaseRandom: with 0x20, Tern's authoritative servers echo
// the name's case, their answers are taken, and the records come back in
// the case asked (Tern's answer owners point at the question).
func TestHierarchyCaseRandom(t *testing.T) {
	addrs, port := startHierarchy(t)
	steps := resolveTraced(t, addrs, port, resolve.Options{CaseRandom: true}, "www.alias.example.tld.", dns.TypeA,
		"alias.example.tld. 3600 IN DNAME cdn.net.", "www.alias.example.tld. 3600 IN CNAME www.cdn.net.", "www.cdn.net. 3600 IN A 192.0.2.80")
	for _, s := range steps {
		if !s.CaseRandom {
			t.Errorf("step without 0x20: %+v", s)
		}
	}
}

// TestHierarchyNegative: NXDOMAIN and NODATA from the hierarchy, with the
// zone's SOA.
func TestHierarchyNegative(t *testing.T) {
	addrs, port := startHierarchy(t)
	r := resolve.New(&upstream.Client{}, resolve.Options{Hints: []resolve.Server{{Name: "a.root.", Addrs: addrs[:1]}}, Port: port})
	for _, tc := range []struct {
		name  string
		qtype uint16
		rcode int
	}{{"nx.example.tld.", dns.TypeA, dns.RcodeNameError}, {"www.cdn.net.", dns.TypeAAAA, dns.RcodeSuccess}} {
		res, err := r.Resolve(context.Background(), tc.name, tc.qtype)
		if err != nil {
			t.Fatal(err)
		}
		if res.Rcode != tc.rcode || len(res.Answer) != 0 || len(res.Authority) != 1 || res.Authority[0].Header().Rrtype != dns.TypeSOA {
			t.Errorf("%s %s: %s answer %v authority %v", tc.name, dns.Type(tc.qtype), dns.RcodeToString[res.Rcode], res.Answer, res.Authority)
		}
	}
}

// TestHierarchyUnreachable: a root server whose port is closed answers
// with an ICMP port unreachable, which the resolution reports as a
// Network Error (EDE 23), not as a silent authority.
func TestHierarchyUnreachable(t *testing.T) {
	addrs, port := startHierarchy(t)
	closed := addrs[2].Next() // beside the hierarchy, in its block of addresses
	if err := free([]netip.Addr{closed}, port); err != nil {
		t.Skipf("%v: %v", closed, err)
	}
	r := resolve.New(&upstream.Client{}, resolve.Options{Hints: []resolve.Server{{Name: "a.root.", Addrs: []netip.Addr{closed}}}, Port: port})
	res, err := r.Resolve(context.Background(), "www.example.tld.", dns.TypeA)
	var e *resolve.Error
	if !errors.As(err, &e) || res.Rcode != dns.RcodeServerFailure {
		t.Fatalf("%v, %v: want a SERVFAIL and an *Error", res, err)
	}
	code, text := e.EDE()
	if want := "www.example.tld.: network error: no server of . answered usefully: " + closed.String() + " unreachable"; code != 23 || text != want {
		t.Errorf("EDE %d %q, want 23 %q", code, text, want)
	}
}

// TestStackUse: a resolution's deepest calls fit the stack a resolving
// goroutine grows to (internal/recursor's mesh keeps its goroutines, and
// their stacks, from one resolution to the next), with room left for the
// mesh's frames above Resolve (552 bytes at ec41f49: 352 above
// mesh.resolve's entry, gdb's stack.hi - SP, and its frame) and the
// runtime's stack guard (928): one answered by a single upstream query,
// the delegation cached, in the 8 KiB a goroutine starts with; a cold one
// whose CNAME leads to a zone whose NS name is resolved first (one level
// of nesting: resolve, iterate, ask, addresses, nsResolve, about 2.5 KiB)
// in 16 KiB. Beyond, each would grow to twice that. Measured at ec41f49:
// 6,184 and 8,736 bytes (9,232 and 12,720 at 2838765). Not under the
// race detector, whose frames are larger.
func TestStackUse(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's frames are larger")
	}
	addrs, port := startHierarchy(t)
	r := resolve.New(&upstream.Client{}, resolve.Options{Hints: []resolve.Server{{Name: "a.root.", Addrs: addrs[:1]}}, Port: port,
		Cache: cache.New(cache.Options{})})
	const room = 928 + 640 // the guard, the mesh's frames
	for _, tc := range []struct {
		what, name string
		stack      int
	}{
		{"cold, an NS name resolved on the way", "www.example.tld.", 16 << 10},
		{"one upstream query, the delegation cached", "nx.cdn.net.", 8 << 10},
	} {
		var res *resolve.Result
		var err error
		n, ok := dnstest.StackUse(func() { res, err = r.Resolve(context.Background(), tc.name, dns.TypeA) })
		if err != nil || res.Queries == 0 {
			t.Fatalf("%s: %v, %+v", tc.what, err, res)
		}
		if !ok {
			t.Fatalf("%s: the stack use could not be measured", tc.what)
		}
		t.Logf("%s: %d queries, %d bytes of stack", tc.what, res.Queries, n)
		if budget := tc.stack - room; n > budget {
			t.Errorf("%s: %d bytes of stack, more than %d: a resolving goroutine's stack would grow to %d KiB", tc.what, n, budget, tc.stack>>9)
		}
	}
}
