package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tern-dns/tern/internal/server"
)

// deferWorker echoes messages: one starting with 'd' is deferred and
// answered "D"+message once release is closed; one starting with 's' is
// deferred and answered by a stream of three messages ("S1", "S2",
// "S3"+message); the others at once. It records the Remote of each
// message.
type deferWorker struct {
	release <-chan struct{}
	mu      *sync.Mutex
	remotes map[string]netip.AddrPort
	// again is what a second Send of a datagram's deferred answer
	// returned, by message.
	again map[string]error
	// done gets each deferred message once its answer is sent and its
	// Reply closed. The tests wait on it rather than on wg: the race
	// detector does not see the network order the worker's wg.Add
	// before the test's wg.Wait, and reports WaitGroup misuse.
	done chan string
	wg   *sync.WaitGroup
}

func (w *deferWorker) Answer(req *server.Request, out []byte) []byte {
	msg := string(req.Packet)
	w.mu.Lock()
	w.remotes[msg] = req.Remote()
	w.mu.Unlock()
	switch {
	case msg != "" && msg[0] == 'd':
		r, tcp := req.Defer(), req.TCP
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			<-w.release
			_ = r.Send([]byte("D" + msg))
			if !tcp {
				err := r.Send([]byte("again"))
				w.mu.Lock()
				w.again[msg] = err
				w.mu.Unlock()
			}
			r.Close()
			w.done <- msg
		}()
		return nil
	case msg != "" && msg[0] == 's':
		r := req.Defer()
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			<-w.release
			for _, m := range []string{"S1", "S2", "S3" + msg} {
				if err := r.Send([]byte(m)); err != nil {
					w.mu.Lock()
					w.again[msg] = err
					w.mu.Unlock()
				}
			}
			r.Close()
			w.done <- msg
		}()
		return nil
	}
	return append(out, msg...)
}

// batchingDeferWorker is a deferWorker that answers batches.
type batchingDeferWorker struct{ *deferWorker }

func (w batchingDeferWorker) AnswerBatch(reqs []server.Request, outs [][]byte) {
	for i := range reqs {
		outs[i] = w.Answer(&reqs[i], outs[i])
	}
}

func startDeferring(t *testing.T, listen string, batching bool) (*server.Server, chan struct{}, *deferWorker) {
	t.Helper()
	release := make(chan struct{})
	w := &deferWorker{release: release, mu: new(sync.Mutex), remotes: map[string]netip.AddrPort{}, again: map[string]error{}, done: make(chan string, 16), wg: new(sync.WaitGroup)}
	s := server.New(server.Config{Listen: []string{listen}, Workers: 1}, server.HandlerFunc(func(bool) server.Worker {
		if batching {
			return batchingDeferWorker{w}
		}
		return w
	}))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
		// Close joins the workers, so every wg.Add they made happens
		// before the Wait.
		s.Close()
		w.wg.Wait()
	})
	return s, release, w
}

