package auth

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/acl"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/tsig"
	"github.com/tern-dns/tern/internal/zone"
)

// queryACLResponder serves example.test, queried only from 192.0.2.0/24
// and 2001:db8::/32 (a transfer rule for 203.0.113.0/24 besides), and
// child.example.test with no query ACL: everyone.
func queryACLResponder(t testing.TB) *Responder {
	t.Helper()
	r := testResponder(t, Options{})
	r.SetAccess(&Access{
		Keys: tsig.NewKeyring([]tsig.Key{{Name: "xfr.", Algorithm: "hmac-sha256", Secret: testSecret}}),
		ACLs: NewACLs(map[string]acl.List{
			"example.test.": {
				{Name: "clients", Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("2001:db8::/32")}, Actions: acl.Query},
				{Name: "xfr", Prefixes: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}, Actions: acl.Transfer},
			},
			"child.example.test.": {{Name: "xfr", Actions: acl.Transfer}},
		}),
	})
	return r
}

// TestQueryACL checks at the wire level that a zone with a query ACL
// answers the clients it allows (IPv4, IPv6, IPv4 on a dual-stack
// socket) and REFUSES the others (without AA, no records), over UDP
// through a response cache and over TCP, and that a zone without one
// answers everyone.
func TestQueryACL(t *testing.T) {
	r := queryACLResponder(t)
	udp := r.NewWorker(false, 64)
	tcp := r.NewWorker(true, 0)
	for _, tc := range []struct {
		name   string
		client string
		qname  string
		rcode  int
	}{
		{"allowed v4", "192.0.2.9", "www.example.test.", dns.RcodeSuccess},
		{"allowed v6", "[2001:db8::53]", "www.example.test.", dns.RcodeSuccess},
		{"allowed mapped", "[::ffff:192.0.2.200]", "www.example.test.", dns.RcodeSuccess},
		{"allowed nxdomain", "192.0.2.9", "nope.example.test.", dns.RcodeNameError},
		{"denied v4", "198.51.100.1", "www.example.test.", dns.RcodeRefused},
		{"denied v6", "[2001:db9::1]", "www.example.test.", dns.RcodeRefused},
		{"denied transfer-only client", "203.0.113.5", "www.example.test.", dns.RcodeRefused},
		{"denied nxdomain", "198.51.100.1", "nope.example.test.", dns.RcodeRefused},
		{"other zone open", "198.51.100.1", "www.child.example.test.", dns.RcodeSuccess},
	} {
		for _, w := range []*Worker{udp, tcp} {
			// Three times: a UDP worker caches on a question's second
			// miss, so a cached answer must not reach the next client.
			for range 3 {
				m := query(tc.qname, dns.TypeA)
				m.SetEdns0(1232, false)
				pkt, _ := m.Pack()
				ap := netip.MustParseAddrPort(tc.client + ":5353")
				out := w.Answer(server.NewRequest(pkt, ap, w.tcp, nil), make([]byte, 0, BufferSize))
				var resp dns.Msg
				if err := resp.Unpack(out); err != nil {
					t.Fatalf("%s tcp=%v: %v", tc.name, w.tcp, err)
				}
				if resp.Rcode != tc.rcode {
					t.Errorf("%s tcp=%v: rcode %s, want %s", tc.name, w.tcp, dns.RcodeToString[resp.Rcode], dns.RcodeToString[tc.rcode])
				}
				if tc.rcode == dns.RcodeRefused && (resp.Authoritative || len(resp.Answer)+len(resp.Ns) > 0) {
					t.Errorf("%s tcp=%v: REFUSED with AA or records: %v", tc.name, w.tcp, &resp)
				}
				if tc.rcode == dns.RcodeSuccess && len(resp.Answer) == 0 {
					t.Errorf("%s tcp=%v: no answer", tc.name, w.tcp)
				}
			}
		}
	}
	// A signed query is matched by its address, not its key.
	for _, tc := range []struct {
		client string
		rcode  int
	}{{"192.0.2.9", dns.RcodeSuccess}, {"198.51.100.1", dns.RcodeRefused}} {
		pkt, _ := signQuery(t, query("www.example.test.", dns.TypeA), "xfr.", dns.HmacSHA256, testSecret, time.Now())
		out := tcp.Answer(server.NewRequest(pkt, netip.MustParseAddrPort(tc.client+":53"), true, nil), make([]byte, 0, BufferSize))
		var resp dns.Msg
		if err := resp.Unpack(out); err != nil || resp.Rcode != tc.rcode || resp.IsTsig() == nil {
			t.Errorf("signed from %s: %v, rcode %s (want %s, signed)", tc.client, err, dns.RcodeToString[resp.Rcode], dns.RcodeToString[tc.rcode])
		}
	}
	// Without a client (Responder.Answer alone) the zone answers nobody.
	if resp := ask(t, r, query("www.example.test.", dns.TypeA), false); resp.Rcode != dns.RcodeRefused {
		t.Errorf("no client: rcode %s, want REFUSED", dns.RcodeToString[resp.Rcode])
	}
	// Access without query rules opens the zone again, and the
	// republished zones keep their preparation otherwise.
	r.SetAccess(&Access{})
	if resp := ask(t, r, query("www.example.test.", dns.TypeA), false); resp.Rcode != dns.RcodeSuccess {
		t.Errorf("query ACL removed: rcode %s, want NOERROR", dns.RcodeToString[resp.Rcode])
	}
}

