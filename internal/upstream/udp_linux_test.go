//go:build linux && !ternportable

package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
)

// udpPaths: through io_uring, and through epoll (where io_uring is not
// there, or its slots are all taken).
var udpPaths = []udpPath{
	{name: "io_uring", set: func(t testing.TB, c *Client) { requireRing(t) }},
	{name: "epoll", set: func(t testing.TB, c *Client) { c.poll.epollOnly = true }},
}

// requireRing skips t when io_uring cannot be used here (a kernel before
// 5.19, io_uring_disabled, a seccomp filter), saying why.
func requireRing(t testing.TB) {
	t.Helper()
	ringOnce.Do(func() {
		r, err := openRing(ringSetup)
		if err == nil {
			r.release()
		}
		ringErr = err
	})
	if ringErr != nil {
		t.Skipf("io_uring not usable here: %v", ringErr)
	}
}

var (
	ringOnce sync.Once
	ringErr  error
)

// usedRing reports whether c's queries went through io_uring.
func usedRing(c *Client) bool {
	c.poll.mu.Lock()
	defer c.poll.mu.Unlock()
	return c.poll.ring != nil && c.poll.ep == nil
}

// TestPollerConcurrent: queries in flight at once through one Client's
// poller each get their own answer, whatever order the answers come in.
// The server holds every query until all have come, then answers in
// reverse order.
func TestPollerConcurrent(t *testing.T) { forEachPath(t, testPollerConcurrent) }

func testPollerConcurrent(t *testing.T, path udpPath) {
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
	c := newClient(t, path, 10*time.Second)
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
	if path.name == "io_uring" && !usedRing(c) {
		t.Error("the queries did not go through io_uring")
	}
}

// TestPollerIPv6: a server on ::1 is asked from an IPv6 socket.
func TestPollerIPv6(t *testing.T) { forEachPath(t, testPollerIPv6) }

func testPollerIPv6(t *testing.T, path udpPath) {
	conn, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	serveUDP(t, conn, func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg) {
		send(conn, from, answer(q, "192.0.2.6"))
	})
	r, err := exchange(t, path, addrPort(conn), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	onlyA(t, r, "192.0.2.6")
}

// TestPollerReopens: the poller's epoll instance (or ring) closes when no
// query has waited for its idle time, and the next query opens another.
func TestPollerReopens(t *testing.T) { forEachPath(t, testPollerReopens) }

func testPollerReopens(t *testing.T, path udpPath) {
	server := answering(t)
	c := newClient(t, path, 5*time.Second)
	c.poll.idle = time.Millisecond
	for round := range 3 {
		r, err := c.Exchange(context.Background(), server, question)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		onlyA(t, r, "192.0.2.1")
		if !waitClosed(c) {
			t.Fatalf("round %d: the epoll instance or ring is still open 5 s after the last query", round)
		}
	}
}

// TestRingFallback: where io_uring_setup fails (here made to, with
// ENOSYS, as under a seccomp filter), queries go through epoll, and the
// Client's log says why, once.
func TestRingFallback(t *testing.T) {
	server := answering(t)
	var logged bytes.Buffer
	c := &Client{Timeout: 5 * time.Second, Log: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	c.poll.setup = func(uint32, *ringParams) (int, error) { return -1, os.NewSyscallError("io_uring_setup", unix.ENOSYS) }
	for range 3 {
		r, err := c.Exchange(context.Background(), server, question)
		if err != nil {
			t.Fatal(err)
		}
		onlyA(t, r, "192.0.2.1")
	}
	c.poll.mu.Lock()
	ring, ep, off := c.poll.ring, c.poll.ep, c.poll.ringOff
	c.poll.mu.Unlock()
	if ring != nil || ep == nil || !errors.Is(off, unix.ENOSYS) {
		t.Errorf("ring %v, epoll %v, why not io_uring: %v; want the epoll path because of ENOSYS", ring, ep, off)
	}
	if n := strings.Count(logged.String(), "io_uring_setup: function not implemented"); n != 1 {
		t.Errorf("the reason logged %d times, want once:\n%s", n, logged.String())
	}
}

// TestChainError: a query whose CONNECT fails (to a link-local IPv6
// address without a zone: EINVAL) fails with that error at once; through
// io_uring the failure of a request early in the chain is what the
// query reports, not the cancellation of the RECV that followed it.
func TestChainError(t *testing.T) {
	forEachPath(t, func(t *testing.T, path udpPath) {
		_, err := exchange(t, path, netip.MustParseAddrPort("[fe80::1]:53"), time.Minute)
		if errors.Is(err, syscall.EAFNOSUPPORT) {
			t.Skipf("no IPv6: %v", err)
		}
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "connect") {
			t.Fatalf("error %v, want connect: EINVAL", err)
		}
	})
}

