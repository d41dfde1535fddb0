//go:build linux && !ternportable

package upstream

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/miekg/dns"
)

// exchangeUDP sends the query from a new socket, so from a new source port
// chosen at random by the kernel (RFC 5452 §9.2; Linux picks ephemeral
// ports at random), and waits for the matching answer.
//
// The socket is made and driven through the Client's io_uring instance
// (uring_linux.go): no system call of its own, its requests submitted
// with those of the other queries of the moment by one io_uring_enter.
// In this VM a system call costs about 1.1 µs (getppid) besides the
// hypervisor's entry and exit; strace -f -c of BenchmarkExchangeUDP
// (client and its loopback server in one process, serial queries)
// counted 4.5 system calls per query through io_uring (0.57
// io_uring_enter) against 11.4 through epoll.
//
// Where io_uring cannot be used, the socket is made and driven with raw
// system calls, its answer awaited through the Client's poller rather
// than the netpoller: six system calls per query (socket, connect, send,
// epoll_ctl, recvfrom, close) where net.DialUDP made eleven (it adds
// setsockopt, getsockname, getpeername, a second epoll_ctl and a read
// that finds nothing); the dial alone was 28% of BenchmarkExchangeUDP's
// profile, and a cold resolution (one upstream query per answer) took
// 0.79-0.89 of the CPU it took through the dial.
func (c *Client) exchangeUDP(ctx context.Context, deadline time.Time, server netip.AddrPort, q dns.Question, h header) (*dns.Msg, error) {
	bp, buf := answerBuf(h)
	id, pkt, err := query(q, h, bp.query[:])
	if err != nil {
		exchangeBuffers.Put(bp)
		return nil, err
	}
	r, err := c.poll.exchange(ctx, deadline, c.Log, server, pkt, buf, func(p []byte, whole bool) (*dns.Msg, error) {
		return h.accept(&bp.reader, p, whole, id, q)
	})
	if !errors.Is(err, errRingDead) {
		// Otherwise the kernel may still read the query or write
		// the answer.
		exchangeBuffers.Put(bp)
	}
	if err != nil {
		return nil, udpError(server, err)
	}
	return r, nil
}

// udpError is the error of a UDP exchange with server. Not inlined: its
// arguments would be in exchangeUDP's frame, above the answer's parse at
// the bottom of a resolution's deepest call.
//
//go:noinline
func udpError(server netip.AddrPort, err error) error {
	return fmt.Errorf("udp to %s: %w", server, err)
}

// poller makes a Client's UDP queries through its io_uring instance (a
// ring, uring_linux.go), or where the kernel has none that will do (or
// its slots are all taken), waits for their answers through
// one epoll instance of its own, which is itself in the netpoller: one
// goroutine (run) reads its events and wakes the queries they belong to.
// Each query registers its socket once (EPOLLONESHOT: a second datagram
// wakes nobody until the query asks for it) and removes it by closing it.
// Events carry a token, never reused, rather than the descriptor, whose
// number a later socket may reuse after a close.
//
// The epoll instance and its goroutine exist while queries wait and for
// pollIdle after, so that a Client nobody uses holds neither.
type poller struct {
	// idle is how long the epoll instance (and the ring) stays open
	// without a waiting query; 0 means pollIdle.
	idle    time.Duration
	mu      sync.Mutex
	ep      *os.File // the epoll instance; nil when closed
	epfd    int
	waiting map[uint64]chan struct{}
	next    uint64 // the next token

	// ring is the open io_uring instance; nil when closed or not used.
	ring *ring
	// ringOff says why io_uring is not used (then never tried again).
	ringOff error
	// failed are rings that stopped working with requests in flight,
	// kept for the memory the kernel may still write into.
	failed []*ring
	// log is the Client's, for ringOff, said once.
	log *slog.Logger
	// epollOnly: tests make queries through the epoll path only.
	epollOnly bool
	// setup is io_uring_setup(2) when nil; tests make it fail.
	setup func(uint32, *ringParams) (int, error)
	// enter is io_uring_enter(2) submitting n entries (enter) when nil;
	// tests watch it.
	enter func(fd int, n uint32) error
}

// pollIdle without a waiting query closes a poller's epoll instance.
const pollIdle = 5 * time.Second

