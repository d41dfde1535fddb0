//go:build linux

package perf

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsgSock is one connected UDP socket with its batch buffers and ID table.
type mmsgSock struct {
	fd     int
	window int
	tr     *tracker
	wantW  bool // last send hit EAGAIN: poll for POLLOUT

	shdr   []unix.Mmsghdr
	siov   []unix.Iovec
	sbuf   []byte
	sids   []uint16
	stride int

	// UDP GSO (UDP_SEGMENT): runs of equal-size queries go to the kernel
	// as one super-datagram that crosses the stack once and is split just
	// before delivery, which saves most of the per-packet send cost.
	gso    bool
	keys   []uint32 // len<<16 | batch position, sorted to form size runs
	qidx   []int32  // query index per batch position
	slen   []uint16 // query length per sent entry, in sbuf order
	ctrl   []byte   // one UDP_SEGMENT control message per header
	cspace int      // bytes per control message
	groups []int32  // queries in each header

	rhdr    []unix.Mmsghdr
	riov    []unix.Iovec
	rbuf    []byte
	rstride int
}

// dialUDP opens a non-blocking UDP socket connected to server. Connecting
// lets the kernel cache the route and drop datagrams from other sources.
func dialUDP(server netip.AddrPort, sockBuf int) (int, error) {
	family := unix.AF_INET
	var sa unix.Sockaddr
	if a := server.Addr().Unmap(); a.Is4() {
		sa = &unix.SockaddrInet4{Port: int(server.Port()), Addr: a.As4()}
	} else {
		family = unix.AF_INET6
		s6 := &unix.SockaddrInet6{Port: int(server.Port()), Addr: a.As16()}
		if z := a.Zone(); z != "" {
			return -1, fmt.Errorf("scoped address %s not supported", server)
		}
		sa = s6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	if sockBuf > 0 {
		// Best effort: the kernel caps these at rmem_max/wmem_max.
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, sockBuf)
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, sockBuf)
	}
	if err := unix.Connect(fd, sa); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("connect %s: %w", server, err)
	}
	return fd, nil
}

// maxGSOSegments stays within every kernel's UDP_MAX_SEGMENTS (64 before
// 6.x raised it).
const maxGSOSegments = 64

func newMmsgSock(fd, window, batch, maxQuery, respSize int, c *Counters, timeout int64, firstID uint16, gso bool) *mmsgSock {
	s := &mmsgSock{
		fd:      fd,
		window:  window,
		tr:      newTracker(timeout, c, firstID, window),
		shdr:    make([]unix.Mmsghdr, batch),
		siov:    make([]unix.Iovec, batch),
		sids:    make([]uint16, batch),
		stride:  maxQuery,
		sbuf:    make([]byte, batch*maxQuery),
		rhdr:    make([]unix.Mmsghdr, batch),
		riov:    make([]unix.Iovec, batch),
		rstride: respSize,
		rbuf:    make([]byte, batch*respSize),
		gso:     gso,
	}
	if gso {
		s.keys = make([]uint32, batch)
		s.qidx = make([]int32, batch)
		s.slen = make([]uint16, batch)
		s.cspace = unix.CmsgSpace(2)
		s.ctrl = make([]byte, batch*s.cspace)
		s.groups = make([]int32, batch)
	}
	for i := range batch {
		s.siov[i].Base = &s.sbuf[i*maxQuery]
		s.shdr[i].Hdr.Iov = &s.siov[i]
		s.shdr[i].Hdr.SetIovlen(1)
		s.riov[i].Base = &s.rbuf[i*respSize]
		s.riov[i].SetLen(respSize)
		s.rhdr[i].Hdr.Iov = &s.riov[i]
		s.rhdr[i].Hdr.SetIovlen(1)
	}
	return s
}

// sendmmsg and recvmmsg use RawSyscall: the sockets are non-blocking, so
// the calls never sleep and the scheduler hand-off of Syscall is pure cost.
func sendmmsg(fd int, h []unix.Mmsghdr) (int, syscall.Errno) {
	n, _, e := unix.RawSyscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&h[0])), uintptr(len(h)), unix.MSG_DONTWAIT, 0, 0)
	return int(n), e
}

func recvmmsg(fd int, h []unix.Mmsghdr) (int, syscall.Errno) {
	n, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&h[0])), uintptr(len(h)), unix.MSG_DONTWAIT, 0, 0)
	return int(n), e
}

// transient reports socket errors that do not end the run: an ICMP error
// queued on the connected socket (server down: the queries just get lost),
// interrupted calls and a full buffer.
func transient(e syscall.Errno) bool {
	switch e {
	case unix.EAGAIN, unix.EINTR, unix.ECONNREFUSED, unix.ENOBUFS, unix.EHOSTUNREACH, unix.ENETUNREACH:
		return true
	}
	return false
}

