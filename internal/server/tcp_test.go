package server_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"github.com/tern-dns/tern/internal/server"
)

// bigTXTs is how many TXT records bigTXT writes; over TCP they make a
// 16 KB answer, as large as the writes the old buffered writer made alone.
const bigTXTs = 64

// bigTXT returns the records of big.example.test.: bigTXTs TXT records of
// 250 bytes.
func bigTXT() string {
	var b strings.Builder
	for i := 0; i < bigTXTs; i++ {
		fmt.Fprintf(&b, "big TXT \"%03d%s\"\n", i, strings.Repeat("x", 247))
	}
	return b.String()
}

// framed returns a query for name and qtype with its 2-byte length
// (RFC 1035 §4.2.2).
func framed(t *testing.T, name string, qtype uint16) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	p, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(p))), p...)
}

// dialTCP connects to s's first address with d, closing the connection
// when the test ends.
func dialTCP(t *testing.T, s *server.Server, d *net.Dialer) net.Conn {
	t.Helper()
	c, err := d.Dial("tcp", s.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readAnswer reads one framed answer from c and checks that it holds
// answers records.
func readAnswer(c net.Conn, answers int) error {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var lb [2]byte
	if _, err := io.ReadFull(c, lb[:]); err != nil {
		return err
	}
	buf := make([]byte, binary.BigEndian.Uint16(lb[:]))
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	var m dns.Msg
	if err := m.Unpack(buf); err != nil {
		return err
	}
	if len(m.Answer) != answers || m.Truncated {
		return fmt.Errorf("%d answers (TC %v), want %d", len(m.Answer), m.Truncated, answers)
	}
	return nil
}

// waitClosed waits for the server to have no TCP connection left, within
// a bound generous enough for a loaded machine; it fails the test with
// what if the connection is still there then. While it waits it calls
// step, if not nil, until step reports false.
func waitClosed(t *testing.T, s *server.Server, what string, step func() bool) {
	t.Helper()
	limit := time.Now().Add(20 * time.Second)
	for server.Conns(s) != 0 {
		if time.Now().After(limit) {
			t.Fatalf("%s still holds its connection after 20s", what)
		}
		if step != nil && !step() {
			step = nil
		}
		if step == nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestTCPSlowReaderDropped: a client that sends queries for large answers,
// each write ending inside a query, and never reads, loses its connection
// once a write of answers stays blocked for the I/O timeout. (The
// buffered writer's own flushes used to run with no deadline: such a
// client held its connection forever.)
func TestTCPSlowReaderDropped(t *testing.T) {
	s := start(t, server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1,
		TCPIdleTimeout: time.Minute, TCPIOTimeout: 200 * time.Millisecond})
	// A small receive window, so that the server's writes block soon.
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4096)
		})
		return errors.Join(err, serr)
	}}
	c := dialTCP(t, s, &d)
	q := framed(t, "big.example.test.", dns.TypeTXT)
	half := len(q) / 2
	// Each write: the rest of a query, 7 whole ones, half of the next.
	chunk := append([]byte{}, q[half:]...)
	for i := 0; i < 7; i++ {
		chunk = append(chunk, q...)
	}
	chunk = append(chunk, q[:half]...)
	if _, err := c.Write(q[:half]); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, s, "a client that never reads", func() bool {
		// Once a write blocks the server has stopped reading (it is
		// blocked writing answers), and a partial write would break the
		// framing: stop writing then.
		_ = c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := c.Write(chunk)
		return err == nil
	})
}

// TestTCPSlowQueryDropped: a client that sends a query a byte at a time
// loses its connection once the query has taken the I/O timeout, though
// it is never idle for the idle timeout. (The read deadline used to be the
// idle timeout, renewed for every query.)
func TestTCPSlowQueryDropped(t *testing.T) {
	s := start(t, server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1,
		TCPIdleTimeout: time.Minute, TCPIOTimeout: 200 * time.Millisecond})
	c := dialTCP(t, s, &net.Dialer{})
	q := framed(t, "www.example.test.", dns.TypeA)
	i := 0
	waitClosed(t, s, "a client trickling its queries", func() bool {
		time.Sleep(20 * time.Millisecond)
		_, err := c.Write(q[i%len(q) : i%len(q)+1])
		i++
		return err == nil
	})
}

// TestTCPSplitQueriesServed: a client whose queries arrive split across
// writes, with a pause inside each query, is served for as long as it
// reads its answers, far past the idle timeout. (Its connection used to
// be reset once the write deadline of an earlier flush had passed.)
func TestTCPSplitQueriesServed(t *testing.T) {
	s := start(t, server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1,
		TCPIdleTimeout: 500 * time.Millisecond, TCPIOTimeout: 10 * time.Second})
	c := dialTCP(t, s, &net.Dialer{})
	q := framed(t, "big.example.test.", dns.TypeTXT)
	half := len(q) / 2
	// A whole query first, answered alone.
	if _, err := c.Write(q); err != nil {
		t.Fatal(err)
	}
	if err := readAnswer(c, bigTXTs); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(q[:half]); err != nil {
		t.Fatal(err)
	}
	// Then writes of the rest of a query, a whole one and half of the
	// next, for several idle timeouts.
	chunk := append(append(append([]byte{}, q[half:]...), q...), q[:half]...)
	began := time.Now()
	for round := 0; round < 10 || round < 250 && time.Since(began) < 2500*time.Millisecond; round++ {
		time.Sleep(20 * time.Millisecond)
		if _, err := c.Write(chunk); err != nil {
			t.Fatalf("round %d, after %v: %v", round, time.Since(began), err)
		}
		for i := 0; i < 2; i++ {
			if err := readAnswer(c, bigTXTs); err != nil {
				t.Fatalf("round %d, after %v: %v", round, time.Since(began), err)
			}
		}
	}
}