// exchange sends pkt to server from a new connected socket and returns
// what accept makes of the first datagram it accepts, read into buf,
// waiting until deadline at most (or until ctx is done): a timeout is
// context.DeadlineExceeded. accept is told whether the
// datagram was whole: one larger than buf comes cut to its size. A
// datagram accept refuses is dropped and the wait goes on (RFC 5452
// §9.1), but for errOversize, which ends the wait. Only the server's
// address and port reach a connected socket: the kernel drops datagrams
// from others before they are queued.
func (p *poller) exchange(ctx context.Context, deadline time.Time, log *slog.Logger, server netip.AddrPort, pkt []byte, b []byte, accept acceptFunc) (*dns.Msg, error) {
	wait := time.Until(deadline)
	if wait <= 0 {
		return nil, context.DeadlineExceeded
	}
	var raw unix.RawSockaddrInet6
	salen, family, err := rawSockaddr(server, &raw)
	if err != nil {
		return nil, err
	}
	if m, ok, err := p.exchangeRing(ctx, deadline, wait, log, &raw, salen, family, pkt, b, accept); ok {
		return m, err
	}
	return p.exchangeEpoll(ctx, wait, &raw, salen, family, pkt, b, accept)
}

// exchangeEpoll is exchange through the poller's epoll instance, to raw
// (salen bytes of it, of the socket family family), waiting wait at
// most. A function of its own, so that its locals are not in exchange's
// frame when the query goes through the ring, below which the answer is
// parsed at the bottom of a resolution's deepest call (the two paths in
// one frame were 576 bytes of locals, at d8e0c37).
func (p *poller) exchangeEpoll(ctx context.Context, wait time.Duration, raw *unix.RawSockaddrInet6, salen uint32, family int, pkt, b []byte, accept acceptFunc) (*dns.Msg, error) {
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	// connect binds the socket to a random ephemeral port as it
	// connects it; given the raw address, as the ring's CONNECT is.
	if _, _, errno := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(raw)), uintptr(salen)); errno != 0 {
		return nil, os.NewSyscallError("connect", errno)
	}
	if _, err := unix.Write(fd, pkt); err != nil {
		return nil, os.NewSyscallError("write", err)
	}
	w := waiters.Get().(*waiter)
	token, err := p.add(fd, w.ready)
	if err != nil {
		waiters.Put(w)
		return nil, err
	}
	w.timer.Reset(wait)
	defer func() {
		// Before the deferred close: no event is delivered under a
		// token whose descriptor is closed. Once the token is
		// removed, nothing more is sent on w.ready: what the wait did
		// not take is taken here, and the stopped timer sends nothing
		// (Go 1.23 timers), so the next query finds both quiet.
		p.remove(token)
		w.timer.Stop()
		select {
		case <-w.ready:
		default:
		}
		waiters.Put(w)
	}()
	for {
		select {
		case <-w.ready:
		case <-w.timer.C:
			return nil, context.DeadlineExceeded
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		// MSG_TRUNC: the datagram's own length, even when it is longer
		// than b (Linux, udp(7)).
		n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), unix.MSG_TRUNC, 0, 0)
		switch {
		case errno == unix.EAGAIN || errno == unix.EINTR:
		case errno != 0:
			// ECONNREFUSED: an ICMP port unreachable came back.
			return nil, os.NewSyscallError("recvfrom", errno)
		default:
			r, err := accept(b[:min(int(n), len(b))], int(n) <= len(b))
			if err == nil || errors.Is(err, errOversize) {
				return r, err
			}
		}
		if err := p.rearm(fd, token); err != nil {
			return nil, err
		}
	}
}

// acceptFunc is what a query makes of a datagram: see exchange.
type acceptFunc func(p []byte, whole bool) (*dns.Msg, error)

// openRing returns the poller's ring, opened if need be, or nil when
// io_uring is not used; p.mu is held.
func (p *poller) openRing(log *slog.Logger) *ring {
	if p.ring != nil || p.ringOff != nil || p.epollOnly {
		return p.ring
	}
	p.log = log
	setup := p.setup
	if setup == nil {
		setup = ringSetup
	}
	r, err := openRing(setup)
	if err != nil {
		p.ringOff = err
		p.logRingOff()
		return nil
	}
	p.ring = r
	r.flush = func() { p.flush(r) }
	go p.reap(r)
	return r
}

