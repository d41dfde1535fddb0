package resolve

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
)

// Forwarders and stub servers of the tests, on ports of their own.
const (
	fwd1 = "10.0.0.8"
	fwd2 = "10.0.0.9"
)

// TestZones: forward zones (the full question with RD=1 to the
// forwarders, their answers trusted without AA) and stub zones (iterated
// from the configured authorities with RD=0), as the deepest applies.
func TestZones(t *testing.T) {
	fwdPort := func(a string) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr(a), 5353) }
	stubPort := func(a string) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr(a), 53) }
	recursive := func(t testing.TB, records ...string) *dns.Msg {
		m := answer(t, records...)
		m.Authoritative, m.RecursionAvailable = false, true
		return m
	}
	for _, tc := range []struct {
		name    string
		forward []Zone
		stub    []Zone
		qname   string
		qtype   uint16
		answers canned   // besides the world's
		asked   []string // server:port, question, and "RD" when recursive
		answer  []string
		reason  Reason
		check   func(t *testing.T, steps []Step)
	}{{
		name:    "forward zone: the full question with RD=1, an answer without AA trusted",
		forward: []Zone{{"corp.example.", []netip.AddrPort{fwdPort(fwd1)}}},
		qname:   "www.dept.corp.example.", qtype: dns.TypeA,
		answers: canned{
			{fwd1, "www.dept.corp.example.", dns.TypeA}: func(t testing.TB) *dns.Msg {
				return recursive(t, "www.dept.corp.example. 60 IN A 10.1.1.1")
			},
		},
		asked:  []string{fwd1 + ":5353 www.dept.corp.example. A RD"},
		answer: []string{"www.dept.corp.example. 60 IN A 10.1.1.1"},
		check: func(t *testing.T, steps []Step) {
			if s := steps[0]; s.Why != "forwarder for corp.example." || s.Zone != "corp.example." || !s.Recursive || s.Minimisation != "" {
				t.Errorf("step %+v", s)
			}
		},
	}, {
		name:    "forward zone: a NODATA without AA, then the second forwarder after a SERVFAIL",
		forward: []Zone{{"corp.example.", []netip.AddrPort{fwdPort(fwd1), fwdPort(fwd2)}}},
		qname:   "corp.example.", qtype: dns.TypeMX,
		answers: canned{
			{fwd1, "corp.example.", dns.TypeMX}: func(testing.TB) *dns.Msg { return &dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeServerFailure}} },
			{fwd2, "corp.example.", dns.TypeMX}: func(t testing.TB) *dns.Msg {
				m := negative(t, dns.RcodeSuccess, "corp.example. 60 IN SOA ns.corp.example. h.corp.example. 1 2 3 4 60")
				m.Authoritative = false
				return m
			},
		},
		asked: []string{fwd1 + ":5353 corp.example. MX RD", fwd2 + ":5353 corp.example. MX RD"},
	}, {
		name:    "forward zone: a CNAME out of it resolved from the root, the forwarder's records there dropped",
		forward: []Zone{{"corp.example.", []netip.AddrPort{fwdPort(fwd1)}}},
		qname:   "www.corp.example.", qtype: dns.TypeA,
		answers: canned{
			{fwd1, "www.corp.example.", dns.TypeA}: func(t testing.TB) *dns.Msg {
				return recursive(t, "www.corp.example. 60 IN CNAME www.example.com.", "www.example.com. 60 IN A "+evil)
			},
		},
		asked: []string{fwd1 + ":5353 www.corp.example. A RD", root + ":53 . NS",
			root + ":53 com. A", gtld + ":53 example.com. A", exCom + ":53 www.example.com. A"},
		answer: []string{"www.corp.example. 60 IN CNAME www.example.com.", "www.example.com. 300 IN A 192.0.2.1"},
	}, {
		name:    "forward zone: a referral from a forwarder is not followed",
		forward: []Zone{{"corp.example.", []netip.AddrPort{fwdPort(fwd1)}}},
		qname:   "www.corp.example.", qtype: dns.TypeA,
		answers: canned{
			{fwd1, "www.corp.example.", dns.TypeA}: func(t testing.TB) *dns.Msg {
				return referral(t, []string{"corp.example. 60 IN NS ns.corp.example."}, "ns.corp.example. 60 IN A "+evil)
			},
		},
		asked:  []string{fwd1 + ":5353 www.corp.example. A RD"},
		reason: NoReachableAuthority,
	}, {
		name:    "forward zone of the root: everything forwarded, no priming",
		forward: []Zone{{".", []netip.AddrPort{fwdPort(fwd1)}}},
		qname:   "www.example.com.", qtype: dns.TypeA,
		answers: canned{
			{fwd1, "www.example.com.", dns.TypeA}: func(t testing.TB) *dns.Msg { return recursive(t, "www.example.com. 60 IN A 192.0.2.1") },
		},
		asked:  []string{fwd1 + ":5353 www.example.com. A RD"},
		answer: []string{"www.example.com. 60 IN A 192.0.2.1"},
	}, {
		name:  "stub zone: iterated from its servers with RD=0 and minimised questions, not from the root",
		stub:  []Zone{{"example.com.", []netip.AddrPort{stubPort(exCom2)}}},
		qname: "a.sub.example.com.", qtype: dns.TypeA,
		answers: canned{
			{exCom2, "sub.example.com.", dns.TypeA}: func(t testing.TB) *dns.Msg {
				return referral(t, []string{"sub.example.com. 3600 IN NS ns.sub.example.com."}, "ns.sub.example.com. 3600 IN A "+exCom)
			},
			{exCom, "a.sub.example.com.", dns.TypeA}: func(t testing.TB) *dns.Msg { return answer(t, "a.sub.example.com. 300 IN A 192.0.2.5") },
		},
		asked:  []string{exCom2 + ":53 sub.example.com. A", exCom + ":53 a.sub.example.com. A"},
		answer: []string{"a.sub.example.com. 300 IN A 192.0.2.5"},
		check: func(t *testing.T, steps []Step) {
			if s := steps[0]; s.Why != "stub zone example.com." || s.Zone != "example.com." || s.Recursive || s.Minimisation != minimised {
				t.Errorf("step %+v", s)
			}
		},
	}, {
		name:    "the deepest zone applies: a stub inside a forward zone",
		forward: []Zone{{"example.com.", []netip.AddrPort{fwdPort(fwd1)}}},
		stub:    []Zone{{"sub.example.com.", []netip.AddrPort{stubPort(exCom2)}}},
		qname:   "www.sub.example.com.", qtype: dns.TypeA,
		answers: canned{
			{exCom2, "www.sub.example.com.", dns.TypeA}: func(t testing.TB) *dns.Msg { return answer(t, "www.sub.example.com. 300 IN A 192.0.2.6") },
		},
		asked:  []string{exCom2 + ":53 www.sub.example.com. A"},
		answer: []string{"www.sub.example.com. 300 IN A 192.0.2.6"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f, r, steps := tracedWorld(t, tc.answers, Options{
				Forward: tc.forward,
				Stub:    tc.stub,
				Infra:   NewInfra(InfraOptions{Rand: func(int) int { return 0 }}), // in the given order
			})
			res, err := r.Resolve(context.Background(), tc.qname, tc.qtype)
			checkResult(t, res, err, tc.reason, tc.answer)
			var got []string
			for i, s := range *steps {
				d := s.Server.String() + " " + s.Question.Name + " " + dns.Type(s.Question.Qtype).String()
				if f.recursive[i] != s.Recursive {
					t.Errorf("step %d: traced RD %v, sent %v", i, s.Recursive, f.recursive[i])
				}
				if f.recursive[i] {
					d += " RD"
				}
				got = append(got, d)
			}
			if !slices.Equal(got, tc.asked) {
				t.Errorf("asked\n%q\nwant\n%q", got, tc.asked)
			}
			if slices.Contains(f.askedOf(), evil) {
				t.Errorf("an address from out-of-bailiwick records was asked: %q", f.askedOf())
			}
			if tc.check != nil {
				tc.check(t, *steps)
			}
		})
	}
}

