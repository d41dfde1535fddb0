//go:build linux && !ternportable

package server

import (
	"encoding/binary"
	"net/netip"
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
type udpSocket struct {
	mu     sync.RWMutex
	fd     int
	closed bool
}

// close closes the socket once no deferred reply is sending on it.
func (s *udpSocket) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		unix.Close(s.fd)
	}
}

// deferReply is the Reply of datagram req.slot, answered later: it keeps
// a copy of the datagram's source address and, on a wildcard socket, of
// its destination, and sends from the worker's socket with sendmsg.
func (w *udpWorker) deferReply(req *Request) *Reply {
	i := req.slot
	d := &udpDeferred{sock: w.sock, addr: w.addr[i], namelen: w.rxHdr[i].Hdr.Namelen}
	if w.pktinfo && w.rxHdr[i].Hdr.Flags&unix.MSG_CTRUNC == 0 {
		d.ctl = w.ctl[i]
		if replySource(&d.ctl, int(w.rxHdr[i].Hdr.Controllen)) {
			d.ctllen = int(w.rxHdr[i].Hdr.Controllen)
		}
	}
	return &Reply{send: d.send, once: true}
}

// udpDeferred is what a deferred datagram answer needs to be sent.
type udpDeferred struct {
	sock    *udpSocket
	addr    unix.RawSockaddrAny
	namelen uint32
	ctl     cmsgBuf
	ctllen  int
}

func (d *udpDeferred) send(msg []byte) error {
	if len(msg) == 0 {
		return nil
	}
	d.sock.mu.RLock()
	defer d.sock.mu.RUnlock()
	if d.sock.closed {
		return ErrReplyClosed
	}
	iov := unix.Iovec{Base: &msg[0]}
	iov.SetLen(len(msg))
	h := unix.Msghdr{Name: (*byte)(unsafe.Pointer(&d.addr)), Namelen: d.namelen, Iov: &iov}
	h.SetIovlen(1)
	if d.ctllen > 0 {
		h.Control = (*byte)(unsafe.Pointer(&d.ctl))
		h.SetControllen(d.ctllen)
	}
	for {
		_, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(d.sock.fd), uintptr(unsafe.Pointer(&h)), 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}
