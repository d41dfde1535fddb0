// Package upstream sends one query to one authoritative server and returns
// its answer, accepting only an answer that matches what was asked: the
// resolver's only door to the network. Each query has a fresh random ID
// and source port (RFC 5452 §9.2), is sent with EDNS (falling back to
// plain DNS for servers that reject it) and is retried over TCP when the
// UDP answer is truncated.
package upstream

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Exchanger sends one question to one server and returns its answer, as a
// resolver needs it: the resolve package asks through it, so that it can
// be tested without sockets.
type Exchanger interface {
	Exchange(ctx context.Context, server netip.AddrPort, q dns.Question) (*dns.Msg, error)
}

// Defaults of a Client.
const (
	// DefaultTimeout bounds one query (both the UDP try and a TCP retry)
	// when the context has no earlier deadline.
	DefaultTimeout = 2 * time.Second
	// DefaultUDPSize is the EDNS payload size advertised: the DNS flag
	// day 2020 value, which avoids IP fragmentation.
	DefaultUDPSize = 1232
)

// Client is the Exchanger that uses the network. Its zero value is ready.
type Client struct {
	// Timeout bounds each query; 0 means DefaultTimeout.
	Timeout time.Duration
	// UDPSize is the EDNS payload size advertised; 0 means DefaultUDPSize.
	UDPSize uint16
	// Log, when set, hears at debug level why UDP queries do not go
	// through io_uring (Linux), once.
	Log *slog.Logger

	// poll waits for the UDP answers.
	poll poller
}

// ErrMismatch is wrapped by Validate's errors: the packet is not the
// answer to the query (another ID, question, or not a response).
var ErrMismatch = errors.New("not the answer to the query")

// Options are what the caller knows of a server before asking it.
type Options struct {
	// UDPTimeout bounds the wait for each UDP answer (a resolver's
	// retransmission timeout for this server); 0 leaves only the
	// Client's Timeout. A TCP retry after a truncated answer is bounded
	// by the Client's Timeout alone: it needs more round trips.
	UDPTimeout time.Duration
	// NoEDNS asks without EDNS: the server is known to reject it.
	NoEDNS bool
	// Recursive sets RD: the server is a forwarder, a recursive resolver
	// that resolves the question for the caller.
	Recursive bool
	// ExactCase accepts only an answer whose question repeats the
	// query's name octet for octet, case included: the caller randomised
	// the case of the name (0x20, draft-vixie-dnsext-dns0x20) to make a
	// forged answer harder to guess. Others are dropped as mismatches.
	ExactCase bool
	// DNSSEC sets the DO bit of the query's OPT record (RFC 3225, RFC
	// 4035 §3.2.1): the server then sends the RRSIG, NSEC and NSEC3
	// records a validator needs. Without EDNS (NoEDNS, or a server that
	// rejected it) there is no DO bit to set.
	DNSSEC bool
}

// Report says how an exchange went, for the caller's memory of servers.
type Report struct {
	// RTT is the round trip of the last UDP query answered.
	RTT time.Duration
	// EDNSRejected: the server answered the query with EDNS FORMERR or
	// NOTIMP without OPT, and was asked again without EDNS.
	EDNSRejected bool
	// EDNSAnswered: the answer to a query with EDNS carried OPT.
	EDNSAnswered bool
	// TCP: the answer came over TCP (the UDP one was truncated).
	TCP bool
}

// OptionsExchanger is an Exchanger that also takes Options and returns a
// Report; a resolver uses it when its Exchanger has it. A wrapper of an
// Exchanger (a filter, a counter) must implement it as well when what it
// wraps does, or the options are silently lost (NoLoopback once did).
type OptionsExchanger interface {
	Exchanger
	ExchangeOptions(ctx context.Context, server netip.AddrPort, q dns.Question, opt Options) (*dns.Msg, Report, error)
}

// Exchange asks server the question q and returns its answer. Over UDP,
// packets that do not match (source, ID, question) are ignored until the
// timeout; a truncated answer is asked again over TCP; an answer FORMERR or
// NOTIMP without OPT to a query with EDNS is asked again without it (RFC
// 6891 §7). Exchange knows nothing of zones: bailiwick and the size of
// RRsets are the resolver's to judge.
func (c *Client) Exchange(ctx context.Context, server netip.AddrPort, q dns.Question) (*dns.Msg, error) {
	m, _, err := c.ExchangeOptions(ctx, server, q, Options{})
	return m, err
}

