//go:build linux && !ternportable

package upstream

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestPollerConcurrent: queries in flight at once through one Client's
// poller each get their own answer, whatever order the answers come in.
// The server holds every query until all have come, then answers in
// reverse order.
func TestPollerConcurrent(t *testing.T) {
	const n = 50
	var mu sync.Mutex
	var held []func()
	srv := udpServer(t, func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg) {
		mu.Lock()
		defer mu.Unlock()
		// The answer's address is the query's number: x17.example.test. gets 192.0.2.17.
		var i int
		fmt.Sscanf(q.Question[0].Name, "x%d.", &i)
		held = append(held, func() { send(conn, from, answer(q, fmt.Sprintf("192.0.2.%d", i))) })
		if len(held) == n {
			for j := len(held) - 1; j >= 0; j-- {
				held[j]()
			}
		}
	})
	c := &Client{Timeout: 10 * time.Second}
	errs := make(chan error, n)
	for i := range n {
		go func() {
			q := dns.Question{Name: fmt.Sprintf("x%d.example.test.", i), Qtype: dns.TypeA, Qclass: dns.ClassINET}
			r, err := c.Exchange(context.Background(), addrPort(srv), q)
			switch {
			case err != nil:
				errs <- err
			case len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != fmt.Sprintf("192.0.2.%d", i):
				errs <- fmt.Errorf("query %d: answer %v", i, r.Answer)
			default:
				errs <- nil
			}
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestPollerIPv6: a server on ::1 is asked from an IPv6 socket.
func TestPollerIPv6(t *testing.T) {
	conn, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	serveUDP(t, conn, func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg) {
		send(conn, from, answer(q, "192.0.2.6"))
	})
	r, err := exchange(t, addrPort(conn), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	onlyA(t, r, "192.0.2.6")
}

// TestPollerReopens: the poller's epoll instance closes when no query has
// waited for its idle time, and the next query opens another.
func TestPollerReopens(t *testing.T) {
	server := answering(t)
	c := &Client{Timeout: 5 * time.Second}
	c.poll.idle = time.Millisecond
	for round := range 3 {
		r, err := c.Exchange(context.Background(), server, question)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		onlyA(t, r, "192.0.2.1")
		closed := false
		for range 500 {
			c.poll.mu.Lock()
			closed = c.poll.ep == nil
			c.poll.mu.Unlock()
			if closed {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if !closed {
			t.Fatalf("round %d: the epoll instance is still open 5 s after the last query", round)
		}
	}
}
