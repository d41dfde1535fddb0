package auth

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/acl"
	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/tsig"
	"github.com/tern-dns/tern/internal/zone"
)

// xfrResponder serves example.test (ACL: 127.0.0.0/8 unsigned, or any
// address signed with key xfr.), child.example.test (no ACL), and
// signed.test and nsec3.test (ACL: anyone unsigned).
func xfrResponder(t testing.TB) *Responder {
	t.Helper()
	r := testResponder(t, Options{})
	s, _ := signedResponder(t)
	zs := append(r.Zones().Zones(), s.Zones().Zones()...)
	broken, err := zone.Placeholder("broken.test.")
	if err != nil {
		t.Fatal(err)
	}
	r.Publish(zone.NewSet(append(zs, broken)...))
	r.SetAccess(&Access{
		Keys: tsig.NewKeyring([]tsig.Key{{Name: "xfr.", Algorithm: "hmac-sha256", Secret: testSecret}}),
		ACLs: NewACLs(map[string]acl.List{
			"example.test.": {
				{Name: "local", Prefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Actions: acl.Transfer},
				{Name: "signed", Keys: []string{"xfr."}, Actions: acl.Transfer},
				{Name: "notify-only", Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}, Actions: acl.Notify},
			},
			"signed.test.": {{Name: "any", Actions: acl.Transfer}},
			"broken.test.": {{Name: "any", Actions: acl.Transfer}},
			"nsec3.test.":  {{Name: "any", Actions: acl.Transfer}},
		}),
	})
	return r
}

// xfrResult is what a transfer query got: the immediate answer, or the
// messages of a stream.
type xfrResult struct {
	answer *dns.Msg
	stream [][]byte
}

// transfer sends pkt from client over TCP or UDP through a Worker and
// collects the answer: the immediate one, or a stream's messages until
// the second SOA (or 10 s, for a stream that never ends).
func transfer(t *testing.T, r *Responder, pkt []byte, client string, tcp bool) xfrResult {
	t.Helper()
	var (
		mu   sync.Mutex
		msgs [][]byte
		done = make(chan struct{})
		soas int
	)
	deliver := func(msg []byte) {
		mu.Lock()
		defer mu.Unlock()
		msgs = append(msgs, append([]byte(nil), msg...))
		var m dns.Msg
		if err := m.Unpack(msg); err != nil {
			t.Errorf("message %d: %v", len(msgs), err)
			return
		}
		for _, rr := range m.Answer {
			if rr.Header().Rrtype == dns.TypeSOA {
				soas++
			}
		}
		if soas == 2 || (soas == 1 && len(msgs) == 1 && len(m.Answer) == 1) {
			close(done)
		}
	}
	req := server.NewRequest(pkt, netip.MustParseAddrPort(client), tcp, deliver)
	w := r.NewWorker(tcp, 0)
	resp := w.Answer(req, make([]byte, 0, BufferSize))
	if resp != nil {
		m := new(dns.Msg)
		if err := m.Unpack(resp); err != nil {
			t.Fatal(err)
		}
		return xfrResult{answer: m}
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the stream did not end: %d messages", len(msgs))
	}
	mu.Lock()
	defer mu.Unlock()
	return xfrResult{stream: msgs}
}

// zoneFile is dnstest.ZoneRecords, failing the test on an error.
func zoneFile(t *testing.T, file, origin string) []string {
	t.Helper()
	recs, err := dnstest.ZoneRecords(file, origin)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// streamRecords checks the RFC 5936 §2.2 shape of a stream (every
// message a response to id with AA, the question, the SOA first and
// last, no message over the size target) and returns its records but the
// last SOA, sorted, with the number of messages.
func streamRecords(t *testing.T, msgs [][]byte, id uint16, qname string, qtype uint16) []string {
	t.Helper()
	var rrs []dns.RR
	for i, raw := range msgs {
		var m dns.Msg
		if err := m.Unpack(raw); err != nil {
			t.Fatal(err)
		}
		if m.Id != id || !m.Response || !m.Authoritative || m.Rcode != 0 || len(m.Question) != 1 ||
			m.Question[0].Name != qname || m.Question[0].Qtype != qtype {
			t.Errorf("message %d: header or question wrong:\n%v", i, m.MsgHdr)
		}
		if len(raw) > xfrMessage+500 && len(m.Answer) > 1 {
			t.Errorf("message %d: %d bytes, %d records", i, len(raw), len(m.Answer))
		}
		rrs = append(rrs, m.Answer...)
	}
	if len(rrs) < 2 || rrs[0].Header().Rrtype != dns.TypeSOA || rrs[len(rrs)-1].Header().Rrtype != dns.TypeSOA {
		t.Fatalf("the stream does not start and end with the SOA: %d records", len(rrs))
	}
	if rrs[0].String() != rrs[len(rrs)-1].String() {
		t.Errorf("first and last SOA differ: %v, %v", rrs[0], rrs[len(rrs)-1])
	}
	return dnstest.Records(rrs[:len(rrs)-1])
}

func sameRecords(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") == strings.Join(want, "\n") {
		return
	}
	g, w := map[string]bool{}, map[string]bool{}
	for _, s := range got {
		g[s] = true
	}
	for _, s := range want {
		w[s] = true
	}
	for _, s := range want {
		if !g[s] {
			t.Errorf("missing: %s", s)
		}
	}
	for _, s := range got {
		if !w[s] {
			t.Errorf("extra: %s", s)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d records, want %d", len(got), len(want))
	}
}

func ixfrQuery(name string, serial uint32) *dns.Msg {
	m := query(name, dns.TypeIXFR)
	m.Ns = []dns.RR{&dns.SOA{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeSOA, Class: dns.ClassINET}, Ns: "ns.", Mbox: "h.", Serial: serial}}
	return m
}

