package auth

import (
	"testing"

	"github.com/miekg/dns"
)

// TestNotifyIn: NOTIFY (RFC 1996) is acknowledged (§4.7: AA, opcode and
// question echoed) for a zone served here from a client its acl allows
// notify, and passed on; otherwise REFUSED, NOTAUTH or NOTIMP, and not
// passed on.
func TestNotifyIn(t *testing.T) {
	r := xfrResponder(t)
	var got []string
	r.OnNotify(func(origin string) { got = append(got, origin) })
	notify := func(name string, qtype uint16) *dns.Msg {
		m := new(dns.Msg)
		m.SetNotify(name)
		m.Question[0].Qtype = qtype
		return m
	}
	for _, tc := range []struct {
		name   string
		m      *dns.Msg
		client string
		rcode  int
		passed string // the origin passed on; "": none
	}{
		{"allowed", notify("example.test.", dns.TypeSOA), "192.0.2.1:5353", dns.RcodeSuccess, "example.test."},
		{"name in capitals", notify("EXAMPLE.test.", dns.TypeSOA), "192.0.2.1:5353", dns.RcodeSuccess, "example.test."},
		{"transfer-only address", notify("example.test.", dns.TypeSOA), "127.0.0.1:5353", dns.RcodeRefused, ""},
		{"unknown address", notify("example.test.", dns.TypeSOA), "203.0.113.1:5353", dns.RcodeRefused, ""},
		{"zone without acl", notify("child.example.test.", dns.TypeSOA), "192.0.2.1:5353", dns.RcodeRefused, ""},
		{"zone not served", notify("other.test.", dns.TypeSOA), "192.0.2.1:5353", dns.RcodeNotAuth, ""},
		{"not SOA", notify("example.test.", dns.TypeA), "192.0.2.1:5353", dns.RcodeNotImplemented, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			pkt, err := tc.m.Pack()
			if err != nil {
				t.Fatal(err)
			}
			a := transfer(t, r, pkt, tc.client, false).answer
			if a == nil {
				t.Fatal("no answer")
			}
			if a.Rcode != tc.rcode || a.Id != tc.m.Id || a.Opcode != dns.OpcodeNotify || !a.Response || len(a.Question) != 1 || a.Question[0] != tc.m.Question[0] {
				t.Fatalf("want rcode %s, opcode NOTIFY, the question echoed:\n%v", dns.RcodeToString[tc.rcode], a)
			}
			if a.Authoritative != (tc.rcode == dns.RcodeSuccess) {
				t.Errorf("AA %v", a.Authoritative)
			}
			if want := tc.passed; (want == "" && got != nil) || (want != "" && (len(got) != 1 || got[0] != want)) {
				t.Errorf("passed on %q, want %q", got, want)
			}
		})
	}
	// Without an OnNotify function, NOTIFY is not implemented.
	r.OnNotify(nil)
	pkt, _ := notify("example.test.", dns.TypeSOA).Pack()
	if a := transfer(t, r, pkt, "192.0.2.1:5353", false).answer; a == nil || a.Rcode != dns.RcodeNotImplemented {
		t.Errorf("no OnNotify: %v", a)
	}
}
