package server_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/server"
)

// The TCP limits' tests dial from the loopback addresses 127.0.0.165 to
// 127.0.0.179 (this package's block), so that the server sees several
// clients.

// dialFrom connects to s from the loopback address ip.
func dialFrom(t *testing.T, s *server.Server, ip string) net.Conn {
	t.Helper()
	return dialTCP(t, s, &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second})
}

// askTCP sends a query for www.example.test. on c and reads its answer.
func askTCP(t *testing.T, c net.Conn) error {
	t.Helper()
	if _, err := c.Write(framed(t, "www.example.test.", dns.TypeA)); err != nil {
		return err
	}
	return readAnswer(c, 1)
}

// expectClosed fails the test unless the server closes c (EOF or reset)
// without answering, within a bound generous for a loaded machine.
func expectClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_, _ = c.Write(framed(t, "www.example.test.", dns.TypeA))
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("%s: read %d bytes, %v; want the connection closed", what, n, err)
	}
}

// eventually waits for cond, within 20 s; it fails the test with what
// when cond is still false then.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	limit := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(limit) {
			t.Fatalf("after 20s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTCPConnectionLimitClosesOldestIdle: at the connection limit a new
// client is served, and the connection idle the longest is closed to
// make room; the other stays open.
func TestTCPConnectionLimitClosesOldestIdle(t *testing.T) {
	s := start(t, server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1, TCPMaxConnections: 2, TCPIdleTimeout: time.Minute})
	c1 := dialFrom(t, s, "127.0.0.165")
	if err := askTCP(t, c1); err != nil {
		t.Fatal(err)
	}
	// The server marks a connection idle after its answer is written:
	// on a loaded machine c1's mark could come after c2's, making c2
	// the older. Wait for c1's before c2 exists.
	eventually(t, "one idle connection", func() bool { return server.IdleConns(s) == 1 })
	c2 := dialFrom(t, s, "127.0.0.166")
	if err := askTCP(t, c2); err != nil {
		t.Fatal(err)
	}
	eventually(t, "two idle connections", func() bool { return server.IdleConns(s) == 2 })
	c3 := dialFrom(t, s, "127.0.0.167")
	if err := askTCP(t, c3); err != nil {
		t.Fatalf("new client at the limit: %v; want it served", err)
	}
	expectClosed(t, c1, "the oldest idle connection")
	if err := askTCP(t, c2); err != nil {
		t.Fatalf("the younger idle connection: %v; want it kept", err)
	}
	if n := server.Conns(s); n > 2 {
		t.Errorf("%d connections open, limit 2", n)
	}
}

// TestTCPConnectionLimitBusy: at the limit with no connection idle (each
// is in the middle of a message), a new connection is closed unanswered,
// and the busy ones are kept.
func TestTCPConnectionLimitBusy(t *testing.T) {
	s := start(t, server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1, TCPMaxConnections: 2,
		TCPIdleTimeout: time.Minute, TCPIOTimeout: time.Minute})
	q := framed(t, "www.example.test.", dns.TypeA)
	var busy []net.Conn
	for _, ip := range []string{"127.0.0.165", "127.0.0.166"} {
		c := dialFrom(t, s, ip)
		if err := askTCP(t, c); err != nil {
			t.Fatal(err)
		}
		// The length and a byte of the next query: the server waits
		// for the rest, not idle.
		if _, err := c.Write(q[:3]); err != nil {
			t.Fatal(err)
		}
		busy = append(busy, c)
	}
	eventually(t, "both connections in the middle of a message", func() bool { return server.IdleConns(s) == 0 && server.Conns(s) == 2 })
	expectClosed(t, dialFrom(t, s, "127.0.0.167"), "a third connection with none idle")
	for i, c := range busy {
		if _, err := c.Write(q[3:]); err != nil {
			t.Fatal(err)
		}
		if err := readAnswer(c, 1); err != nil {
			t.Errorf("busy connection %d: %v; want its query answered", i, err)
		}
	}
}

// TestTCPPerClientLimit: a client at its limit gets no more connections;
// another client does, and the first gets one again once one of its
// connections is gone.
func TestTCPPerClientLimit(t *testing.T) {
	s := start(t, server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1, TCPMaxPerClient: 2, TCPIdleTimeout: time.Minute})
	a := dialFrom(t, s, "127.0.0.168")
	b := dialFrom(t, s, "127.0.0.168")
	for _, c := range []net.Conn{a, b} {
		if err := askTCP(t, c); err != nil {
			t.Fatal(err)
		}
	}
	expectClosed(t, dialFrom(t, s, "127.0.0.168"), "a third connection of one client")
	if err := askTCP(t, dialFrom(t, s, "127.0.0.169")); err != nil {
		t.Fatalf("another client: %v", err)
	}
	a.Close()
	eventually(t, "the closed connection forgotten", func() bool { return server.Conns(s) == 2 })
	if err := askTCP(t, dialFrom(t, s, "127.0.0.168")); err != nil {
		t.Fatalf("the client again, below its limit: %v", err)
	}
	if err := askTCP(t, b); err != nil {
		t.Fatal(err)
	}
}

// holdingWorker defers every answer and hands the query to the test, which
// answers it later: a resolver's worker, as the server sees it.
type holdingWorker struct {
	held, maxHeld *atomic.Int32
	queue         chan<- heldQuery
}

type heldQuery struct {
	reply *server.Reply
	pkt   []byte
}

