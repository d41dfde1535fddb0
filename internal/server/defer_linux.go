//go:build linux && !ternportable

package server

import (
	"encoding/binary"
	"net/netip"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawSockaddr is a datagram's source address as recvmmsg wrote it.
type rawSockaddr unix.RawSockaddrAny

// addrPort decodes a, an IPv4 or IPv6 socket address; IPv4-mapped IPv6
// addresses (a dual-stack socket's IPv4 clients) come out as IPv4.
func (a *rawSockaddr) addrPort() netip.AddrPort {
	switch a.Addr.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(a))
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), port)
	case unix.AF_INET6:
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(a))
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), port)
	}
	return netip.AddrPort{}
}

// udpSocket is a worker's socket as deferred replies see it: they may be
// sent after the worker stopped, and must then not write to a descriptor
// number that another socket has since been given.
//
// Deferred answers are not sent one sendmsg each by the goroutines that
// resolved them: Send copies the answer into the socket's outbox, and one
// sender goroutine sends what has gathered there with sendmmsg. Woken by
// the first answer queued, the sender first yields, so that the
// goroutines already runnable (the other resolutions an upstream answer,
// or a batch of them, completed) queue theirs before it sends; under
// load one system call then carries several answers.
type udpSocket struct {
	mu     sync.RWMutex
	fd     int
	closed bool

	// qmu guards the outbox: queue, free, qclosed, started, and sends
	// on wake.
	qmu     sync.Mutex
	queue   []outMsg
	free    [][]byte // copies' buffers, back from the sender
	qclosed bool
	started bool
	wake    chan struct{}

	// The sender's own: the queue it is sending and its headers.
	hdr [batch]unix.Mmsghdr
	iov [batch]unix.Iovec

	// replies are the socket's udpDeferred released (Reply.Release),
	// for the next deferred datagrams.
	replies sync.Pool
}

// outMsg is a deferred answer in the outbox: a copy of the message and
// of where it goes (the udpDeferred may be reused once it is sent).
type outMsg struct {
	to  udpDest
	msg []byte
}

func newUDPSocket(fd int) *udpSocket {
	return &udpSocket{fd: fd, wake: make(chan struct{}, 1)}
}

// close closes the socket once no deferred reply is sending on it, and
// ends the sender; answers still in the outbox are dropped.
func (s *udpSocket) close() {
	s.qmu.Lock()
	if !s.qclosed {
		s.qclosed = true
		close(s.wake)
	}
	s.qmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		unix.Close(s.fd)
	}
}

// enqueue puts a copy of msg, and of to, where it goes, in the outbox.
func (s *udpSocket) enqueue(to *udpDest, msg []byte) error {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if s.qclosed {
		return ErrReplyClosed
	}
	var b []byte
	if n := len(s.free); n > 0 {
		b, s.free = s.free[n-1][:0], s.free[:n-1]
	}
	s.queue = append(s.queue, outMsg{to: *to, msg: append(b, msg...)})
	if !s.started {
		s.started = true
		go s.sender()
	}
	if len(s.queue) == 1 {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// sender sends the outbox's answers until the socket is closed.
func (s *udpSocket) sender() {
	var spare []outMsg
	for range s.wake {
		// Let the goroutines already runnable queue their answers first.
		runtime.Gosched()
		s.qmu.Lock()
		q := s.queue
		s.queue = spare[:0]
		s.qmu.Unlock()
		for off := 0; off < len(q); {
			n := min(len(q)-off, batch)
			s.send(q[off : off+n])
			s.qmu.Lock()
			for i := off; i < off+n; i++ {
				if cap(q[i].msg) <= BufferSize && len(s.free) < 4*batch {
					s.free = append(s.free, q[i].msg)
				}
				q[i] = outMsg{}
			}
			s.qmu.Unlock()
			off += n
		}
		spare = q
	}
}

// send sends the answers of q (at most batch) with sendmmsg, unless the
// socket is closed.
func (s *udpSocket) send(q []outMsg) {
	for i := range q {
		d, msg := &q[i].to, q[i].msg
		s.iov[i].Base = &msg[0]
		s.iov[i].SetLen(len(msg))
		h := &s.hdr[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&d.addr))
		h.Namelen = d.namelen
		h.Iov = &s.iov[i]
		h.SetIovlen(1)
		h.Control = nil
		h.SetControllen(0)
		if d.ctllen > 0 {
			h.Control = (*byte)(unsafe.Pointer(&d.ctl))
			h.SetControllen(d.ctllen)
		}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return
	}
	sendAll(s.fd, s.hdr[:len(q)])
}

// deferReply is the Reply of datagram req.slot, answered later: it keeps
// a copy of the datagram's source address and, on a wildcard socket, of
// its destination, and sends through the socket's outbox.
func (w *udpWorker) deferReply(req *Request) *Reply {
	i := req.slot
	d, _ := w.sock.replies.Get().(*udpDeferred)
	if d == nil {
		d = &udpDeferred{sock: w.sock}
	}
	d.r.init(d, true)
	d.to = udpDest{addr: w.addr[i], namelen: w.rxHdr[i].Hdr.Namelen}
	if w.pktinfo && w.rxHdr[i].Hdr.Flags&unix.MSG_CTRUNC == 0 {
		d.to.ctl = w.ctl[i]
		if replySource(&d.to.ctl, int(w.rxHdr[i].Hdr.Controllen)) {
			d.to.ctllen = int(w.rxHdr[i].Hdr.Controllen)
		}
	}
	return &d.r
}

// udpDeferred is a deferred datagram answer's Reply and what it needs to
// be sent.
type udpDeferred struct {
	r    Reply
	sock *udpSocket
	to   udpDest
}

// udpDest is where a datagram answer goes: the query's source address
// and, on a wildcard socket, the control message that sends it from the
// query's destination.
type udpDest struct {
	addr    unix.RawSockaddrAny
	namelen uint32
	ctl     cmsgBuf
	ctllen  int
}

// send queues msg for the socket's sender; an error means the socket is
// closed (a send that fails later is not reported: a datagram may be
// lost anyway).
func (d *udpDeferred) send(msg []byte) error {
	if len(msg) == 0 {
		return nil
	}
	return d.sock.enqueue(&d.to, msg)
}

func (*udpDeferred) closed() {}

// release keeps d for the socket's next deferred datagram: the outbox
// holds a copy of its address.
func (d *udpDeferred) release() { d.sock.replies.Put(d) }
