package resolve

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
)

// TestMinimise shows what each server is asked with QNAME minimisation
// (RFC 9156): the name one label below the server's zone with QTYPE A,
// the full question last, and the full question after an ancestor was
// answered NXDOMAIN, REFUSED, SERVFAIL or not at all (relaxed mode).
func TestMinimise(t *testing.T) {
	const soa = "example.com. 300 IN SOA ns1.example.com. h.example.com. 1 2 3 4 300"
	nodata := func(t testing.TB) *dns.Msg { return negative(t, dns.RcodeSuccess, soa) }
	rcode := func(rc int) func(t testing.TB) *dns.Msg {
		return func(testing.TB) *dns.Msg { return &dns.Msg{MsgHdr: dns.MsgHdr{Rcode: rc}} }
	}
	ab := "a.b.example.com. 300 IN A 192.0.2.7"
	type testCase struct {
		name       string
		qname      string
		qtype      uint16
		noMinimise bool
		answers    canned   // besides the world's
		asked      []string // server, question, and the step's note past "minimised"
		answer     []string
		reason     Reason // the failure expected
	}
	var failing []testCase
	for _, rc := range []int{dns.RcodeRefused, dns.RcodeServerFailure} {
		failing = append(failing, testCase{
			name: "an ancestor " + dns.RcodeToString[rc] + ": the full question", qname: "a.b.example.com.", qtype: dns.TypeA,
			answers: canned{
				{exCom, "b.example.com.", dns.TypeA}:   rcode(rc),
				{exCom, "a.b.example.com.", dns.TypeA}: func(t testing.TB) *dns.Msg { return answer(t, ab) },
			},
			asked: []string{root + " com. A (min)", gtld + " example.com. A (min)", exCom + " b.example.com. A (min)",
				exCom + " a.b.example.com. A (full QNAME: the minimised one failed)"},
			answer: []string{ab},
		})
	}
	for _, tc := range append(failing, []testCase{{
		name: "one label below each zone with QTYPE A, the full question last", qname: "www.example.com.", qtype: dns.TypeAAAA,
		answers: canned{
			{exCom, "www.example.com.", dns.TypeAAAA}: func(t testing.TB) *dns.Msg { return answer(t, "www.example.com. 300 IN AAAA 2001:db8::1") },
		},
		asked:  []string{root + " com. A (min)", gtld + " example.com. A (min)", exCom + " www.example.com. AAAA"},
		answer: []string{"www.example.com. 300 IN AAAA 2001:db8::1"},
	}, {
		name: "off: the full question everywhere", qname: "www.example.com.", qtype: dns.TypeA, noMinimise: true,
		asked:  []string{root + " www.example.com. A", gtld + " www.example.com. A", exCom + " www.example.com. A"},
		answer: []string{"www.example.com. 300 IN A 192.0.2.1"},
	}, {
		name: "an empty non-terminal: NODATA, one more label", qname: "a.b.example.com.", qtype: dns.TypeA,
		answers: canned{
			{exCom, "b.example.com.", dns.TypeA}:   nodata,
			{exCom, "a.b.example.com.", dns.TypeA}: func(t testing.TB) *dns.Msg { return answer(t, ab) },
		},
		asked:  []string{root + " com. A (min)", gtld + " example.com. A (min)", exCom + " b.example.com. A (min)", exCom + " a.b.example.com. A"},
		answer: []string{ab},
	}, {
		name: "a CNAME at an ancestor: one more label", qname: "a.b.example.com.", qtype: dns.TypeA,
		answers: canned{
			{exCom, "b.example.com.", dns.TypeA}:   func(t testing.TB) *dns.Msg { return answer(t, "b.example.com. 300 IN CNAME www.example.net.") },
			{exCom, "a.b.example.com.", dns.TypeA}: func(t testing.TB) *dns.Msg { return answer(t, ab) },
		},
		asked:  []string{root + " com. A (min)", gtld + " example.com. A (min)", exCom + " b.example.com. A (min)", exCom + " a.b.example.com. A"},
		answer: []string{ab},
	}, {
		name: "an ancestor NXDOMAIN (relaxed): the full question", qname: "a.b.example.com.", qtype: dns.TypeMX,
		answers: canned{
			{exCom, "b.example.com.", dns.TypeA}:    func(t testing.TB) *dns.Msg { return negative(t, dns.RcodeNameError, soa) },
			{exCom, "a.b.example.com.", dns.TypeMX}: func(t testing.TB) *dns.Msg { return answer(t, "a.b.example.com. 300 IN MX 10 mx.example.com.") },
		},
		asked: []string{root + " com. A (min)", gtld + " example.com. A (min)", exCom + " b.example.com. A (min)",
			exCom + " a.b.example.com. MX (full QNAME: the minimised one was NXDOMAIN)"},
		answer: []string{"a.b.example.com. 300 IN MX 10 mx.example.com."},
	}, {
		name: "an ancestor not answered (twice): the failure stands", qname: "a.b.example.com.", qtype: dns.TypeA,
		answers: canned{
			{exCom, "a.b.example.com.", dns.TypeA}: func(t testing.TB) *dns.Msg { return answer(t, ab) },
		},
		asked:  []string{root + " com. A (min)", gtld + " example.com. A (min)", exCom + " b.example.com. A (min)", exCom + " b.example.com. A (min)"},
		reason: NoReachableAuthority,
	}, {
		name: "a referral below the zone: one label below the new cut", qname: "a.sub.example.com.", qtype: dns.TypeA,
		answers: canned{
			{exCom, "sub.example.com.", dns.TypeA}: func(t testing.TB) *dns.Msg {
				return referral(t, []string{"sub.example.com. 3600 IN NS ns.sub.example.com."}, "ns.sub.example.com. 3600 IN A "+exCom2)
			},
			{exCom2, "a.sub.example.com.", dns.TypeA}: func(t testing.TB) *dns.Msg { return answer(t, "a.sub.example.com. 300 IN A 192.0.2.8") },
		},
		asked:  []string{root + " com. A (min)", gtld + " example.com. A (min)", exCom + " sub.example.com. A (min)", exCom2 + " a.sub.example.com. A"},
		answer: []string{"a.sub.example.com. 300 IN A 192.0.2.8"},
	}, {
		name: "a DNAME above the name: the full question", qname: "x.y.a.example.com.", qtype: dns.TypeA,
		answers: canned{
			{exCom, "a.example.com.", dns.TypeA}: nodata,
			{exCom, "y.a.example.com.", dns.TypeA}: func(t testing.TB) *dns.Msg {
				return answer(t, "a.example.com. 300 IN DNAME b.example.com.", "y.a.example.com. 300 IN CNAME y.b.example.com.")
			},
			{exCom, "x.y.a.example.com.", dns.TypeA}: func(t testing.TB) *dns.Msg {
				return answer(t, "a.example.com. 300 IN DNAME b.example.com.", "x.y.a.example.com. 300 IN CNAME x.y.b.example.com.", "x.y.b.example.com. 300 IN A 192.0.2.9")
			},
		},
		asked: []string{root + " com. A (min)", gtld + " example.com. A (min)", exCom + " a.example.com. A (min)", exCom + " y.a.example.com. A (min)",
			exCom + " x.y.a.example.com. A (full QNAME: a DNAME redirects it)"},
		answer: []string{"a.example.com. 300 IN DNAME b.example.com.", "x.y.a.example.com. 300 IN CNAME x.y.b.example.com.", "x.y.b.example.com. 300 IN A 192.0.2.9"},
	}}...) {
		t.Run(tc.name, func(t *testing.T) {
			_, r, steps := tracedWorld(t, tc.answers, Options{NoMinimise: tc.noMinimise})
			if err := r.Prime(context.Background()); err != nil {
				t.Fatal(err)
			}
			*steps = nil
			res, err := r.Resolve(context.Background(), tc.qname, tc.qtype)
			checkResult(t, res, err, tc.reason, tc.answer)
			if got := asked(*steps); !slices.Equal(got, tc.asked) {
				t.Errorf("asked\n%q\nwant\n%q", got, tc.asked)
			}
		})
	}
}