// send sends up to n queries starting at *cursor and returns how many the
// kernel took.
func (s *mmsgSock) send(env *loopEnv, n int, cursor *int, now int64) (int, error) {
	if s.gso {
		k, err := s.sendGSO(env, n, cursor, now)
		if err == nil {
			return k, nil
		}
		// The kernel or path refused segmentation: fall back for good.
		s.gso = false
		for i := range s.shdr {
			s.shdr[i].Hdr.Control = nil
			s.shdr[i].Hdr.SetControllen(0)
			s.siov[i].Base = &s.sbuf[i*s.stride]
		}
	}
	w := env.wire
	cur := *cursor
	for i := range n {
		q := w.get(cur)
		b := s.sbuf[i*s.stride : i*s.stride+len(q)]
		copy(b, q)
		id := s.tr.alloc()
		b[0], b[1] = byte(id>>8), byte(id)
		s.sids[i] = id
		s.siov[i].SetLen(len(q))
		cur++
		if cur == w.n() {
			cur = 0
		}
	}
	s.tr.c.SendCalls++
	k, e := sendmmsg(s.fd, s.shdr[:n])
	if e != 0 {
		if transient(e) {
			if e == unix.EAGAIN {
				s.wantW = true
			} else if e != unix.EINTR {
				s.tr.c.SendErrors++
			}
			return 0, nil
		}
		return 0, fmt.Errorf("sendmmsg: %w", e)
	}
	s.wantW = k < n
	for i := range k {
		s.tr.sent(s.sids[i], now, int(s.siov[i].Len))
	}
	// Queries the kernel did not take are sent next time, in order.
	*cursor += k
	for *cursor >= w.n() {
		*cursor -= w.n()
	}
	return k, nil
}

// sendGSO is send with equal-size queries coalesced. The batch is taken in
// file order and reordered by size inside the batch only, so the mix sent
// per batch is unchanged.
func (s *mmsgSock) sendGSO(env *loopEnv, n int, cursor *int, now int64) (int, error) {
	w := env.wire
	cur := *cursor
	for i := range n {
		s.qidx[i] = int32(cur)
		s.keys[i] = uint32(w.off[cur+1]-w.off[cur])<<16 | uint32(i)
		if cur++; cur == w.n() {
			cur = 0
		}
	}
	slices.Sort(s.keys[:n])
	nh := 0  // headers (super-datagrams) built
	off := 0 // write position in sbuf
	for i := 0; i < n; {
		l := int(s.keys[i] >> 16)
		j := i
		start := off
		for j < n && int(s.keys[j]>>16) == l && j-i < maxGSOSegments && off-start+l <= 65000 {
			q := w.get(int(s.qidx[s.keys[j]&0xffff]))
			b := s.sbuf[off : off+l]
			copy(b, q)
			id := s.tr.alloc()
			b[0], b[1] = byte(id>>8), byte(id)
			s.sids[j] = id
			s.slen[j] = uint16(l)
			off += l
			j++
		}
		h := &s.shdr[nh]
		s.siov[nh].Base = &s.sbuf[start]
		s.siov[nh].SetLen(off - start)
		if j-i > 1 {
			c := s.ctrl[nh*s.cspace : (nh+1)*s.cspace]
			cm := (*unix.Cmsghdr)(unsafe.Pointer(&c[0]))
			cm.Level = unix.SOL_UDP
			cm.Type = unix.UDP_SEGMENT
			cm.SetLen(unix.CmsgLen(2))
			*(*uint16)(unsafe.Pointer(&c[unix.CmsgLen(0)])) = uint16(l)
			h.Hdr.Control = &c[0]
			h.Hdr.SetControllen(s.cspace)
		} else {
			h.Hdr.Control = nil
			h.Hdr.SetControllen(0)
		}
		s.groups[nh] = int32(j - i)
		nh++
		i = j
	}
	s.tr.c.SendCalls++
	k, e := sendmmsg(s.fd, s.shdr[:nh])
	if e != 0 {
		if transient(e) {
			if e == unix.EAGAIN {
				s.wantW = true
			} else if e != unix.EINTR {
				s.tr.c.SendErrors++
			}
			return 0, nil
		}
		return 0, fmt.Errorf("sendmmsg with UDP_SEGMENT: %w", e)
	}
	s.wantW = k < nh
	sent := 0
	for g := range k {
		if s.groups[g] > 1 {
			s.tr.c.GSOSends++
		}
		for range s.groups[g] {
			s.tr.sent(s.sids[sent], now, int(s.slen[sent]))
			sent++
		}
	}
	// Under a partial send the skipped queries are simply not sent this
	// pass through the file.
	*cursor += sent
	for *cursor >= w.n() {
		*cursor -= w.n()
	}
	return sent, nil
}

// recv reads one batch of responses; it returns how many were read.
func (s *mmsgSock) recv(env *loopEnv) (int, int64, error) {
	n, e := recvmmsg(s.fd, s.rhdr)
	if e != 0 {
		if transient(e) {
			return 0, 0, nil
		}
		return 0, 0, fmt.Errorf("recvmmsg: %w", e)
	}
	s.tr.c.RecvCalls++
	now := env.now()
	for i := range n {
		l := int(s.rhdr[i].Len)
		s.tr.response(s.rbuf[i*s.rstride:i*s.rstride+l], now)
	}
	return n, now, nil
}

