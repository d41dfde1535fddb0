package server_test

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/zone"
)

// TestSteerByPrefix: with SteerIPv4 (SteerIPv6) set, every datagram of
// a client prefix goes to one worker, from whatever source port (the kernel's
// own choice, a hash of address and port, spreads one client's ports
// over the workers: TestUDPWorkersShareTheLoad); clients of other
// prefixes still spread over the workers. Clients are sockets bound to
// this test's loopback block, 127.0.1.32-47, with kernel-picked ports.
func TestSteerByPrefix(t *testing.T) {
	const workers, ports = 4, 32
	resp := auth.New(zone.NewSet(testCompiled(t)), auth.Options{})
	for _, tc := range []struct {
		name   string
		listen string
		steer  int
		// clients are the source addresses; each sends from ports
		// sockets.
		clients []string
	}{
		{"one /24 over 32 ports", "127.0.0.1:0", 24, []string{"127.0.1.32", "127.0.1.33"}},
		{"IPv6: ::1 over 32 ports", "[::1]:0", 0, []string{"::1"}},
		{"16 /32s over 32 ports", "127.0.0.1:0", 32, []string{"127.0.1.32", "127.0.1.33", "127.0.1.34", "127.0.1.35", "127.0.1.36", "127.0.1.37", "127.0.1.38",
			"127.0.1.39", "127.0.1.40", "127.0.1.41", "127.0.1.42", "127.0.1.43", "127.0.1.44", "127.0.1.45", "127.0.1.46", "127.0.1.47"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[netip.Addr]map[int]bool{} // workers, by client address
			next := 0
			h := server.HandlerFunc(func(tcp bool) server.Worker {
				w := resp.NewWorker(tcp, 0)
				if tcp {
					return w
				}
				mu.Lock()
				id := next
				next++
				mu.Unlock()
				return answerFunc(func(req *server.Request, out []byte) []byte {
					mu.Lock()
					a := req.Remote().Addr()
					if seen[a] == nil {
						seen[a] = map[int]bool{}
					}
					seen[a][id] = true
					mu.Unlock()
					return w.Answer(req, out)
				})
			})
			s := server.New(server.Config{Listen: []string{tc.listen}, Workers: workers, SteerIPv4: tc.steer, SteerIPv6: 56}, h)
			if err := s.Start(context.Background()); err != nil {
				if tc.steer == 0 {
					t.Skipf("no IPv6 loopback: %v", err)
				}
				t.Fatal(err)
			}
			defer s.Close()
			dst := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(s.Addrs()[0]))
			m := new(dns.Msg)
			m.SetQuestion("www.example.test.", dns.TypeA)
			q, _ := m.Pack()
			buf := make([]byte, 1500)
			for _, src := range tc.clients {
				for range ports {
					c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(src), 0)))
					if err != nil {
						t.Skipf("bind %s: %v", src, err)
					}
					for try := 0; ; try++ { // UDP on a loaded machine
						if _, err := c.WriteToUDP(q, dst); err != nil {
							t.Fatal(err)
						}
						_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
						if _, err = c.Read(buf); err == nil {
							break
						}
						if try == 3 {
							t.Fatalf("%s: %v", src, err)
						}
					}
					c.Close()
				}
			}
			mu.Lock()
			defer mu.Unlock()
			used := map[int]bool{}
			for a, ws := range seen {
				if len(ws) != 1 {
					t.Errorf("%s over %d ports reached %d of %d workers, want 1", a, ports, len(ws), workers)
				}
				for w := range ws {
					used[w] = true
				}
			}
			if tc.steer != 32 && len(used) != 1 {
				t.Errorf("one /24 reached %d workers, want 1", len(used))
			}
			if tc.steer == 32 && len(used) < 2 {
				t.Errorf("%d /32 clients all went to one worker: the prefixes do not spread", len(tc.clients))
			}
			t.Logf("%d clients over %d ports each: %d of %d workers used", len(tc.clients), ports, len(used), workers)
		})
	}
}
