//go:build linux && !ternportable

package server_test

import (
	"net"
	"testing"
	"time"

	"github.com/tern-dns/tern/internal/server"
)

// TestDeferredUDPPolled: while a deferred answer is outstanding the UDP
// worker waits for datagrams through the netpoller, not blocked in
// recvmmsg on its P, where the goroutines that make and send the answer
// could not run until sysmon took the P away; it answers other datagrams
// meanwhile; the answer counts as outstanding until it is sent, and no
// longer after. Then Close, with another answer outstanding, wakes the
// worker from the netpoller's wait and returns.
func TestDeferredUDPPolled(t *testing.T) {
	s, release, _ := startDeferring(t, "127.0.0.1:0", true)
	c, err := net.Dial("udp", s.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 512)
	ask := func(msg string) {
		t.Helper()
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(want string) {
		t.Helper()
		n, err := c.Read(buf)
		if err != nil || string(buf[:n]) != want {
			t.Fatalf("read %q, %v; want %q", buf[:n], err, want)
		}
	}
	ask("d1")
	eventually(t, "the worker waits through the netpoller with an answer outstanding", func() bool { return server.WorkerPolled(s)[0] })
	if p := server.DeferredPending(s)[0]; p != 1 {
		t.Errorf("%d deferred answers outstanding, want 1", p)
	}
	ask("x")
	expect("x")
	close(release)
	expect("Dd1")
	eventually(t, "no deferred answer outstanding once it came", func() bool { return server.DeferredPending(s)[0] == 0 })

	s2, _, _ := startDeferring(t, "127.0.0.1:0", false)
	c2, err := net.Dial("udp", s2.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Write([]byte("d2")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the worker waits through the netpoller with an answer outstanding", func() bool { return server.WorkerPolled(s2)[0] })
	closed := make(chan struct{})
	go func() {
		s2.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(60 * time.Second):
		t.Fatal("Close did not return: the worker waiting through the netpoller was not woken")
	}
}
