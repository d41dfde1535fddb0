package auth

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/zone"
)

// signedResponder serves the two signed fixtures: signed.test (NSEC) and
// nsec3.test (NSEC3, opt-out), made by 'tern zone sign' and checked with
// ldns-verify-zone.
func signedResponder(t testing.TB) (*Responder, map[string][]dns.RR) {
	t.Helper()
	var zs []*zone.Zone
	keys := map[string][]dns.RR{}
	for _, origin := range []string{"signed.test.", "nsec3.test."} {
		file := "testdata/" + strings.TrimSuffix(origin, ".") + ".zone"
		recs, err := zone.ParseFile(file, origin)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.RR.Header().Rrtype == dns.TypeDNSKEY {
				keys[origin] = append(keys[origin], r.RR)
			}
		}
		z, err := zone.Compile(origin, recs)
		if err != nil {
			t.Fatal(err)
		}
		if !z.Signed {
			t.Fatalf("%s not recognised as signed", origin)
		}
		zs = append(zs, z)
	}
	return New(zone.NewSet(zs...), Options{}), keys
}

// shape lists a section as "owner TYPE" (RRSIGs as "owner RRSIG(TYPE)"),
// sorted, owners lowercased, NSEC3 owners as "NSEC3".
func shape(rrs []dns.RR) string {
	var out []string
	for _, rr := range rrs {
		h := rr.Header()
		owner := strings.ToLower(h.Name)
		switch x := rr.(type) {
		case *dns.OPT:
			continue
		case *dns.RRSIG:
			if x.TypeCovered == dns.TypeNSEC3 {
				owner = "NSEC3"
			}
			out = append(out, owner+" RRSIG("+dns.TypeToString[x.TypeCovered]+")")
			continue
		case *dns.NSEC3:
			owner = "NSEC3"
		}
		out = append(out, owner+" "+dns.TypeToString[h.Rrtype])
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func doQuery(name string, qtype uint16, do bool) *dns.Msg {
	m := query(name, qtype)
	m.SetEdns0(4096, do)
	return m
}

// verifySigs checks every RRSIG in the answer and authority sections
// against the zone's DNSKEYs, and that every RRset there is signed.
func verifySigs(t *testing.T, resp *dns.Msg, keys []dns.RR) {
	t.Helper()
	at := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, sec := range [][]dns.RR{resp.Answer, resp.Ns} {
		sets := map[string][]dns.RR{}
		var sigs []*dns.RRSIG
		for _, rr := range sec {
			if s, ok := rr.(*dns.RRSIG); ok {
				sigs = append(sigs, s)
				continue
			}
			k := strings.ToLower(rr.Header().Name) + "/" + dns.TypeToString[rr.Header().Rrtype]
			sets[k] = append(sets[k], rr)
		}
		for k, set := range sets {
			var sig *dns.RRSIG
			for _, s := range sigs {
				if strings.EqualFold(s.Hdr.Name, set[0].Header().Name) && s.TypeCovered == set[0].Header().Rrtype {
					sig = s
				}
			}
			if sig == nil {
				// A CNAME synthesized from a DNAME is unsigned (RFC 6672
				// §5.3.1), and so is the NS set of a delegation (RFC 4035
				// §2.2: it is the child's data).
				switch {
				case set[0].Header().Rrtype == dns.TypeCNAME:
				case set[0].Header().Rrtype == dns.TypeNS && !resp.Authoritative:
				default:
					t.Errorf("%s has no RRSIG in its section", k)
				}
				continue
			}
			var key *dns.DNSKEY
			for _, kr := range keys {
				if kk := kr.(*dns.DNSKEY); kk.KeyTag() == sig.KeyTag {
					key = kk
				}
			}
			if key == nil {
				t.Errorf("%s: no DNSKEY with tag %d", k, sig.KeyTag)
				continue
			}
			if err := sig.Verify(key, set); err != nil {
				t.Errorf("%s: signature does not verify: %v", k, err)
			}
			if !sig.ValidityPeriod(at) {
				t.Errorf("%s: signature not valid at %v", k, at)
			}
		}
	}
}

// covered checks that some NSEC3 in the authority section matches
// (exact) or covers (!exact) the hash of name.
func covered(t *testing.T, resp *dns.Msg, name string, exact bool) {
	t.Helper()
	for _, rr := range resp.Ns {
		n, ok := rr.(*dns.NSEC3)
		if !ok {
			continue
		}
		if exact && n.Match(name) || !exact && n.Cover(name) {
			return
		}
	}
	what := "covering"
	if exact {
		what = "matching"
	}
	t.Errorf("no NSEC3 %s %s (hash %s) in %v", what, name, dns.HashName(name, dns.SHA1, 0, ""), shape(resp.Ns))
}

func TestDNSSECNSEC(t *testing.T) {
	r, keys := signedResponder(t)
	tests := []struct {
		name         string
		qname        string
		qtype        uint16
		rcode        int
		aa           bool
		answer, auth string
	}{
		{"positive", "www.signed.test.", dns.TypeA, 0, true, "www.signed.test. A, www.signed.test. RRSIG(A)", ""},
		{"nxdomain", "nope.signed.test.", dns.TypeA, dns.RcodeNameError, true, "",
			// nope sorts between mx and ns1, so mx's NSEC covers it; the
			// apex NSEC covers *.signed.test.
			"mx.signed.test. NSEC, mx.signed.test. RRSIG(NSEC), signed.test. NSEC, signed.test. RRSIG(NSEC), signed.test. RRSIG(SOA), signed.test. SOA"},
		{"nodata", "www.signed.test.", dns.TypeMX, 0, true, "",
			"signed.test. RRSIG(SOA), signed.test. SOA, www.signed.test. NSEC, www.signed.test. RRSIG(NSEC)"},
		{"empty non-terminal", "b.signed.test.", dns.TypeA, 0, true, "",
			"alias.signed.test. NSEC, alias.signed.test. RRSIG(NSEC), signed.test. RRSIG(SOA), signed.test. SOA"},
		{"wildcard", "x.w.signed.test.", dns.TypeA, 0, true, "x.w.signed.test. A, x.w.signed.test. RRSIG(A)",
			"*.w.signed.test. NSEC, *.w.signed.test. RRSIG(NSEC)"},
		{"wildcard nodata", "x.w.signed.test.", dns.TypeMX, 0, true, "",
			"*.w.signed.test. NSEC, *.w.signed.test. RRSIG(NSEC), signed.test. RRSIG(SOA), signed.test. SOA"},
		{"cname", "alias.signed.test.", dns.TypeA, 0, true,
			"alias.signed.test. CNAME, alias.signed.test. RRSIG(CNAME), www.signed.test. A, www.signed.test. RRSIG(A)", ""},
		{"referral to a signed child", "www.secure.signed.test.", dns.TypeA, 0, false, "",
			"secure.signed.test. DS, secure.signed.test. NS, secure.signed.test. RRSIG(DS)"},
		{"referral to an unsigned child", "www.insecure.signed.test.", dns.TypeA, 0, false, "",
			"insecure.signed.test. NS, insecure.signed.test. NSEC, insecure.signed.test. RRSIG(NSEC)"},
		{"DS from the parent", "secure.signed.test.", dns.TypeDS, 0, true, "secure.signed.test. DS, secure.signed.test. RRSIG(DS)", ""},
		{"no DS", "insecure.signed.test.", dns.TypeDS, 0, true, "",
			"insecure.signed.test. NSEC, insecure.signed.test. RRSIG(NSEC), signed.test. RRSIG(SOA), signed.test. SOA"},
		{"DNSKEY", "signed.test.", dns.TypeDNSKEY, 0, true, "signed.test. DNSKEY, signed.test. DNSKEY, signed.test. RRSIG(DNSKEY)", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := ask(t, r, doQuery(tc.qname, tc.qtype, true), false)
			if resp.Rcode != tc.rcode || resp.Authoritative != tc.aa || resp.Truncated {
				t.Errorf("rcode %d AA %v TC %v", resp.Rcode, resp.Authoritative, resp.Truncated)
			}
			if got := shape(resp.Answer); got != tc.answer {
				t.Errorf("answer:\n %s\nwant\n %s", got, tc.answer)
			}
			if got := shape(resp.Ns); got != tc.auth {
				t.Errorf("authority:\n %s\nwant\n %s", got, tc.auth)
			}
			if opt := resp.IsEdns0(); opt == nil || !opt.Do() {
				t.Error("DO not echoed")
			}
			verifySigs(t, resp, keys["signed.test."])
		})
	}
}

func TestDNSSECNSEC3OptOut(t *testing.T) {
	r, keys := signedResponder(t)
	type proof struct {
		name  string
		exact bool
	}
	tests := []struct {
		name   string
		qname  string
		qtype  uint16
		rcode  int
		answer string
		proofs []proof
	}{
		// RFC 5155 §7.2.2: closest encloser, next closer, wildcard.
		{"nxdomain", "nope.nsec3.test.", dns.TypeA, dns.RcodeNameError, "",
			[]proof{{"nsec3.test.", true}, {"nope.nsec3.test.", false}, {"*.nsec3.test.", false}}},
		{"nxdomain two labels down", "a.nope.nsec3.test.", dns.TypeA, dns.RcodeNameError, "",
			[]proof{{"nsec3.test.", true}, {"nope.nsec3.test.", false}, {"*.nsec3.test.", false}}},
		// RFC 5155 §7.2.3.
		{"nodata", "www.nsec3.test.", dns.TypeMX, 0, "", []proof{{"www.nsec3.test.", true}}},
		{"empty non-terminal", "b.nsec3.test.", dns.TypeA, 0, "", []proof{{"b.nsec3.test.", true}}},
		// RFC 5155 §7.2.6: the next closer name is covered.
		{"wildcard", "x.w.nsec3.test.", dns.TypeA, 0, "x.w.nsec3.test. A, x.w.nsec3.test. RRSIG(A)",
			[]proof{{"x.w.nsec3.test.", false}}},
		// RFC 5155 §7.2.5.
		{"wildcard nodata", "x.w.nsec3.test.", dns.TypeMX, 0, "",
			[]proof{{"w.nsec3.test.", true}, {"x.w.nsec3.test.", false}, {"*.w.nsec3.test.", true}}},
		// RFC 5155 §7.2.7: opt-out, the delegation is not in the chain.
		{"referral to an unsigned child", "www.insecure.nsec3.test.", dns.TypeA, 0, "",
			[]proof{{"nsec3.test.", true}, {"insecure.nsec3.test.", false}}},
		{"no DS under opt-out", "insecure.nsec3.test.", dns.TypeDS, 0, "",
			[]proof{{"nsec3.test.", true}, {"insecure.nsec3.test.", false}}},
		{"referral to a signed child", "www.secure.nsec3.test.", dns.TypeA, 0, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := ask(t, r, doQuery(tc.qname, tc.qtype, true), false)
			if resp.Rcode != tc.rcode || resp.Truncated {
				t.Errorf("rcode %d TC %v", resp.Rcode, resp.Truncated)
			}
			if got := shape(resp.Answer); got != tc.answer {
				t.Errorf("answer %s, want %s", got, tc.answer)
			}
			for _, p := range tc.proofs {
				covered(t, resp, p.name, p.exact)
			}
			verifySigs(t, resp, keys["nsec3.test."])
		})
	}
	resp := ask(t, r, doQuery("www.insecure.nsec3.test.", dns.TypeA, true), false)
	optOut := false
	for _, rr := range resp.Ns {
		if n, ok := rr.(*dns.NSEC3); ok && n.Cover("insecure.nsec3.test.") && n.Flags&1 == 1 {
			optOut = true
		}
	}
	if !optOut {
		t.Errorf("the covering NSEC3 of an opt-out referral lacks the opt-out flag: %v", resp.Ns)
	}
	resp = ask(t, r, doQuery("www.secure.nsec3.test.", dns.TypeA, true), false)
	if got := shape(resp.Ns); got != "secure.nsec3.test. DS, secure.nsec3.test. NS, secure.nsec3.test. RRSIG(DS)" {
		t.Errorf("signed referral authority %s", got)
	}
}