// TestNoLeak: a burst of concurrent queries, more than a ring has slots,
// to a server that answers only some of them, the rest timing out,
// leaves no socket and no descriptor behind once the poller's epoll
// instance or ring has closed: /proc/self/fd counts descriptors (the
// ring's direct descriptors are not among them), /proc/self/net/udp the
// sockets connected to the server (direct ones included).
func TestNoLeak(t *testing.T) {
	forEachPath(t, func(t *testing.T, path udpPath) {
		var answered sync.Map
		srv := udpServer(t, func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg) {
			var i int
			fmt.Sscanf(q.Question[0].Name, "x%d.", &i)
			if i%3 != 0 {
				answered.Store(i, true)
				send(conn, from, answer(q, "192.0.2.1"))
			}
		})
		server := addrPort(srv)
		fds := openFDs(t)
		c := newClient(t, path, 300*time.Millisecond)
		c.poll.idle = time.Second
		const n = ringSlots + 44
		errs := make(chan error, n)
		for i := range n {
			go func() {
				q := dns.Question{Name: fmt.Sprintf("x%d.example.test.", i), Qtype: dns.TypeA, Qclass: dns.ClassINET}
				_, err := c.Exchange(context.Background(), server, q)
				switch {
				case i%3 == 0 && !errors.Is(err, context.DeadlineExceeded):
					err = fmt.Errorf("query %d to a server that does not answer it: error %v, want a timeout", i, err)
				case errors.Is(err, context.DeadlineExceeded):
					// Expected, or the server did not keep up.
					err = nil
				}
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		// The sockets are closed as the queries end, not when the
		// ring (whose release would close its direct descriptors)
		// is.
		left := 0
		for range 100 {
			if left = connectedTo(t, server); left == 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if left != 0 {
			t.Errorf("%d sockets connected to the server 1 s after the burst", left)
		}
		if !waitClosed(c) {
			t.Fatal("the epoll instance or ring is still open 5 s after the last query")
		}
		for fd, what := range openFDs(t) {
			if fds[fd] != what {
				t.Errorf("descriptor %s (%s) open after the burst, not before", fd, what)
			}
		}
	})
}

// waitClosed waits up to 5 s for c's epoll instance and ring to close
// and reports whether they did.
func waitClosed(c *Client) bool {
	for range 500 {
		c.poll.mu.Lock()
		closed := c.poll.ep == nil && c.poll.ring == nil
		c.poll.mu.Unlock()
		if closed {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// openFDs is what the process's open descriptors are open on, by
// number: other tests' descriptors may close during a test, so a leak is
// one that is there after and was not before.
func openFDs(t *testing.T) map[string]string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	fds := make(map[string]string)
	for _, e := range ents {
		if what, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
			fds[e.Name()] = what
		}
	}
	return fds
}

// connectedTo is the number of IPv4 UDP sockets connected to server.
func connectedTo(t *testing.T, server netip.AddrPort) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/net/udp")
	if err != nil {
		t.Skipf("no /proc/self/net/udp: %v", err)
	}
	a := server.Addr().As4()
	// rem_address: the address as a little-endian word, the port.
	want := fmt.Sprintf("%02X%02X%02X%02X:%04X", a[3], a[2], a[1], a[0], server.Port())
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[2] == want {
			n++
		}
	}
	return n
}

// TestFlushOneAtATime: the ring's entries are submitted by one
// io_uring_enter at a time. Each counts the entries written before it
// (whole chains); two at once would each submit its count from the
// queue's head, whichever came first, and one could end inside the
// other's chain, which the kernel then runs as a chain of its own
// (SEND or RECV before their SOCKET). Here each io_uring_enter is made
// to take a millisecond while 100 queries start.
func TestFlushOneAtATime(t *testing.T) {
	requireRing(t)
	server := answering(t)
	c := &Client{Timeout: 10 * time.Second}
	var mu sync.Mutex
	in, most, calls := 0, 0, 0
	c.poll.enter = func(fd int, n uint32) error {
		mu.Lock()
		in++
		calls++
		most = max(most, in)
		mu.Unlock()
		time.Sleep(time.Millisecond)
		err := enter(fd, n)
		mu.Lock()
		in--
		mu.Unlock()
		return err
	}
	const n = 100
	errs := make(chan error, n)
	for i := range n {
		go func() {
			q := dns.Question{Name: fmt.Sprintf("x%d.example.test.", i), Qtype: dns.TypeA, Qclass: dns.ClassINET}
			_, err := c.Exchange(context.Background(), server, q)
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if !usedRing(c) {
		t.Fatal("the queries did not go through io_uring")
	}
	mu.Lock()
	defer mu.Unlock()
	if most > 1 {
		t.Errorf("%d io_uring_enter calls at once (of %d), want 1", most, calls)
	}
}

// TestLateAnswer: when a wait for an answer ends (its timeout, or the
// caller's context cancelled), nothing reads into its buffer any more,
// which then goes back to exchangeBuffers for another query: through
// io_uring, the wait ends with its RECV's completion, not before. The
// answer the server sends afterwards, to the port the query came from,
// must not be written into the buffer.
func TestLateAnswer(t *testing.T) {
	forEachPath(t, func(t *testing.T, path udpPath) {
		for _, cancelled := range []bool{false, true} {
			from, asked := make(chan *net.UDPAddr, 1), make(chan struct{}, 1)
			srv := udpServer(t, func(conn *net.UDPConn, f *net.UDPAddr, q *dns.Msg) {
				from <- f
				asked <- struct{}{}
			})
			c := newClient(t, path, 0)
			ctx, cancel := context.WithCancel(context.Background())
			deadline := time.Now().Add(time.Hour)
			if cancelled {
				go func() {
					<-asked
					cancel()
				}()
			} else {
				deadline = time.Now().Add(50 * time.Millisecond)
			}
			_, pkt, err := query(question, header{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 512)
			_, err = c.poll.exchange(ctx, deadline, nil, addrPort(srv), pkt, b, func([]byte, bool) (*dns.Msg, error) {
				return nil, errors.New("accept called")
			})
			cancel()
			if want := map[bool]error{false: context.DeadlineExceeded, true: context.Canceled}[cancelled]; !errors.Is(err, want) {
				t.Fatalf("cancelled %v: error %v, want %v", cancelled, err, want)
			}
			// The server has read the query (or will): answer it,
			// after the wait.
			srv.WriteToUDP([]byte("late answer"), <-from)
			for range 50 {
				if !bytes.Equal(b, make([]byte, len(b))) {
					t.Fatalf("cancelled %v: the answer sent after the wait ended was written into its buffer: %q", cancelled, b[:16])
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	})
}

// TestCancelBeforeSubmit: a query whose context is done before its
// chain was submitted ends. Its cancel is then written behind the chain
// and both go to the kernel in one io_uring_enter, which issues the
// cancel before the chain's linked requests (those run once the
// submission's completions are flushed, after the whole batch): the
// cancel found no RECV (ENOENT), the RECV then waited for an answer
// that never came, and the query waited for the RECV for good.
// TestNoLeak hung so under -race on a loaded machine (queries still
// waiting 10 s after their 300 ms timeout), before each RECV had its
// own linked timeout, which now ends such a wait at the deadline: the
// client's timeout here is an hour, the test waits 10 s.
func TestCancelBeforeSubmit(t *testing.T) {
	requireRing(t)
	server := addrPort(udpServer(t, func(*net.UDPConn, *net.UDPAddr, *dns.Msg) {}))
	c := &Client{Timeout: time.Hour}
	const bound = 10 * time.Second
	for i := range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		got := make(chan error, 1)
		go func() {
			_, err := c.Exchange(ctx, server, question)
			got <- err
		}()
		select {
		case err := <-got:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("query %d: error %v, want context.Canceled", i, err)
			}
		case <-time.After(bound):
			t.Fatalf("query %d: still waiting %v after its context was cancelled", i, bound)
		}
	}
	if !usedRing(c) {
		t.Fatal("the queries did not go through io_uring")
	}
}

// TestExchangeAllocs: a UDP exchange, through io_uring or epoll,
// allocates only the answer it returns, its message and its A record
// (unpack.go): no context, timer, channel, socket address, query or
// closure of its own. The caller's context is one with a deadline, as a
// resolution's, whose Done channel its first exchange makes. The server
// answers without allocating, so that AllocsPerRun, which counts the
// whole process's, counts the client's. make test runs it without -race.
func TestExchangeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts mean nothing under -race; make test runs it without")
	}
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		var b, out [512]byte
		for {
			n, from, err := conn.ReadFromUDPAddrPort(b[:])
			if err != nil {
				return
			}
			// Header and question, QR set, one answer: the A record
			// 192.0.2.1 owned by the question's name (a pointer to it).
			end := 12
			for end < n && b[end] != 0 {
				end += 1 + int(b[end])
			}
			end += 1 + 4
			if end > n {
				continue
			}
			m := copy(out[:], b[:end])
			out[2] |= 0x80
			out[6], out[7], out[10], out[11] = 0, 1, 0, 0
			m += copy(out[m:], []byte{0xc0, 12, 0, 1, 0, 1, 0, 0, 1, 0x2c, 0, 4, 192, 0, 2, 1})
			conn.WriteToUDPAddrPort(out[:m], from)
		}
	}()
	server := addrPort(conn)
	forEachPath(t, func(t *testing.T, path udpPath) {
		c := newClient(t, path, 5*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		n := testing.AllocsPerRun(200, func() {
			r, err := c.Exchange(ctx, server, question)
			if err != nil || len(r.Answer) != 1 {
				t.Fatalf("answer %v, error %v", r, err)
			}
		})
		if path.name == "io_uring" && !usedRing(c) {
			t.Fatal("the queries did not go through io_uring")
		}
		if n != 2 {
			t.Errorf("%v allocations per exchange, want 2 (the answer's message and record)", n)
		}
	})
}
