package upstream

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
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
func udpServer(t *testing.T, serve func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg)) *net.UDPConn {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	serveUDP(t, conn, serve)
	return conn
}

// serveUDP calls serve for every query conn reads until the test ends.
func serveUDP(t *testing.T, conn *net.UDPConn, serve func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg)) {
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

func exchange(t *testing.T, server netip.AddrPort, timeout time.Duration) (*dns.Msg, error) {
	t.Helper()
	c := &Client{Timeout: timeout}
	return c.Exchange(context.Background(), server, question)
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

// TestWrongIDIgnored: an answer with another ID (a spoofing attempt) is
// dropped and the real answer that follows is accepted.
func TestWrongIDIgnored(t *testing.T) {
	srv := udpServer(t, func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg) {
		bad := answer(q, "192.0.2.66")
		bad.Id ^= 1
		send(conn, from, bad)
		send(conn, from, answer(q, "192.0.2.1"))
	})
	r, err := exchange(t, addrPort(srv), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	onlyA(t, r, "192.0.2.1")
}

// TestWrongQuestionIgnored: an answer with the right ID to another
// question is dropped; the question's case does not matter.
func TestWrongQuestionIgnored(t *testing.T) {
	srv := udpServer(t, func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg) {
		bad := answer(q, "192.0.2.66")
		bad.Question[0].Name = "www.example.evil."
		bad.Answer[0].Header().Name = "www.example.evil."
		send(conn, from, bad)
		good := answer(q, "192.0.2.1")
		good.Question[0].Name = strings.ToUpper(good.Question[0].Name)
		send(conn, from, good)
	})
	r, err := exchange(t, addrPort(srv), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	onlyA(t, r, "192.0.2.1")
}

// TestOtherPortIgnored: an answer from another port of the server's
// address is never accepted, even with the right ID and question.
func TestOtherPortIgnored(t *testing.T) {
	other, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	srv := udpServer(t, func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg) {
		send(other, from, answer(q, "192.0.2.66"))
		send(conn, from, answer(q, "192.0.2.1"))
	})
	r, err := exchange(t, addrPort(srv), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	onlyA(t, r, "192.0.2.1")

	// Only the wrong port answers: the query times out.
	alone := udpServer(t, func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg) {
		send(other, from, answer(q, "192.0.2.66"))
	})
	if r, err := exchange(t, addrPort(alone), 300*time.Millisecond); err == nil {
		t.Fatalf("accepted an answer from another port: %v", r)
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want a timeout", err)
	}
}

// TestTruncatedRetriedOverTCP: TC=1 over UDP sends the question again over
// TCP to the same address and port.
func TestTruncatedRetriedOverTCP(t *testing.T) {
	var ln net.Listener
	var conn *net.UDPConn
	// The TCP and UDP sockets need the same port: take one the kernel
	// picks for TCP and try it for UDP, a few times if it is taken.
	for i := 0; conn == nil; i++ {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		conn, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(ln.Addr().(*net.TCPAddr).AddrPort()))
		if err != nil {
			ln.Close()
			if i == 10 {
				t.Fatal(err)
			}
		}
	}
	defer ln.Close()
	serveUDP(t, conn, func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg) {
		r := answer(q, "192.0.2.66")
		r.Answer = nil
		r.Truncated = true
		send(conn, from, r)
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var l [2]byte
			if _, err := io.ReadFull(c, l[:]); err == nil {
				buf := make([]byte, binary.BigEndian.Uint16(l[:]))
				q := new(dns.Msg)
				if _, err := io.ReadFull(c, buf); err == nil && q.Unpack(buf) == nil {
					p, _ := answer(q, "192.0.2.1").Pack()
					c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(p))), p...))
				}
			}
			c.Close()
		}
	}()
	r, err := exchange(t, addrPort(conn), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	onlyA(t, r, "192.0.2.1")
}

// TestEDNSFallback: a server that answers FORMERR to EDNS (without a
// question section, as some do) is asked again without it.
func TestEDNSFallback(t *testing.T) {
	srv := udpServer(t, func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg) {
		if q.IsEdns0() != nil {
			r := new(dns.Msg)
			r.SetRcode(q, dns.RcodeFormatError)
			r.Question = nil
			send(conn, from, r)
			return
		}
		send(conn, from, answer(q, "192.0.2.1"))
	})
	r, err := exchange(t, addrPort(srv), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	onlyA(t, r, "192.0.2.1")
}

// TestQueryFresh: each query has EDNS with 1232 bytes, RD clear, and a new
// source port; IDs vary.
func TestQueryFresh(t *testing.T) {
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
		if _, err := exchange(t, addrPort(srv), 5*time.Second); err != nil {
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
