//go:build linux && !ternportable

package server

import (
	"fmt"
	"net"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tern-dns/tern/internal/wire"
)

// batch is how many datagrams one recvmmsg may return and one sendmmsg
// send; NSD reads up to 100. Under light load a wakeup finds one packet,
// under heavy load batching amortizes the system call.
const batch = 32

// udpWorker owns one SO_REUSEPORT socket and everything its loop needs,
// allocated once: message headers, buffers, and the Handler's Worker.
// Source addresses stay in raw sockaddr form and are handed back to
// sendmmsg as they came, so no address is ever parsed or allocated.
//
// It runs without the netpoller: the worker owns an OS thread and sleeps
// in a blocking recvmmsg, which saves the epoll round trip per wakeup
// that a Go loop otherwise pays (about a microsecond when each wakeup
// finds one packet). A receive timeout lets it notice Close.
//
// The socket also leaves the netpoller's epoll set, where it was put when
// it was opened: while registered, every datagram received and every sent
// one freed (sock_wfree wakes writers) ran epoll's callback under its
// lock and could wake a runtime thread parked in epoll_wait, with nobody
// waiting for the events: leaving it gained 9-10% on the small zone (tern
// perf, three A/B pairs). The worker keeps a duplicate of the descriptor
// and closes the original, which the runtime deregisters as it closes
// it; the duplicate is closed by the worker when it stops, so its number
// cannot be reused under a running loop.
type udpWorker struct {
	fd int
	// sock is the socket as deferred replies use it (see udpSocket).
	sock *udpSocket
	// worker answers the datagrams; batcher is the same Worker when it
	// answers batches, else nil.
	worker  Worker
	batcher Batcher

	rxHdr [batch]unix.Mmsghdr
	rxIov [batch]unix.Iovec
	addr  [batch]unix.RawSockaddrAny
	rxBuf [batch][]byte
	txHdr [batch]unix.Mmsghdr
	txIov [batch]unix.Iovec
	txBuf [batch][]byte
	// reqs and outs are a batch's requests and answers; reqs[i]
	// describes datagram i, its address undecoded (see Request.Remote).
	reqs [batch]Request
	outs [batch][]byte
	nrx  int
	ntx  int
	// pktinfo is set when the socket is bound to a wildcard address:
	// each datagram then comes with its destination address in ctl (an
	// IP_PKTINFO or IPV6_PKTINFO control message), which the answer
	// hands back to sendmmsg as its source. Sockets bound to one address
	// skip all of it.
	pktinfo bool
	ctl     [batch]cmsgBuf
}

// cmsgBuf holds the control messages of one datagram: room for an
// in6_pktinfo one (40 bytes on 64-bit Linux; in_pktinfo needs 32) and
// what else may come, in uint64s so that a cmsghdr read from it is
// aligned.
type cmsgBuf [8]uint64

// newUDPWorker takes conn's socket out of the netpoller (see udpWorker)
// and returns the worker that serves it; conn is closed.
func newUDPWorker(conn *net.UDPConn, h Handler) (*udpWorker, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	w := &udpWorker{fd: -1}
	local := udpLocal(conn)
	var derr error
	if err := raw.Control(func(f uintptr) {
		w.fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, fmt.Errorf("dup udp socket: %w", derr)
	}
	if err := conn.Close(); err != nil {
		unix.Close(w.fd)
		return nil, err
	}
	if w.pktinfo, err = recvPktinfo(w.fd); err != nil {
		unix.Close(w.fd)
		return nil, err
	}
	w.sock = newUDPSocket(w.fd)
	w.worker = h.NewWorker(false)
	w.batcher, _ = w.worker.(Batcher)
	for i := 0; i < batch; i++ {
		w.reqs[i] = Request{raw: (*rawSockaddr)(&w.addr[i]), local: local, transport: w, slot: i}
		w.rxBuf[i] = make([]byte, rxSize)
		w.txBuf[i] = make([]byte, BufferSize)
		w.rxIov[i].Base = &w.rxBuf[i][0]
		w.rxIov[i].SetLen(rxSize)
		h := &w.rxHdr[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&w.addr[i]))
		h.Iov = &w.rxIov[i]
		h.SetIovlen(1)
		if w.pktinfo {
			h.Control = (*byte)(unsafe.Pointer(&w.ctl[i]))
		}
		t := &w.txHdr[i].Hdr
		t.Iov = &w.txIov[i]
		t.SetIovlen(1)
	}
	return w, nil
}

