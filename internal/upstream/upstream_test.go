package upstream

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

var question = dns.Question{Name: "www.example.test.", Qtype: dns.TypeA, Qclass: dns.ClassINET}

// answer returns the response to q with one A record holding addr.
func answer(q *dns.Msg, addr string) *dns.Msg {
	r := new(dns.Msg)
	r.SetReply(q)
	r.Authoritative = true
	rr, err := dns.NewRR(q.Question[0].Name + " 300 IN A " + addr)
	if err != nil {
		panic(err)
	}
	r.Answer = []dns.RR{rr}
	return r
}

// udpServer listens on loopback and calls serve for every query read; it
// stops with the test.
func udpServer(t testing.TB, serve func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg)) *net.UDPConn {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	serveUDP(t, conn, serve)
	return conn
}

// serveUDP calls serve for every query conn reads until the test ends.
func serveUDP(t testing.TB, conn *net.UDPConn, serve func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg)) {
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 65535)
		for {
			n, from, err := conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			q := new(dns.Msg)
			if q.Unpack(buf[:n]) == nil {
				serve(conn, from, q)
			}
		}
	}()
}

// answering starts a server that answers every query with 192.0.2.1 and
// returns its address.
func answering(t testing.TB) netip.AddrPort {
	return addrPort(udpServer(t, func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg) {
		send(conn, from, answer(q, "192.0.2.1"))
	}))
}

func send(conn *net.UDPConn, to *net.UDPAddr, m *dns.Msg) {
	p, err := m.Pack()
	if err != nil {
		panic(err)
	}
	conn.WriteToUDP(p, to)
}

func addrPort(conn net.Conn) netip.AddrPort {
	return conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

// udpPath is one of the ways a Client makes UDP queries on this
// platform (udpPaths): set makes c use it, or skips t when it cannot be
// used here.
type udpPath struct {
	name string
	set  func(t testing.TB, c *Client)
}

// newClient is a Client with this timeout that makes its UDP queries the
// way path says.
func newClient(t testing.TB, path udpPath, timeout time.Duration) *Client {
	t.Helper()
	c := &Client{Timeout: timeout}
	path.set(t, c)
	return c
}

// forEachPath runs f as a subtest for each of udpPaths.
func forEachPath(t *testing.T, f func(t *testing.T, path udpPath)) {
	for _, path := range udpPaths {
		t.Run(path.name, func(t *testing.T) { f(t, path) })
	}
}

func exchange(t *testing.T, path udpPath, server netip.AddrPort, timeout time.Duration) (*dns.Msg, error) {
	t.Helper()
	return newClient(t, path, timeout).Exchange(context.Background(), server, question)
}

func onlyA(t *testing.T, r *dns.Msg, want string) {
	t.Helper()
	if len(r.Answer) != 1 {
		t.Fatalf("answer has %d records, want 1:\n%v", len(r.Answer), r)
	}
	if a, ok := r.Answer[0].(*dns.A); !ok || a.A.String() != want {
		t.Fatalf("answer %v, want A %s", r.Answer[0], want)
	}
}

// TestQueryFresh: each query has EDNS with 1232 bytes, RD clear, and a new
// source port; IDs vary.
func TestQueryFresh(t *testing.T) { forEachPath(t, testQueryFresh) }

func testQueryFresh(t *testing.T, path udpPath) {
	type seen struct {
		port int
		id   uint16
		q    *dns.Msg
	}
	got := make(chan seen, 10)
	srv := udpServer(t, func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg) {
		got <- seen{from.Port, q.Id, q}
		send(conn, from, answer(q, "192.0.2.1"))
	})
	ports, ids := map[int]bool{}, map[uint16]bool{}
	for range 8 {
		if _, err := exchange(t, path, addrPort(srv), 5*time.Second); err != nil {
			t.Fatal(err)
		}
		s := <-got
		ports[s.port], ids[s.id] = true, true
		if s.q.RecursionDesired {
			t.Error("RD set in an iterative query")
		}
		if o := s.q.IsEdns0(); o == nil || o.UDPSize() != DefaultUDPSize || o.Do() {
			t.Errorf("EDNS %v, want payload %d without DO", o, DefaultUDPSize)
		}
	}
	// Eight random 16-bit IDs (and ports) all equal by chance: 2^-112.
	if len(ports) < 2 || len(ids) < 2 {
		t.Errorf("%d distinct source ports, %d distinct IDs in 8 queries", len(ports), len(ids))
	}
}

