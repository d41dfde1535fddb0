package hierarchy_test

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest/hierarchy"
)

// unboundAddr is where Unbound listens: the last address of the block.
var unboundAddr = netip.AddrFrom4([4]byte{127, 0, 0, 39})

// startUnbound runs Unbound as a resolver over the hierarchy
// (hierarchy.StartUnbound), the iterator alone: the hierarchy is
// unsigned and has no trust anchor.
func startUnbound(t *testing.T, h *hierarchy.Standard) (addr, skip string) {
	return hierarchy.StartUnbound(t, unboundAddr, h.Port, h.HintsFile, `module-config: "iterator"`)
}

// askResolver sends a recursive query with EDNS and returns the
// response. One try with a long timeout: a resolver may spend seconds
// on unresponsive servers before it answers SERVFAIL, and a second try
// would find its answer cached and hide what it did on the first.
func askResolver(addr, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg).SetQuestion(name, qtype)
	m.SetEdns0(1232, false)
	c := &dns.Client{Timeout: 30 * time.Second}
	r, _, err := c.Exchange(m, addr)
	if err == nil && r.Truncated {
		c.Net = "tcp"
		r, _, err = c.Exchange(m, addr)
	}
	return r, err
}

// testUnbound asks Unbound and Tern's served resolver (startServed)
// every case over the same hierarchy, over UDP, and compares their
// responses (compare). A difference fails the test unless
// unboundDifferences explains it.
func testUnbound(t *testing.T, e *env) {
	addr, served := e.needUnbound(t), e.served
	var mu sync.Mutex
	seen := map[string]bool{}
	ran := 0
	t.Run("cases", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.what, func(t *testing.T) {
				t.Parallel()
				mu.Lock()
				ran++
				mu.Unlock()
				u, err := askResolver(addr, c.name, c.qtype)
				if err != nil {
					t.Fatalf("unbound: %s %s: %v", c.name, dns.Type(c.qtype), err)
				}
				m, err := askResolver(served, c.name, c.qtype)
				if err != nil {
					t.Fatalf("tern: %s %s: %v", c.name, dns.Type(c.qtype), err)
				}
				diff := compare(u, m)
				known, listed := unboundDifferences[c.name+" "+dns.Type(c.qtype).String()]
				switch {
				case diff != "" && c.pending != "" && !listed:
					t.Skipf("pending (%s): %s", c.pending, diff)
				case diff != "" && !listed:
					t.Errorf("%s %s: Unbound and Tern differ: %s", c.name, dns.Type(c.qtype), diff)
				case diff != "" && known.diff != diff:
					t.Errorf("%s %s: Unbound and Tern differ otherwise than listed: %s (listed: %s)", c.name, dns.Type(c.qtype), diff, known.diff)
				case diff != "":
					mu.Lock()
					seen[c.name+" "+dns.Type(c.qtype).String()] = true
					mu.Unlock()
				}
				if t.Failed() || testing.Verbose() {
					t.Logf("unbound:\n%v\ntern:\n%v", u, m)
					// Where Unbound does not meet the case (the table is
					// Tern's), for information.
					for _, e := range c.check(u) {
						t.Logf("unbound: %s", e)
					}
				}
			})
		}
	})
	for k := range unboundDifferences {
		if ran == len(cases) && !seen[k] {
			t.Errorf("listed difference %q not seen: remove it from unboundDifferences and docs/resolver-interop.md", k)
		}
	}
}

// compare returns how two responses differ in rcode, answer RRsets (TTLs
// left out, RRsets as sets) and the owner of the SOA in the authority
// section (negative answers), or "".
func compare(unbound, tern *dns.Msg) string {
	var d []string
	if unbound.Rcode != tern.Rcode {
		d = append(d, fmt.Sprintf("rcode %s / %s", dns.RcodeToString[unbound.Rcode], dns.RcodeToString[tern.Rcode]))
	}
	if u, m := rrsets(unbound.Answer), rrsets(tern.Answer); !slices.Equal(u, m) {
		d = append(d, fmt.Sprintf("answer %q / %q", u, m))
	}
	if u, m := soaOwners(unbound), soaOwners(tern); !slices.Equal(u, m) {
		d = append(d, fmt.Sprintf("authority SOA of %q / %q", u, m))
	}
	return strings.Join(d, "; ")
}

// unboundDifference is a reviewed difference between Unbound's answer
// and Tern's: the compare text it must match, and why.
type unboundDifference struct {
	diff string
	why  string
}

// unboundDifferences are the reviewed differences, by "name TYPE"; each
// is also in docs/resolver-interop.md.
var unboundDifferences = map[string]unboundDifference{
	"many.example.tld. A": {
		diff: "rcode NOERROR / SERVFAIL; answer " + quoteAll(manyA()) + " / []",
		why: "Tern's resolver takes a server that sends an RRset of more than 100 records for lame, " +
			"as BIND 9.18.28+/9.20 do (max-records-per-type 100, CVE-2024-1737: large RRsets made the " +
			"resolver's cache slow for everyone); issue 11 asks for that limit. No RFC bounds an RRset's " +
			"size (RFC 2181 §5 defines the RRset, RFC 1035 §4.2.1 only the message size); Unbound 1.17 has no such limit.",
	},
}

// manyA is Unbound's answer for many.example.tld. A as compare shows it.
func manyA() []string {
	var out []string
	for i := range 101 {
		out = append(out, fmt.Sprintf("many.example.tld. 0 a 198.51.100.%d", i))
	}
	sort.Strings(out)
	return out
}

// quoteAll formats ss as %q does, for a difference's text.
func quoteAll(ss []string) string { return fmt.Sprintf("%q", ss) }