// ExchangeOptions is Exchange with what the caller knows of the server,
// and a report of how the exchange went (also on error).
func (c *Client) ExchangeOptions(ctx context.Context, server netip.AddrPort, q dns.Question, opt Options) (*dns.Msg, Report, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	// One deadline for the whole exchange, each step's wait bounded by
	// it (exchange): a context for the exchange besides one for its UDP
	// wait was half of the 3-6% context.WithTimeout took of a
	// resolution's CPU.
	deadline := time.Now().Add(timeout)
	size := c.UDPSize
	if size == 0 {
		size = DefaultUDPSize
	}
	if opt.NoEDNS {
		size = 0
	}
	h := header{size: size, rd: opt.Recursive, exactCase: opt.ExactCase, do: opt.DNSSEC}
	var rep Report
	m, err := c.exchange(ctx, deadline, server, q, h, opt.UDPTimeout, &rep)
	if err != nil {
		return nil, rep, err
	}
	if size > 0 && rejectsEDNS(m) {
		rep.EDNSRejected = true
		h.size = 0
		m, err = c.exchange(ctx, deadline, server, q, h, opt.UDPTimeout, &rep)
		return m, rep, err
	}
	rep.EDNSAnswered = size > 0 && m.IsEdns0() != nil
	return m, rep, nil
}

// rejectsEDNS reports whether m, the answer to a query with EDNS, says
// that its server does not implement EDNS: RFC 6891 §7, FORMERR (or, from
// older servers, NOTIMP) without an OPT record. A FORMERR with an OPT
// record comes from a server that understood EDNS and objects to
// something else: asking again without EDNS would only hide that.
func rejectsEDNS(m *dns.Msg) bool {
	return (m.Rcode == dns.RcodeFormatError || m.Rcode == dns.RcodeNotImplemented) && m.IsEdns0() == nil
}

// header is how a query is asked besides its question.
type header struct {
	size      uint16 // the EDNS payload size; 0: without EDNS
	rd        bool   // Options.Recursive
	exactCase bool   // Options.ExactCase
	do        bool   // Options.DNSSEC: the DO bit, with EDNS only
}

// exchange asks once over UDP (with EDNS when h.size > 0), waiting at most
// udpTimeout when it is not 0, and again over TCP if the answer is
// truncated, all before deadline (and before ctx is done). A timeout is
// an error that wraps context.DeadlineExceeded.
func (c *Client) exchange(ctx context.Context, deadline time.Time, server netip.AddrPort, q dns.Question, h header, udpTimeout time.Duration, rep *Report) (*dns.Msg, error) {
	start := time.Now()
	udpDeadline := deadline
	if udpTimeout > 0 && start.Add(udpTimeout).Before(deadline) {
		udpDeadline = start.Add(udpTimeout)
	}
	// The deadline goes down beside ctx rather than in a context of
	// its own: context.WithDeadline was 7 of a cold resolution's 31
	// allocations and 640 of its 2292 bytes (its timer, the context,
	// its Done channel, the parent's map of children), at 6b49bb8.
	m, err := c.exchangeUDP(ctx, udpDeadline, server, q, h)
	if err != nil && !errors.Is(err, errOversize) {
		return nil, err
	}
	rep.RTT = time.Since(start)
	if err != nil || m.Truncated {
		// RFC 7766 §5: a truncated UDP answer is asked again over TCP.
		rep.TCP = true
		return exchangeTCP(ctx, deadline, server, q, h)
	}
	return m, nil
}

