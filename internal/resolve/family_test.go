package resolve

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	"github.com/miekg/dns"
)

// IPv6 addresses of the family tests' servers.
const (
	exNet6 = "2001:db8::4" // example.net.'s server over IPv6
	exCom6 = "2001:db8::3" // example.com.'s
)

// TestFamilies: IPv6 server addresses from glue and from NS names'
// AAAA records, asked after the IPv4 ones, and each family turned off
// (Options.NoIPv4, NoIPv6).
func TestFamilies(t *testing.T) {
	const netSOA = "example.net. 300 IN SOA ns.example.net. h.example.net. 1 2 3 4 300"
	nsOutside := func(t testing.TB) *dns.Msg { // example.com.'s server named in net., without glue
		return referral(t, []string{"example.com. 3600 IN NS ns6.example.net."})
	}
	www := func(t testing.TB) *dns.Msg { return answer(t, "www.example.com. 300 IN A 192.0.2.1") }
	dualGlue := func(t testing.TB) *dns.Msg {
		return referral(t, []string{"example.com. 3600 IN NS ns1.example.com."},
			"ns1.example.com. 3600 IN A "+exCom, "ns1.example.com. 3600 IN AAAA "+exCom6)
	}
	for _, tc := range []struct {
		name           string
		noIPv4, noIPv6 bool
		answers        canned
		unreachable    []string
		asked          []string
		reason         Reason
	}{{
		name: "an NS name with only an AAAA record: its IPv6 address asked",
		answers: canned{
			{gtld, "example.com.", 0}:                 nsOutside,
			{exNet, "ns6.example.net.", dns.TypeA}:    func(t testing.TB) *dns.Msg { return negative(t, dns.RcodeSuccess, netSOA) },
			{exNet, "ns6.example.net.", dns.TypeAAAA}: func(t testing.TB) *dns.Msg { return answer(t, "ns6.example.net. 300 IN AAAA "+exNet6) },
			{exNet6, "www.example.com.", dns.TypeA}:   www,
		},
		asked: []string{root + " www.example.com. A", gtld + " www.example.com. A",
			root + " ns6.example.net. A", gtld + " ns6.example.net. A", exNet + " ns6.example.net. A",
			root + " ns6.example.net. AAAA", gtld + " ns6.example.net. AAAA", exNet + " ns6.example.net. AAAA",
			exNet6 + " www.example.com. A"},
	}, {
		name: "an NS name that does not exist: no AAAA asked after the A",
		answers: canned{
			{gtld, "example.com.", 0}:              nsOutside,
			{exNet, "ns6.example.net.", dns.TypeA}: func(t testing.TB) *dns.Msg { return negative(t, dns.RcodeNameError, netSOA) },
		},
		asked: []string{root + " www.example.com. A", gtld + " www.example.com. A",
			root + " ns6.example.net. A", gtld + " ns6.example.net. A", exNet + " ns6.example.net. A"},
		reason: NoReachableAuthority,
	}, {
		name: "glue of both families: IPv4 first, IPv6 when it does not answer",
		answers: canned{
			{gtld, "example.com.", 0}:               dualGlue,
			{exCom6, "www.example.com.", dns.TypeA}: www,
		},
		unreachable: []string{exCom},
		asked:       []string{root + " www.example.com. A", gtld + " www.example.com. A", exCom + " www.example.com. A", exCom6 + " www.example.com. A"},
	}, {
		name:   "IPv6 off: an IPv6 address is never asked",
		noIPv6: true,
		answers: canned{
			{gtld, "example.com.", 0}:               dualGlue,
			{exCom6, "www.example.com.", dns.TypeA}: www,
		},
		unreachable: []string{exCom},
		asked:       []string{root + " www.example.com. A", gtld + " www.example.com. A", exCom + " www.example.com. A", exCom + " www.example.com. A"},
		reason:      NoReachableAuthority,
	}, {
		name:   "IPv4 off: only the IPv6 glue asked",
		noIPv4: true,
		answers: canned{
			{gtld, "example.com.", 0}:               dualGlue,
			{exCom6, "www.example.com.", dns.TypeA}: www,
		},
		asked: []string{"2001:db8::1 www.example.com. A", "2001:db8::2 www.example.com. A", exCom6 + " www.example.com. A"},
	}, {
		name:   "IPv6 off: an NS name's AAAA not looked up",
		noIPv6: true,
		answers: canned{
			{gtld, "example.com.", 0}:              nsOutside,
			{exNet, "ns6.example.net.", dns.TypeA}: func(t testing.TB) *dns.Msg { return negative(t, dns.RcodeSuccess, netSOA) },
		},
		asked: []string{root + " www.example.com. A", gtld + " www.example.com. A",
			root + " ns6.example.net. A", gtld + " ns6.example.net. A", exNet + " ns6.example.net. A"},
		reason: NoReachableAuthority,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f, r, steps := tracedWorld(t, tc.answers, Options{NoMinimise: true, NoIPv4: tc.noIPv4, NoIPv6: tc.noIPv6,
				Hints: dualRoot})
			// The root and the gTLD server have IPv6 addresses too.
			for k, m := range f.answers {
				switch k.server {
				case root:
					f.answers[key{"2001:db8::1", k.name, k.qtype}] = m
				case gtld:
					f.answers[key{"2001:db8::2", k.name, k.qtype}] = m
				}
			}
			f.answers[key{root, "com.", 0}] = referral(t, []string{"com. 172800 IN NS a.gtld.net."}, "a.gtld.net. 172800 IN A "+gtld, "a.gtld.net. 172800 IN AAAA 2001:db8::2")
			f.answers[key{"2001:db8::1", "com.", 0}] = f.answers[key{root, "com.", 0}]
			f.answers[key{"2001:db8::1", ".", dns.TypeNS}] = priming(t, ". 518400 IN NS a.root.", "a.root. 518400 IN A "+root, "a.root. 518400 IN AAAA 2001:db8::1")
			f.answers[key{root, ".", dns.TypeNS}] = f.answers[key{"2001:db8::1", ".", dns.TypeNS}]
			f.unreachable = map[string]bool{}
			for _, a := range tc.unreachable {
				f.unreachable[a] = true
			}
			if err := r.Prime(context.Background()); err != nil {
				t.Fatal(err)
			}
			*steps = nil
			res, err := r.Resolve(context.Background(), "www.example.com.", dns.TypeA)
			checkResult(t, res, err, tc.reason, []string{"www.example.com. 300 IN A 192.0.2.1"})
			if got := asked(*steps); !slices.Equal(got, tc.asked) {
				t.Errorf("asked\n%q\nwant\n%q", got, tc.asked)
			}
		})
	}
}

// dualRoot is a root hint with both families.
var dualRoot = []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr(root), netip.MustParseAddr("2001:db8::1")}, Why: "root hint"}}