// logRingOff says once why io_uring is not used (p.mu held).
func (p *poller) logRingOff() {
	if p.log != nil {
		p.log.Debug("upstream UDP queries through epoll, not io_uring", "reason", p.ringOff)
	}
}

// idleTime is p.idle or its default.
func (p *poller) idleTime() time.Duration {
	return cmp.Or(p.idle, pollIdle)
}

// exchangeRing is exchange through the poller's ring. It reports false,
// having done nothing, when io_uring is not used or the ring has no free
// slot. When the ring fails under a query, the error wraps errRingDead
// and pkt and b must not be reused: the kernel may still read or write
// them.
//
// The deadline (wait from now) is the kernel's to keep: each RECV is
// linked to a timeout (IORING_OP_LINK_TIMEOUT) that cancels it when the
// deadline passes, so the wait is for the RECV's completion, the ring's
// death or ctx (the caller's, whose Done channel it already has), and the
// query has no timer or context of its own.
func (p *poller) exchangeRing(ctx context.Context, deadline time.Time, wait time.Duration, log *slog.Logger, sa *unix.RawSockaddrInet6, salen uint32, family int, pkt, b []byte, accept acceptFunc) (*dns.Msg, bool, error) {
	p.mu.Lock()
	r := p.openRing(log)
	var i uint32
	ok := false
	if r != nil {
		i, ok = r.start(sa, salen, family, pkt, b, wait)
	}
	var done chan ringResult
	if ok {
		done = r.slots[i].done
		p.kick(r)
	}
	p.mu.Unlock()
	if !ok {
		return nil, false, nil
	}
	defer func() {
		p.mu.Lock()
		r.finish(i)
		p.kick(r)
		p.mu.Unlock()
	}()
	for {
		var res ringResult
		select {
		case res = <-done:
		case <-r.dead:
			return nil, true, r.deadErr()
		case <-ctx.Done():
			return nil, true, p.cancelRecv(ctx, r, i, done)
		}
		switch errno := unix.Errno(-res.res); {
		case res.err != nil:
			return nil, true, res.err
		case errno == unix.ECANCELED:
			// Only the RECV's linked timeout cancels it while ctx
			// is not done.
			return nil, true, context.DeadlineExceeded
		case errno == unix.EAGAIN || errno == unix.EINTR:
		case res.res < 0:
			// ECONNREFUSED: an ICMP port unreachable came back.
			return nil, true, os.NewSyscallError("recv", errno)
		default:
			n := int(res.res)
			m, err := accept(b[:min(n, len(b))], n <= len(b))
			if err == nil || errors.Is(err, errOversize) {
				return m, true, err
			}
		}
		// RFC 5452 §9.1: not the answer; the wait goes on, for what
		// is left of it.
		wait := time.Until(deadline)
		if wait <= 0 {
			return nil, true, context.DeadlineExceeded
		}
		p.mu.Lock()
		if !r.recv(i, wait) {
			r.fail(errors.New("io_uring submission queue full"))
		}
		p.kick(r)
		p.mu.Unlock()
	}
}

// cancelRecv cancels the RECV of slot i of r, whose query's context ctx
// is done, and waits for its completion: until then the kernel may write
// into its buffer. It returns ctx's error, or the ring's when it fails
// meanwhile. Apart from exchangeRing, whose frame is above the answer's
// parse at the bottom of a resolution's deepest call.
//
//go:noinline
func (p *poller) cancelRecv(ctx context.Context, r *ring, i uint32, done chan ringResult) error {
	p.mu.Lock()
	r.cancel(i)
	p.kick(r)
	p.mu.Unlock()
	// The RECV completes at once, cancelled (a cancel that found no RECV
	// is written again: complete).
	select {
	case <-done:
	case <-r.dead:
		return r.deadErr()
	}
	return ctx.Err()
}

// errRingDead: the ring failed under a query.
var errRingDead = errors.New("io_uring failed")