// runMmsg is one event loop driving sh.clients sockets; it returns the end
// of its run time (ns since start).
func runMmsg(env *loopEnv, sh share, c *Counters) (int64, error) {
	cfg := env.cfg
	respSize := respBufSize(cfg.Encode)
	socks := make([]*mmsgSock, 0, sh.clients)
	defer func() {
		for _, s := range socks {
			s.tr.abandon() // after a socket error, so that sent = completed + lost
			unix.Close(s.fd)
		}
	}()
	for i := range sh.clients {
		fd, err := dialUDP(cfg.Server, cfg.SockBuf)
		if err != nil {
			return 0, err
		}
		w := perSocketWindow(sh.window, sh.clients, i)
		// Start each socket at a different ID so captures are readable.
		socks = append(socks, newMmsgSock(fd, w, cfg.Batch, env.wire.maxLen, respSize, c, int64(cfg.Timeout), uint16(i*7919), cfg.GSO))
	}
	pfds := make([]unix.PollFd, len(socks))
	for i, s := range socks {
		pfds[i].Fd = int32(s.fd)
	}
	pace := newPacer(sh.qps)
	cursor := sh.cursor
	sending := true
	var last, lastPub, stoppedAt int64
	rr := 0 // round-robin start so no socket is favoured under a rate limit
	for {
		now := env.now()
		progress := false

		// Receive first: completions open the window for this round's sends.
		for _, s := range socks {
			for {
				n, t, err := s.recv(env)
				if err != nil {
					return last, err
				}
				if n == 0 {
					break
				}
				progress = true
				now, last = t, t
				if n < len(s.rhdr) {
					break
				}
			}
		}
		for _, s := range socks {
			if s.tr.out > 0 {
				s.tr.expire(now)
			}
		}

		if sending && (env.stop.Load() || (env.deadline > 0 && now >= env.deadline) || (sh.limit > 0 && c.Sent >= sh.limit)) {
			sending = false
			stoppedAt = now
		}
		if sending {
			budget := pace.budget(now, c.Sent)
			for j := range socks {
				if budget == 0 {
					break
				}
				s := socks[(rr+j)%len(socks)]
				n := min(s.tr.window(s.window)-s.tr.out, len(s.shdr), budget)
				if sh.limit > 0 {
					n = min(n, int(sh.limit-c.Sent))
				}
				if n <= 0 {
					continue
				}
				k, err := s.send(env, n, &cursor, now)
				if err != nil {
					return last, err
				}
				if k > 0 {
					progress = true
					budget -= k
				}
			}
			rr++
		}

		out := 0
		for _, s := range socks {
			out += s.tr.out
		}
		if !sending && out == 0 {
			// Like dnsperf, run time ends when sending stopped or at the
			// last response, whichever is later; waiting out timeouts
			// does not count.
			env.live.publish(c)
			return max(last, stoppedAt), nil
		}
		if !sending && env.stop.Load() {
			// Interrupted: do not wait for stragglers.
			for _, s := range socks {
				s.tr.abandon()
			}
			env.live.publish(c)
			return max(last, stoppedAt), nil
		}
		if now-lastPub > 50e6 {
			env.live.publish(c)
			lastPub = now
		}
		if progress || cfg.Spin {
			continue
		}
		c.Waits++
		if err := waitMmsg(env, socks, pfds, now, sending, pace, c.Sent, sh); err != nil {
			return last, err
		}
	}
}

// waitMmsg sleeps in ppoll until a socket is readable (or writable, after
// EAGAIN), the next query times out, the rate limit allows another send, or
// the deadline passes. The 50 ms cap bounds the reaction to cancellation.
func waitMmsg(env *loopEnv, socks []*mmsgSock, pfds []unix.PollFd, now int64, sending bool, pace pacer, sent uint64, sh share) error {
	wake := now + 50e6
	room := false // a rate-limit wake-up only helps if a window has room
	for i, s := range socks {
		room = room || s.tr.out < s.tr.window(s.window)
		pfds[i].Events = unix.POLLIN
		if sending && s.wantW {
			pfds[i].Events |= unix.POLLOUT
		}
		pfds[i].Revents = 0
		if t, ok := s.tr.nextExpiry(); ok {
			wake = min(wake, t)
		}
	}
	if sending {
		if env.deadline > 0 {
			wake = min(wake, env.deadline)
		}
		if pace.perNs > 0 && room {
			wake = min(wake, pace.nextAt(sent))
		}
	}
	d := max(wake-now, 0)
	ts := unix.NsecToTimespec(d)
	_, err := unix.Ppoll(pfds, &ts, nil)
	if err != nil && !errors.Is(err, unix.EINTR) {
		return fmt.Errorf("ppoll: %w", err)
	}
	return nil
}
