// Package server runs the sockets: per-worker SO_REUSEPORT UDP sockets
// with batched recvmmsg/sendmmsg on Linux (udp_linux.go; a portable loop
// elsewhere, udp_other.go), and TCP with RFC 7766 framing, pipelining
// (deferred answers outstanding per connection bounded), idle and I/O
// timeouts, and connection limits: in total (at which a new connection
// closes the one idle the longest) and per client. Answers come from a
// Handler's Workers.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Config is what the server needs to know about its sockets.
type Config struct {
	// Listen are host:port addresses, IPv4 or [IPv6]. Port 0 picks one
	// port for all of an address's sockets (see Addrs).
	Listen []string
	// Workers is the number of UDP sockets and goroutines per address; 0
	// means one per CPU.
	Workers int
	// TCPIdleTimeout closes TCP connections idle this long between
	// messages (RFC 7766 §6.2.3).
	TCPIdleTimeout time.Duration
	// TCPIOTimeout closes TCP connections whose message, once begun, takes
	// longer to arrive, or whose client takes longer to read a write of
	// answers (Knot's tcp-io-timeout). Default 500ms.
	TCPIOTimeout time.Duration
	// TCPMaxConnections bounds concurrent TCP connections: at the
	// limit, a new connection closes the one idle the longest (between
	// messages, no deferred answer outstanding), or is closed on accept
	// when none is idle. Default 1024.
	TCPMaxConnections int
	// TCPMaxPerClient bounds the TCP connections of one client (an IPv4
	// address, an IPv6 /64); more are closed on accept. Default 128.
	TCPMaxPerClient int
	// TCPMaxPipelined bounds the deferred answers (Request.Defer: the
	// resolver's, zone transfers) outstanding on one connection; at the
	// limit the connection is not read until one is closed. Default 64.
	TCPMaxPipelined int
	// DontFragment sends UDP answers with DF set (IPv4) and never
	// fragmented (IPv6), as RFC 9715 §3.1 recommends; an answer larger
	// than the interface MTU is then not sent. For payload limits of at
	// most 1400 bytes (RFC 9715 R3), which fit any Ethernet-sized MTU.
	DontFragment bool
	// SteerIPv4 and SteerIPv6, when either is set (Linux), hand every
	// datagram of a client prefix (an IPv4 source's first SteerIPv4
	// bits, an IPv6 one's first SteerIPv6, at most 64) to the same UDP
	// worker, whatever its source port, instead of the kernel's hash of
	// address and port: state kept per worker (rrl's accounts) then sees
	// all of a client's datagrams. The load spreads over the workers by
	// client prefix only: one prefix's datagrams all go to one worker.
	// Set both: with one set, the other family's prefix is 0 bits, and
	// all of that family's datagrams go to one worker (steerProgram).
	SteerIPv4, SteerIPv6 int
	Logger               *slog.Logger
}

// Server serves DNS over UDP and TCP.
type Server struct {
	cfg     Config
	handler Handler
	log     *slog.Logger
	// workers are the UDP workers; each owns its socket.
	workers []*udpWorker
	tcp     []net.Listener
	addrs   []string
	conns   atomic.Int64
	closed  atomic.Bool
	// draining is set by Shutdown: a TCP connection then ends at its
	// next wait for a message.
	draining atomic.Bool
	wg       sync.WaitGroup

	// mu guards the TCP connections' bookkeeping, taken on accept and
	// when a connection ends, never per query.
	mu        sync.Mutex
	active    map[net.Conn]*tcpConn
	perClient map[netip.Addr]int
	reaping   int // connections reapIdle closed whose goroutines have not ended

	// Buffers of TCP connections, held only while a message is read or
	// answered (see tcpAnswerer).
	tcpIn        sync.Pool // *[tcpReadSize]byte
	tcpLarge     sync.Pool // *[2 + tcpMaxMessage]byte
	tcpAnswerers sync.Pool // *tcpAnswerer
	// tcpReplies are deferred TCP answers' Replies released
	// (Reply.Release), for the next ones.
	tcpReplies sync.Pool // *tcpReply
}

// New returns a server that answers with h's Workers.
func New(cfg Config, h Handler) *Server {
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.NumCPU()
	}
	if cfg.TCPIdleTimeout <= 0 {
		cfg.TCPIdleTimeout = 10 * time.Second
	}
	if cfg.TCPIOTimeout <= 0 {
		cfg.TCPIOTimeout = 500 * time.Millisecond
	}
	if cfg.TCPMaxConnections <= 0 {
		cfg.TCPMaxConnections = 1024
	}
	if cfg.TCPMaxPerClient <= 0 {
		cfg.TCPMaxPerClient = 128
	}
	if cfg.TCPMaxPipelined <= 0 {
		cfg.TCPMaxPipelined = 64
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, handler: h, log: log, active: make(map[net.Conn]*tcpConn), perClient: make(map[netip.Addr]int)}
	s.tcpIn.New = func() any { return new([tcpReadSize]byte) }
	s.tcpLarge.New = func() any { return new([2 + tcpMaxMessage]byte) }
	s.tcpAnswerers.New = func() any { return &tcpAnswerer{worker: h.NewWorker(true)} }
	return s
}

