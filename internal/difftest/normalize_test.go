package difftest

import (
	"os"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

func mustRR(t *testing.T, s string) dns.RR {
	t.Helper()
	rr, err := dns.NewRR(s)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return rr
}

func msg(t *testing.T, answer ...string) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion("www.example.test.", dns.TypeA)
	m.Response, m.Authoritative = true, true
	for _, s := range answer {
		m.Answer = append(m.Answer, mustRR(t, s))
	}
	return m
}

// TestNormalizeIgnoresOrderAndCase checks that record order and owner or
// rdata-name case do not make two answers differ.
func TestNormalizeIgnoresOrderAndCase(t *testing.T) {
	a := msg(t, "www.example.test. 60 IN A 192.0.2.1", "www.example.test. 60 IN A 192.0.2.2", "x.test. 60 IN CNAME Target.Test.")
	b := msg(t, "x.TEST. 60 IN CNAME target.test.", "WWW.example.test. 60 IN A 192.0.2.2", "www.example.test. 60 IN A 192.0.2.1")
	if d := Compare(Normalize(a), Normalize(b)); len(d) != 0 {
		t.Errorf("want no differences, got %v", d)
	}
	if got := Normalize(a).Answer; len(got) != 2 || !strings.Contains(got[0], "192.0.2.1 | ") {
		t.Errorf("answer not grouped into sorted RRsets: %q", got)
	}
}

// TestNormalizeSeesDifferences checks each field the comparison must catch.
func TestNormalizeSeesDifferences(t *testing.T) {
	base := func() *dns.Msg { return msg(t, "www.example.test. 60 IN A 192.0.2.1") }
	cases := []struct {
		field  string
		mutate func(m *dns.Msg)
	}{
		{"rcode", func(m *dns.Msg) { m.Rcode = dns.RcodeNameError }},
		{"flags.aa", func(m *dns.Msg) { m.Authoritative = false }},
		{"flags.tc", func(m *dns.Msg) { m.Truncated = true }},
		{"question", func(m *dns.Msg) { m.Question[0].Name = "WWW.example.test." }},
		{"answer", func(m *dns.Msg) { m.Answer[0].Header().Ttl = 61 }},
		{"answer", func(m *dns.Msg) { m.Answer = append(m.Answer, mustRR(t, "www.example.test. 60 IN A 192.0.2.9")) }},
		{"authority", func(m *dns.Msg) { m.Ns = append(m.Ns, mustRR(t, "example.test. 60 IN NS ns.example.test.")) }},
		{"additional", func(m *dns.Msg) { m.Extra = append(m.Extra, mustRR(t, "ns.example.test. 60 IN A 192.0.2.3")) }},
		{"edns", func(m *dns.Msg) { m.SetEdns0(1232, false) }},
		{"answer", func(m *dns.Msg) {
			m.Answer = append(m.Answer, mustRR(t, "x.test. 60 IN TXT \"Case\""))
		}},
	}
	for _, c := range cases {
		m := base()
		c.mutate(m)
		diffs := Compare(Normalize(base()), Normalize(m))
		found := false
		for _, d := range diffs {
			found = found || d.Field == c.field
		}
		if !found {
			t.Errorf("mutation of %s not detected; diffs %v", c.field, diffs)
		}
	}
}

// TestNormalizeRRSIGByCoveredType checks that signatures over different
// types at one owner form separate sets, so each keeps its own TTL.
func TestNormalizeRRSIGByCoveredType(t *testing.T) {
	m := msg(t,
		"example.test. 300 IN RRSIG NSEC 13 2 300 20360101000000 20260101000000 1 example.test. AAAA",
		"example.test. 3600 IN RRSIG SOA 13 2 3600 20360101000000 20260101000000 1 example.test. AAAA")
	got := Normalize(m).Answer
	if len(got) != 2 || !strings.Contains(got[0], " 300 IN RRSIG(NSEC) ") || !strings.Contains(got[1], " 3600 IN RRSIG(SOA) ") {
		t.Errorf("RRSIGs not split by covered type: %q", got)
	}
}

// TestNormalizeUnknownType checks the RFC 3597 rendering, whose owner
// must not leak into the rdata (it would carry the QNAME's case).
func TestNormalizeUnknownType(t *testing.T) {
	a := msg(t, `unknown.example.test. 60 IN TYPE731 \# 4 0a000001`)
	b := msg(t, `UNKNOWN.example.test. 60 IN TYPE731 \# 4 0a000001`)
	if d := Compare(Normalize(a), Normalize(b)); len(d) != 0 {
		t.Errorf("want no differences, got %v", d)
	}
	if got := Normalize(a).Answer[0]; got != `unknown.example.test. 60 IN TYPE731 \# 4 0a000001` {
		t.Errorf("got %q", got)
	}
}

