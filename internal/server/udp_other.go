//go:build !linux || ternportable

package server

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/tern-dns/tern/internal/wire"
)

// batch is how many datagrams the loop reads at a time.
const batch = 1

// udpWorker is the portable UDP loop, for systems without recvmmsg and
// sendmmsg (see udp_linux.go for the batched one): a goroutine that reads
// one datagram at a time from its net.UDPConn and writes the answer back
// to the sender. On a socket bound to a wildcard address the kernel picks
// the answer's source address, which may not be the one the query was
// sent to (udp_linux.go answers from that one). The build tag ternportable selects it on Linux too, so
// that the tests run it (TestPortableUDP).
type udpWorker struct {
	conn   *net.UDPConn
	worker Worker
	rx     []byte
	tx     []byte
	req    Request
	// replies are the worker's udpDeferred released (Reply.Release),
	// for the next deferred datagrams.
	replies sync.Pool
}

// rawSockaddr is unused here: Request.remote holds the address.
type rawSockaddr struct{}

func (*rawSockaddr) addrPort() netip.AddrPort { return netip.AddrPort{} }

// deferReply is the Reply of the datagram in req, answered later: it
// writes to the same socket (a net.UDPConn may be written concurrently;
// once closed, the write fails).
func (w *udpWorker) deferReply(req *Request) *Reply {
	d, _ := w.replies.Get().(*udpDeferred)
	if d == nil {
		d = &udpDeferred{w: w}
	}
	d.to = req.remote
	d.r.init(d, true)
	return &d.r
}

// udpDeferred is a deferred datagram answer's Reply and where it goes.
type udpDeferred struct {
	r  Reply
	w  *udpWorker
	to netip.AddrPort
}

func (d *udpDeferred) send(msg []byte) error {
	_, err := d.w.conn.WriteToUDPAddrPort(msg, d.to)
	return err
}

func (*udpDeferred) closed() {}

// release keeps d for the worker's next deferred datagram (its send
// was a system call, done).
func (d *udpDeferred) release() { d.w.replies.Put(d) }

// newUDPWorker returns the worker that serves conn; stop closes it.
func newUDPWorker(conn *net.UDPConn, h Handler) (*udpWorker, error) {
	w := &udpWorker{
		conn:   conn,
		worker: h.NewWorker(false),
		rx:     make([]byte, rxSize),
		tx:     make([]byte, BufferSize),
	}
	w.req.transport = w
	w.req.local = udpLocal(conn)
	return w, nil
}

// run answers datagrams until the socket is closed.
func (w *udpWorker) run(closed *atomic.Bool) error {
	for {
		n, _, flags, from, err := w.conn.ReadMsgUDPAddrPort(w.rx, nil)
		if err != nil {
			if closed.Load() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			continue // say, ECONNREFUSED from an earlier answer's ICMP
		}
		var out []byte
		if flags&syscall.MSG_TRUNC != 0 {
			out = wire.FormErr(w.rx, w.tx[:0]) // longer than rxSize
		} else {
			w.req.Packet, w.req.remote = w.rx[:n], netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
			out = w.worker.Answer(&w.req, w.tx[:0])
			if w.req.deferred() {
				continue
			}
		}
		if out != nil {
			_, _ = w.conn.WriteToUDPAddrPort(out, from)
		}
	}
}

// stop closes the socket, which ends run.
func (w *udpWorker) stop() { w.conn.Close() }