// Without DO no DNSSEC record is added, unless it was asked for.
func TestDNSSECWithoutDO(t *testing.T) {
	r, _ := signedResponder(t)
	for _, tc := range []struct {
		qname        string
		qtype        uint16
		answer, auth string
	}{
		{"www.signed.test.", dns.TypeA, "www.signed.test. A", ""},
		{"nope.signed.test.", dns.TypeA, "", "signed.test. SOA"},
		{"nope.nsec3.test.", dns.TypeA, "", "nsec3.test. SOA"},
		{"x.w.signed.test.", dns.TypeA, "x.w.signed.test. A", ""},
		{"www.secure.signed.test.", dns.TypeA, "", "secure.signed.test. NS"},
		{"signed.test.", dns.TypeDNSKEY, "signed.test. DNSKEY, signed.test. DNSKEY", ""},
		{"www.signed.test.", dns.TypeNSEC, "www.signed.test. NSEC", ""},
		{"www.signed.test.", dns.TypeRRSIG, "www.signed.test. RRSIG(A)", ""}, // one covered type: TestQTypeRRSIG
	} {
		for _, edns := range []bool{false, true} {
			m := query(tc.qname, tc.qtype)
			if edns {
				m.SetEdns0(1232, false)
			}
			resp := ask(t, r, m, false)
			if got := shape(resp.Answer); got != tc.answer {
				t.Errorf("%s %s edns=%v: answer %s, want %s", tc.qname, dns.TypeToString[tc.qtype], edns, got, tc.answer)
			}
			if got := shape(resp.Ns); got != tc.auth {
				t.Errorf("%s %s edns=%v: authority %s, want %s", tc.qname, dns.TypeToString[tc.qtype], edns, got, tc.auth)
			}
		}
	}
}

