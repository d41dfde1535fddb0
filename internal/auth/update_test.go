package auth

import (
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/acl"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/tsig"
)

// updateResponder is xfrResponder with example.test open to updates
// signed with key upd. from anywhere, and unsigned ones from 192.0.2.0/24.
func updateResponder(t *testing.T) *Responder {
	r := xfrResponder(t)
	a := *r.access.Load()
	a.Keys = tsig.NewKeyring([]tsig.Key{{Name: "xfr.", Algorithm: "hmac-sha256", Secret: testSecret}, {Name: "upd.", Algorithm: "hmac-sha256", Secret: otherSecret}})
	a.ACLs = NewACLs(map[string]acl.List{
		"example.test.": {
			{Name: "signed", Keys: []string{"upd."}, Actions: acl.Update},
			{Name: "net", Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}, Actions: acl.Update},
			{Name: "xfr", Keys: []string{"xfr."}, Actions: acl.Transfer},
		},
	})
	r.SetAccess(&a)
	return r
}

// exchangeUpdate sends pkt from client through a Worker and returns the
// response, sent at once or later through the deferred reply.
func exchangeUpdate(t *testing.T, r *Responder, pkt []byte, client string, tcp bool) []byte {
	t.Helper()
	got := make(chan []byte, 1)
	req := server.NewRequest(pkt, netip.MustParseAddrPort(client), tcp, func(msg []byte) {
		got <- append([]byte(nil), msg...)
	})
	if resp := r.NewWorker(tcp, 0).Answer(req, make([]byte, 0, BufferSize)); resp != nil {
		return resp
	}
	select {
	case msg := <-got:
		return msg
	case <-time.After(10 * time.Second):
		t.Fatal("no deferred answer")
		return nil
	}
}

