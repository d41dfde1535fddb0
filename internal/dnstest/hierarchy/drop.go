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
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 65535)
		for {
			if _, _, err := u.ReadFromUDPAddrPort(buf); err != nil {
				return
			}
		}
	}()
	tc := acceptTCP(l, nil)
	t.Cleanup(func() {
		u.Close()
		tc.close()
		wg.Wait()
	})
}

// tcpServer accepts a listener's connections.
type tcpServer struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// acceptTCP accepts l's connections until close, each served by serve on
// a goroutine of its own, or, with a nil serve, held open unanswered.
func acceptTCP(l net.Listener, serve func(net.Conn)) *tcpServer {
	ts := &tcpServer{l: l}
	ts.wg.Add(1)
	go func() {
		defer ts.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			ts.mu.Lock()
			ts.conns = append(ts.conns, c)
			ts.mu.Unlock()
			if serve != nil {
				ts.wg.Add(1)
				go func() {
					defer ts.wg.Done()
					serve(c)
				}()
			}
		}
	}()
	return ts
}

// close closes the listener and every connection, and waits for the
// goroutines to end.
func (ts *tcpServer) close() {
	ts.l.Close()
	ts.mu.Lock()
	for _, c := range ts.conns {
		c.Close()
	}
	ts.mu.Unlock()
	ts.wg.Wait()
}