// TestDeferredUDP: a datagram whose Worker defers it gets its answer
// later, from the address the query was sent to (a wildcard socket,
// queried at 127.0.0.2, through a client connected to that address, which
// takes datagrams from it alone; the portable loop's socket is bound to
// 127.0.0.2), while the datagrams after it are
// answered at once; Remote is the client's address; through Answer and
// through AnswerBatch.
func TestDeferredUDP(t *testing.T) {
	for _, batching := range []bool{false, true} {
		listen := "0.0.0.0:0"
		if !server.AnswersFromQueryAddress {
			listen = "127.0.0.2:0"
		}
		s, release, w := startDeferring(t, listen, batching)
		_, port, _ := net.SplitHostPort(s.Addrs()[0])
		c, err := net.Dial("udp", net.JoinHostPort("127.0.0.2", port))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		buf := make([]byte, 512)
		read := func() string {
			t.Helper()
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, err := c.Read(buf)
			if err != nil {
				t.Fatalf("batching %v: %v", batching, err)
			}
			return string(buf[:n])
		}
		// UDP on a loaded machine: the deferred query goes first and the
		// immediate one is retried until answered.
		if _, err := c.Write([]byte("d1")); err != nil {
			t.Fatal(err)
		}
		for try := 0; ; try++ {
			if _, err := c.Write([]byte("a2")); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			n, err := c.Read(buf)
			if err == nil {
				if got := string(buf[:n]); got != "a2" {
					t.Fatalf("batching %v: first answer %q, want a2 (d1 is deferred)", batching, got)
				}
				break
			}
			if try == 3 {
				t.Fatal(err)
			}
		}
		close(release)
		if got := read(); got != "Dd1" {
			t.Errorf("batching %v: deferred answer %q, want Dd1", batching, got)
		}
		<-w.done
		w.mu.Lock()
		got, want := w.remotes["d1"], c.LocalAddr().(*net.UDPAddr).AddrPort()
		again := w.again["d1"]
		w.mu.Unlock()
		if got != want {
			t.Errorf("batching %v: Remote %v, want %v", batching, got, want)
		}
		if !errors.Is(again, server.ErrReplyClosed) {
			t.Errorf("batching %v: a datagram's second Send: %v, want ErrReplyClosed", batching, again)
		}
	}
}

// TestDeferredTCP: over TCP deferred answers go out when ready, between
// or after the immediate ones; a stream of several messages answers one
// query (as an AXFR does); a client that half-closes its side still gets
// every deferred answer before the server closes the connection.
func TestDeferredTCP(t *testing.T) {
	s, release, w := startDeferring(t, "127.0.0.1:0", false)
	c := dialTCP(t, s, &net.Dialer{})
	var burst []byte
	for _, m := range []string{"d1", "a2", "s3", "b4"} {
		burst = binary.BigEndian.AppendUint16(burst, uint16(len(m)))
		burst = append(burst, m...)
	}
	if _, err := c.Write(burst); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	readMsg := func() string {
		t.Helper()
		var l [2]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			t.Fatal(err)
		}
		m := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(c, m); err != nil {
			t.Fatal(err)
		}
		return string(m)
	}
	for _, want := range []string{"a2", "b4"} {
		if got := readMsg(); got != want {
			t.Fatalf("answer %q, want %q (before the deferred ones)", got, want)
		}
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // let the server see the EOF first (not needed for correctness)
	close(release)
	var got []string
	for range 4 {
		got = append(got, readMsg())
	}
	// The two deferred replies are written whole, in any order between
	// them; the stream's messages in order.
	var stream []string
	dOK := false
	for _, m := range got {
		if m == "Dd1" {
			dOK = true
		} else {
			stream = append(stream, m)
		}
	}
	if !dOK || len(stream) != 3 || stream[0] != "S1" || stream[1] != "S2" || stream[2] != "S3s3" {
		t.Errorf("deferred answers %q, want Dd1 and the stream S1 S2 S3s3", got)
	}
	if rest, err := io.ReadAll(c); err != nil || len(rest) != 0 {
		t.Errorf("after the deferred answers: %q, %v; want the connection closed", rest, err)
	}
	<-w.done
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.again["s3"]; err != nil {
		t.Errorf("stream: %v", err)
	}
	if got, want := w.remotes["s3"], c.LocalAddr().(*net.TCPAddr).AddrPort(); got != want {
		t.Errorf("Remote %v, want %v", got, want)
	}
}