// query builds a query for q with a fresh random ID, non-recursive unless
// h.rd, and returns its ID and wire form, written into dst when it fits
// there (a query of any name does in queryBuffer). It is written directly
// (RFC 1035 §4.1: header, question; RFC 6891 §6.1.2: the OPT record when
// h.size > 0, DO as h.do), where a dns.Msg packed took five allocations
// and most of the time of building it.
func query(q dns.Question, h header, dst []byte) (uint16, []byte, error) {
	// RFC 5452 §9.2: an unpredictable ID for every query, from
	// crypto/rand, as dns.Id's, without its binary.Read (an allocation
	// and reflection: 46 ns against 28).
	var id [2]byte
	rand.Read(id[:])
	// A name in presentation form is at most one octet shorter than in
	// wire form (escapes only make it longer).
	size := 12 + len(q.Name) + 1 + 4 + 11
	var pkt []byte
	if size <= cap(dst) {
		pkt = dst[:size]
		clear(pkt[:12])
	} else {
		pkt = make([]byte, size)
	}
	copy(pkt, id[:])
	if h.rd {
		pkt[2] = 0x01 // RD; QR, opcode QUERY, AA and TC are 0
	}
	pkt[5] = 1 // QDCOUNT
	n, err := dns.PackDomainName(q.Name, pkt, 12, nil, false)
	if err != nil {
		return 0, nil, fmt.Errorf("packing the query for %s: %w", q.Name, err)
	}
	pkt = binary.BigEndian.AppendUint16(pkt[:n], q.Qtype)
	pkt = binary.BigEndian.AppendUint16(pkt, q.Qclass)
	if h.size > 0 {
		var flags byte
		if h.do {
			flags = 0x80 // RFC 3225 §3: DO, the top bit of the TTL's flags
		}
		// Owner root, TYPE OPT, CLASS the payload size, TTL extended
		// RCODE 0, version 0 and the flags, RDLENGTH 0.
		pkt = append(pkt, 0, 0, byte(dns.TypeOPT), byte(h.size>>8), byte(h.size), 0, 0, flags, 0, 0, 0)
		pkt[11] = 1 // ARCOUNT
	}
	return binary.BigEndian.Uint16(id[:]), pkt, nil
}

// errOversize: the UDP answer was larger than the buffer it was read
// into, so than the query asked for; it is asked again over TCP.
var errOversize = errors.New("answer larger than asked for")

// answerBuffer is the size of the buffers UDP answers are read into:
// over three times the EDNS size asked for by default (1232), so that a
// query in flight holds 4 KiB rather than 64 (with a hundred in flight
// the 64 KiB buffers were 8 MB of the heap, and GOGC let as much garbage
// more stay resident besides). Validate's parse copies what it keeps, so
// a buffer goes back once the answer is parsed.
const answerBuffer = 4096

// queryBuffer holds any query query writes: the header (12), a name of
// at most 255 octets in wire form, type and class (4), the OPT record (11).
const queryBuffer = 12 + 255 + 4 + 11

// buffers are the memory of an exchange: the query sent, the answer read
// and the reader that parses it, together so that one sync.Pool
// operation brings them and none is an allocation of its own.
type buffers struct {
	answer [answerBuffer]byte
	query  [queryBuffer]byte
	reader reader // the answer's parser's memory
}

var exchangeBuffers = sync.Pool{New: func() any { return new(buffers) }}

// answerBuf returns buffers from exchangeBuffers (put them back) and the
// room to read an answer to a query asked with h into: their answer, or
// a new buffer for the largest datagram when h's EDNS size is larger.
func answerBuf(h header) (*buffers, []byte) {
	bp := exchangeBuffers.Get().(*buffers)
	if int(h.size) > answerBuffer {
		return bp, make([]byte, 65535)
	}
	return bp, bp.answer[:]
}

// accept is what a datagram read for the query with this ID and question
// is: whole, the answer when it passes validate; cut to the buffer's
// size, errOversize when its header says it is the answer (ID, QR): it
// was larger than asked for, and is asked again over TCP, as a
// truncated one is (a forger must know the ID to send a resolver to
// TCP). Other errors leave the wait going on (RFC 5452 §9.1).
func (h header) accept(r *reader, p []byte, whole bool, id uint16, q dns.Question) (*dns.Msg, error) {
	if !whole {
		if len(p) >= 3 && binary.BigEndian.Uint16(p) == id && p[2]&0x80 != 0 {
			return nil, errOversize
		}
		return nil, fmt.Errorf("%w: a datagram larger than asked for", ErrMismatch)
	}
	return h.validate(r, p, id, q)
}

// exchangeTCP asks over a new TCP connection (RFC 7766), framed by
// miekg/dns's Conn, before deadline; the answer must pass the same checks
// as over UDP. The deadline's context is made here rather than in
// exchange, whose frame is above a UDP answer's parse, at the bottom of a
// resolution's deepest call.
func exchangeTCP(ctx context.Context, deadline time.Time, server netip.AddrPort, q dns.Question, h header) (*dns.Msg, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	dc := dns.Client{Net: "tcp"}
	co, err := dc.DialContext(ctx, server.String())
	if err != nil {
		return nil, fmt.Errorf("tcp to %s: %w", server, ioError(ctx, err))
	}
	defer co.Close()
	r, err := exchangeConn(ctx, co, q, h)
	if err != nil {
		return nil, fmt.Errorf("tcp to %s: %w", server, err)
	}
	return r, nil
}