// TestTransferRules checks who gets what for AXFR and IXFR queries, at the
// wire level.
func TestTransferRules(t *testing.T) {
	r := xfrResponder(t)
	for _, tc := range []struct {
		name   string
		m      *dns.Msg
		client string
		tcp    bool
		rcode  int
		stream bool
		soa    bool // the answer is the SOA alone
	}{
		{"AXFR from an allowed address", query("example.test.", dns.TypeAXFR), "127.0.0.1:5353", true, 0, true, false},
		{"AXFR, name in capitals", query("EXAMPLE.test.", dns.TypeAXFR), "127.0.0.1:5353", true, 0, true, false},
		{"AXFR from an IPv4-mapped allowed address", query("example.test.", dns.TypeAXFR), "[::ffff:127.0.0.2]:5353", true, 0, true, false},
		{"AXFR from elsewhere", query("example.test.", dns.TypeAXFR), "203.0.113.1:5353", true, dns.RcodeRefused, false, false},
		{"AXFR from a notify-only address", query("example.test.", dns.TypeAXFR), "192.0.2.1:5353", true, dns.RcodeRefused, false, false},
		{"AXFR of a zone without ACL", query("child.example.test.", dns.TypeAXFR), "127.0.0.1:5353", true, dns.RcodeRefused, false, false},
		{"AXFR of a name below an apex", query("www.example.test.", dns.TypeAXFR), "127.0.0.1:5353", true, dns.RcodeNotAuth, false, false},
		{"AXFR of a zone not served", query("other.test.", dns.TypeAXFR), "127.0.0.1:5353", true, dns.RcodeNotAuth, false, false},
		{"AXFR of a zone that failed to load", query("broken.test.", dns.TypeAXFR), "127.0.0.1:5353", true, dns.RcodeServerFailure, false, false},
		{"AXFR over UDP", query("example.test.", dns.TypeAXFR), "127.0.0.1:5353", false, dns.RcodeNotImplemented, false, false},
		{"IXFR over UDP", ixfrQuery("example.test.", 0), "127.0.0.1:5353", false, 0, false, true},
		{"IXFR over UDP from elsewhere", ixfrQuery("example.test.", 0), "203.0.113.1:5353", false, dns.RcodeRefused, false, false},
		{"IXFR over TCP, older serial: the whole zone", ixfrQuery("example.test.", 0), "127.0.0.1:5353", true, 0, true, false},
		{"IXFR over TCP, same serial", ixfrQuery("example.test.", 1), "127.0.0.1:5353", true, 0, false, true},
		{"IXFR over TCP, newer serial", ixfrQuery("example.test.", 5), "127.0.0.1:5353", true, 0, false, true},
		{"IXFR without the client's SOA", query("example.test.", dns.TypeIXFR), "127.0.0.1:5353", true, dns.RcodeFormatError, false, false},
		{"AXFR of class CH", func() *dns.Msg {
			m := query("example.test.", dns.TypeAXFR)
			m.Question[0].Qclass = dns.ClassCHAOS
			return m
		}(), "127.0.0.1:5353", true, dns.RcodeRefused, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkt, err := tc.m.Pack()
			if err != nil {
				t.Fatal(err)
			}
			res := transfer(t, r, pkt, tc.client, tc.tcp)
			if tc.stream {
				if res.stream == nil {
					t.Fatalf("no stream; answer:\n%v", res.answer)
				}
				got := streamRecords(t, res.stream, tc.m.Id, tc.m.Question[0].Name, tc.m.Question[0].Qtype)
				sameRecords(t, got, zoneFile(t, "testdata/example.test.zone", "example.test."))
				return
			}
			a := res.answer
			if a == nil {
				t.Fatalf("a stream of %d messages, want an answer", len(res.stream))
			}
			if a.Rcode != tc.rcode || a.Id != tc.m.Id || len(a.Question) != 1 {
				t.Fatalf("rcode %s, want %s:\n%v", dns.RcodeToString[a.Rcode], dns.RcodeToString[tc.rcode], a)
			}
			if tc.soa {
				if len(a.Answer) != 1 || a.Answer[0].Header().Rrtype != dns.TypeSOA || !a.Authoritative || a.Answer[0].(*dns.SOA).Serial != 1 {
					t.Errorf("want the SOA alone:\n%v", a)
				}
			} else if len(a.Answer) != 0 {
				t.Errorf("records in an error answer:\n%v", a)
			}
		})
	}
}

