package hierarchy

import (
	"net"
	"net/netip"
	"sync"
	"testing"
)

// startDrop makes ap an unresponsive server: queries over UDP are read
// and dropped, TCP connections accepted and never answered (held until
// the test ends), as a server behind a broken firewall or an overloaded
// one behaves.
func (h *Standard) startDrop(t testing.TB, ap netip.AddrPort) {
	t.Helper()
	u, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
	if err != nil {
		t.Fatalf("hierarchy: unresponsive server: %v", err)
	}
	l, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(ap))
	if err != nil {
		u.Close()
		t.Fatalf("hierarchy: unresponsive server: %v", err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(2)
	go func() {
		defer wg.Done()
		buf := make([]byte, 65535)
		for {
			if _, _, err := u.ReadFromUDPAddrPort(buf); err != nil {
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		u.Close()
		l.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
}
