package rrl_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/rrl"
	"github.com/tern-dns/tern/internal/server"
)

// floodPorts sends perPort queries for www.example.test A from each of
// ports sockets bound to src (kernel-picked ports), in turns, and reads
// the answers until none has come for a while; it returns the answers
// (not truncated) and how long it took.
func floodPorts(t *testing.T, src, dst string, ports, perPort int) (answered int, took time.Duration) {
	t.Helper()
	raddr := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(dst))
	conns := make([]*net.UDPConn, ports)
	for i := range conns {
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(src), 0)))
		if err != nil {
			t.Skipf("bind %s: %v", src, err)
		}
		defer c.Close()
		c.SetReadBuffer(1 << 18)
		conns[i] = c
	}
	m := new(dns.Msg)
	m.SetQuestion("www.example.test.", dns.TypeA)
	buf := make([]byte, 1500)
	drain := func(c *net.UDPConn, wait time.Duration) {
		for {
			c.SetReadDeadline(time.Now().Add(wait))
			k, err := c.Read(buf)
			if err != nil {
				return
			}
			r := new(dns.Msg)
			if r.Unpack(buf[:k]) == nil && !r.Truncated {
				answered++
			}
		}
	}
	start := time.Now()
	for i := range perPort {
		for _, c := range conns {
			m.Id = uint16(i + 1)
			pkt, _ := m.Pack()
			if _, err := c.WriteToUDP(pkt, raddr); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range conns {
			drain(c, time.Millisecond)
		}
	}
	time.Sleep(300 * time.Millisecond) // the last answers on their way
	for _, c := range conns {
		drain(c, 5*time.Millisecond)
	}
	return answered, time.Since(start)
}

// TestFloodOverPorts: a flood from one client spread over many source
// ports reaches every UDP worker when the kernel picks the worker by
// address and port, each worker with accounts of its own; with the
// workers' sockets steered by client prefix (server.Config.SteerIPv4,
// what tern serve sets with [rrl]) it reaches one, and the client gets
// the configured rate, not workers times it.
func TestFloodOverPorts(t *testing.T) {
	const (
		workers = 4
		rate    = 10
		ports   = 32
		perPort = 20
		src     = "127.0.1.34" // this test's block: 127.0.1.32-47
	)
	resp := responder(t)
	h := server.HandlerFunc(func(tcp bool) server.Worker { return resp.NewWorker(tcp, auth.DefaultCacheSize) })
	cfg := rrl.Config{Rate: rate, Window: 15 * time.Second, Slip: 0, IPv4Prefix: 24, IPv6Prefix: 56}
	s := server.New(server.Config{Listen: []string{"127.0.0.1:0"}, Workers: workers, SteerIPv4: cfg.IPv4Prefix, SteerIPv6: cfg.IPv6Prefix}, rrl.Handler(h, cfg))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	answered, took := floodPorts(t, src, s.Addrs()[0], ports, perPort)
	// At least the burst (a second's worth), at most the burst and the
	// rate over the time it took, counted generously (a second more):
	// one account's, where unsteered every worker reached had one.
	most := rate * (2 + int(took/time.Second))
	if answered < rate || answered > most {
		t.Errorf("%d of %d answered over %d ports in %v, want %d..%d (one account at %d/s)", answered, ports*perPort, ports, took, rate, most, rate)
	}
	t.Logf("%d of %d answered over %d ports, %d workers, in %v", answered, ports*perPort, ports, workers, took)
}