// control sets the options of every socket before it is bound: for UDP
// big buffers and, with DontFragment, the DF bit.
func (s *Server) control(network, address string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		if network != "udp4" && network != "udp6" && network != "udp" {
			return
		}
		// Room for bursts: a full receive queue drops queries.
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20)
		if s.cfg.DontFragment {
			serr = dontFragment(int(fd), network)
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// controlShared is control for the UDP sockets that join an address's
// first one (see bind): SO_REUSEPORT too, so that each worker has a socket
// of its own.
func (s *Server) controlShared(network, address string, c syscall.RawConn) error {
	if err := reusePort(c); err != nil {
		return err
	}
	return s.control(network, address, c)
}

// reusePort sets SO_REUSEPORT on c's socket.
func reusePort(c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	})
	if err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("SO_REUSEPORT: %w", serr)
	}
	return nil
}

// Start binds every socket and starts serving; it returns once all are
// bound, or the first bind error (after closing what it bound).
func (s *Server) Start(ctx context.Context) error {
	if err := s.overlap(); err != nil {
		return err
	}
	lc := net.ListenConfig{Control: s.control}
	shared := net.ListenConfig{Control: s.controlShared}
	for _, addr := range s.cfg.Listen {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			s.Close()
			return fmt.Errorf("listen %s: %w", addr, err)
		}
		var conns []*net.UDPConn
		var ln net.Listener
		// With port 0 the first socket picks a port for all of them; if
		// another program holds that port for the other protocol, pick
		// again.
		for try := 0; ; try++ {
			conns, ln, port, err = s.bind(ctx, &lc, &shared, s.family(host, port), host, port)
			if err == nil || port != "0" || try == 20 {
				break
			}
		}
		if err != nil {
			s.Close()
			return fmt.Errorf("listen %s: %w", addr, err)
		}
		if s.cfg.SteerIPv4 > 0 || s.cfg.SteerIPv6 > 0 {
			if err := steer(conns, s.cfg.SteerIPv4, s.cfg.SteerIPv6); err != nil {
				// The workers still answer; what keeps state per worker
				// sees a client's datagrams spread by port.
				s.log.Warn("udp: datagrams not steered by client prefix", "addr", addr, "err", err)
			}
		}
		// A failure closes the sockets not yet handed to a worker; Close
		// stops the workers started, which close theirs.
		abort := func(i int, err error) error {
			for _, c := range conns[i:] {
				c.Close()
			}
			ln.Close()
			s.Close()
			return err
		}
		for i, conn := range conns {
			w, err := newUDPWorker(conn, s.handler)
			if err != nil {
				return abort(i, err)
			}
			s.workers = append(s.workers, w)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				if err := w.run(&s.closed); err != nil {
					s.log.Error("udp worker stopped", "addr", addr, "err", err)
				}
			}()
		}
		s.tcp = append(s.tcp, ln)
		s.addrs = append(s.addrs, net.JoinHostPort(host, port))
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.acceptLoop(ln)
		}()
	}
	return nil
}

// bind opens the TCP listener and the UDP sockets (one per worker) of one
// address. It returns the port bound, or on failure the port asked for.
//
// Only this server may serve the address: a second one started on it
// must fail, as a second knotd does, rather than take half the queries
// with other data. SO_REUSEPORT, which gives each UDP worker a socket of
// its own, would let any program of the same user bind the address too
// (a socket may join the sockets bound to an address when they all have
// the option set and the same owner). So the first socket of each
// protocol is bound without it, which fails with EADDRINUSE if any other
// socket holds the address: the TCP listener never gets it (it needs no
// sharing), so a second server's listener, bound first, cannot start; the
// first UDP socket gets it only once bound, and the workers' other
// sockets then join it. What stays open: a program of the same user that
// binds only UDP, with SO_REUSEPORT, after this server started joins the
// UDP sockets (the kernel allows it; clearing SO_REUSEPORT on a bound
// socket, tried on Linux 6.18, either still lets it join or sends every
// datagram to that one socket, depending on the family and the socket).
func (s *Server) bind(ctx context.Context, lc, shared *net.ListenConfig, family, host, port string) ([]*net.UDPConn, net.Listener, string, error) {
	asked := port
	ln, err := lc.Listen(ctx, "tcp"+family, net.JoinHostPort(host, port))
	if err != nil {
		return nil, nil, asked, bindError("tcp", err)
	}
	port = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	var conns []*net.UDPConn
	fail := func(err error) ([]*net.UDPConn, net.Listener, string, error) {
		for _, c := range conns {
			c.Close()
		}
		ln.Close()
		return nil, nil, asked, err
	}
	for i := 0; i < s.cfg.Workers; i++ {
		l := shared
		if i == 0 {
			l = lc
		}
		pc, err := l.ListenPacket(ctx, "udp"+family, net.JoinHostPort(host, port))
		if err != nil {
			return fail(bindError("udp", err))
		}
		conn := pc.(*net.UDPConn)
		conns = append(conns, conn)
		if i == 0 {
			raw, err := conn.SyscallConn()
			if err == nil {
				err = reusePort(raw)
			}
			if err != nil {
				return fail(fmt.Errorf("udp: %w", err))
			}
		}
	}
	return conns, ln, port, nil
}

