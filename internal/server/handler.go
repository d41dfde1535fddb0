package server

import (
	"errors"
	"net"
	"net/netip"
	"sync"
)

// Handler makes the state through which the server's goroutines answer
// queries, as net/http's Handler answers requests: the server asks it for
// one Worker per UDP socket it serves and for TCP Workers that busy
// connections take from a pool (an idle connection holds none), and calls
// each Worker from one goroutine at a time. The authoritative
// engine (auth) is one Handler; the resolver (recursor) is another, on
// sockets of its own.
type Handler interface {
	// NewWorker returns a Worker for a UDP socket (tcp false) or for TCP
	// connections (tcp true), whose answers then have TCP's size limit.
	NewWorker(tcp bool) Worker
}

// HandlerFunc adapts a function to a Handler, as http.HandlerFunc does.
type HandlerFunc func(tcp bool) Worker

// NewWorker calls f(tcp).
func (f HandlerFunc) NewWorker(tcp bool) Worker { return f(tcp) }

// Worker is the state of one goroutine's answers, reused from query to
// query (buffers, caches), so that answering allocates nothing.
type Worker interface {
	// Answer writes the response to req into out, which is empty with
	// capacity BufferSize, and returns it, or nil to send nothing. A
	// response larger than out's capacity may be a slice of the Worker's
	// own; it must stay valid until the next call. req and its Packet
	// belong to the server and must not be kept after Answer returns;
	// a Reply from req.Defer may be.
	//
	// Over TCP, nil without a Defer closes the connection (RFC 7766 §7:
	// a query that gets no answer ends it rather than leave the client
	// waiting).
	Answer(req *Request, out []byte) []byte
}

// Batcher is a UDP Worker that answers a batch of datagrams in one call,
// as http.Flusher is a ResponseWriter that can flush: with a batch in
// hand it can overlap the queries' memory loads (auth.Ahead). A UDP
// Worker that implements it gets every batch through AnswerBatch, one
// interface call per batch; the others get one Answer call per datagram.
type Batcher interface {
	// AnswerBatch answers reqs[i] into outs[i] for every i, as Answer
	// does, and stores each response (or nil) back into outs[i]. The
	// slices have the same length, at most the server's batch size. A
	// request whose Packet is nil was too long to read whole: the server
	// answers it FORMERR itself.
	AnswerBatch(reqs []Request, outs [][]byte)
}

// BufferSize is the capacity of the response buffers a Worker is given:
// the largest DNS message and room for a builder to run past its size
// limit before it notices and truncates.
const BufferSize = 65535 + 512

// Request is one query as a Worker sees it: its bytes, its transport,
// who sent it, and the means to answer it later. The server reuses it
// from query to query.
type Request struct {
	// Packet is the query, in the server's buffer: valid only during
	// the Answer call.
	Packet []byte
	// TCP is set for queries that came over TCP.
	TCP bool

	// remote is the client's address, unless raw holds it undecoded.
	remote netip.AddrPort
	// local is the address of the socket the query came in on, set
	// once per socket (UDP) or connection (TCP), not per query.
	local netip.AddrPort
	// raw is the client's address as recvmmsg left it (udp_linux.go),
	// decoded by Remote only when asked: most answers never need it.
	raw *rawSockaddr
	// transport makes the Reply of a deferred answer; nil for a request
	// that cannot be deferred.
	transport deferrer
	// slot is the request's index in its transport's batch.
	slot int
	// reply is the Reply Defer gave out, if any: the server then sends
	// nothing now.
	reply *Reply
	// amenders, pushed by the layers over the Worker for the query
	// they pass down (PushAmender), outermost first, say what the Reply
	// does to the messages of a deferred answer.
	amenders [maxAmenders]Amender
	// namenders is how many of amenders are pushed.
	namenders uint8
}

// maxAmenders bounds the layers that amend a query's deferred answer
// at once: DNS cookies' and dnstap's (which records the answer as
// sent, after the other).
const maxAmenders = 2

// Amender is a layer wrapping a Worker that changes or sees the answers
// of the Worker beneath it (the cookie layer adds each client's COOKIE
// option, dnstap's records them) and must do so also when that Worker
// defers the query: Defer calls Deferred(req) once, on the answering
// goroutine, before Answer returns, and the Reply passes each message it
// sends through the function Deferred returns (nil: none), the
// innermost layer's first. It lets the layer copy its state of the
// query (kept in the layer, reused from query to query) when, and only
// when, the query is deferred: nothing is allocated for the queries
// answered at once.
type Amender interface {
	Deferred(req *Request) func(msg []byte) []byte
}

// PushAmender makes a an Amender of the query req holds, for the call
// of the inner Worker's Answer (or AnswerBatch); the layer that pushes
// it pops it (PopAmender) after. At most two layers push at once
// (cookies' and dnstap's); a third is a programming error and panics.
func (r *Request) PushAmender(a Amender) {
	r.amenders[r.namenders] = a
	r.namenders++
}

// PopAmender takes off the Amender pushed last.
func (r *Request) PopAmender() {
	r.namenders--
	r.amenders[r.namenders] = nil
}

// deferrer is a transport that can send an answer after Answer returns.
type deferrer interface {
	deferReply(req *Request) *Reply
}

// NewRequest returns a request as a transport would make it, for tests and
// for callers that answer outside a server: a deferred answer's messages
// go to deliver (nil: the request cannot be deferred, Defer returns nil).
func NewRequest(pkt []byte, remote netip.AddrPort, tcp bool, deliver func(msg []byte)) *Request {
	req := &Request{Packet: pkt, TCP: tcp, remote: remote}
	if deliver != nil {
		req.transport = funcTransport(deliver)
	}
	return req
}

