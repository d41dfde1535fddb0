//go:build linux && !ternportable

package upstream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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
// The socket is made and driven with raw system calls, and its answer
// awaited through the Client's poller rather than the netpoller: six
// system calls per query (socket, connect, send, epoll_ctl, recvfrom,
// close) where net.DialUDP made eleven (it adds setsockopt, getsockname,
// getpeername, a second epoll_ctl and a read that finds nothing). In this
// VM a system call costs about 1.1 µs (getppid), and the dial alone was
// 28% of BenchmarkExchangeUDP's profile; a cold resolution (one upstream
// query per answer) took 0.79-0.89 of the CPU it took through the dial.
func (c *Client) exchangeUDP(ctx context.Context, server netip.AddrPort, q dns.Question, h header) (*dns.Msg, error) {
	id, pkt, err := query(q, h)
	if err != nil {
		return nil, err
	}
	bp, buf := answerBuf(h)
	defer answerBuffers.Put(bp)
	r, err := c.poll.exchange(ctx, server, pkt, buf, func(p []byte, whole bool) (*dns.Msg, error) {
		return h.accept(p, whole, id, q)
	})
	if err != nil {
		return nil, fmt.Errorf("udp to %s: %w", server, err)
	}
	return r, nil
}

// poller waits for the answers of all of a Client's UDP queries through
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
	// idle is how long the epoll instance stays open without a waiting
	// query; 0 means pollIdle.
	idle    time.Duration
	mu      sync.Mutex
	ep      *os.File // the epoll instance; nil when closed
	epfd    int
	waiting map[uint64]chan struct{}
	next    uint64 // the next token
}

// pollIdle without a waiting query closes a poller's epoll instance.
const pollIdle = 5 * time.Second

// exchange sends pkt to server from a new connected socket and returns
// what accept makes of the first datagram it accepts, read into buf.
// accept is told whether the
// datagram was whole: one larger than buf comes cut to its size. A
// datagram accept refuses is dropped and the wait goes on (RFC 5452
// §9.1), but for errOversize, which ends the wait. Only the server's
// address and port reach a connected socket: the kernel drops datagrams
// from others before they are queued.
func (p *poller) exchange(ctx context.Context, server netip.AddrPort, pkt []byte, b []byte, accept func(p []byte, whole bool) (*dns.Msg, error)) (*dns.Msg, error) {
	sa, family, err := sockaddr(server)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	// connect binds the socket to a random ephemeral port as it connects it.
	if err := unix.Connect(fd, sa); err != nil {
		return nil, os.NewSyscallError("connect", err)
	}
	if _, err := unix.Write(fd, pkt); err != nil {
		return nil, os.NewSyscallError("write", err)
	}
	ready, token, err := p.add(fd)
	if err != nil {
		return nil, err
	}
	// Runs before the deferred close: no event is delivered under a
	// token whose descriptor is closed.
	defer p.remove(token)
	for {
		select {
		case <-ready:
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

// sockaddr is server as the socket calls take it, and its family.
func sockaddr(server netip.AddrPort) (unix.Sockaddr, int, error) {
	a := server.Addr().Unmap()
	if a.Is4() {
		return &unix.SockaddrInet4{Port: int(server.Port()), Addr: a.As4()}, unix.AF_INET, nil
	}
	sa := &unix.SockaddrInet6{Port: int(server.Port()), Addr: a.As16()}
	if z := a.Zone(); z != "" {
		ifi, err := net.InterfaceByName(z)
		if err != nil {
			return nil, 0, fmt.Errorf("zone of %s: %w", a, err)
		}
		sa.ZoneId = uint32(ifi.Index)
	}
	return sa, unix.AF_INET6, nil
}

// events is what a query waits for: a datagram, or an error (ICMP).
const events = unix.EPOLLIN | unix.EPOLLONESHOT

// add registers fd and returns the channel its events arrive on and its
// token.
func (p *poller) add(fd int) (chan struct{}, uint64, error) {
	ready := make(chan struct{}, 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ep == nil {
		if err := p.open(); err != nil {
			return nil, 0, err
		}
	}
	p.next++
	token := p.next
	ev := unix.EpollEvent{Events: events, Fd: int32(token), Pad: int32(token >> 32)}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return nil, 0, os.NewSyscallError("epoll_ctl", err)
	}
	p.waiting[token] = ready
	return ready, token, nil
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
		ep.SetReadDeadline(time.Now().Add(cmp.Or(p.idle, pollIdle)))
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
