package server

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// tcpReadSize is the read-ahead buffer of a connection whose query is
	// arriving: room for a burst of pipelined queries (typical ones take
	// under 100 bytes) in one read.
	tcpReadSize = 4096
	// tcpGather is how many bytes of answers to a burst are gathered
	// before they are written, so that a burst costs few writes.
	tcpGather = 16384
	// tcpMaxMessage is the largest message a 2-byte length can announce
	// (RFC 1035 §4.2.2).
	tcpMaxMessage = 65535
)

// tcpAnswerer is what answering over TCP needs: a Worker and a buffer
// gathering answers. A connection takes one from the server's pool when it
// holds a complete query and gives it back once the answers are written,
// so that idle connections hold none (an idle connection used to hold
// 250 KB; 1024 of them pinned 250 MB).
type tcpAnswerer struct {
	worker Worker
	// out has room for tcpGather bytes of answers and then one more
	// answer of the largest size, with its length prefix.
	out [tcpGather + 2 + BufferSize]byte
}

func (s *Server) acceptLoop(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// EMFILE and friends: back off instead of spinning.
			s.log.Warn("tcp accept", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		tc := s.admit(c)
		if tc == nil {
			c.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveTCP(tc)
			s.release(tc)
		}()
	}
}

// clientKey is what the per-client connection limit counts by: an IPv4
// address, or an IPv6 /64 (one host's usual share, which a client can
// draw addresses from freely).
func clientKey(a netip.Addr) netip.Addr {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// admit decides whether a new connection is served: not when its client
// holds TCPMaxPerClient connections already; when TCPMaxConnections are
// open, only if the connection idle the longest (waiting between
// messages, with no deferred answer outstanding) can be closed to make
// room, as RFC 7766 §6.2.3 allows a server under pressure: clients
// holding idle connections cannot lock new ones out, and a client whose
// connection goes simply reconnects. It returns the connection's state,
// counted, or nil.
func (s *Server) admit(c net.Conn) *tcpConn {
	tc := &tcpConn{s: s, c: c}
	tc.req = Request{TCP: true, transport: tc}
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		ap := a.AddrPort()
		tc.req.remote = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	if a, ok := c.LocalAddr().(*net.TCPAddr); ok {
		ap := a.AddrPort()
		tc.req.local = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	tc.client = clientKey(tc.req.remote.Addr())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perClient[tc.client] >= s.cfg.TCPMaxPerClient {
		return nil
	}
	if s.conns.Load()-int64(s.reaping) >= int64(s.cfg.TCPMaxConnections) && !s.reapIdle() {
		return nil
	}
	s.conns.Add(1)
	s.perClient[tc.client]++
	s.active[c] = tc
	return tc
}

// reapIdle closes the connection idle the longest that has no deferred
// answer outstanding, and reports whether there was one. It runs with
// s.mu held, only when the connection limit is reached: a scan of the
// open connections, off the query path.
func (s *Server) reapIdle() bool {
	for range 3 {
		var oldest *tcpConn
		var since int64
		for _, tc := range s.active {
			t := tc.idle.Load()
			if t > 0 && tc.open.Load() == 0 && (oldest == nil || t < since) {
				oldest, since = tc, t
			}
		}
		if oldest == nil {
			return false
		}
		// It may have woken with a message meanwhile: then look again.
		if oldest.idle.CompareAndSwap(since, reaped) {
			s.reaping++
			oldest.c.Close()
			return true
		}
	}
	return false
}

// release forgets a connection whose goroutine is done, and closes it.
func (s *Server) release(tc *tcpConn) {
	s.mu.Lock()
	delete(s.active, tc.c)
	if n := s.perClient[tc.client] - 1; n > 0 {
		s.perClient[tc.client] = n
	} else {
		delete(s.perClient, tc.client)
	}
	if tc.idle.Load() == reaped {
		s.reaping--
	}
	// Counted out under s.mu, with reaping, as admit counts them in:
	// done after the unlock, admit could see one connection too many
	// (and refuse a client it had room for).
	s.conns.Add(-1)
	s.mu.Unlock()
	tc.c.Close()
}

// serveTCP answers length-prefixed queries (RFC 1035 §4.2.2) until the
// client closes, sends garbage, stays idle past the idle timeout, or is
// slower than the I/O timeout. Between messages it waits holding no
// buffer (see tcpWait).
//
// A connection with deferred answers outstanding (Request.Defer) stays
// open, once the client is done or idle, until they are closed.
func (s *Server) serveTCP(tc *tcpConn) {
	c := tc.c
	// Connections from a TCP listener are syscall.Conns.
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	defer tc.pending.Wait()
	t := &tcpWait{s: s, tc: tc}
	t.try = t.read
	for {
		// RFC 7766 §6.2.3: the idle timeout runs between messages.
		now := time.Now()
		_ = c.SetReadDeadline(now.Add(s.cfg.TCPIdleTimeout))
		if !tc.idle.CompareAndSwap(0, now.UnixNano()) {
			return // closed to make room (reapIdle)
		}
		// After the deadline is set: Shutdown sets draining before it
		// moves the deadlines of the connections to now.
		if s.draining.Load() {
			return
		}
		if err := raw.Read(t.try); err != nil {
			return
		}
		in, n := t.in, t.n
		t.in = nil
		if n <= 0 {
			if in != nil {
				s.tcpIn.Put(in)
			}
			return
		}
		if !s.serveBurst(tc, in, n) {
			return
		}
	}
}

// tcpWait waits for a connection's next message with no buffer: its try
// reads into a buffer from the pool only when the socket has data, and
// gives the buffer back when it has none (EAGAIN), so that the goroutine
// parks in the netpoller holding nothing. Reading the 2-byte length alone
// first would cost an extra read per burst (7% more CPU per query with one
// query in flight per connection, tern perf -T -c 64 -q 64).
type tcpWait struct {
	s   *Server
	tc  *tcpConn
	try func(fd uintptr) bool // read, bound once: a method value allocates
	in  *[tcpReadSize]byte    // what read read, n bytes (0: EOF, <0: error)
	n   int
}

// read is a syscall.RawConn read function: false means wait for data.
// It marks the connection busy while it reads (so that reapIdle leaves
// it), and idle since the same time again when there was nothing; once
// reaped, it reads nothing (n -1).
func (t *tcpWait) read(fd uintptr) bool {
	since := t.tc.idle.Load()
	if since <= 0 || !t.tc.idle.CompareAndSwap(since, 0) {
		t.in, t.n = nil, -1
		return true
	}
	in := t.s.tcpIn.Get().(*[tcpReadSize]byte)
	for {
		n, err := unix.Read(int(fd), in[:])
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			t.s.tcpIn.Put(in)
			t.tc.idle.Store(since)
			return false
		}
		if err != nil {
			n = -1
		}
		t.in, t.n = in, n
		return true
	}
}

// serveBurst reads and answers the messages that start with the n bytes
// in in, which the idle wait read, until the connection is at a message
// boundary with nothing more buffered; it reports whether the connection
// is to be kept, and gives in back to the pool. Pipelined queries (RFC
// 7766 §6.2.1.1) are answered in turn, and the answers to those that
// arrived together are written together.
//
// The rest of a message must arrive within the I/O timeout of the read
// that brought its first byte (Knot's tcp-io-timeout), so that a client
// cannot hold a connection by sending a query slowly; the idle timeout
// applies only between messages.
func (s *Server) serveBurst(tc *tcpConn, in *[tcpReadSize]byte, n int) bool {
	defer s.tcpIn.Put(in)
	c := tc.c
	w := tcpWriter{s: s, tc: tc}
	buf := in[:]
	start, end := 0, n
	timed := false // whether the message under way has its deadline
	for {
		for end-start >= 2 {
			n := int(binary.BigEndian.Uint16(buf[start:]))
			if end-start < 2+n {
				break
			}
			if !w.slot() || !w.answer(buf[start+2:start+2+n]) {
				w.flush()
				return false
			}
			start += 2 + n
			timed = false
		}
		// No complete message is left: what was answered goes out before
		// waiting for more.
		if !w.flush() {
			return false
		}
		if start == end {
			return true
		}
		end = copy(buf, buf[start:end])
		start = 0
		if !timed {
			// A new message is under way: its own I/O timeout.
			_ = c.SetReadDeadline(time.Now().Add(s.cfg.TCPIOTimeout))
			timed = true
		}
		if end >= 2 {
			if n := int(binary.BigEndian.Uint16(buf)); 2+n > len(buf) {
				return s.serveLarge(c, &w, buf[:end], n)
			}
		}
		m, err := c.Read(buf[end:])
		end += m
		if m == 0 && err != nil {
			return false
		}
	}
}

// serveLarge reads and answers a message too large for the read-ahead
// buffer (n bytes, whose length prefix and first bytes are in have),
// in a buffer of its own taken from a pool; such messages are rare.
func (s *Server) serveLarge(c net.Conn, w *tcpWriter, have []byte, n int) bool {
	big := s.tcpLarge.Get().(*[2 + tcpMaxMessage]byte)
	defer s.tcpLarge.Put(big)
	copy(big[:], have)
	if _, err := io.ReadFull(c, big[len(have):2+n]); err != nil {
		return false
	}
	ok := w.slot() && w.answer(big[2:2+n])
	return w.flush() && ok
}

// tcpConn is a connection's state that the deferred replies to its
// queries share with the goroutine serving it.
type tcpConn struct {
	s *Server
	c net.Conn
	// wmu orders the connection's writes: the goroutine's own and
	// deferred replies', each whole messages; it guards prefix and
	// bufs, send's length prefix and the writev's buffers, kept here so
	// that a message costs no allocation (a 1M-record AXFR is 1,300
	// messages, each allocated both before).
	wmu    sync.Mutex
	prefix [2]byte
	bufs   [2][]byte
	wbufs  net.Buffers
	// pending counts the deferred replies not yet closed, and open too,
	// for the pipelining limit (TCPMaxPipelined) and reapIdle; wake
	// (made at the first deferred reply) tells the goroutine serving
	// the connection, waiting for open to go below the limit, that a
	// reply closed.
	pending sync.WaitGroup
	open    atomic.Int32
	wake    chan struct{}
	// idle is when the connection started waiting for its next message
	// (UnixNano), 0 while it reads or answers one, reaped once reapIdle
	// closed it.
	idle atomic.Int64
	// client is the connection's client as the per-client limit counts
	// it (clientKey).
	client netip.Addr
	// req is the request of the message being answered.
	req Request
}

// reaped is tcpConn.idle of a connection reapIdle closed.
const reaped = -1

// deferReply is a Reply that writes to the connection; the connection
// waits for its Close before it is closed. Each of its messages may take
// the idle timeout to be written, not the I/O timeout: a deferred reply
// holds no buffer of the server's while it waits, and a zone transfer's
// stream of messages to a client that reads as it stores them (kdig under
// load lost a 1M-record AXFR at 62% with 500 ms per message) must not
// break off as a slow query would.
func (tc *tcpConn) deferReply(*Request) *Reply {
	if tc.wake == nil {
		tc.wake = make(chan struct{}, 1)
	}
	tc.pending.Add(1)
	tc.open.Add(1)
	tr, _ := tc.s.tcpReplies.Get().(*tcpReply)
	if tr == nil {
		tr = new(tcpReply)
	}
	tr.tc = tc
	tr.r.init(tr, false)
	return &tr.r
}

// tcpReply is a deferred TCP answer's Reply and its connection.
type tcpReply struct {
	r  Reply
	tc *tcpConn
}

func (tr *tcpReply) send(msg []byte) error { return tr.tc.sendDeferred(msg) }

func (tr *tcpReply) closed() { tr.tc.deferDone() }

func (tr *tcpReply) release() {
	s := tr.tc.s
	tr.tc = nil
	s.tcpReplies.Put(tr)
}

// deferDone is a deferred reply's Close.
func (tc *tcpConn) deferDone() {
	if tc.open.Add(-1) < int32(tc.s.cfg.TCPMaxPipelined) {
		select {
		case tc.wake <- struct{}{}:
		default:
		}
	}
	tc.pending.Done()
}

// sendDeferred is send with the deferred replies' timeout.
func (tc *tcpConn) sendDeferred(msg []byte) error {
	return tc.send(msg, max(tc.s.cfg.TCPIOTimeout, tc.s.cfg.TCPIdleTimeout))
}

// errTooLarge is a deferred message longer than TCP's 2-byte length.
var errTooLarge = errors.New("message longer than 65535 bytes")

// send writes msg with its length prefix within timeout.
func (tc *tcpConn) send(msg []byte, timeout time.Duration) error {
	if len(msg) > tcpMaxMessage {
		return errTooLarge
	}
	tc.wmu.Lock()
	defer tc.wmu.Unlock()
	binary.BigEndian.PutUint16(tc.prefix[:], uint16(len(msg)))
	tc.bufs = [2][]byte{tc.prefix[:], msg}
	// WriteTo consumes the slice it is given (a field: a local one
	// escapes through its pointer receiver), not the array.
	tc.wbufs = tc.bufs[:]
	_ = tc.c.SetWriteDeadline(time.Now().Add(timeout))
	_, err := tc.wbufs.WriteTo(tc.c)
	tc.bufs[1] = nil // msg is the caller's again
	return err
}

// tcpWriter gathers the answers to a burst and writes them.
type tcpWriter struct {
	s   *Server
	tc  *tcpConn
	ans *tcpAnswerer // from s.tcpAnswerers while answers are gathered
	n   int          // bytes gathered in ans.out
}

// answer answers msg into the gathered answers, writing them when they
// pass tcpGather bytes. It reports false when the connection is to be
// closed: a write failed, or msg gets no answer (RFC 7766 §7: a query we
// cannot answer ends the connection rather than leave the client
// waiting).
func (w *tcpWriter) answer(msg []byte) bool {
	if w.ans == nil {
		w.ans = w.s.tcpAnswerers.Get().(*tcpAnswerer)
	}
	out := w.ans.out[w.n : w.n+2+BufferSize]
	req := &w.tc.req
	req.Packet = msg
	resp := w.ans.worker.Answer(req, out[2:2])
	req.Packet = nil
	if req.deferred() {
		return true
	}
	if resp == nil || len(resp) > tcpMaxMessage {
		return false
	}
	binary.BigEndian.PutUint16(out, uint16(len(resp)))
	if len(resp) > 0 && &resp[0] != &out[2] {
		// An answer of the Worker's own buffer, not built in out.
		if !w.write() {
			return false
		}
		return w.tc.send(resp, w.s.cfg.TCPIOTimeout) == nil
	}
	w.n += 2 + len(resp)
	if w.n > tcpGather {
		return w.write()
	}
	return true
}

// slot waits, before the next message of the connection is answered,
// until fewer than TCPMaxPipelined of its answers are outstanding
// (deferred replies not closed: resolutions, transfers), the answers
// gathered written first; the connection is not read meanwhile, so a
// client pipelining more waits in TCP's flow control (RFC 7766 §6.2.1.1
// lets a server bound its concurrent work per connection). Answers made
// at once never wait: each burst's are written before more is read. It
// reports false when the gathered answers could not be written.
func (w *tcpWriter) slot() bool {
	tc := w.tc
	if tc.open.Load() < int32(w.s.cfg.TCPMaxPipelined) {
		return true
	}
	if !w.flush() {
		return false
	}
	for tc.open.Load() >= int32(w.s.cfg.TCPMaxPipelined) {
		<-tc.wake
	}
	return true
}

// flush writes what is gathered and gives the answerer back to the pool.
func (w *tcpWriter) flush() bool {
	if w.ans == nil {
		return true
	}
	ok := w.write()
	w.s.tcpAnswerers.Put(w.ans)
	w.ans = nil
	return ok
}

// write writes the gathered answers. Every write gets a deadline of its
// own: a client that does not read its answers within the I/O timeout
// loses the connection instead of holding it (and its buffers) forever.
func (w *tcpWriter) write() bool {
	if w.n == 0 {
		return true
	}
	w.tc.wmu.Lock()
	defer w.tc.wmu.Unlock()
	_ = w.tc.c.SetWriteDeadline(time.Now().Add(w.s.cfg.TCPIOTimeout))
	_, err := w.tc.c.Write(w.ans.out[:w.n])
	w.n = 0
	return err == nil
}