// run answers datagrams until closed is set (noticed within the receive
// timeout) or the socket fails, then closes the socket.
func (w *udpWorker) run(closed *atomic.Bool) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer w.sock.close()
	if err := unix.SetNonblock(w.fd, false); err != nil {
		return err
	}
	tv := unix.Timeval{Usec: 200000}
	if err := unix.SetsockoptTimeval(w.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return err
	}
	busy := false
	for !closed.Load() {
		for i := 0; i < batch; i++ {
			w.rxHdr[i].Hdr.Namelen = uint32(unsafe.Sizeof(w.addr[i]))
		}
		if w.pktinfo {
			for i := 0; i < batch; i++ {
				w.rxHdr[i].Hdr.SetControllen(int(unsafe.Sizeof(w.ctl[i])))
			}
		}
		n, e := w.recvBatch(busy)
		if e != 0 {
			busy = false
			if e == unix.EBADF {
				return nil
			}
			continue // EAGAIN (the receive timeout), EINTR, or a transient error
		}
		// More than one datagram queued means the next call will likely
		// find more: try it without blocking first.
		busy = n > 1
		w.nrx = n
		w.answerBatch()
		w.sendBatch()
	}
	return nil
}

// stop does nothing: run notices closed within its receive timeout.
func (w *udpWorker) stop() {}

// recvBatch reads up to batch datagrams. Under load (busy) it first asks
// without blocking through RawSyscall6, which skips the runtime's
// entersyscall/exitsyscall: while a goroutine sits in a system call the
// runtime's sysmon may take its P away and start another thread to run
// it, and on a server pinned to one CPU those hand-offs cost 10-20% of the
// throughput (measured with tern perf, one worker, both loops side by
// side). Only a call that may block goes through Syscall6, so that an idle
// worker releases its P. MSG_WAITFORONE blocks for the first datagram
// only, then takes what else is queued.
func (w *udpWorker) recvBatch(busy bool) (int, syscall.Errno) {
	if busy {
		n, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, uintptr(w.fd), uintptr(unsafe.Pointer(&w.rxHdr[0])), batch, unix.MSG_DONTWAIT, 0, 0)
		if e != unix.EAGAIN {
			return int(n), e
		}
	}
	n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(w.fd), uintptr(unsafe.Pointer(&w.rxHdr[0])), batch, unix.MSG_WAITFORONE, 0, 0)
	return int(n), e
}

// sendBatch sends the ntx prepared replies.
func (w *udpWorker) sendBatch() {
	sendAll(w.fd, w.txHdr[:w.ntx])
}

// sendAll sends the datagrams of hdr from fd with sendmmsg. A UDP send
// does not block unless the socket's send buffer is full, so it goes
// without blocking and without the runtime's system-call bookkeeping (see
// recvBatch); only when the buffer is full does it wait, in a blocking
// call.
func sendAll(fd int, hdr []unix.Mmsghdr) {
	flags := uintptr(unix.MSG_DONTWAIT)
	for sent := 0; sent < len(hdr); {
		var n uintptr
		var e syscall.Errno
		if flags != 0 {
			n, _, e = unix.RawSyscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&hdr[sent])), uintptr(len(hdr)-sent), flags, 0, 0)
		} else {
			n, _, e = unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&hdr[sent])), uintptr(len(hdr)-sent), 0, 0, 0)
		}
		switch e {
		case 0:
			sent += int(n)
		case unix.EAGAIN:
			flags = 0 // the send buffer is full: wait for room
		case unix.EINTR:
		default:
			// One bad destination (say, a port the kernel rejects) must
			// not stall the rest: skip the datagram at the head.
			sent++
		}
	}
}