// RFC 4035 §3.1.1: an answer whose RRSIGs do not fit is truncated rather
// than sent without them.
func TestDNSSECTruncation(t *testing.T) {
	r, _ := signedResponder(t)
	m := doQuery("nope.nsec3.test.", dns.TypeA, true)
	m.IsEdns0().SetUDPSize(512)
	resp := ask(t, r, m, false)
	if !resp.Truncated {
		size := 0
		if p, err := resp.Pack(); err == nil {
			size = len(p)
		}
		t.Fatalf("NXDOMAIN proof in 512 bytes: TC not set (%d bytes, %s)", size, shape(resp.Ns))
	}
	for _, rr := range resp.Ns {
		if rr.Header().Rrtype == dns.TypeSOA {
			t.Errorf("truncated answer carries a partial proof: %s", shape(resp.Ns))
		}
	}
}

func TestDNSSECZeroAllocs(t *testing.T) {
	r, _ := signedResponder(t)
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"www.signed.test.", dns.TypeA}, {"nope.signed.test.", dns.TypeA}, {"x.w.signed.test.", dns.TypeMX},
		{"www.insecure.signed.test.", dns.TypeA}, {"nope.nsec3.test.", dns.TypeA}, {"x.w.nsec3.test.", dns.TypeA},
		{"www.insecure.nsec3.test.", dns.TypeA}, {"www.secure.nsec3.test.", dns.TypeA},
	} {
		pkt, _ := doQuery(q.name, q.qtype, true).Pack()
		var s Scratch
		out := make([]byte, 0, BufferSize)
		if n := testing.AllocsPerRun(100, func() { r.Answer(&s, pkt, out, false) }); n != 0 {
			t.Errorf("%s %s with DO: %v allocations, want 0", q.name, dns.TypeToString[q.qtype], n)
		}
	}
}

func BenchmarkAnswerDNSSEC(b *testing.B) {
	r, _ := signedResponder(b)
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"www.signed.test.", dns.TypeA}, {"nope.signed.test.", dns.TypeA}, {"nope.nsec3.test.", dns.TypeA},
		{"www.insecure.signed.test.", dns.TypeA},
	} {
		pkt, _ := doQuery(q.name, q.qtype, true).Pack()
		b.Run(fmt.Sprintf("%s/%s", q.name, dns.TypeToString[q.qtype]), func(b *testing.B) {
			var s Scratch
			out := make([]byte, 0, BufferSize)
			b.ReportAllocs()
			for b.Loop() {
				r.Answer(&s, pkt, out, false)
			}
		})
	}
}