// TestNewRequestReply: a request made by NewRequest delivers its deferred
// messages to its function, and cannot be deferred without one; a Send
// after Close fails, Close twice is harmless. (A datagram's second Send
// fails: TestDeferredUDP.)
func TestNewRequestReply(t *testing.T) {
	remote := netip.MustParseAddrPort("192.0.2.1:5353")
	var got [][]byte
	req := server.NewRequest([]byte("q"), remote, true, func(m []byte) { got = append(got, bytes.Clone(m)) })
	if req.Remote() != remote || !req.TCP {
		t.Errorf("Remote %v TCP %v", req.Remote(), req.TCP)
	}
	r := req.Defer()
	if r == nil || req.Defer() != r {
		t.Fatal("Defer: nil, or a second Reply")
	}
	for _, m := range []string{"a", "b"} {
		if err := r.Send([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	r.Close()
	if err := r.Send([]byte("c")); !errors.Is(err, server.ErrReplyClosed) {
		t.Errorf("Send after Close: %v", err)
	}
	if len(got) != 2 || string(got[0]) != "a" || string(got[1]) != "b" {
		t.Errorf("delivered %q", got)
	}
	if server.NewRequest(nil, remote, false, nil).Defer() != nil {
		t.Error("Defer without a transport: not nil")
	}
}

// streamWorker defers every query and answers it with count messages of
// size bytes.
type streamWorker struct {
	count, size int
	// done gets one value when the stream is sent and closed (see
	// deferWorker.done on why not a WaitGroup).
	done chan struct{}
	errs chan error
}

func (w streamWorker) Answer(req *server.Request, out []byte) []byte {
	r := req.Defer()
	go func() {
		defer func() { w.done <- struct{}{} }()
		defer r.Close()
		msg := bytes.Repeat([]byte{'z'}, w.size)
		for range w.count {
			if err := r.Send(msg); err != nil {
				w.errs <- err
				return
			}
		}
	}()
	return nil
}

// TestDeferredStreamSlowReader: a deferred stream (a zone transfer) to a
// client that pauses longer than the I/O timeout with the socket buffers
// full (6 MB sent, more than the kernel buffers hold) is written whole:
// its messages have the idle timeout each (with the I/O timeout, the
// pause broke it off).
func TestDeferredStreamSlowReader(t *testing.T) {
	const count, size = 100, 60000
	w := streamWorker{count: count, size: size, done: make(chan struct{}, 1), errs: make(chan error, 1)}
	s := server.New(server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1, TCPIOTimeout: 20 * time.Millisecond, TCPIdleTimeout: 10 * time.Second},
		server.HandlerFunc(func(bool) server.Worker { return w }))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	c := dialTCP(t, s, &net.Dialer{})
	if err := c.(*net.TCPConn).SetReadBuffer(1 << 17); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte{0, 1, 'q'}); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 2+size)
	time.Sleep(300 * time.Millisecond) // the buffers fill; the writer waits
	for i := range count {
		if n, err := io.ReadFull(c, buf); err != nil {
			select {
			case e := <-w.errs:
				t.Logf("server: %v", e)
			default:
			}
			t.Fatalf("message %d of %d: %v (%d bytes)", i+1, count, err, n)
		}
	}
	<-w.done
	select {
	case err := <-w.errs:
		t.Errorf("stream: %v", err)
	default:
	}
}

