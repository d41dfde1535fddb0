package server_test

import (
	"testing"

	"github.com/tern-dns/tern/internal/server"
)

// TestSteerByPrefix: with SteerIPv4 (SteerIPv6) set, every datagram of
// a client prefix goes to one worker, from whatever source port (the kernel's
// own choice, a hash of address and port, spreads one client's ports
// over the workers: TestUDPWorkersShareTheLoad); clients of other
// prefixes still spread over the workers. Clients are sockets bound to
// this test's loopback block, 127.0.1.32-47, with kernel-picked ports.
func TestSteerByPrefix(t *testing.T) {
	const workers, ports = 4, 32
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
			seen := workersOf(t, server.Config{Listen: []string{tc.listen}, Workers: workers, SteerIPv4: tc.steer, SteerIPv6: 56}, tc.clients, ports)
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
				t.Errorf("one prefix reached %d workers, want 1", len(used))
			}
			if tc.steer == 32 && len(used) < 2 {
				t.Errorf("%d /32 clients all went to one worker: the prefixes do not spread", len(tc.clients))
			}
			t.Logf("%d clients over %d ports each: %d of %d workers used", len(tc.clients), ports, len(used), workers)
		})
	}
}