// asked describes the steps: server, question and the note on
// minimisation ("min" for a minimised question).
func asked(steps []Step) []string {
	var s []string
	for _, st := range steps {
		d := fmt.Sprintf("%s %s %s", st.Server.Addr(), st.Question.Name, dns.Type(st.Question.Qtype))
		if st.Minimisation != "" {
			d += " (" + strings.Replace(st.Minimisation, "QNAME minimised (RFC 9156)", "min", 1) + ")"
		}
		s = append(s, d)
	}
	return s
}

// TestMinimiseLongName: a name of 15 labels is asked in at most
// MaxMinimiseCount queries of one zone's server, the first MinimiseOneLab
// adding one label each (RFC 9156 §2.3).
func TestMinimiseLongName(t *testing.T) {
	labels := make([]string, 15)
	for i := range labels {
		labels[i] = fmt.Sprintf("l%d", i)
	}
	name := strings.Join(labels, ".") + "."
	f := &fake{answers: map[key]*dns.Msg{
		{root, ".", dns.TypeNS}: priming(t, ". 518400 IN NS a.root.", "a.root. 518400 IN A "+root),
		// Every name below the root is an empty non-terminal but name.
		{root, ".", 0}:            negative(t, dns.RcodeSuccess, ". 300 IN SOA a.root. h.root. 1 2 3 4 300"),
		{root, name, dns.TypeTXT}: answer(t, name+" 300 IN TXT \"deep\""),
	}}
	var steps []Step
	r := New(f, Options{
		Hints: []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr(root)}}},
		Trace: func(s Step) { steps = append(steps, s) },
	})
	if _, err := r.Resolve(context.Background(), name, dns.TypeTXT); err != nil {
		t.Fatal(err)
	}
	var counts []int
	for _, s := range steps[1:] { // after priming
		counts = append(counts, dns.CountLabel(s.Question.Name))
		want := uint16(dns.TypeA)
		if s.Question.Name == name {
			want = dns.TypeTXT
		}
		if s.Question.Qtype != want {
			t.Errorf("%s asked with type %s", s.Question.Name, dns.Type(s.Question.Qtype))
		}
	}
	// One label at a time for four queries, then the eleven left over
	// the six queries left.
	if want := []int{1, 2, 3, 4, 6, 8, 10, 12, 14, 15}; !slices.Equal(counts, want) {
		t.Errorf("labels asked %v, want %v", counts, want)
	}
}