// TestNormalizeEDNS checks that the advertised UDP size and options are
// ignored but version and extended RCODE are not.
func TestNormalizeEDNS(t *testing.T) {
	a, b := msg(t), msg(t)
	a.SetEdns0(1232, false)
	b.SetEdns0(4096, false)
	nsid := &dns.EDNS0_NSID{Code: dns.EDNS0NSID, Nsid: "6e73"}
	b.IsEdns0().Option = append(b.IsEdns0().Option, nsid)
	if d := Compare(Normalize(a), Normalize(b)); len(d) != 0 {
		t.Errorf("UDP size and NSID should be ignored, got %v", d)
	}
	b.IsEdns0().Hdr.Ttl |= 0x0100
	if d := Compare(Normalize(a), Normalize(b)); len(d) != 1 || d[0].Field != "edns" {
		t.Errorf("OPT Z bits not seen: %v", d)
	}
	b.IsEdns0().Hdr.Ttl &^= 0x0100
	b.IsEdns0().SetVersion(1)
	if d := Compare(Normalize(a), Normalize(b)); len(d) != 1 || d[0].Field != "edns" {
		t.Errorf("EDNS version change: got %v", d)
	}
	// BADVERS (16) needs the OPT's extended RCODE bits; round-trip through
	// the wire so the unpacker folds them into Rcode.
	c := msg(t)
	c.SetEdns0(1232, false)
	c.Rcode = dns.RcodeBadVers
	wire, err := c.Pack()
	if err != nil {
		t.Fatal(err)
	}
	u := new(dns.Msg)
	if err := u.Unpack(wire); err != nil {
		t.Fatal(err)
	}
	if d := Compare(Normalize(a), Normalize(u)); len(d) == 0 || d[0].Field != "rcode" {
		t.Errorf("extended RCODE BADVERS not seen: %v", d)
	}
}

// TestCheckSize checks the UDP size limits.
func TestCheckSize(t *testing.T) {
	for _, c := range []struct {
		net  string
		edns uint16
		size int
		ok   bool
	}{
		{"udp", 0, 512, true}, {"udp", 0, 513, false}, {"udp", 1232, 1232, true},
		{"udp", 1232, 1233, false}, {"udp", 256, 512, true}, {"tcp", 0, 4000, true},
	} {
		err := CheckSize(Query{Net: c.net, EDNS: c.edns}, Result{Size: c.size})
		if (err == nil) != c.ok {
			t.Errorf("%s edns=%d size=%d: err=%v, want ok=%v", c.net, c.edns, c.size, err, c.ok)
		}
	}
}

// TestAllowlist checks that allowlist.txt parses and that the parser
// rejects entries without a justification.
func TestAllowlist(t *testing.T) {
	if _, err := LoadAllowlist("allowlist.txt"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bad := dir + "/bad.txt"
	write := func(s string) {
		if err := writeFile(bad, s); err != nil {
			t.Fatal(err)
		}
	}
	write("id: x\nmatch: type=ANY\nfields: answer\ndiffers: something\n")
	if _, err := LoadAllowlist(bad); err == nil {
		t.Error("entry without rfc accepted")
	}
	write("id: x\nmatch: type=ANY net=udp\nfields: answer\ndiffers: d\nrfc: RFC 8482 section 4.2: \"...\"\n  continued\n")
	a, err := LoadAllowlist(bad)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(a.Entries[0].RFC, "continued") {
		t.Errorf("continuation line lost: %q", a.Entries[0].RFC)
	}
	q := Query{Name: "WWW.example.test.", Type: dns.TypeANY, Net: "udp"}
	if a.Allowed(q, Difference{Field: "answer"}, Response{}, Response{}) == nil {
		t.Error("matching difference not allowed")
	}
	if a.Allowed(q, Difference{Field: "rcode"}, Response{}, Response{}) != nil {
		t.Error("field not listed but allowed")
	}
	q.Net = "tcp"
	if a.Allowed(q, Difference{Field: "answer"}, Response{}, Response{}) != nil {
		t.Error("net condition ignored")
	}
	write("id: x\nmatch: type=ANY\nfields: answer\nrequire: superset\ndiffers: d\nrfc: r\n")
	if a, err = LoadAllowlist(bad); err != nil {
		t.Fatal(err)
	}
	want, more, other := []string{"a"}, []string{"a", "b"}, []string{"b"}
	if a.Allowed(q, Difference{Field: "answer"}, Response{Answer: want}, Response{Answer: more}) == nil {
		t.Error("superset not allowed")
	}
	if a.Allowed(q, Difference{Field: "answer"}, Response{Answer: want}, Response{Answer: other}) != nil {
		t.Error("non-superset allowed despite require: superset")
	}
	write("id: x\nmatch: type=ANY\nfields: answer\nrequire: same-owner\ndiffers: d\nrfc: r\n")
	if a, err = LoadAllowlist(bad); err != nil {
		t.Fatal(err)
	}
	if a.Allowed(q, Difference{Field: "answer"}, Response{}, Response{Answer: []string{"www.example.test. 60 IN A 192.0.2.1"}}) == nil {
		t.Error("answer owned by the QNAME not allowed")
	}
	esc := Query{Name: `Sp\032Ace.example.test.`, Type: dns.TypeANY}
	if a.Allowed(esc, Difference{Field: "answer"}, Response{}, Response{Answer: []string{`sp\ ace.example.test. 60 IN A 192.0.2.1`}}) == nil {
		t.Error("owner written with another escape not recognised as the QNAME")
	}
	if a.Allowed(q, Difference{Field: "answer"}, Response{}, Response{Answer: []string{"other.example.test. 60 IN A 192.0.2.1"}}) != nil {
		t.Error("answer owned by another name allowed despite require: same-owner")
	}
	write("id: x\nmatch: type=A\nfields: authority\nrequire: both-tc\ndiffers: d\nrfc: r\n")
	if a, err = LoadAllowlist(bad); err != nil {
		t.Fatal(err)
	}
	qa := Query{Name: "www.example.test.", Type: dns.TypeA}
	tc, notc := Response{Flags: "qr aa tc"}, Response{Flags: "qr aa"}
	if a.Allowed(qa, Difference{Field: "authority"}, tc, tc) == nil {
		t.Error("difference between two truncated answers not allowed")
	}
	if a.Allowed(qa, Difference{Field: "authority"}, tc, notc) != nil {
		t.Error("allowed although only one answer is truncated")
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }
