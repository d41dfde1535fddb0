package auth

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/zone"
)

func testResponder(t testing.TB, opt Options) *Responder {
	t.Helper()
	var zs []*zone.Zone
	for _, f := range []struct{ file, origin string }{
		{"testdata/example.test.zone", "example.test."},
		{"testdata/child.example.test.zone", "child.example.test"},
	} {
		z, err := zone.Load(f.file, f.origin)
		if err != nil {
			t.Fatal(err)
		}
		zs = append(zs, z)
	}
	return New(zone.NewSet(zs...), opt)
}

// ask sends one query through Answer and unpacks the response.
func ask(t testing.TB, r *Responder, m *dns.Msg, tcp bool) *dns.Msg {
	t.Helper()
	pkt, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	var s Scratch
	out := r.Answer(&s, pkt, make([]byte, 0, BufferSize), tcp)
	if out == nil {
		return nil
	}
	resp := new(dns.Msg)
	if err := resp.Unpack(out); err != nil {
		t.Fatalf("unpack response: %v\n% x", err, out)
	}
	return resp
}

// section renders records one per line, sorted, TTL kept, owner lowercased.
func render(rrs []dns.RR) string {
	var lines []string
	for _, rr := range rrs {
		if rr.Header().Rrtype == dns.TypeOPT {
			continue
		}
		s := strings.ReplaceAll(rr.String(), "\t", " ")
		name := rr.Header().Name
		s = strings.ToLower(name) + s[len(name):]
		lines = append(lines, s)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func query(name string, qtype uint16) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = false
	return m
}

type expect struct {
	rcode      int
	aa, tc     bool
	answer     []string
	authority  []string
	additional []string
}

func check(t *testing.T, resp *dns.Msg, want expect) {
	t.Helper()
	if resp == nil {
		t.Fatal("no response")
	}
	if resp.Rcode != want.rcode {
		t.Errorf("rcode %s, want %s", dns.RcodeToString[resp.Rcode], dns.RcodeToString[want.rcode])
	}
	if resp.Authoritative != want.aa {
		t.Errorf("AA %v, want %v", resp.Authoritative, want.aa)
	}
	if resp.Truncated != want.tc {
		t.Errorf("TC %v, want %v", resp.Truncated, want.tc)
	}
	for _, sec := range []struct {
		name string
		got  []dns.RR
		want []string
	}{
		{"answer", resp.Answer, want.answer},
		{"authority", resp.Ns, want.authority},
		{"additional", resp.Extra, want.additional},
	} {
		w := append([]string(nil), sec.want...)
		sort.Strings(w)
		if g := render(sec.got); g != strings.Join(w, "\n") {
			t.Errorf("%s section:\n%s\nwant:\n%s", sec.name, g, strings.Join(w, "\n"))
		}
	}
}

const soaNeg = "example.test. 300 IN SOA ns1.example.test. hostmaster.example.test. 1 7200 3600 1209600 300"

func TestAnswer(t *testing.T) {
	r := testResponder(t, Options{})
	tests := []struct {
		name  string
		qname string
		qtype uint16
		tcp   bool
		want  expect
	}{
		// RFC 1034 §4.3.2 step 3a: exact match, authoritative.
		{"exact", "www.example.test.", dns.TypeA, false, expect{aa: true,
			answer: []string{"www.example.test. 3600 IN A 192.0.2.80"}}},
		{"apex NS with in-zone glue", "example.test.", dns.TypeNS, false, expect{aa: true,
			answer:     []string{"example.test. 3600 IN NS ns1.example.test.", "example.test. 3600 IN NS ns2.other.test."},
			additional: []string{"ns1.example.test. 3600 IN A 192.0.2.53"}}},
		{"MX with exchange addresses", "example.test.", dns.TypeMX, false, expect{aa: true,
			answer:     []string{"example.test. 3600 IN MX 10 mail.example.test."},
			additional: []string{"mail.example.test. 3600 IN A 192.0.2.25", "mail.example.test. 3600 IN AAAA 2001:db8::25"}}},
		{"SRV with target addresses", "_sip._udp.example.test.", dns.TypeSRV, false, expect{aa: true,
			answer:     []string{"_sip._udp.example.test. 3600 IN SRV 10 60 5060 www.example.test."},
			additional: []string{"www.example.test. 3600 IN A 192.0.2.80", "www.example.test. 3600 IN AAAA 2001:db8::80"}}},
		// RFC 2308 §2.2: NODATA carries the SOA with min(TTL, MINIMUM).
		{"nodata", "www.example.test.", dns.TypeMX, false, expect{aa: true, authority: []string{soaNeg}}},
		// RFC 2308 §2.1: NXDOMAIN.
		{"nxdomain", "nope.example.test.", dns.TypeA, false, expect{rcode: dns.RcodeNameError, aa: true, authority: []string{soaNeg}}},
		// RFC 4592 §2.2.2: an empty non-terminal exists: NODATA.
		{"empty non-terminal", "b.w2.example.test.", dns.TypeA, false, expect{aa: true, authority: []string{soaNeg}}},
		{"ent of a service name", "_udp.example.test.", dns.TypeA, false, expect{aa: true, authority: []string{soaNeg}}},
		// RFC 1034 §3.6.2 and §4.3.2: CNAME chains are followed in the zone.
		{"cname chain", "a.example.test.", dns.TypeA, false, expect{aa: true, answer: []string{
			"a.example.test. 3600 IN CNAME b.example.test.", "b.example.test. 3600 IN CNAME www.example.test.",
			"www.example.test. 3600 IN A 192.0.2.80"}}},
		{"cname query returns the cname", "a.example.test.", dns.TypeCNAME, false, expect{aa: true, answer: []string{
			"a.example.test. 3600 IN CNAME b.example.test."}}},
		{"cname loop stops", "loop1.example.test.", dns.TypeA, false, expect{aa: true, answer: []string{
			"loop1.example.test. 3600 IN CNAME loop2.example.test.", "loop2.example.test. 3600 IN CNAME loop1.example.test."}}},
		{"cname out of zone", "out.example.test.", dns.TypeA, false, expect{aa: true, answer: []string{
			"out.example.test. 3600 IN CNAME www.other.test."}}},
		// RFC 6604 §3: the rcode is that of the last name in the chain.
		{"cname to nothing", "dead.example.test.", dns.TypeA, false, expect{rcode: dns.RcodeNameError, aa: true,
			answer: []string{"dead.example.test. 3600 IN CNAME nothing.example.test."}, authority: []string{soaNeg}}},
		// RFC 6672 §3.1: DNAME plus the synthesized CNAME, then the target.
		{"dname", "x.dn.example.test.", dns.TypeA, false, expect{aa: true, answer: []string{
			"dn.example.test. 3600 IN DNAME tgt.example.test.", "x.dn.example.test. 3600 IN CNAME x.tgt.example.test.",
			"x.tgt.example.test. 3600 IN A 192.0.2.7"}}},
		{"dname owner itself", "dn.example.test.", dns.TypeDNAME, false, expect{aa: true, answer: []string{
			"dn.example.test. 3600 IN DNAME tgt.example.test."}}},
		// RFC 4592 §3.3.1: wildcard synthesis at the closest encloser.
		{"wildcard", "foo.wild.example.test.", dns.TypeA, false, expect{aa: true, answer: []string{
			"foo.wild.example.test. 3600 IN A 192.0.2.99"}}},
		{"wildcard two labels deep", "a.b.wild.example.test.", dns.TypeA, false, expect{aa: true, answer: []string{
			"a.b.wild.example.test. 3600 IN A 192.0.2.99"}}},
		{"wildcard nodata", "foo.wild.example.test.", dns.TypeMX, false, expect{aa: true, authority: []string{soaNeg}}},
		{"wildcard cname", "q.wc.example.test.", dns.TypeA, false, expect{aa: true, answer: []string{
			"q.wc.example.test. 3600 IN CNAME www.example.test.", "www.example.test. 3600 IN A 192.0.2.80"}}},
		{"the wildcard name itself", "*.wild.example.test.", dns.TypeA, false, expect{aa: true, answer: []string{
			"*.wild.example.test. 3600 IN A 192.0.2.99"}}},
		// RFC 4592 §2.2.2: the ENT b.w2 is the closest encloser and has no
		// wildcard child, so *.w2 does not apply.
		{"wildcard blocked by ENT", "c.b.w2.example.test.", dns.TypeA, false, expect{rcode: dns.RcodeNameError, aa: true, authority: []string{soaNeg}}},
		{"wildcard beside ENT", "z.w2.example.test.", dns.TypeA, false, expect{aa: true, answer: []string{"z.w2.example.test. 3600 IN A 192.0.2.98"}}},
		// RFC 1034 §4.3.2 step 3b: referral, AA clear, glue in additional.
		{"referral", "www.sub.example.test.", dns.TypeA, false, expect{
			authority:  []string{"sub.example.test. 3600 IN NS ns.sub.example.test.", "sub.example.test. 3600 IN NS ns1.example.test."},
			additional: []string{"ns.sub.example.test. 3600 IN A 192.0.2.200", "ns1.example.test. 3600 IN A 192.0.2.53"}}},
		{"referral at the cut", "sub.example.test.", dns.TypeA, false, expect{
			authority:  []string{"sub.example.test. 3600 IN NS ns.sub.example.test.", "sub.example.test. 3600 IN NS ns1.example.test."},
			additional: []string{"ns.sub.example.test. 3600 IN A 192.0.2.200", "ns1.example.test. 3600 IN A 192.0.2.53"}}},
		{"glue is not authoritative", "ns.sub.example.test.", dns.TypeA, false, expect{
			authority:  []string{"sub.example.test. 3600 IN NS ns.sub.example.test.", "sub.example.test. 3600 IN NS ns1.example.test."},
			additional: []string{"ns.sub.example.test. 3600 IN A 192.0.2.200", "ns1.example.test. 3600 IN A 192.0.2.53"}}},
		// RFC 4035 §3.1.4.1: DS is answered from the parent side.
		{"DS at the cut", "sub.example.test.", dns.TypeDS, false, expect{aa: true, answer: []string{
			"sub.example.test. 3600 IN DS 12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"}}},
		// The most specific zone wins.
		{"nested zone", "www.child.example.test.", dns.TypeA, false, expect{aa: true, answer: []string{
			"www.child.example.test. 600 IN A 192.0.2.61"}}},
		{"nested zone apex", "child.example.test.", dns.TypeSOA, false, expect{aa: true, answer: []string{
			"child.example.test. 600 IN SOA ns1.child.example.test. hostmaster.child.example.test. 7 7200 3600 1209600 900"}}},
		{"DS at a nested apex comes from the parent", "child.example.test.", dns.TypeDS, false, expect{aa: true, authority: []string{soaNeg}}},
		// RFC 1034 §4.3.2 step 2: not ours.
		{"refused", "www.other.test.", dns.TypeA, false, expect{rcode: dns.RcodeRefused}},
		// RFC 3597: unknown types are served as they are.
		{"unknown type", "unk.example.test.", 65280, false, expect{aa: true, answer: []string{
			"unk.example.test. 3600 CLASS1 TYPE65280 \\# 4 0a000001"}}},
		// RFC 8482 §4.2: ANY over UDP gets one RRset, over TCP all of them.
		{"ANY over UDP", "www.example.test.", dns.TypeANY, false, expect{aa: true, answer: []string{
			"www.example.test. 3600 IN A 192.0.2.80"}}},
		{"ANY over TCP", "www.example.test.", dns.TypeANY, true, expect{aa: true, answer: []string{
			"www.example.test. 3600 IN A 192.0.2.80", "www.example.test. 3600 IN AAAA 2001:db8::80"}}},
		// RFC 2181 §9: an answer that does not fit sets TC, at an RRset
		// boundary (here nothing fits in 512 bytes).
		{"truncated", "big.example.test.", dns.TypeTXT, false, expect{aa: true, tc: true}},
		{"not truncated over TCP", "big.example.test.", dns.TypeTXT, true, expect{aa: true, answer: []string{
			`big.example.test. 3600 IN TXT "` + strings.Repeat("a", 104) + `"`,
			`big.example.test. 3600 IN TXT "` + strings.Repeat("b", 104) + `"`,
			`big.example.test. 3600 IN TXT "` + strings.Repeat("c", 104) + `"`,
			`big.example.test. 3600 IN TXT "` + strings.Repeat("d", 104) + `"`,
			`big.example.test. 3600 IN TXT "` + strings.Repeat("e", 104) + `"`}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check(t, ask(t, r, query(tc.qname, tc.qtype), tc.tcp), tc.want)
		})
	}
}

func TestQuestionEchoedWithClientCase(t *testing.T) {
	r := testResponder(t, Options{})
	resp := ask(t, r, query("WwW.ExAmPlE.TeSt.", dns.TypeA), false)
	if got := resp.Question[0].Name; got != "WwW.ExAmPlE.TeSt." {
		t.Errorf("question %q, want the client's case", got)
	}
	if len(resp.Answer) != 1 || !strings.EqualFold(resp.Answer[0].Header().Name, "www.example.test.") {
		t.Errorf("answer %v", resp.Answer)
	}
}

func TestCompression(t *testing.T) {
	r := testResponder(t, Options{})
	pkt, _ := query("example.test.", dns.TypeMX).Pack()
	var s Scratch
	out := r.Answer(&s, pkt, make([]byte, 0, BufferSize), false)
	// Header 12, question 14+4; MX: pointer(2)+10+pref(2)+"mail"+pointer
	// (7); additional A and AAAA owned by a pointer to the exchange.
	if want := 12 + 18 + (2 + 10 + 2 + 7) + (2 + 10 + 4) + (2 + 10 + 16); len(out) != want {
		t.Errorf("response is %d bytes, want %d (names not compressed?)\n% x", len(out), want, out)
	}
	// The answer's owner is a pointer to the question.
	if binary.BigEndian.Uint16(out[30:]) != 0xC00C {
		t.Errorf("answer owner is not 0xC00C: % x", out[30:32])
	}
}

func TestEDNS(t *testing.T) {
	r := testResponder(t, Options{NSID: []byte("tern-1")})
	t.Run("OPT echoed with our payload size and DO", func(t *testing.T) {
		m := query("www.example.test.", dns.TypeA)
		m.SetEdns0(4096, true)
		resp := ask(t, r, m, false)
		opt := resp.IsEdns0()
		if opt == nil {
			t.Fatal("no OPT in response")
		}
		if opt.UDPSize() != DefaultUDPPayload || !opt.Do() || opt.Version() != 0 {
			t.Errorf("OPT %v: want payload %d, DO, version 0", opt, DefaultUDPPayload)
		}
		if len(opt.Option) != 0 {
			t.Errorf("NSID sent unasked: %v", opt.Option)
		}
	})
	t.Run("no OPT without EDNS", func(t *testing.T) {
		if resp := ask(t, r, query("www.example.test.", dns.TypeA), false); resp.IsEdns0() != nil {
			t.Error("OPT in response to a query without one")
		}
	})
	t.Run("BADVERS", func(t *testing.T) {
		m := query("www.example.test.", dns.TypeA)
		m.SetEdns0(1232, false)
		m.IsEdns0().SetVersion(1)
		resp := ask(t, r, m, false)
		if resp.Rcode != dns.RcodeBadVers || len(resp.Answer) != 0 {
			t.Errorf("rcode %d answers %d, want BADVERS and none", resp.Rcode, len(resp.Answer))
		}
		if opt := resp.IsEdns0(); opt == nil || opt.Version() != 0 {
			t.Errorf("OPT %v, want version 0", opt)
		}
	})
	t.Run("two OPT records", func(t *testing.T) {
		m := query("www.example.test.", dns.TypeA)
		m.SetEdns0(1232, false)
		m.Extra = append(m.Extra, m.Extra[0])
		if resp := ask(t, r, m, false); resp.Rcode != dns.RcodeFormatError {
			t.Errorf("rcode %s, want FORMERR", dns.RcodeToString[resp.Rcode])
		}
	})
	t.Run("unknown option ignored, NSID answered", func(t *testing.T) {
		m := query("www.example.test.", dns.TypeA)
		m.SetEdns0(1232, false)
		opt := m.IsEdns0()
		opt.Option = append(opt.Option, &dns.EDNS0_LOCAL{Code: 65001, Data: []byte{1, 2}}, &dns.EDNS0_NSID{Code: dns.EDNS0NSID})
		resp := ask(t, r, m, false)
		if resp.Rcode != 0 || len(resp.Answer) != 1 {
			t.Fatalf("rcode %d, %d answers", resp.Rcode, len(resp.Answer))
		}
		ro := resp.IsEdns0()
		if ro == nil || len(ro.Option) != 1 {
			t.Fatalf("OPT %v: want one NSID option", ro)
		}
		if n, ok := ro.Option[0].(*dns.EDNS0_NSID); !ok || n.Nsid != fmt.Sprintf("%x", "tern-1") {
			t.Errorf("NSID %v", ro.Option[0])
		}
	})
	t.Run("larger payload avoids truncation", func(t *testing.T) {
		m := query("big.example.test.", dns.TypeTXT)
		m.SetEdns0(1232, false)
		if resp := ask(t, r, m, false); resp.Truncated || len(resp.Answer) != 5 {
			t.Errorf("TC %v with %d answers, want all 5", resp.Truncated, len(resp.Answer))
		}
	})
	t.Run("payload below 512 is treated as 512", func(t *testing.T) {
		m := query("www.example.test.", dns.TypeA)
		m.SetEdns0(100, false)
		if resp := ask(t, r, m, false); resp.Truncated || len(resp.Answer) != 1 {
			t.Errorf("TC %v answers %d", resp.Truncated, len(resp.Answer))
		}
	})
}

func TestMalformed(t *testing.T) {
	r := testResponder(t, Options{})
	good, _ := query("www.example.test.", dns.TypeA).Pack()
	mk := func(f func(p []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	tests := []struct {
		name  string
		pkt   []byte
		rcode int // -1: dropped
	}{
		{"short", good[:11], -1},
		{"response", mk(func(p []byte) []byte { p[2] |= 0x80; return p }), -1},
		{"qdcount 0", mk(func(p []byte) []byte { p[5] = 0; return p[:12] }), dns.RcodeFormatError},
		{"qdcount 2", mk(func(p []byte) []byte { p[5] = 2; return p }), dns.RcodeFormatError},
		{"truncated question", good[:len(good)-2], dns.RcodeFormatError},
		{"label too long", mk(func(p []byte) []byte { p[12] = 64; return p }), dns.RcodeFormatError},
		{"pointer in question", mk(func(p []byte) []byte { p[12] = 0xC0; p[13] = 12; return p }), dns.RcodeFormatError},
		{"trailing garbage", append(append([]byte(nil), good...), 1, 2, 3), dns.RcodeFormatError},
		{"ancount lies", mk(func(p []byte) []byte { p[7] = 1; return p }), dns.RcodeFormatError},
		{"notify opcode", mk(func(p []byte) []byte { p[2] |= 4 << 3; return p }), dns.RcodeNotImplemented},
		{"status opcode", mk(func(p []byte) []byte { p[2] |= 2 << 3; return p }), dns.RcodeNotImplemented},
		// RFC 2136 §3.1.1: an UPDATE's zone section is of type SOA.
		{"update opcode, zone type A", mk(func(p []byte) []byte { p[2] |= 5 << 3; return p }), dns.RcodeFormatError},
		{"update opcode, qdcount 0", mk(func(p []byte) []byte { p[2] |= 5 << 3; p[5] = 0; return p[:12] }), dns.RcodeFormatError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s Scratch
			out := r.Answer(&s, tc.pkt, make([]byte, 0, BufferSize), false)
			if tc.rcode < 0 {
				if out != nil {
					t.Fatalf("answered % x, want dropped", out)
				}
				return
			}
			if out == nil {
				t.Fatal("dropped, want an answer")
			}
			if len(out) < 12 || out[2]&0x80 == 0 {
				t.Fatalf("not a response: % x", out)
			}
			if rc := int(out[3] & 0xF); rc != tc.rcode {
				t.Errorf("rcode %s, want %s", dns.RcodeToString[rc], dns.RcodeToString[tc.rcode])
			}
			if binary.BigEndian.Uint16(out) != binary.BigEndian.Uint16(tc.pkt) {
				t.Error("ID not copied")
			}
		})
	}
}

func TestChaos(t *testing.T) {
	r := testResponder(t, Options{Chaos: true, ID: "ns1.tern", Version: "Tern 0.1"})
	for _, tc := range []struct{ name, want string }{
		{"id.server.", "ns1.tern"}, {"hostname.bind.", "ns1.tern"},
		{"version.bind.", "Tern 0.1"}, {"VERSION.SERVER.", "Tern 0.1"},
	} {
		m := query(tc.name, dns.TypeTXT)
		m.Question[0].Qclass = dns.ClassCHAOS
		resp := ask(t, r, m, false)
		if len(resp.Answer) != 1 {
			t.Errorf("%s: %v", tc.name, resp)
			continue
		}
		txt, ok := resp.Answer[0].(*dns.TXT)
		if !ok || txt.Txt[0] != tc.want || txt.Hdr.Class != dns.ClassCHAOS {
			t.Errorf("%s: %v, want %q", tc.name, resp.Answer[0], tc.want)
		}
	}
	m := query("other.bind.", dns.TypeTXT)
	m.Question[0].Qclass = dns.ClassCHAOS
	if resp := ask(t, r, m, false); resp.Rcode != dns.RcodeRefused {
		t.Errorf("unknown CHAOS name: rcode %d", resp.Rcode)
	}
	off := testResponder(t, Options{Chaos: false, ID: "x"})
	m = query("id.server.", dns.TypeTXT)
	m.Question[0].Qclass = dns.ClassCHAOS
	if resp := ask(t, off, m, false); resp.Rcode != dns.RcodeRefused || len(resp.Answer) != 0 {
		t.Errorf("CHAOS off: %v", resp)
	}
}

func TestPublishSwapsZones(t *testing.T) {
	r := testResponder(t, Options{})
	r.Publish(zone.NewSet())
	if resp := ask(t, r, query("www.example.test.", dns.TypeA), false); resp.Rcode != dns.RcodeRefused {
		t.Errorf("after publishing an empty set: rcode %d, want REFUSED", resp.Rcode)
	}
}

// TestZeroAllocs proves the answer path allocates nothing for each kind
// of answer.
func TestZeroAllocs(t *testing.T) {
	r := testResponder(t, Options{NSID: []byte("x")})
	for _, tc := range []struct {
		name  string
		qname string
		qtype uint16
		edns  bool
	}{
		{"positive", "www.example.test.", dns.TypeA, false},
		{"positive with EDNS", "www.example.test.", dns.TypeAAAA, true},
		{"additional", "example.test.", dns.TypeMX, true},
		{"nxdomain", "nope.example.test.", dns.TypeA, true},
		{"nodata", "www.example.test.", dns.TypeMX, false},
		{"referral", "www.sub.example.test.", dns.TypeA, true},
		{"wildcard", "x.wild.example.test.", dns.TypeA, true},
		{"cname chain", "a.example.test.", dns.TypeA, true},
		{"dname", "x.dn.example.test.", dns.TypeA, true},
		{"refused", "www.other.test.", dns.TypeA, false},
	} {
		m := query(tc.qname, tc.qtype)
		if tc.edns {
			m.SetEdns0(1232, true)
		}
		pkt, _ := m.Pack()
		var s Scratch
		out := make([]byte, 0, BufferSize)
		if r.Answer(&s, pkt, out, false) == nil {
			t.Fatalf("%s: no answer", tc.name)
		}
		if n := testing.AllocsPerRun(100, func() { r.Answer(&s, pkt, out, false) }); n != 0 {
			t.Errorf("%s: %v allocations per query, want 0", tc.name, n)
		}
	}
}

func BenchmarkAnswer(b *testing.B) {
	r := testResponder(b, Options{})
	for _, tc := range []struct {
		name  string
		qname string
		qtype uint16
	}{
		{"positive", "www.example.test.", dns.TypeA},
		{"nxdomain", "nope.example.test.", dns.TypeA},
		{"referral", "www.sub.example.test.", dns.TypeA},
		{"soa", "example.test.", dns.TypeSOA},
		{"mx-with-additional", "example.test.", dns.TypeMX},
	} {
		m := query(tc.qname, tc.qtype)
		m.SetEdns0(1232, false)
		pkt, _ := m.Pack()
		b.Run(tc.name, func(b *testing.B) {
			var s Scratch
			out := make([]byte, 0, BufferSize)
			b.ReportAllocs()
			for b.Loop() {
				r.Answer(&s, pkt, out, false)
			}
		})
	}
}

// A UDP client with a 65535-byte EDNS buffer still gets RFC 8482's one
// RRset: the transport, not the size limit, decides.
func TestANYLargeUDPBuffer(t *testing.T) {
	r := testResponder(t, Options{UDPPayload: 65535})
	m := query("www.example.test.", dns.TypeANY)
	m.SetEdns0(65535, false)
	if resp := ask(t, r, m, false); len(resp.Answer) != 1 {
		t.Errorf("ANY over UDP with a 64 KiB buffer: %d records, want 1", len(resp.Answer))
	}
}

// TestPublishReusesPreparation: a zone published again, in a new set,
// keeps what auth precomputed for it (a compiled zone is not written
// after it is built, so that lives beside it, not in it); a new zone
// with the same origin gets its own.
func TestPublishReusesPreparation(t *testing.T) {
	r := testResponder(t, Options{})
	p := r.zones.Load()
	zs := r.Zones().Zones()
	r.Publish(zone.NewSet(zs...))
	for _, z := range zs {
		if a, b := servedOf(p, z.Origin), servedOf(r.zones.Load(), z.Origin); a != b || a.z != z {
			t.Errorf("%s: prepared again", zone.NameString(z.Origin))
		}
	}
	z, err := zone.Load("testdata/example.test.zone", "example.test.")
	if err != nil {
		t.Fatal(err)
	}
	r.Publish(zone.NewSet(z))
	if sz := servedOf(r.zones.Load(), z.Origin); sz.z != z || len(sz.referrals) != z.Cuts || sz.negative[0].wire == nil {
		t.Errorf("a new zone of the same origin: %+v", sz)
	}
	check(t, ask(t, r, query("www.sub.example.test.", dns.TypeA), false), expect{
		authority:  []string{"sub.example.test. 3600 IN NS ns.sub.example.test.", "sub.example.test. 3600 IN NS ns1.example.test."},
		additional: []string{"ns.sub.example.test. 3600 IN A 192.0.2.200", "ns1.example.test. 3600 IN A 192.0.2.53"},
	})
}