// TestUpdateIn checks who may update what at the wire level (RFC 2136
// §3.1, RFC 3007, RFC 8945 §5.2): an UPDATE of a zone served here from a
// client its acl allows action update is handed on, off the query path,
// and answered with the handler's RCODE, its zone section echoed, signed
// when it was; otherwise FORMERR, NOTAUTH (zone not served, or a TSIG
// that does not verify), SERVFAIL (zone not loaded) or REFUSED (no acl,
// unsigned where a key is wanted, no handler), and not handed on.
func TestUpdateIn(t *testing.T) {
	r := updateResponder(t)
	var got []*UpdateRequest
	answer := dns.RcodeYXDomain // a handler's RCODE, passed through
	r.OnUpdate(func(u *UpdateRequest) int { got = append(got, u); return answer })
	upd := func(zone string, qtype, class uint16) *dns.Msg {
		m := new(dns.Msg)
		m.SetUpdate(zone)
		m.Question[0].Qtype, m.Question[0].Qclass = qtype, class
		rr, _ := dns.NewRR("www." + zone + " 60 A 192.0.2.9")
		m.Insert([]dns.RR{rr})
		return m
	}
	for _, tc := range []struct {
		name     string
		m        *dns.Msg
		key      string // "": unsigned
		secret   string
		client   string
		tcp      bool
		edns     bool
		rcode    int
		tsigErr  uint16
		passed   bool
		wantKey  string
		unsigned bool // a NOTAUTH whose TSIG carries no MAC
	}{
		{name: "signed", m: upd("example.test.", dns.TypeSOA, dns.ClassINET), key: "upd.", secret: otherSecret, client: "203.0.113.1:5353", rcode: answer, passed: true, wantKey: "upd."},
		{name: "signed over TCP with EDNS", m: upd("EXAMPLE.test.", dns.TypeSOA, dns.ClassINET), key: "upd.", secret: otherSecret, client: "203.0.113.1:5353", tcp: true, edns: true, rcode: answer, passed: true, wantKey: "upd."},
		{name: "unsigned from the allowed network", m: upd("example.test.", dns.TypeSOA, dns.ClassINET), client: "192.0.2.7:5353", rcode: answer, passed: true},
		{name: "unsigned from elsewhere", m: upd("example.test.", dns.TypeSOA, dns.ClassINET), client: "203.0.113.1:5353", rcode: dns.RcodeRefused},
		{name: "key allowed transfer only", m: upd("example.test.", dns.TypeSOA, dns.ClassINET), key: "xfr.", secret: testSecret, client: "203.0.113.1:5353", rcode: dns.RcodeRefused},
		{name: "bad MAC", m: upd("example.test.", dns.TypeSOA, dns.ClassINET), key: "upd.", secret: testSecret, client: "192.0.2.7:5353", rcode: dns.RcodeNotAuth, tsigErr: tsig.BadSig, unsigned: true},
		{name: "unknown key", m: upd("example.test.", dns.TypeSOA, dns.ClassINET), key: "nobody.", secret: testSecret, client: "192.0.2.7:5353", rcode: dns.RcodeNotAuth, tsigErr: tsig.BadKey, unsigned: true},
		{name: "zone without acl", m: upd("child.example.test.", dns.TypeSOA, dns.ClassINET), key: "upd.", secret: otherSecret, client: "192.0.2.7:5353", rcode: dns.RcodeRefused},
		{name: "zone not served", m: upd("other.test.", dns.TypeSOA, dns.ClassINET), client: "192.0.2.7:5353", rcode: dns.RcodeNotAuth},
		{name: "name below a zone", m: upd("www.example.test.", dns.TypeSOA, dns.ClassINET), client: "192.0.2.7:5353", rcode: dns.RcodeNotAuth},
		{name: "zone not loaded", m: upd("broken.test.", dns.TypeSOA, dns.ClassINET), client: "192.0.2.7:5353", rcode: dns.RcodeServerFailure},
		{name: "zone type not SOA", m: upd("example.test.", dns.TypeA, dns.ClassINET), client: "192.0.2.7:5353", rcode: dns.RcodeFormatError},
		{name: "zone class CH", m: upd("example.test.", dns.TypeSOA, dns.ClassCHAOS), client: "192.0.2.7:5353", rcode: dns.RcodeNotAuth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			if tc.edns {
				tc.m.SetEdns0(1232, true)
			}
			var pkt []byte
			var reqMAC string
			var err error
			if tc.key != "" {
				pkt, reqMAC = signQuery(t, tc.m, tc.key, dns.HmacSHA256, tc.secret, time.Now())
			} else if pkt, err = tc.m.Pack(); err != nil {
				t.Fatal(err)
			}
			resp := exchangeUpdate(t, r, pkt, tc.client, tc.tcp)
			a := new(dns.Msg)
			if err := a.Unpack(resp); err != nil {
				t.Fatal(err)
			}
			if a.Rcode != tc.rcode || a.Id != tc.m.Id || a.Opcode != dns.OpcodeUpdate || !a.Response || len(a.Question) != 1 || a.Question[0] != tc.m.Question[0] {
				t.Fatalf("want rcode %s, opcode UPDATE, the zone echoed:\n%v", dns.RcodeToString[tc.rcode], a)
			}
			if len(a.Answer)+len(a.Ns) != 0 {
				t.Errorf("prerequisite or update section in the response:\n%v", a)
			}
			if (a.IsEdns0() != nil) != tc.edns {
				t.Errorf("OPT %v, want %v", a.IsEdns0() != nil, tc.edns)
			}
			ts := a.IsTsig()
			switch {
			case tc.key == "" && ts != nil:
				t.Errorf("unsigned request, signed response")
			case tc.key != "" && ts == nil:
				t.Errorf("signed request, unsigned response")
			case ts != nil && ts.Error != tc.tsigErr:
				t.Errorf("TSIG error %d, want %d", ts.Error, tc.tsigErr)
			case ts != nil && tc.unsigned && ts.MAC != "":
				t.Errorf("a %s response with a MAC", dns.RcodeToString[int(ts.Error)])
			case ts != nil && !tc.unsigned:
				// The response's MAC covers the request's (RFC 8945 §5.3).
				if err := dns.TsigVerify(resp, tc.secret, reqMAC, false); err != nil {
					t.Errorf("response MAC: %v", err)
				}
			}
			if !tc.passed {
				if got != nil {
					t.Errorf("handed on: %+v", got)
				}
				return
			}
			if len(got) != 1 || got[0].Origin != "example.test." || got[0].Key != tc.wantKey || got[0].Client.String() != tc.client || string(got[0].Msg) != string(pkt) {
				t.Errorf("handed on %+v", got)
			}
		})
	}
	// Without a handler, every UPDATE is refused.
	r.OnUpdate(nil)
	pkt, _ := upd("example.test.", dns.TypeSOA, dns.ClassINET).Pack()
	var a dns.Msg
	if err := a.Unpack(exchangeUpdate(t, r, pkt, "192.0.2.7:5353", false)); err != nil || a.Rcode != dns.RcodeRefused {
		t.Errorf("no OnUpdate: %v %v", err, &a)
	}
}