// TestQueryACLBatch: the batched UDP path (answers ahead) checks the
// ACL too, without allocating, allowed and denied clients mixed.
func TestQueryACLBatch(t *testing.T) {
	r := queryACLResponder(t)
	w := r.NewWorker(false, 0)
	m := query("www.example.test.", dns.TypeA)
	pkt, _ := m.Pack()
	clients := []string{"192.0.2.1", "198.51.100.1", "[2001:db8::1]", "[2001:db9::1]"}
	want := []int{dns.RcodeSuccess, dns.RcodeRefused, dns.RcodeSuccess, dns.RcodeRefused}
	reqs := make([]server.Request, len(clients))
	outs := make([][]byte, len(clients))
	bufs := make([][]byte, len(clients))
	for i, c := range clients {
		reqs[i] = *server.NewRequest(pkt, netip.MustParseAddrPort(c+":53"), false, nil)
		bufs[i] = make([]byte, 0, BufferSize)
	}
	batch := func() {
		for i := range outs {
			outs[i] = bufs[i]
		}
		w.AnswerBatch(reqs, outs)
	}
	batch()
	for i := range outs {
		var resp dns.Msg
		if err := resp.Unpack(outs[i]); err != nil || resp.Rcode != want[i] {
			t.Errorf("%s: %v rcode %s, want %s", clients[i], err, dns.RcodeToString[resp.Rcode], dns.RcodeToString[want[i]])
		}
	}
	if n := testing.AllocsPerRun(50, batch); n != 0 {
		t.Errorf("%v allocations per batch, want 0", n)
	}
}

// BenchmarkAnswerQueryACL is BenchmarkAnswer's positive answer from a
// zone with a query ACL (two prefixes), an allowed client, beside the
// same zone without one: the ACL's cost per query.
func BenchmarkAnswerQueryACL(b *testing.B) {
	m := query("www.example.test.", dns.TypeA)
	m.SetEdns0(1232, false)
	pkt, _ := m.Pack()
	for _, tc := range []struct {
		name string
		r    *Responder
	}{{"open", testResponder(b, Options{})}, {"acl", queryACLResponder(b)}} {
		b.Run(tc.name, func(b *testing.B) {
			var s Scratch
			s.req = server.NewRequest(pkt, netip.MustParseAddrPort("[2001:db8::1]:53"), false, nil)
			out := make([]byte, 0, BufferSize)
			b.ReportAllocs()
			for b.Loop() {
				tc.r.Answer(&s, pkt, out, false)
			}
		})
	}
}

// TestQueryACLWithACL: an Access made from the one served by changing
// one zone's ACL (Access.WithACL, a zone added or removed at run time)
// gives that zone its new query ACL and keeps the others', with the
// query ACLs SetAccess compiled for that shard alone equal to those it
// compiles for a whole Access, and the zones of the other shards kept
// as they were prepared.
func TestQueryACLWithACL(t *testing.T) {
	r := queryACLResponder(t)
	rcode := func(client, qname string) int {
		t.Helper()
		var s Scratch
		m := query(qname, dns.TypeA)
		pkt, _ := m.Pack()
		s.req = server.NewRequest(pkt, netip.MustParseAddrPort(client+":53"), true, nil)
		var resp dns.Msg
		if err := resp.Unpack(r.Answer(&s, pkt, make([]byte, 0, BufferSize), true)); err != nil {
			t.Fatal(err)
		}
		return resp.Rcode
	}
	clients := acl.List{{Name: "clients", Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}, Actions: acl.Query}}
	before := r.zones.Load()
	for _, step := range []struct {
		name      string
		acl       acl.List
		childFrom int // rcode for 198.51.100.1 in child.example.test
	}{{"query ACL added", clients, dns.RcodeRefused}, {"ACL removed", nil, dns.RcodeSuccess}} {
		a := r.access.Load().WithACL("child.example.test.", step.acl)
		r.SetAccess(a)
		if got := rcode("198.51.100.1", "www.child.example.test."); got != step.childFrom {
			t.Errorf("%s: child from 198.51.100.1: %s, want %s", step.name, dns.RcodeToString[got], dns.RcodeToString[step.childFrom])
		}
		if got := rcode("192.0.2.9", "www.child.example.test."); got != dns.RcodeSuccess {
			t.Errorf("%s: child from 192.0.2.9: %s", step.name, dns.RcodeToString[got])
		}
		if got := rcode("198.51.100.1", "www.example.test."); got != dns.RcodeRefused {
			t.Errorf("%s: example.test's query ACL lost: %s", step.name, dns.RcodeToString[got])
		}
		full := queryTables(a.ACLs, nil)
		for origin, tbl := range full.All() {
			if got := a.query.GetBytes([]byte(origin)); got == nil || !reflect.DeepEqual(got, tbl) {
				t.Errorf("%s: query ACL of %q: %v, want %v", step.name, origin, got, tbl)
			}
		}
		if a.query.Len() != full.Len() {
			t.Errorf("%s: %d query ACLs, want %d", step.name, a.query.Len(), full.Len())
		}
		after := r.zones.Load()
		child := zone.ShardOf(wireName(t, "child.example.test."))
		for i := range zone.SetShards {
			if i != child && len(before.zones[i]) > 0 && reflect.ValueOf(before.zones[i]).UnsafePointer() != reflect.ValueOf(after.zones[i]).UnsafePointer() {
				t.Errorf("%s: shard %d prepared again, child.example.test. is in %d", step.name, i, child)
			}
		}
		before = after
	}
}

// wireName is name in wire form.
func wireName(t *testing.T, name string) []byte {
	t.Helper()
	buf := make([]byte, 255)
	n, err := dns.PackDomainName(name, buf, 0, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}
