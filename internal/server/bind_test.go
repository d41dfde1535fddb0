package server_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/zone"
)

// TestSecondServerFails: a second server on the address of a running one
// fails to start, naming the address and why (SO_REUSEPORT on every
// socket used to let it bind and take half the queries), and the first
// keeps serving.
func TestSecondServerFails(t *testing.T) {
	s := start(t, server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 2})
	second := server.New(server.Config{Listen: s.Addrs(), Workers: 2}, authHandler(auth.New(zone.NewSet(), auth.Options{})))
	err := second.Start(context.Background())
	if err == nil {
		second.Close()
		t.Fatal("a second server started on the address of a running one")
	}
	want := "listen " + s.Addrs()[0] + ": address in use by another process"
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want it to start %q", err, want)
	}
	for _, netw := range []string{"udp", "tcp"} {
		c := &dns.Client{Net: netw}
		m := new(dns.Msg)
		m.SetQuestion("www.example.test.", dns.TypeA)
		if r, _, err := c.Exchange(m, s.Addrs()[0]); err != nil || len(r.Answer) != 1 {
			t.Errorf("%s after the second server failed: %v %v", netw, r, err)
		}
	}
}

// TestUDPAddressTakenFails: a server does not start on an address whose
// UDP port another program holds, even one that set SO_REUSEPORT (the
// kernel lets sockets of the same user that all set it share the port).
func TestUDPAddressTakenFails(t *testing.T) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error { return server.ReusePort(c) }}
	// The port may be some busy TCP connection's local port on this
	// shared machine: then try another.
	for try := 0; try < 20; try++ {
		other, err := lc.ListenPacket(context.Background(), "udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := other.LocalAddr().String()
		s := server.New(server.Config{Listen: []string{addr}, Workers: 2}, authHandler(auth.New(zone.NewSet(), auth.Options{})))
		err = s.Start(context.Background())
		other.Close()
		if err == nil {
			s.Close()
			t.Fatal("the server started on a UDP port another socket holds")
		}
		if strings.Contains(err.Error(), "(tcp ") {
			continue
		}
		if want := "listen " + addr + ": address in use by another process (udp"; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("error %q, want it to start %q", err, want)
		}
		return
	}
	t.Skip("no port free for TCP in 20 tries")
}

// TestBothWildcards: the IPv4 and IPv6 wildcard addresses on one port
// can be served together.
func TestBothWildcards(t *testing.T) {
	var err error
	// A port free a moment ago may be taken meanwhile on a busy machine
	// (by a connection's local port): then try another.
	for try := 0; try < 20; try++ {
		probe, perr := net.Listen("tcp", "127.0.0.1:0")
		if perr != nil {
			t.Fatal(perr)
		}
		_, port, _ := net.SplitHostPort(probe.Addr().String())
		probe.Close()
		s := server.New(server.Config{Listen: []string{"0.0.0.0:" + port, "[::]:" + port}, Workers: 2}, authHandler(auth.New(zone.NewSet(), auth.Options{})))
		if err = s.Start(context.Background()); err == nil {
			s.Close()
			return
		}
	}
	t.Fatal(err)
}

// TestUDPWorkersShareTheLoad: every UDP socket of an address is in one
// SO_REUSEPORT group, so that datagrams from many clients spread over the
// workers. The first socket is bound without the option and gets it only
// once bound (see bind); if the later sockets did not join its group, the
// kernel would hand every datagram to one socket and the other workers
// would sit idle, with every answer still right.
func TestUDPWorkersShareTheLoad(t *testing.T) {
	const workers, clients = 4, 64
	// Each client is a socket of its own, a port of its own: the kernel
	// picks a group's socket by a hash of the source address and port.
	seen := workersOf(t, server.Config{Listen: []string{"127.0.0.1:0"}, Workers: workers}, []string{"127.0.0.1"}, clients)
	if used := seen[netip.MustParseAddr("127.0.0.1")]; len(used) < 2 {
		t.Errorf("datagrams from %d clients answered by %d of %d workers (%v): the sockets do not share the port", clients, len(used), workers, used)
	}
}

// workersOf starts a server with cfg, its UDP workers noting which
// client addresses they answer, and sends one query from each of ports
// sockets (kernel-picked ports) bound to each address of srcs; it
// returns the workers (by the order they were made) that answered each
// client address.
func workersOf(t *testing.T, cfg server.Config, srcs []string, ports int) map[netip.Addr]map[int]bool {
	t.Helper()
	resp := auth.New(zone.NewSet(testCompiled(t)), auth.Options{})
	var mu sync.Mutex
	seen := map[netip.Addr]map[int]bool{}
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
	s := server.New(cfg, h)
	if err := s.Start(context.Background()); err != nil {
		t.Skipf("listen on %v: %v", cfg.Listen, err)
	}
	defer s.Close()
	dst := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(s.Addrs()[0]))
	m := new(dns.Msg)
	m.SetQuestion("www.example.test.", dns.TypeA)
	q, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1500)
	for _, src := range srcs {
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
	return seen
}

// answerFunc is a server.Worker made of its Answer method.
type answerFunc func(req *server.Request, out []byte) []byte

func (f answerFunc) Answer(req *server.Request, out []byte) []byte { return f(req, out) }

// TestOverlapFails: an address that a wildcard address also listed with the
// same port covers is refused before anything is bound, saying which.
func TestOverlapFails(t *testing.T) {
	for _, tc := range []struct {
		listen []string
		err    string // "" for none
	}{
		{[]string{"0.0.0.0:5300", "127.0.0.1:5300"}, "listen 127.0.0.1:5300: 0.0.0.0:5300, also listed, covers it"},
		{[]string{"[::1]:5300", "[::]:5300"}, "listen [::1]:5300: [::]:5300, also listed, covers it"},
		{[]string{"[::]:5300", "127.0.0.1:5300"}, "listen 127.0.0.1:5300: [::]:5300, also listed, covers it"},
		{[]string{"[::]:5300", "0.0.0.0:5300", "127.0.0.1:5300"}, "listen 127.0.0.1:5300: 0.0.0.0:5300, also listed, covers it"},
		{[]string{"[::]:5300", "0.0.0.0:5300"}, ""},
		{[]string{"0.0.0.0:5300", "[::1]:5300", "127.0.0.1:5301"}, ""},
		{[]string{"0.0.0.0:0", "127.0.0.1:0"}, ""},
	} {
		err := server.CheckListen(tc.listen)
		if got := fmt.Sprint(err); tc.err == "" && err != nil || tc.err != "" && got != tc.err {
			t.Errorf("%v: %v, want %q", tc.listen, err, tc.err)
		}
	}
}