func (w *holdingWorker) Answer(req *server.Request, out []byte) []byte {
	r := req.Defer()
	n := w.held.Add(1)
	for m := w.maxHeld.Load(); n > m && !w.maxHeld.CompareAndSwap(m, n); m = w.maxHeld.Load() {
	}
	w.queue <- heldQuery{r, append([]byte(nil), req.Packet...)}
	return nil
}

// TestTCPPipelineLimit: with TCPMaxPipelined deferred answers
// outstanding, the server stops reading the connection until one is
// sent; every pipelined query is still answered, and no more than the
// limit are outstanding at once (without the limit all 12 are).
func TestTCPPipelineLimit(t *testing.T) {
	const limit, n = 3, 12
	var held, maxHeld atomic.Int32
	queue := make(chan heldQuery, n)
	h := server.HandlerFunc(func(tcp bool) server.Worker { return &holdingWorker{&held, &maxHeld, queue} })
	s := server.New(server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1, TCPMaxPipelined: limit}, h)
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			q := <-queue
			// Leave the server time to read on, were it not held back.
			time.Sleep(20 * time.Millisecond)
			var m dns.Msg
			if err := m.Unpack(q.pkt); err != nil {
				t.Error(err)
				return
			}
			m.SetReply(&m)
			p, _ := m.Pack()
			held.Add(-1)
			_ = q.reply.Send(p)
			q.reply.Close()
		}
	}()
	c := dialFrom(t, s, "127.0.0.170")
	if _, err := c.Write(pipelined(n, 100)); err != nil {
		t.Fatal(err)
	}
	seen := make(map[uint16]bool)
	for i := 0; i < n; i++ {
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		var lb [2]byte
		if _, err := io.ReadFull(c, lb[:]); err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		buf := make([]byte, binary.BigEndian.Uint16(lb[:]))
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		var m dns.Msg
		if err := m.Unpack(buf); err != nil {
			t.Fatal(err)
		}
		seen[m.Id] = true
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d distinct answers, want %d", len(seen), n)
	}
	if got := maxHeld.Load(); got != limit {
		t.Errorf("at most %d answers outstanding at once, want the limit, %d", got, limit)
	}
}

// TestTCPIdleFlood (issue 15): many idle TCP connections from several
// addresses do not stop the service: the same bounded burst of UDP
// queries is sent before the idle connections are opened and while they
// are held, and is all answered both times; a new client is served over
// TCP (the per-client limit keeps one address from taking every slot, and
// at the total the idle ones make room), and the idle timeout closes them
// all. The two bursts' rates and their ratio (held/before, the issue's
// "UDP answers keep flowing at their normal rate") are logged with -v,
// not asserted: the project has no timing assertions, and a loaded
// 2-core machine would make one flaky.
func TestTCPIdleFlood(t *testing.T) {
	const clients, perClient, total = 10, 12, 100
	s := start(t, server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1,
		TCPMaxConnections: total, TCPMaxPerClient: perClient, TCPIdleTimeout: 4 * time.Second})
	const burst = 300
	udpBurst(t, s, 30, "warming up") // first queries pay for cold caches
	before := udpBurst(t, s, burst, "before the idle TCP connections")
	var idle []net.Conn
	for i := 0; i < clients; i++ {
		ip := net.IPv4(127, 0, 0, byte(165+i)).String()
		for j := 0; j < perClient+4; j++ {
			idle = append(idle, dialFrom(t, s, ip))
		}
	}
	// The limit holds for the connections admitted; those closed to
	// make room stay open until their goroutines let go of them, which
	// on a loaded machine may be dozens (112 open at once were seen
	// against the bound of total+clients this test had). Admitted read
	// 102 before release counted a connection out under the lock it
	// counts them in under.
	if n := server.Admitted(s); n > total {
		t.Errorf("%d connections admitted, limit %d", n, total)
	}
	eventually(t, "the connections closed to make room released", func() bool { return server.Conns(s) <= total })
	// The last address to connect is at its limit (the first ones' oldest
	// connections made room at the total) and cannot take more; a new
	// client can.
	expectClosed(t, dialFrom(t, s, net.IPv4(127, 0, 0, byte(165+clients-1)).String()), "a client at its limit")
	held := server.Conns(s)
	during := udpBurst(t, s, burst, fmt.Sprintf("with %d idle TCP connections open", held))
	rate := func(d time.Duration) float64 { return burst / d.Seconds() }
	t.Logf("UDP burst of %d: %.0f answers/s before, %.0f/s with %d idle TCP connections held (ratio held/before %.2f)",
		burst, rate(before), rate(during), held, rate(during)/rate(before))
	if err := askTCP(t, dialFrom(t, s, "127.0.0.177")); err != nil {
		t.Fatalf("new TCP client with %d idle connections open: %v", server.Conns(s), err)
	}
	eventually(t, "idle connections closed by the idle timeout", func() bool { return server.Conns(s) == 0 })
	_ = idle
}

// udpBurst sends n UDP queries for www.example.test one after another,
// fails the test unless every one is answered, and returns how long the
// burst took (for a log line, never an assertion).
func udpBurst(t *testing.T, s *server.Server, n int, when string) time.Duration {
	t.Helper()
	begin := time.Now()
	for i := 0; i < n; i++ {
		m := new(dns.Msg)
		m.SetQuestion("www.example.test.", dns.TypeA)
		r, err := dnstest.Exchange(m, "udp", s.Addrs()[0])
		if err != nil || len(r.Answer) != 1 {
			t.Fatalf("UDP query %d %s: %v %v", i, when, err, r)
		}
	}
	return time.Since(begin)
}