// funcTransport is the transport of NewRequest: deferred messages go to
// a function.
type funcTransport func(msg []byte)

func (f funcTransport) deferReply(*Request) *Reply {
	fr, _ := funcReplies.Get().(*funcReply)
	if fr == nil {
		fr = new(funcReply)
	}
	fr.deliver = f
	fr.r.init(fr, false)
	return &fr.r
}

// funcReplies are funcTransport's Replies, released (Reply.Release),
// for the next ones: a pool of spare memory, not of state.
var funcReplies sync.Pool

// funcReply is a Reply of funcTransport and the function it delivers to.
type funcReply struct {
	r       Reply
	deliver func(msg []byte)
}

func (fr *funcReply) send(msg []byte) error {
	fr.deliver(msg)
	return nil
}

func (*funcReply) closed() {}

func (fr *funcReply) release() {
	fr.deliver = nil
	funcReplies.Put(fr)
}

// Remote is the address the query came from. For datagrams on a
// dual-stack socket, an IPv4 client is an IPv4 address (not IPv4-mapped
// IPv6), so that prefixes match it as written.
func (r *Request) Remote() netip.AddrPort {
	if r.raw != nil {
		return r.raw.addrPort()
	}
	return r.remote
}

// Local is the address the query came to: the TCP connection's own
// address, or the UDP socket's (for a socket bound to a wildcard
// address, that address, 0.0.0.0 or ::, with the port). Invalid for a
// request NewRequest made.
func (r *Request) Local() netip.AddrPort { return r.local }

// Defer says that the answer to req will come later, through the Reply
// it returns, which may be used from any goroutine: Answer then returns
// nil and the server sends nothing now. The Reply must be closed (or
// released) once, after its last Send. A second Defer returns the same Reply; a request
// whose transport cannot defer (NewRequest without deliver) gets nil.
func (r *Request) Defer() *Reply {
	if r.reply == nil && r.transport != nil {
		r.reply = r.transport.deferReply(r)
		// Before anyone holds the Reply: no lock needed. The innermost
		// layer's first: an outer one sees what the inner ones made.
		n := 0
		for i := int(r.namenders) - 1; i >= 0; i-- {
			if f := r.amenders[i].Deferred(r); f != nil {
				r.reply.amend[n] = f
				n++
			}
		}
	}
	return r.reply
}

// deferred reports whether Answer deferred the request, and forgets it,
// so that the Request is ready for the next query.
func (r *Request) deferred() bool {
	d := r.reply != nil
	r.reply = nil
	return d
}

// ErrReplyClosed is returned by a Send after Close, or a second Send of a
// datagram's answer.
var ErrReplyClosed = errors.New("reply already closed or sent")

// Reply sends a deferred answer (see Request.Defer). Over UDP it sends
// one message; over TCP any number, each a whole DNS message (the server
// adds the length prefix), in order: an AXFR stream. It is safe for
// concurrent use.
//
// A Reply is part of its transport's state of the request (the
// datagram's addresses, the connection), which is reused once the
// Reply is released (Release): a deferred answer then allocates
// nothing: a deferred datagram allocated three times on Linux (that
// state, 208 bytes, the Reply, 64, and its send function, 16), one of
// NewRequest's twice (80 bytes; BenchmarkDeferred in internal/recursor).
type Reply struct {
	mu   sync.Mutex
	done bool
	once bool // a datagram: one message, then done
	to   replyTo
	// closed: to.closed was run (by Close, or a datagram's Send).
	closed bool
	// amend change each message before it is sent, in order
	// (Amender); nil: none (the rest nil too).
	amend [maxAmenders]func(msg []byte) []byte
}

// replyTo is a transport's state of one deferred request, whose Reply
// it holds.
type replyTo interface {
	// send sends msg, a whole message, amended.
	send(msg []byte) error
	// closed is run once, when the Reply is done: the transport may let
	// go of what it kept for it (a TCP connection's count of replies
	// open).
	closed()
	// release takes the state back for another request: its Reply was
	// released, and nothing uses it any more.
	release()
}

// init readies r, part of to, for a new request: once for a datagram's.
func (r *Reply) init(to replyTo, once bool) {
	*r = Reply{to: to, once: once}
}

// Send sends msg, a whole DNS message, to the client, changed by the
// request's Amender if it had one. msg is not kept, nor written.
func (r *Reply) Send(msg []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return ErrReplyClosed
	}
	if r.once {
		r.done = true
		defer r.runClosed()
	}
	for _, f := range r.amend {
		if f == nil {
			break
		}
		msg = f(msg)
	}
	return r.to.send(msg)
}

// Close ends the reply: the transport may then let go of what it kept for
// it (a TCP connection stays open until its deferred replies are
// closed). Close after a datagram's Send, or a second Close, does
// nothing.
func (r *Reply) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.done {
		r.done = true
		r.runClosed()
	}
}

// Release is Close by a caller done with r for good: the transport may
// reuse r for another request as soon as Release returns, so neither
// the caller nor anyone it gave r to may use it again (a Send then
// could answer another client). A caller that cannot be sure of that
// calls Close instead; r is then not reused.
func (r *Reply) Release() {
	r.Close()
	r.to.release()
}

func (r *Reply) runClosed() {
	if !r.closed {
		r.closed = true
		r.to.closed()
	}
}

// udpLocal is the address conn is bound to (Request.Local).
func udpLocal(conn *net.UDPConn) netip.AddrPort {
	a, ok := conn.LocalAddr().(*net.UDPAddr)
	if !ok {
		return netip.AddrPort{}
	}
	ap := a.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