// TestTransferTSIG: a signed AXFR is allowed by the key's rule from any
// address, and every message of the stream is signed, the first over the
// query's MAC, each next over the MAC before it (RFC 8945 §5.3.1); a bad
// key gets NOTAUTH, and a key the ACL does not list REFUSED, signed.
func TestTransferTSIG(t *testing.T) {
	r := xfrResponder(t)
	m := query("example.test.", dns.TypeAXFR)
	pkt, qmac := signQuery(t, m, "xfr.", dns.HmacSHA256, testSecret, time.Now())
	res := transfer(t, r, pkt, "203.0.113.1:5353", true)
	if res.stream == nil {
		t.Fatalf("no stream: %v", res.answer)
	}
	prev := qmac
	for i, raw := range res.stream {
		var msg dns.Msg
		if err := msg.Unpack(raw); err != nil {
			t.Fatal(err)
		}
		ts := msg.IsTsig()
		if ts == nil {
			t.Fatalf("message %d is not signed", i)
		}
		if err := dns.TsigVerify(append([]byte(nil), raw...), testSecret, prev, i > 0); err != nil {
			t.Fatalf("message %d does not verify: %v", i, err)
		}
		prev = ts.MAC
	}

	m = query("example.test.", dns.TypeAXFR)
	pkt, _ = signQuery(t, m, "xfr.", dns.HmacSHA256, otherSecret, time.Now())
	if res := transfer(t, r, pkt, "127.0.0.1:5353", true); res.answer == nil || res.answer.Rcode != dns.RcodeNotAuth || res.answer.IsTsig().Error != tsig.BadSig {
		t.Errorf("bad MAC: %v", res.answer)
	}
	// signed.test's rule is for unsigned requests only (Knot's rule).
	m = query("signed.test.", dns.TypeAXFR)
	pkt, _ = signQuery(t, m, "xfr.", dns.HmacSHA256, testSecret, time.Now())
	if res := transfer(t, r, pkt, "127.0.0.1:5353", true); res.answer == nil || res.answer.Rcode != dns.RcodeRefused || res.answer.IsTsig() == nil {
		t.Errorf("signed with a key the ACL does not list: %v", res.answer)
	}
}

// TestTransferDNSSEC: a signed zone goes out whole, RRSIGs, NSEC and the
// NSEC3 chain included.
func TestTransferDNSSEC(t *testing.T) {
	r := xfrResponder(t)
	for _, origin := range []string{"signed.test.", "nsec3.test."} {
		m := query(origin, dns.TypeAXFR)
		m.SetEdns0(1232, true)
		pkt, _ := m.Pack()
		res := transfer(t, r, pkt, "198.51.100.7:1234", true)
		if res.stream == nil {
			t.Fatalf("%s: no stream: %v", origin, res.answer)
		}
		got := streamRecords(t, res.stream, m.Id, origin, dns.TypeAXFR)
		sameRecords(t, got, zoneFile(t, "testdata/"+strings.TrimSuffix(origin, ".")+".zone", origin))
	}
}