// family is the address family to bind host with, as the suffix of the
// network ("tcp4", "udp6"): "4" for IPv4 addresses (Go would bind the
// IPv4 wildcard as a dual-stack IPv6 socket, serving IPv6 too); "6", IPv6
// only, for the IPv6 wildcard when the IPv4 one is also listed with the
// same port (the two would want the same port); otherwise "", the IPv6
// wildcard alone serving IPv4 too.
func (s *Server) family(host, port string) string {
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return ""
	case ip.To4() != nil:
		return "4"
	case !ip.IsUnspecified() || port == "0":
		return ""
	}
	for _, addr := range s.cfg.Listen {
		h, p, err := net.SplitHostPort(addr)
		if ip := net.ParseIP(h); err == nil && p == port && ip != nil && ip.To4() != nil && ip.IsUnspecified() {
			return "6"
		}
	}
	return ""
}

// CheckListen reports what Start would refuse in a list of listen
// addresses before binding anything (an address a listed wildcard covers,
// see overlap), so that a config check can say so too.
func CheckListen(listen []string) error {
	s := Server{cfg: Config{Listen: listen}}
	return s.overlap()
}

// overlap reports a listed address that a wildcard one also listed, with
// the same port, covers: its bind would fail (the sockets do not share
// ports, see bind), and the wildcard serves it already.
func (s *Server) overlap() error {
	for _, a := range s.cfg.Listen {
		ha, pa, err := net.SplitHostPort(a)
		wild := net.ParseIP(ha)
		if err != nil || pa == "0" || wild == nil || !wild.IsUnspecified() {
			continue
		}
		v4 := wild.To4() != nil
		for _, b := range s.cfg.Listen {
			hb, pb, err := net.SplitHostPort(b)
			ip := net.ParseIP(hb)
			if err != nil || pb != pa || ip == nil || ip.IsUnspecified() {
				continue
			}
			// The IPv6 wildcard covers IPv4 too unless bound IPv6 only.
			if ip.To4() != nil == v4 || !v4 && s.family(ha, pa) == "" {
				return fmt.Errorf("listen %s: %s, also listed, covers it", b, a)
			}
		}
	}
	return nil
}

// bindError is err from binding a proto socket, saying so when the
// address is another process's.
func bindError(proto string, err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) && errors.Is(se.Err, syscall.EADDRINUSE) {
		return fmt.Errorf("address in use by another process (%s %w)", proto, se)
	}
	return fmt.Errorf("%s: %w", proto, err)
}

// Addrs returns the bound addresses (with real ports), one per Listen
// entry.
func (s *Server) Addrs() []string { return s.addrs }

// UDPWorkers is the number of UDP workers Start runs: Workers (one per
// CPU unless set) for each Listen address, each on an OS thread of its
// own.
func (s *Server) UDPWorkers() int { return len(s.cfg.Listen) * s.cfg.Workers }

// Shutdown stops the server gracefully: it stops reading datagrams and
// accepting connections at once, lets each TCP connection finish the
// queries it has read and its deferred replies (zone transfers out),
// closing it at its next wait for a message instead of waiting, and
// returns once all have ended. If ctx ends first, it closes what is left
// (as Close) and returns ctx's error. Close after Shutdown does nothing
// more.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.stopListening()
	// A connection waiting for its next message stops waiting; one
	// whose goroutine sets its idle deadline after this sees draining
	// (serveTCP checks it after setting the deadline).
	s.mu.Lock()
	for c := range s.active {
		_ = c.SetReadDeadline(time.Now())
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.Close()
		<-done
		return ctx.Err()
	}
}

// stopListening stops the UDP workers (noticed within their receive
// timeout) and closes the TCP listeners.
func (s *Server) stopListening() {
	s.closed.Store(true)
	for _, w := range s.workers {
		w.stop()
	}
	for _, l := range s.tcp {
		l.Close()
	}
}

// Close stops every socket and connection and waits for the goroutines.
func (s *Server) Close() {
	s.stopListening()
	s.mu.Lock()
	for c := range s.active {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
