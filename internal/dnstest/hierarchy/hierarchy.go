// Package hierarchy serves a local DNS hierarchy (root, TLDs, zones below
// them) with Tern's authoritative engine on loopback addresses, for the
// tests of a resolver pointed at it with its own root hints. Each test
// package that binds port 53 has its own block of 127.0.0.0/8 (see the
// project's helper brief); where port 53 cannot be bound (not root), the
// servers share a port the kernel picks, which the resolver must be told.
//
// Start serves the zones a test gives with Tern alone; StartStandard
// serves the standard hierarchy (standard.go: good and broken
// delegations) with Tern, Knot DNS and NSD. The package's own tests run
// Tern's resolver over the standard hierarchy and compare it with
// Unbound's (docs/resolver-interop.md).
package hierarchy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/zone"
)

// Zone is one zone of a hierarchy: the index of the address that serves
// it, its origin, and its records in zone-file form ($TTL 3600), where
// {i} stands for the i-th address.
type Zone struct {
	Server int
	Origin string
	Text   string
}

// Hierarchy is a running hierarchy.
type Hierarchy struct {
	// Addrs are the servers' addresses, Port their common port.
	Addrs []netip.Addr
	Port  uint16
	srvs  []*server.Server
}

// Stop stops every server: the hierarchy no longer answers.
func (h *Hierarchy) Stop() {
	for _, s := range h.srvs {
		s.Close()
	}
	h.srvs = nil
}

// Hints is a root hints file naming the first address as a.root.
func (h *Hierarchy) Hints() string {
	return fmt.Sprintf(". 3600000 NS a.root.\na.root. 3600000 A %s\n", h.Addrs[0])
}

// Start serves zones on n consecutive addresses 127.0.0.first.. within
// the block first..last (the next n up when some are taken), port 53 or
// a kernel-picked one; the servers stop at the end of the test.
func Start(t testing.TB, first, last byte, n int, zones []Zone) *Hierarchy {
	t.Helper()
	port := uint16(53)
	for base := int(first); base+n-1 <= int(last); base += n {
		var addrs []netip.Addr
		for i := range n {
			addrs = append(addrs, netip.AddrFrom4([4]byte{127, 0, 0, byte(base + i)}))
		}
		if err := Free(addrs, port); err != nil {
			if errors.Is(err, syscall.EACCES) && port == 53 {
				t.Logf("port 53 on 127.0.0.x: %v; using another port", err)
				port = pickPort(t, addrs[0])
				base -= n
			}
			continue
		}
		h := &Hierarchy{Addrs: addrs, Port: port}
		t.Cleanup(h.Stop)
		if err := h.serve(zones); err != nil {
			t.Logf("%v", err)
			h.Stop()
			continue
		}
		return h
	}
	t.Skipf("no %d free addresses with port %d in 127.0.0.%d-%d", n, port, first, last)
	return nil
}

// serve starts one server per address with its zones.
func (h *Hierarchy) serve(zones []Zone) error {
	for i, a := range h.Addrs {
		var zs []*zone.Zone
		for _, z := range zones {
			if z.Server != i {
				continue
			}
			text := z.Text
			for j, a := range h.Addrs {
				text = strings.ReplaceAll(text, fmt.Sprintf("{%d}", j), a.String())
			}
			zn, err := zone.Read(strings.NewReader("$TTL 3600\n"+text), z.Origin, z.Origin)
			if err != nil {
				return err
			}
			zs = append(zs, zn)
		}
		srv, err := Serve([]string{netip.AddrPortFrom(a, h.Port).String()}, zs)
		if err != nil {
			return err
		}
		h.srvs = append(h.srvs, srv)
	}
	return nil
}

// Serve serves zones with Tern's authoritative engine on the listen
// addresses (host:port), one UDP worker each; the caller closes it.
func Serve(listen []string, zones []*zone.Zone) (*server.Server, error) {
	return ServeResponder(listen, auth.New(zone.NewSet(zones...), auth.Options{}))
}

// ServeResponder serves resp on the listen addresses, one UDP worker
// each; resp.Publish changes what they serve.
func ServeResponder(listen []string, resp *auth.Responder) (*server.Server, error) {
	srv := server.New(server.Config{Listen: listen, Workers: 1},
		server.HandlerFunc(func(tcp bool) server.Worker { return resp.NewWorker(tcp, 0) }))
	if err := srv.Start(context.Background()); err != nil {
		return nil, fmt.Errorf("%v: %w", listen, err)
	}
	return srv, nil
}

// pickPort returns a UDP port the kernel picks on a.
func pickPort(t testing.TB, a netip.Addr) uint16 {
	t.Helper()
	u, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(a, 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	return u.LocalAddr().(*net.UDPAddr).AddrPort().Port()
}

// Free checks that the port of each address is free for UDP and TCP,
// without SO_REUSEPORT: the server sets it, and would otherwise share the
// port with another process's socket.
func Free(addrs []netip.Addr, port uint16) error {
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a, port)
		u, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
		if err != nil {
			return err
		}
		u.Close()
		l, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(ap))
		if err != nil {
			return err
		}
		l.Close()
	}
	return nil
}