// TestStubZoneCache: a delegation above a stub zone learnt in the cache
// does not take the stub zone's names away from its servers; one learnt
// below it, from them, is used.
func TestStubZoneCache(t *testing.T) {
	f := world(t)
	f.answers[key{gtld, "other.com.", dns.TypeA}] = negative(t, dns.RcodeNameError, "com. 300 IN SOA a.gtld.net. h.gtld.net. 1 2 3 4 300")
	f.answers[key{exCom2, "sub.example.com.", dns.TypeA}] = referral(t, []string{"sub.example.com. 3600 IN NS ns.sub.example.com."}, "ns.sub.example.com. 3600 IN A "+exNet)
	f.answers[key{exNet, "a.sub.example.com.", dns.TypeA}] = answer(t, "a.sub.example.com. 300 IN A 192.0.2.5")
	f.answers[key{exNet, "b.sub.example.com.", dns.TypeA}] = answer(t, "b.sub.example.com. 300 IN A 192.0.2.6")
	r, steps := tracing(f, Options{
		Stub:  []Zone{{"example.com.", []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr(exCom2), 53)}}},
		Cache: cache.New(cache.Options{}),
	})
	resolutions(t, r, steps, []resolution{
		// com.'s delegation is learnt from the root.
		{"other.com.", []string{root + " . NS", root + " com. A (min)", gtld + " other.com. A"}},
		{"a.sub.example.com.", []string{exCom2 + " sub.example.com. A (min)", exNet + " a.sub.example.com. A"}},
		{"b.sub.example.com.", []string{exNet + " b.sub.example.com. A"}},
	})
}