// TestTransferLarge: a zone of 30,000 records goes out in many messages,
// none over the size target, every record once; signed too.
func TestTransferLarge(t *testing.T) {
	var text strings.Builder
	text.WriteString("$ORIGIN big.test.\n$TTL 300\n@ SOA ns hostmaster 7 3600 600 86400 300\n@ NS ns\nns A 192.0.2.1\n")
	for i := range 30000 {
		fmt.Fprintf(&text, "h%d A 10.%d.%d.%d\n", i, i>>16, (i>>8)&255, i&255)
	}
	text.WriteString("txt TXT \"" + strings.Repeat("x", 255) + "\" \"" + strings.Repeat("y", 255) + "\"\n")
	// A record larger than a message's share goes alone in one of up
	// to 64 KiB.
	text.WriteString("huge TXT" + strings.Repeat(" \""+strings.Repeat("z", 255)+"\"", 100) + "\n")
	file := t.TempDir() + "/big.test.zone"
	if err := os.WriteFile(file, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	z, err := zone.Load(file, "big.test.")
	if err != nil {
		t.Fatal(err)
	}
	r := New(zone.NewSet(z), Options{})
	r.SetAccess(&Access{
		Keys: tsig.NewKeyring([]tsig.Key{{Name: "xfr.", Algorithm: "hmac-sha512", Secret: testSecret}}),
		ACLs: NewACLs(map[string]acl.List{"big.test.": {{Name: "any", Actions: acl.Transfer}, {Name: "key", Keys: []string{"xfr."}, Actions: acl.Transfer}}}),
	})
	want := zoneFile(t, file, "big.test.")
	m := query("big.test.", dns.TypeAXFR)
	pkt, _ := m.Pack()
	res := transfer(t, r, pkt, "127.0.0.1:5353", true)
	got := streamRecords(t, res.stream, m.Id, "big.test.", dns.TypeAXFR)
	sameRecords(t, got, want)
	if n := len(res.stream); n < 30000*16/xfrMessage {
		t.Errorf("%d messages", n)
	}
	m = query("big.test.", dns.TypeAXFR)
	pkt, _ = signQuery(t, m, "xfr.", dns.HmacSHA512, testSecret, time.Now())
	res = transfer(t, r, pkt, "127.0.0.1:5353", true)
	sameRecords(t, streamRecords(t, res.stream, m.Id, "big.test.", dns.TypeAXFR), want)
}

// TestTransferLimit: past maxTransfers at once, a transfer gets SERVFAIL.
func TestTransferLimit(t *testing.T) {
	r := xfrResponder(t)
	r.transfers.Store(maxTransfers)
	pkt, _ := query("example.test.", dns.TypeAXFR).Pack()
	if res := transfer(t, r, pkt, "127.0.0.1:5353", true); res.answer == nil || res.answer.Rcode != dns.RcodeServerFailure {
		t.Fatalf("%+v", res)
	}
	r.transfers.Store(maxTransfers - 1)
	if res := transfer(t, r, pkt, "127.0.0.1:5353", true); res.stream == nil {
		t.Fatalf("%+v", res)
	}
	// The count goes back down once the stream has ended.
	deadline := time.Now().Add(10 * time.Second)
	for r.transfers.Load() != maxTransfers-1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := r.transfers.Load(); n != maxTransfers-1 {
		t.Errorf("%d transfers counted after the stream ended", n)
	}
}

// BenchmarkAXFR streams a zone of 100,000 A records to a Reply that
// drops the messages: the cost per record of building (and, signed,
// signing) the stream.
func BenchmarkAXFR(b *testing.B) {
	var text strings.Builder
	text.WriteString("$ORIGIN big.test.\n$TTL 300\n@ SOA ns hostmaster 7 3600 600 86400 300\n@ NS ns\nns A 192.0.2.1\n")
	const n = 100000
	for i := range n {
		fmt.Fprintf(&text, "h%d A 10.%d.%d.%d\n", i, i>>16, (i>>8)&255, i&255)
	}
	file := b.TempDir() + "/big.test.zone"
	if err := os.WriteFile(file, []byte(text.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	z, err := zone.Load(file, "big.test.")
	if err != nil {
		b.Fatal(err)
	}
	r := New(zone.NewSet(z), Options{})
	r.SetAccess(&Access{
		Keys: tsig.NewKeyring([]tsig.Key{{Name: "xfr.", Algorithm: "hmac-sha256", Secret: testSecret}}),
		ACLs: NewACLs(map[string]acl.List{"big.test.": {{Name: "any", Actions: acl.Transfer}, {Name: "key", Keys: []string{"xfr."}, Actions: acl.Transfer}}}),
	})
	for _, signed := range []bool{false, true} {
		b.Run(fmt.Sprintf("signed=%v", signed), func(b *testing.B) {
			for b.Loop() {
				m := query("big.test.", dns.TypeAXFR)
				var pkt []byte
				if signed {
					m.SetTsig("xfr.", dns.HmacSHA256, tsig.Fudge, time.Now().Unix())
					pkt, _, _ = dns.TsigGenerate(m, testSecret, "", false)
				} else {
					pkt, _ = m.Pack()
				}
				req := server.NewRequest(pkt, netip.MustParseAddrPort("127.0.0.1:53"), true, func([]byte) {})
				w := r.NewWorker(true, 0)
				if w.Answer(req, make([]byte, 0, BufferSize)) != nil {
					b.Fatal("not streamed")
				}
				// The stream has ended when the transfer count drops.
				for r.transfers.Load() != 0 {
					time.Sleep(100 * time.Microsecond)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
		})
	}
}
