package server_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/zone"
)

// testZone is served by start; big.example.test. has TXT records that
// make a 16 KB answer over TCP (see bigTXT).
var testZone = dnstest.ExampleZone + bigTXT()

// testCompiled is testZone compiled.
func testCompiled(t *testing.T) *zone.Zone {
	t.Helper()
	return dnstest.Zone(t, "example.test.", testZone)
}

func start(t *testing.T, cfg server.Config) *server.Server {
	t.Helper()
	z := testCompiled(t)
	s := server.New(cfg, authHandler(auth.New(zone.NewSet(z), auth.Options{})))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// authHandler serves r, with auth's default response cache over UDP.
func authHandler(r *auth.Responder) server.Handler {
	return server.HandlerFunc(func(tcp bool) server.Worker { return r.NewWorker(tcp, auth.DefaultCacheSize) })
}

func TestUDPAndTCP(t *testing.T) {
	s := start(t, server.Config{Listen: []string{"127.0.0.1:0", "[::1]:0"}, Workers: 2})
	for _, addr := range s.Addrs() {
		for _, netw := range []string{"udp", "tcp"} {
			m := new(dns.Msg)
			m.SetQuestion("www.example.test.", dns.TypeA)
			r, err := dnstest.Exchange(m, netw, addr)
			if err != nil {
				if strings.Contains(addr, "::1") && strings.Contains(err.Error(), "cannot assign") {
					t.Skip("no IPv6 loopback")
				}
				t.Fatalf("%s %s: %v", netw, addr, err)
			}
			if r.Rcode != 0 || len(r.Answer) != 1 || !r.Authoritative {
				t.Errorf("%s %s: %v", netw, addr, r)
			}
		}
	}
}

// RFC 7766 §6.2.1.1: several queries on one connection, all answered.
func TestTCPPipelining(t *testing.T) {
	s := start(t, server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1})
	c, err := net.Dial("tcp", s.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 20
	if _, err := c.Write(pipelined(n, 1000)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for i := 0; i < n; i++ {
		var lb [2]byte
		if _, err := io.ReadFull(c, lb[:]); err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		buf := make([]byte, binary.BigEndian.Uint16(lb[:]))
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		var m dns.Msg
		if err := m.Unpack(buf); err != nil || m.Id != uint16(1000+i) || len(m.Answer) != 1 {
			t.Fatalf("answer %d: id %d err %v", i, m.Id, err)
		}
	}
}

// pipelined is n framed queries for www.example.test. A, with IDs from
// id on, to be written at once.
func pipelined(n int, id uint16) []byte {
	var burst []byte
	for i := 0; i < n; i++ {
		m := new(dns.Msg)
		m.SetQuestion("www.example.test.", dns.TypeA)
		m.Id = id + uint16(i)
		p, _ := m.Pack()
		burst = binary.BigEndian.AppendUint16(burst, uint16(len(p)))
		burst = append(burst, p...)
	}
	return burst
}

func TestTCPIdleTimeout(t *testing.T) {
	s := start(t, server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1, TCPIdleTimeout: 200 * time.Millisecond})
	c, err := net.Dial("tcp", s.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Closed after 0.2 s; the wait leaves a loaded machine seconds, and
	// still ends before the default idle timeout (10 s) would close it.
	_ = c.SetReadDeadline(time.Now().Add(8 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read: %v, want EOF from the server closing an idle connection", err)
	}
}

// Garbage must not stop the server answering others.
func TestGarbageDoesNotStopService(t *testing.T) {
	s := start(t, server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1})
	u, err := net.Dial("udp", s.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	for _, p := range [][]byte{{}, {1}, make([]byte, 12), {0, 1, 0x80, 0, 0, 1}, make([]byte, 5000)} {
		_, _ = u.Write(p)
	}
	m := new(dns.Msg)
	m.SetQuestion("www.example.test.", dns.TypeA)
	r, err := dnstest.Exchange(m, "udp", s.Addrs()[0])
	if err != nil || len(r.Answer) != 1 {
		t.Fatalf("after garbage: %v %v", r, err)
	}
}

// countingBatcher counts the batches of more than one datagram that
// reach its server.Worker's AnswerBatch.
type countingBatcher struct {
	*auth.Worker
	batches *atomic.Int64
}

func (c countingBatcher) AnswerBatch(reqs []server.Request, outs [][]byte) {
	if len(reqs) > 1 {
		c.batches.Add(1)
	}
	c.Worker.AnswerBatch(reqs, outs)
}

// TestColdBatches: names that do not repeat keep the response cache
// cold, so the worker answers its batches through auth.Ahead (and hits
// on the repeated name come from the cache there too); every answer must
// still be the right one for its query, whichever way the batch of
// datagrams reaches the Worker: through its server.Batcher, or one Answer call
// each.
func TestColdBatches(t *testing.T) {
	for _, batcher := range []bool{true, false} {
		var batches atomic.Int64
		resp := auth.New(zone.NewSet(testCompiled(t)), auth.Options{})
		h := server.HandlerFunc(func(tcp bool) server.Worker {
			w := resp.NewWorker(tcp, auth.DefaultCacheSize)
			if batcher {
				return countingBatcher{w, &batches}
			}
			return struct{ server.Worker }{w} // hides AnswerBatch
		})
		s := server.New(server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1}, h)
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		coldBatches(t, s.Addrs()[0])
		s.Close()
		if batcher && server.Batch > 1 && batches.Load() == 0 {
			t.Error("no batch of more than one datagram reached AnswerBatch")
		}
	}
}

func coldBatches(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const bursts, per = 60, 24
	want := map[uint16]string{}
	buf := make([]byte, 1500)
	for b := 0; b < bursts; b++ {
		for i := 0; i < per; i++ {
			id := uint16(b*per + i)
			name := "www.example.test."
			if i%2 == 1 {
				name = "nx" + strconv.Itoa(int(id)) + ".example.test."
			}
			m := new(dns.Msg)
			m.SetQuestion(name, dns.TypeA)
			m.Id = id
			p, _ := m.Pack()
			if _, err := c.Write(p); err != nil {
				t.Fatal(err)
			}
			want[id] = name
		}
		// Read the burst's answers before the next, so the socket
		// buffers never drop one.
		for i := 0; i < per; i++ {
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err := c.Read(buf)
			if err != nil {
				t.Fatalf("burst %d: %d answers: %v", b, i, err)
			}
			var r dns.Msg
			if err := r.Unpack(buf[:n]); err != nil {
				t.Fatal(err)
			}
			name, ok := want[r.Id]
			if !ok || len(r.Question) != 1 || r.Question[0].Name != name {
				t.Fatalf("answer %d: question %v, want %q", r.Id, r.Question, name)
			}
			delete(want, r.Id)
			wantRcode, wantAnswers := dns.RcodeNameError, 0
			if name == "www.example.test." {
				wantRcode, wantAnswers = dns.RcodeSuccess, 1
			}
			if r.Rcode != wantRcode || len(r.Answer) != wantAnswers {
				t.Fatalf("%s: rcode %d, %d answers", name, r.Rcode, len(r.Answer))
			}
		}
	}
}

// TestOversizedUDPQuery: a datagram longer than the server reads (rxSize)
// is answered FORMERR with its ID and question, not dropped, among
// ordinary queries of the same batch, whether the server.Worker answers batches
// or one query at a time.
func TestOversizedUDPQuery(t *testing.T) {
	for _, batcher := range []bool{true, false} {
		resp := auth.New(zone.NewSet(testCompiled(t)), auth.Options{})
		h := server.HandlerFunc(func(tcp bool) server.Worker {
			w := resp.NewWorker(tcp, auth.DefaultCacheSize)
			if batcher {
				return w
			}
			return struct{ server.Worker }{w}
		})
		s := server.New(server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1}, h)
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		c, err := net.Dial("udp", s.Addrs()[0])
		if err != nil {
			t.Fatal(err)
		}
		const n = 6 // every other query is oversized
		for i := 0; i < n; i++ {
			m := new(dns.Msg)
			m.SetQuestion("www.example.test.", dns.TypeA)
			m.Id = uint16(100 + i)
			if i%2 == 0 {
				// EDNS padding (RFC 7830) makes the query 5000 bytes.
				m.SetEdns0(1232, false)
				m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_PADDING{Padding: make([]byte, 5000-m.Len()-4)})
			}
			p, err := m.Pack()
			if err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 && len(p) != 5000 {
				t.Fatalf("query of %d bytes, want 5000", len(p))
			}
			if _, err := c.Write(p); err != nil {
				t.Fatal(err)
			}
		}
		got := map[uint16]bool{}
		buf := make([]byte, 1500)
		for len(got) < n {
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			k, err := c.Read(buf)
			if err != nil {
				t.Fatalf("batcher %v: %d of %d answers: %v", batcher, len(got), n, err)
			}
			var r dns.Msg
			if err := r.Unpack(buf[:k]); err != nil {
				t.Fatal(err)
			}
			i := int(r.Id) - 100
			wantRcode, wantAnswers := dns.RcodeSuccess, 1
			if i%2 == 0 {
				wantRcode, wantAnswers = dns.RcodeFormatError, 0
			}
			if r.Rcode != wantRcode || len(r.Answer) != wantAnswers || len(r.Question) != 1 || r.Question[0].Name != "www.example.test." || !r.RecursionDesired {
				t.Fatalf("batcher %v, query %d: %v", batcher, i, &r)
			}
			got[r.Id] = true
		}
		c.Close()
		s.Close()
	}
}
