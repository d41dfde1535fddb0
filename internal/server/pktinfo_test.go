//go:build linux && !ternportable

package server_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/zone"
)

// TestWildcardAnswersFromQueryAddress: a UDP socket bound to a wildcard
// address answers from the address each query was sent to, so that a
// client whose socket is connected to that address (which drops
// datagrams from any other) gets its answer: 127.0.0.1 and 127.0.0.2 on
// 0.0.0.0 (the kernel would otherwise answer both from 127.0.0.1, the
// route's preferred source), and on [::], which also serves IPv4 as
// mapped addresses, ::1, 127.0.0.1 and 127.0.0.2.
func TestWildcardAnswersFromQueryAddress(t *testing.T) {
	for _, tc := range []struct {
		listen string
		dests  []string
	}{
		{"0.0.0.0:0", []string{"127.0.0.1", "127.0.0.2"}},
		{"[::]:0", []string{"::1", "127.0.0.1", "127.0.0.2"}},
	} {
		t.Run(tc.listen, func(t *testing.T) {
			s := server.New(server.Config{Listen: []string{tc.listen}, Workers: 2}, authHandler(auth.New(zone.NewSet(testCompiled(t)), auth.Options{})))
			if err := s.Start(context.Background()); err != nil {
				if strings.HasPrefix(tc.listen, "[") {
					t.Skipf("no IPv6: %v", err)
				}
				t.Fatal(err)
			}
			defer s.Close()
			_, port, _ := net.SplitHostPort(s.Addrs()[0])
			for _, dest := range tc.dests {
				addr := net.JoinHostPort(dest, port)
				c, err := net.Dial("udp", addr)
				if err != nil {
					if strings.Contains(dest, ":") {
						t.Logf("no IPv6 loopback: %v", err)
						continue
					}
					t.Fatal(err)
				}
				m := new(dns.Msg)
				m.SetQuestion("www.example.test.", dns.TypeA)
				p, _ := m.Pack()
				buf := make([]byte, 1500)
				// Datagrams may be lost on a loaded machine: a few tries.
				var n int
				for try := 0; try < 3; try++ {
					if _, err = c.Write(p); err != nil {
						t.Fatal(err)
					}
					c.SetReadDeadline(time.Now().Add(3 * time.Second))
					if n, err = c.Read(buf); err == nil {
						break
					}
				}
				c.Close()
				if err != nil {
					t.Errorf("query to %s: %v (answered from another address?)", addr, err)
					continue
				}
				var r dns.Msg
				if err := r.Unpack(buf[:n]); err != nil || r.Id != m.Id || len(r.Answer) != 1 {
					t.Errorf("query to %s: %v %v", addr, &r, err)
				}
			}
		})
	}
}