// rawSockaddr writes server into raw as the kernel takes it and returns
// its length and family.
func rawSockaddr(server netip.AddrPort, raw *unix.RawSockaddrInet6) (uint32, int, error) {
	*raw = unix.RawSockaddrInet6{}
	a := server.Addr().Unmap()
	if a.Is4() {
		r4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(raw))
		r4.Family = unix.AF_INET
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&r4.Port))[:], server.Port())
		r4.Addr = a.As4()
		return unix.SizeofSockaddrInet4, unix.AF_INET, nil
	}
	raw.Family = unix.AF_INET6
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&raw.Port))[:], server.Port())
	raw.Addr = a.As16()
	if z := a.Zone(); z != "" {
		ifi, err := net.InterfaceByName(z)
		if err != nil {
			return 0, 0, fmt.Errorf("zone of %s: %w", a, err)
		}
		raw.Scope_id = uint32(ifi.Index)
	}
	return unix.SizeofSockaddrInet6, unix.AF_INET6, nil
}

// events is what a query waits for: a datagram, or an error (ICMP).
const events = unix.EPOLLIN | unix.EPOLLONESHOT

// waiter is what a query on the epoll path waits with: the channel its
// socket's events arrive on (capacity 1) and the timer of its deadline,
// kept in waiters from one query to the next: a context.WithDeadline
// per query was 7 allocations and 640 bytes, the channel another.
type waiter struct {
	ready chan struct{}
	timer *time.Timer
}

var waiters = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &waiter{ready: make(chan struct{}, 1), timer: t}
}}

// add registers fd, whose events are to arrive on ready, and returns its
// token.
func (p *poller) add(fd int, ready chan struct{}) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ep == nil {
		if err := p.open(); err != nil {
			return 0, err
		}
	}
	p.next++
	token := p.next
	ev := unix.EpollEvent{Events: events, Fd: int32(token), Pad: int32(token >> 32)}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return 0, os.NewSyscallError("epoll_ctl", err)
	}
	p.waiting[token] = ready
	return token, nil
}

// rearm asks for fd's next event, after one that brought nothing usable.
func (p *poller) rearm(fd int, token uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ep == nil {
		// run closed it on an error: the socket went with it.
		return errors.New("epoll instance closed")
	}
	ev := unix.EpollEvent{Events: events, Fd: int32(token), Pad: int32(token >> 32)}
	return os.NewSyscallError("epoll_ctl", unix.EpollCtl(p.epfd, unix.EPOLL_CTL_MOD, fd, &ev))
}

// remove forgets token: its socket is about to be closed, which takes it
// out of the epoll set.
func (p *poller) remove(token uint64) {
	p.mu.Lock()
	delete(p.waiting, token)
	p.mu.Unlock()
}

// open makes the epoll instance and starts its goroutine; p.mu is held.
func (p *poller) open() error {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return os.NewSyscallError("epoll_create1", err)
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return os.NewSyscallError("fcntl", err)
	}
	// A non-blocking descriptor given to os.NewFile joins the netpoller:
	// an epoll instance is readable when one of its sockets has an event.
	p.ep, p.epfd = os.NewFile(uintptr(epfd), "upstream-epoll"), epfd
	if p.waiting == nil {
		p.waiting = make(map[uint64]chan struct{})
	}
	go p.run(p.ep)
	return nil
}

// run reads ep's events and wakes their queries until ep has had no
// waiting query for pollIdle, then closes it.
func (p *poller) run(ep *os.File) {
	rc, err := ep.SyscallConn()
	if err != nil {
		return
	}
	var evs [64]unix.EpollEvent
	for {
		var n int
		var werr error
		ep.SetReadDeadline(time.Now().Add(p.idleTime()))
		err := rc.Read(func(fd uintptr) bool {
			for {
				n, werr = unix.EpollWait(int(fd), evs[:], 0)
				if werr != unix.EINTR {
					// false waits for ep to become readable
					return n > 0 || werr != nil
				}
			}
		})
		if err == nil && werr != nil {
			err = os.NewSyscallError("epoll_wait", werr)
		}
		p.mu.Lock()
		for _, e := range evs[:max(n, 0)] {
			if ready, ok := p.waiting[uint64(uint32(e.Fd))|uint64(uint32(e.Pad))<<32]; ok {
				select {
				case ready <- struct{}{}:
				default:
				}
			}
		}
		// Closed when idle, or on an error no retry would mend (the
		// queries waiting then time out; the next one opens a new one).
		if err != nil && (len(p.waiting) == 0 || !errors.Is(err, os.ErrDeadlineExceeded)) {
			ep.Close()
			p.ep = nil
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
}