// BenchmarkExchangeUDP is one UDP exchange with a server on loopback: the
// cost of each upstream query of a cold resolution (a new socket, the
// query, the answer read and parsed), on each of udpPaths.
func BenchmarkExchangeUDP(b *testing.B) {
	server := answering(b)
	for _, path := range udpPaths {
		b.Run(path.name, func(b *testing.B) {
			c := newClient(b, path, 0)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Exchange(context.Background(), server, question); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkExchangeUDPParallel is BenchmarkExchangeUDP with 16 queries
// per CPU in flight, as a resolver under load has them: the per-query
// cost once waiting and waking (and, through io_uring, submitting) are
// shared by many.
func BenchmarkExchangeUDPParallel(b *testing.B) {
	server := answering(b)
	for _, path := range udpPaths {
		b.Run(path.name, func(b *testing.B) {
			c := newClient(b, path, 0)
			b.ReportAllocs()
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Exchange(context.Background(), server, question); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// TestQueryDO: Options.DNSSEC sets the DO bit of the query's OPT record
// (RFC 3225, RFC 4035 §3.2.1), and only there: without EDNS there is no
// OPT to carry it.
func TestQueryDO(t *testing.T) {
	got := make(chan *dns.Msg, 1)
	srv := udpServer(t, func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg) {
		got <- q
		send(conn, from, answer(q, "192.0.2.1"))
	})
	for _, tc := range []struct {
		name     string
		opt      Options
		edns, do bool
	}{
		{"default", Options{}, true, false},
		{"DNSSEC", Options{DNSSEC: true}, true, true},
		{"DNSSEC without EDNS", Options{DNSSEC: true, NoEDNS: true}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Client{Timeout: 5 * time.Second}
			if _, _, err := c.ExchangeOptions(context.Background(), addrPort(srv), question, tc.opt); err != nil {
				t.Fatal(err)
			}
			q := <-got
			o := q.IsEdns0()
			if (o != nil) != tc.edns || (o != nil && o.Do() != tc.do) {
				t.Errorf("OPT %v, want EDNS %v with DO %v", o, tc.edns, tc.do)
			}
		})
	}
}

// TestQueryWire: the query written directly is, byte for byte, the one
// miekg/dns packs from the same message (header, question, OPT with the
// payload size and DO), names with escapes and in any case included.
func TestQueryWire(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    header
	}{
		{"www.example.tld.", header{size: DefaultUDPSize}},
		{"www.example.tld.", header{size: DefaultUDPSize, do: true}},
		{"www.example.tld.", header{}},
		{"www.example.tld.", header{do: true}},
		{"Www.Example.TLD.", header{size: 4096, rd: true, do: true}},
		{"a\\.b\\032c.\\255x.tld.", header{size: 512, rd: true}},
		{".", header{size: 1232}},
	} {
		q := dns.Question{Name: tc.name, Qtype: dns.TypeAAAA, Qclass: dns.ClassINET}
		// Into a new slice, and into a used buffer (every octet
		// 0xff), as exchangeBuffers hands them out.
		var used buffers
		for i := range used.query {
			used.query[i] = 0xff
		}
		for _, dst := range [][]byte{nil, used.query[:]} {
			id, pkt, err := query(q, tc.h, dst)
			if err != nil {
				t.Fatalf("%s %+v: %v", tc.name, tc.h, err)
			}
			m := &dns.Msg{Question: []dns.Question{q}}
			m.Id, m.RecursionDesired = id, tc.h.rd
			if tc.h.size > 0 {
				m.SetEdns0(tc.h.size, tc.h.do)
			}
			want, err := m.Pack()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(pkt, want) {
				t.Errorf("%s %+v into %d octets:\n got % x\nwant % x", tc.name, tc.h, len(dst), pkt, want)
			}
		}
	}
	// A name that does not pack is an error, not a query.
	if _, _, err := query(dns.Question{Name: strings.Repeat("a", 64) + ".", Qtype: dns.TypeA, Qclass: dns.ClassINET}, header{}, nil); err == nil {
		t.Error("a label of 64 octets packed")
	}
}

// TestQueryBuffer: a query for the longest name there is (255 octets in
// wire form) with EDNS fits in queryBuffer, so it is written there, not
// into a new slice.
func TestQueryBuffer(t *testing.T) {
	// Three labels of 63 octets, one of 61 and the root: 3*64+62+1 =
	// 255 octets.
	name := strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("b", 61) + "."
	q := dns.Question{Name: name, Qtype: dns.TypeA, Qclass: dns.ClassINET}
	var b buffers
	_, pkt, err := query(q, header{size: DefaultUDPSize, do: true}, b.query[:])
	if err != nil {
		t.Fatal(err)
	}
	if len(pkt) != queryBuffer || &pkt[0] != &b.query[0] {
		t.Errorf("a query of %d octets, in the buffer %v; want %d octets in it", len(pkt), &pkt[0] == &b.query[0], queryBuffer)
	}
}

// TestTCPAnswerBuffer: a TCP exchange reads a small answer into the
// pooled buffers, not into a buffer for the largest message: 64 KiB of
// garbage per exchange before. Measured as the bytes the process
// allocates per exchange over a pipe (server side included), a bound far
// under 64 KiB and far over what the exchange needs, so that neither the
// race detector nor a sync.Pool that drops what it is given moves it
// across.
func TestTCPAnswerBuffer(t *testing.T) {
	const n = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		client, server := net.Pipe()
		go func() {
			defer server.Close()
			co := &dns.Conn{Conn: server}
			if q, err := co.ReadMsg(); err == nil {
				co.WriteMsg(answer(q, "192.0.2.1"))
			}
		}()
		r, err := exchangeConn(context.Background(), &dns.Conn{Conn: client}, question, header{size: DefaultUDPSize})
		client.Close()
		if err != nil {
			t.Fatal(err)
		}
		onlyA(t, r, "192.0.2.1")
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 16<<10 {
		t.Errorf("%d bytes allocated per TCP exchange, want under 16 KiB", per)
	}
}
