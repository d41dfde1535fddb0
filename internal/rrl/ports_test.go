package rrl_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
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

// workerCounts are, for one UDP worker, the queries it got and the
// responses it sent, not truncated, after the limiter.
type workerCounts struct {
	queries, answers atomic.Int64
}

// countingWorker is a UDP Worker counting into its workerCounts.
type countingWorker struct {
	inner server.Worker
	n     *workerCounts
}

func (w countingWorker) Answer(req *server.Request, out []byte) []byte {
	w.n.queries.Add(1)
	resp := w.inner.Answer(req, out)
	if len(resp) > 2 && resp[2]&0x02 == 0 {
		w.n.answers.Add(1)
	}
	return resp
}

// TestFloodOverPorts: a flood from one client spread over many source
// ports reaches every UDP worker when the kernel picks the worker by
// address and port, each worker with accounts of its own; with the
// workers' sockets steered by client prefix (server.Config.SteerIPv4,
// what tern serve sets with [rrl]) it reaches one, and the client gets
// the configured rate, not workers times it.
//
// Neither assertion depends on how long the flood takes: each worker
// counts its queries (one worker must have them all: without steering
// the 32 ports' hashes leave them on one of 4 workers with probability
// 4^-31), and the answers are bounded by what one account can pass in
// the time measured around the flood, exactly: every response, passed
// or not, moves the account's theoretical arrival time on by 1/rate and
// it never goes back, a pass needs it within the burst (a second) of
// now, so P passes in T seconds are at most rate*(T+1).
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
	limited := rrl.Handler(h, cfg)
	var (
		mu     sync.Mutex
		counts []*workerCounts
	)
	counted := server.HandlerFunc(func(tcp bool) server.Worker {
		w := limited.NewWorker(tcp)
		if tcp {
			return w
		}
		n := &workerCounts{}
		mu.Lock()
		counts = append(counts, n)
		mu.Unlock()
		return countingWorker{inner: w, n: n}
	})
	s := server.New(server.Config{Listen: []string{"127.0.0.1:0"}, Workers: workers, SteerIPv4: cfg.IPv4Prefix, SteerIPv6: cfg.IPv6Prefix}, counted)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	answered, took := floodPorts(t, src, s.Addrs()[0], ports, perPort)
	mu.Lock()
	defer mu.Unlock()
	reached, sent := 0, int64(0)
	var per []string
	for i, n := range counts {
		q, a := n.queries.Load(), n.answers.Load()
		per = append(per, fmt.Sprintf("worker %d: %d queries, %d answers", i, q, a))
		sent += a
		if q > 0 {
			reached++
		}
	}
	if reached != 1 {
		t.Errorf("the flood over %d ports reached %d of %d workers, want 1 (steered by client prefix): %s", ports, reached, len(counts), strings.Join(per, "; "))
	}
	// At least the burst (a second's worth, none lost on loopback), at
	// most one account's passes over the time measured around the
	// flood (a superset of the limiter's).
	most := int(rate * (took.Seconds() + 1))
	if answered < rate || answered > most || int64(answered) > sent {
		t.Errorf("%d of %d answered over %d ports in %v (the workers sent %d), want %d..%d (one account at %d/s)", answered, ports*perPort, ports, took, sent, rate, most, rate)
	}
	t.Logf("%d of %d answered over %d ports, %d workers, in %v: %s", answered, ports*perPort, ports, workers, took, strings.Join(per, "; "))
}
