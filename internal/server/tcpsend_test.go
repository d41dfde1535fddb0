package server

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestTCPSendAllocatesNothing: a message written by tcpConn.send (the
// deferred replies' path: each message of a zone transfer) costs no
// allocation; before, its length prefix and net.Buffers did (2 per
// message).
func TestTCPSendAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates: make test runs it without -race")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc := &tcpConn{c: c}
	msg := make([]byte, 16<<10)
	if n := testing.AllocsPerRun(200, func() {
		if err := tc.send(msg, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%.1f allocations per message", n)
	}
}