// TestTCPIdleMemory: idle connections hold no buffers. Each client sends
// a query and reads its answer, so that every connection has been used,
// then waits; the server's heap and goroutine stacks may grow by at most
// 16 KiB a connection (each used to hold about 250 KB).
func TestTCPIdleMemory(t *testing.T) {
	n := 1000
	// Two descriptors a connection (client and server) in this process.
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Skip(err)
	}
	if need := uint64(2*n + 200); rl.Cur < need {
		rl.Cur = min(need, rl.Max)
		_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &rl)
		_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &rl)
		n = min(n, int(rl.Cur-200)/2)
	}
	if n < 100 {
		t.Skipf("open files limit %d", rl.Cur)
	}
	s := start(t, server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1, TCPMaxConnections: n, TCPMaxPerClient: n})
	q := framed(t, "www.example.test.", dns.TypeA)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", s.Addrs()[0])
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if _, err := c.Write(q); err != nil {
			t.Fatal(err)
		}
		if err := readAnswer(c, 1); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	// Pooled buffers are what the busy connections share; two
	// collections empty the pools of what the idle ones gave back.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapInuse+after.StackInuse) - int64(before.HeapInuse+before.StackInuse)
	per := grew / int64(n)
	t.Logf("%d idle connections: heap and stacks grew %d KiB, %d bytes a connection", n, grew>>10, per)
	if per > 16<<10 {
		t.Errorf("%d idle connections take %d bytes each (heap and stacks), want at most 16 KiB", n, per)
	}
	if got := server.Conns(s); got != int64(n) {
		t.Errorf("%d connections open, want %d", got, n)
	}
}

// TestTCPAnswersAllocateNothing: once warm, answering pipelined queries
// over TCP allocates nothing (buffers and Workers come from the pools).
// The client reads into buffers of its own, so the process's allocation
// count is the server's.
func TestTCPAnswersAllocateNothing(t *testing.T) {
	if server.RaceEnabled {
		t.Skip("the race detector makes sync.Pool drop items: make test runs it without -race")
	}
	s := start(t, server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1})
	c := dialTCP(t, s, &net.Dialer{})
	var burst []byte
	const per = 8
	for i := 0; i < per; i++ {
		burst = append(burst, framed(t, "www.example.test.", dns.TypeA)...)
	}
	resp := make([]byte, 2+server.BufferSize)
	exchange := func() error {
		if _, err := c.Write(burst); err != nil {
			return err
		}
		for i := 0; i < per; i++ {
			if _, err := io.ReadFull(c, resp[:2]); err != nil {
				return err
			}
			if _, err := io.ReadFull(c, resp[:binary.BigEndian.Uint16(resp)]); err != nil {
				return err
			}
		}
		return nil
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	for i := 0; i < 50; i++ {
		if err := exchange(); err != nil {
			t.Fatal(err)
		}
	}
	const bursts = 500
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < bursts; i++ {
		if err := exchange(); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	// Allow the runtime's own few (a GC cycle may empty the pools).
	n := after.Mallocs - before.Mallocs
	t.Logf("%d allocations for %d queries", n, bursts*per)
	if n > bursts/10 {
		t.Errorf("%d allocations for %d queries", n, bursts*per)
	}
}

// echoWorker answers a message with itself, from a buffer of its own for
// messages starting with 'o' and in out for the others; a message
// starting with 'x' gets no answer.
type echoWorker struct{ own []byte }

func (w *echoWorker) Answer(req *server.Request, out []byte) []byte {
	pkt := req.Packet
	switch {
	case len(pkt) > 0 && pkt[0] == 'x':
		return nil
	case len(pkt) > 0 && pkt[0] == 'o':
		w.own = append(w.own[:0], pkt...)
		return w.own
	}
	return append(out, pkt...)
}

// TestTCPWorkerAnswers: answers built in the server's buffer and answers
// a server.Worker returns from its own buffer go out in the order of their
// queries; a message that gets no answer ends the connection after the
// answers before it are written (RFC 7766 §7).
func TestTCPWorkerAnswers(t *testing.T) {
	s := server.New(server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1},
		server.HandlerFunc(func(bool) server.Worker { return new(echoWorker) }))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	c := dialTCP(t, s, &net.Dialer{})
	// Messages larger than the read-ahead buffer are read into one of
	// their own, the largest a length can announce too.
	msgs := []string{"a1", "own2", strings.Repeat("L", 5000), "b3", "own4", strings.Repeat("M", 65535), "c5", "x6", "d7"}
	var burst []byte
	for _, m := range msgs {
		burst = binary.BigEndian.AppendUint16(burst, uint16(len(m)))
		burst = append(burst, m...)
	}
	if _, err := c.Write(burst); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for _, m := range msgs[:7] {
		want = binary.BigEndian.AppendUint16(want, uint16(len(m)))
		want = append(want, m...)
	}
	if string(got) != string(want) {
		t.Errorf("got %d bytes, want %d (answers to %d messages) and the connection closed", len(got), len(want), 7)
	}
}