// TestMinimiseCached: an ancestor whose NODATA the cache holds is not
// asked again; the descent starts at the closest cached cut.
func TestMinimiseCached(t *testing.T) {
	const soa = "example.com. 300 IN SOA ns1.example.com. h.example.com. 1 2 3 4 300"
	f := world(t)
	f.answers[key{exCom, "b.example.com.", dns.TypeA}] = negative(t, dns.RcodeSuccess, soa)
	f.answers[key{exCom, "a.b.example.com.", dns.TypeA}] = answer(t, "a.b.example.com. 300 IN A 192.0.2.7")
	f.answers[key{exCom, "c.b.example.com.", dns.TypeA}] = answer(t, "c.b.example.com. 300 IN A 192.0.2.8")
	r, steps := tracing(f, Options{Cache: cache.New(cache.Options{})})
	resolutions(t, r, steps, []resolution{
		{"a.b.example.com.", []string{root + " . NS", root + " com. A (min)", gtld + " example.com. A (min)", exCom + " b.example.com. A (min)", exCom + " a.b.example.com. A"}},
		{"c.b.example.com.", []string{exCom + " c.b.example.com. A"}},
	})
}

// resolution is a name resolved (type A) and the questions asked for it
// (as asked describes them).
type resolution struct {
	qname string
	asked []string
}

// resolutions resolves each name in turn with r, whose steps go to steps,
// and checks the questions asked.
func resolutions(t *testing.T, r *Resolver, steps *[]Step, rs []resolution) {
	t.Helper()
	for _, tc := range rs {
		*steps = nil
		if _, err := r.Resolve(context.Background(), tc.qname, dns.TypeA); err != nil {
			t.Fatal(err)
		}
		if got := asked(*steps); !slices.Equal(got, tc.asked) {
			t.Errorf("%s: asked\n%q\nwant\n%q", tc.qname, got, tc.asked)
		}
	}
}