// answerBatch answers the nrx datagrams received and prepares ntx
// replies: one call of the Batcher for the batch, or one Answer per
// datagram. A datagram too long to have been read whole is answered
// FORMERR here (see rxSize); the Worker gets a nil Packet for it, which
// it drops. A deferred answer (Request.Defer) is sent later by its Reply.
func (w *udpWorker) answerBatch() {
	w.ntx = 0
	reqs := w.reqs[:w.nrx]
	for i := range reqs {
		reqs[i].Packet = w.packet(i)
	}
	if b := w.batcher; b != nil {
		for i := range reqs {
			w.outs[i] = w.txBuf[i][:0]
		}
		b.AnswerBatch(reqs, w.outs[:w.nrx])
		for i := range reqs {
			out := w.outs[i]
			if reqs[i].deferred() {
				continue
			}
			if reqs[i].Packet == nil {
				out = wire.FormErr(w.rxBuf[i], w.txBuf[i][:0])
			}
			w.reply(i, out)
		}
		return
	}
	for i := range reqs {
		out := w.txBuf[w.ntx][:0]
		if reqs[i].Packet != nil {
			out = w.worker.Answer(&reqs[i], out)
			if reqs[i].deferred() {
				continue
			}
		} else {
			out = wire.FormErr(w.rxBuf[i], out)
		}
		w.reply(i, out)
	}
}

// packet is received datagram i, or nil when it was too long to be read
// whole (MSG_TRUNC).
func (w *udpWorker) packet(i int) []byte {
	h := &w.rxHdr[i]
	if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
		return nil
	}
	return w.rxBuf[i][:h.Len]
}

// reply queues out, the answer to datagram i (nil: none), to its sender.
func (w *udpWorker) reply(i int, out []byte) {
	if out == nil {
		return
	}
	j := w.ntx
	// out may have outgrown txBuf[j] (a huge RRset): send out itself.
	w.txIov[j].Base = &out[0]
	w.txIov[j].SetLen(len(out))
	t := &w.txHdr[j].Hdr
	t.Name = w.rxHdr[i].Hdr.Name
	t.Namelen = w.rxHdr[i].Hdr.Namelen
	if w.pktinfo {
		t.Control, t.Controllen = w.rxHdr[i].Hdr.Control, 0
		if w.rxHdr[i].Hdr.Flags&unix.MSG_CTRUNC == 0 && replySource(&w.ctl[i], int(w.rxHdr[i].Hdr.Controllen)) {
			t.Controllen = w.rxHdr[i].Hdr.Controllen
		}
	}
	w.ntx++
}

// recvPktinfo asks for the destination address of every datagram (see
// udpWorker.pktinfo) when fd is bound to a wildcard address, and reports
// whether it did. An IPv6 socket's IPV6_PKTINFO covers the IPv4 datagrams
// of a dual-stack one too, as mapped addresses, and sendmsg takes it back
// for them (Linux's ip_cmsg_send).
func recvPktinfo(fd int) (bool, error) {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return false, fmt.Errorf("udp socket address: %w", err)
	}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		if sa.Addr != [4]byte{} {
			return false, nil
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_PKTINFO, 1); err != nil {
			return false, fmt.Errorf("IP_PKTINFO: %w", err)
		}
		return true, nil
	case *unix.SockaddrInet6:
		if sa.Addr != [16]byte{} {
			return false, nil
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1); err != nil {
			return false, fmt.Errorf("IPV6_RECVPKTINFO: %w", err)
		}
		return true, nil
	}
	return false, nil
}

// replySource turns ctl, the n bytes of control message received with a
// datagram,
// into the one that sends its answer from the address it was sent to,
// and reports whether it holds one. IPv4's in_pktinfo keeps ipi_spec_dst
// as received (the local address of the datagram, which sendmsg takes as
// the source); IPv6's in6_pktinfo its address. The interface index is
// cleared, so the answer is routed as any other (RFC 1122 §3.3.4.2 lets a
// multihomed host send from any interface; the source address is what
// the client checks).
func replySource(ctl *cmsgBuf, n int) bool {
	if n < unix.SizeofCmsghdr || n > len(ctl)*8 {
		return false
	}
	h := (*unix.Cmsghdr)(unsafe.Pointer(ctl))
	data := unsafe.Add(unsafe.Pointer(ctl), unix.CmsgLen(0))
	room := n - unix.CmsgLen(0)
	switch {
	case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_PKTINFO && room >= unix.SizeofInet4Pktinfo:
		(*unix.Inet4Pktinfo)(data).Ifindex = 0
	case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_PKTINFO && room >= unix.SizeofInet6Pktinfo:
		(*unix.Inet6Pktinfo)(data).Ifindex = 0
	default:
		return false
	}
	return true
}