// TestDeferredUDPMany: many deferred datagram answers released at once
// all arrive, each once, to the right query: they leave through the
// socket's outbox several to a sendmmsg, more of them than one call
// takes.
func TestDeferredUDPMany(t *testing.T) {
	const n = 100
	s, release, w := startDeferring(t, "127.0.0.1:0", false)
	c, err := net.Dial("udp", s.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := map[string]bool{}
	for i := range n {
		want[fmt.Sprintf("Dd%03d", i)] = true
	}
	// UDP on a loaded machine: ask again for what has not arrived yet,
	// a bounded number of times, before releasing the answers.
	for try := 0; ; try++ {
		w.mu.Lock()
		missing := []string{}
		for i := range n {
			m := fmt.Sprintf("d%03d", i)
			if _, ok := w.remotes[m]; !ok {
				missing = append(missing, m)
			}
		}
		w.mu.Unlock()
		if len(missing) == 0 {
			break
		}
		if try == 50 {
			t.Fatalf("%d of %d queries never reached the worker", len(missing), n)
		}
		if try%10 == 0 {
			for _, m := range missing {
				if _, err := c.Write([]byte(m)); err != nil {
					t.Fatal(err)
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(release)
	// done is never closed: this drains it for the life of the test
	// binary, however many queries were deferred twice.
	go func() {
		for range w.done {
		}
	}()
	got := map[string]bool{}
	buf := make([]byte, 512)
	for len(got) < n {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		k, err := c.Read(buf)
		if err != nil {
			t.Fatalf("%d of %d deferred answers arrived: %v", len(got), n, err)
		}
		m := string(buf[:k])
		if !want[m] {
			t.Fatalf("answer %q, want one of Dd000..Dd%03d", m, n-1)
		}
		got[m] = true
	}
}

// releasingWorker defers every datagram and, still within Answer,
// answers it "R"+message through its Reply and releases the Reply (as
// the resolver's mesh does, from its own goroutines): the transport
// reuses the Reply for the next deferred datagram while the answer may
// still wait in the socket's outbox.
type releasingWorker struct{ msg []byte }

func (w *releasingWorker) Answer(req *server.Request, out []byte) []byte {
	r := req.Defer()
	w.msg = append(append(w.msg[:0], 'R'), req.Packet...)
	_ = r.Send(w.msg)
	r.Release()
	return nil
}

func startReleasing(t *testing.T) *server.Server {
	t.Helper()
	s := server.New(server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1},
		server.HandlerFunc(func(bool) server.Worker { return &releasingWorker{} }))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestDeferredUDPReleased: the answers of datagrams whose Replies were
// released, and reused for the datagrams after them, each reach the
// client that asked: two clients' queries, sent together so that the
// worker reads them in one batch, each get their own answers.
func TestDeferredUDPReleased(t *testing.T) {
	s := startReleasing(t)
	var clients [2]net.Conn
	for i := range clients {
		c, err := net.Dial("udp", s.Addrs()[0])
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients[i] = c
	}
	buf := make([]byte, 512)
	for round := range 200 {
		for i, c := range clients {
			if _, err := fmt.Fprintf(c, "%d-%d", i, round); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range clients {
			// UDP on a loaded machine: a lost datagram ends the
			// round for this client; a wrong answer fails.
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			n, err := c.Read(buf)
			if err != nil {
				continue
			}
			if got, want := string(buf[:n]), fmt.Sprintf("R%d-%d", i, round); got != want {
				t.Fatalf("client %d got %q, want %q", i, got, want)
			}
		}
	}
}

// TestDeferredUDPAllocatesNothing: once warm, a deferred datagram whose
// Reply is released allocates nothing (the Reply, the addresses it
// keeps and the outbox's copy of the answer are reused). The client
// reads into a buffer of its own, so the process's allocation count is
// the server's.
func TestDeferredUDPAllocatesNothing(t *testing.T) {
	if server.RaceEnabled {
		t.Skip("the race detector makes sync.Pool drop items: make test runs it without -race")
	}
	s := startReleasing(t)
	c, err := net.Dial("udp", s.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	query, buf := []byte("q"), make([]byte, 512)
	exchange := func() error {
		var err error
		for range 3 { // UDP on a loaded machine: ask again
			if _, err = c.Write(query); err != nil {
				return err
			}
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err = c.Read(buf); err == nil {
				return nil
			}
		}
		return err
	}
	for range 50 {
		if err := exchange(); err != nil {
			t.Fatal(err)
		}
	}
	const queries = 1000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range queries {
		if err := exchange(); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	// Allow the runtime's own few (a GC cycle may empty the pools).
	n := after.Mallocs - before.Mallocs
	t.Logf("%d allocations for %d deferred datagrams", n, queries)
	if n > queries/20 {
		t.Errorf("%d allocations for %d deferred datagrams", n, queries)
	}
}
