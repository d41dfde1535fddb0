package dnstest

import (
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// TestExchangeRetries: a server that loses the first datagram is still
// asked; its answer comes from the second try.
func TestExchangeRetries(t *testing.T) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { c.Close(); wg.Wait() })
	wg.Go(func() {
		buf := make([]byte, 512)
		for seen := 0; ; seen++ {
			n, from, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			if seen == 0 {
				continue // lost
			}
			buf[2] |= 0x80 // QR
			_, _ = c.WriteTo(buf[:n], from)
		}
	})
	m := new(dns.Msg)
	m.SetQuestion("example.test.", dns.TypeA)
	r, err := Exchange(m, "udp", c.LocalAddr().String())
	if err != nil || !r.Response || r.Id != m.Id {
		t.Fatalf("answer %v, error %v", r, err)
	}
}

// TestExchangeGivesUp: nothing listening; the error says how often it
// tried.
func TestExchangeGivesUp(t *testing.T) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	addr := c.LocalAddr().String()
	c.Close() // the port refuses now (ICMP port unreachable on loopback)
	m := new(dns.Msg)
	m.SetQuestion("example.test.", dns.TypeA)
	if _, err := Exchange(m, "udp", addr); err == nil || !strings.Contains(err.Error(), "3 tries") {
		t.Fatalf("error %v, want one after 3 tries", err)
	}
}

// frame8K is a function whose frame holds 8 KiB.
//
//go:noinline
func frame8K(i int) byte {
	var b [8 << 10]byte
	b[i] = byte(i)
	return b[(i*7)%len(b)]
}

// TestStackUse: StackUse sees a frame of 8 KiB below it, and not much
// more (the closure's frame and frame8K's own words).
func TestStackUse(t *testing.T) {
	n, ok := StackUse(func() { frame8K(100) })
	if !ok || n < 8<<10 || n > 8<<10+512 {
		t.Errorf("StackUse = %d, %v; want 8192 to 8704, true", n, ok)
	}
	n, ok = StackUse(func() {})
	if !ok || n != stackMargin {
		t.Errorf("StackUse of nothing = %d, %v; want %d (the margin), true", n, ok, stackMargin)
	}
}