// exchangeConn sends the query over a stream connection and reads one
// answer. Unlike over UDP, an answer that does not match fails the
// exchange: nobody else can write into the connection, so it is the
// server's own wrong answer, and waiting longer would not bring another.
//
// The answer is read into exchangeBuffers' (RFC 7766 §8: a two-octet
// length, then the message), or into a buffer of its own length when it
// is longer: a buffer for the largest message (dns.Conn.Read's way) was
// 64 KiB of garbage per TCP exchange, as much as fifty cold resolutions
// make otherwise.
func exchangeConn(ctx context.Context, co *dns.Conn, q dns.Question, h header) (*dns.Msg, error) {
	bp := exchangeBuffers.Get().(*buffers)
	defer exchangeBuffers.Put(bp)
	id, pkt, err := query(q, h, bp.query[:])
	if err != nil {
		return nil, err
	}
	if d, ok := ctx.Deadline(); ok {
		co.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { co.SetDeadline(time.Now()) })
	defer stop()
	if _, err := co.Write(pkt); err != nil {
		return nil, ioError(ctx, err)
	}
	buf := bp.answer[:]
	if _, err := io.ReadFull(co.Conn, buf[:2]); err != nil {
		return nil, fmt.Errorf("reading the answer's length: %w", ioError(ctx, err))
	}
	n := int(binary.BigEndian.Uint16(buf))
	if n > len(buf) {
		buf = make([]byte, n)
	}
	if _, err := io.ReadFull(co.Conn, buf[:n]); err != nil {
		return nil, fmt.Errorf("reading the answer: %w", ioError(ctx, err))
	}
	return h.validate(&bp.reader, buf[:n], id, q)
}

// ioError is the error of a read that failed: the context's when the
// deadline set from it (or its cancellation) stopped the read, so that the
// caller can tell a timeout with errors.Is.
func ioError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
}

// validate is Validate with r's memory, and with h.exactCase the
// answer's question must spell the name as the query did, case included.
func (h header) validate(r *reader, pkt []byte, id uint16, q dns.Question) (*dns.Msg, error) {
	m, err := r.unpack(pkt, q.Name)
	if err != nil {
		return nil, fmt.Errorf("unparseable answer: %w", err)
	}
	if err := h.mismatch(m, id, q); err != nil {
		return nil, err
	}
	return m, nil
}

// Validate parses pkt and checks that it is the answer to the query with
// this ID and question: a response, opcode QUERY, the same ID and the same
// question (name compared case-insensitively, type and class; RFC 5452
// §9.1). An answer FORMERR or NOTIMP may omit the question (RFC 6891 §7
// fallback needs to see it). Errors wrap ErrMismatch when the packet
// parses but does not match.
func Validate(pkt []byte, id uint16, q dns.Question) (*dns.Msg, error) {
	var r reader
	return header{}.validate(&r, pkt, id, q)
}

// mismatch says why r, parsed, is not the answer to the query with this ID
// and question (Validate, h.validate), or nil when it is. Not inlined:
// the error's formatting would add its arguments to validate's frame,
// which the parse's frames go below, at the bottom of a resolution's
// deepest call.
//
//go:noinline
func (h header) mismatch(r *dns.Msg, id uint16, q dns.Question) error {
	switch {
	case !r.Response:
		return fmt.Errorf("%w: QR not set", ErrMismatch)
	case r.Id != id:
		return fmt.Errorf("%w: ID %d, want %d", ErrMismatch, r.Id, id)
	case r.Opcode != dns.OpcodeQuery:
		return fmt.Errorf("%w: opcode %d", ErrMismatch, r.Opcode)
	}
	if len(r.Question) == 0 && (r.Rcode == dns.RcodeFormatError || r.Rcode == dns.RcodeNotImplemented) {
		return nil
	}
	if len(r.Question) != 1 {
		return fmt.Errorf("%w: %d questions", ErrMismatch, len(r.Question))
	}
	got := r.Question[0]
	if !strings.EqualFold(got.Name, q.Name) || got.Qtype != q.Qtype || got.Qclass != q.Qclass {
		return fmt.Errorf("%w: question %s %s %s, want %s %s %s", ErrMismatch,
			got.Name, dns.Class(got.Qclass), dns.Type(got.Qtype), q.Name, dns.Class(q.Qclass), dns.Type(q.Qtype))
	}
	if h.exactCase && got.Name != q.Name {
		return fmt.Errorf("%w: question %s, want %s (case randomised)", ErrMismatch, got.Name, q.Name)
	}
	return nil
}
