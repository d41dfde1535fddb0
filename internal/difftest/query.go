package difftest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

// Query is one test query: what is asked and how it is sent.
type Query struct {
	// Name is the QNAME exactly as sent, case preserved.
	Name string
	Type uint16
	// Net is "udp" or "tcp".
	Net string
	// EDNS is the advertised UDP payload size (RFC 6891 section 6.2.3);
	// 0 sends no OPT record at all, which limits UDP answers to 512 octets
	// (RFC 1035 section 4.2.1).
	EDNS uint16
	// RD asks for recursion; an authoritative server copies it into the
	// response (RFC 1035 section 4.1.1) but must not recurse.
	RD bool
	// DO sets the DNSSEC OK bit (RFC 3225 section 3), which a server
	// copies into its response's OPT record even for unsigned zones.
	DO bool
	// EDNSVersion is the OPT version; above 0 the answer must be BADVERS
	// (RFC 6891 section 6.1.3).
	EDNSVersion uint8
	// Class is the QCLASS; 0 means IN.
	Class uint16
	// Opcode is the header opcode; 0 is QUERY. Others test the NOTIMP
	// path (RFC 1035 section 4.1.1).
	Opcode int
	// Mutate names a deliberate malformation applied to the query (see
	// mutations); empty sends the query as built.
	Mutate string
	// Category names the zone feature the query exercises, for the
	// summary of differences.
	Category string
}

// mutations are the malformed or unusual queries the generator can ask
// for. Each changes the message before packing (msg) or the packed octets
// (wire). The reference's answer, or its silence, is what Tern must match.
func mutations() map[string]mutation {
	return map[string]mutation{
		// RFC 6891 section 6.1.1: "If a query message with more than one OPT
		// RR is received, a FORMERR (RCODE=1) MUST be returned."
		"two-opt": {msg: func(m *dns.Msg) {
			o := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
			o.SetUDPSize(1232)
			m.Extra = append(m.Extra, o)
		}},
		// RFC 6891 section 6.1.2: the OPT's owner "MUST be 0 (root domain)".
		"opt-owner": {msg: func(m *dns.Msg) {
			if o := m.IsEdns0(); o != nil {
				o.Hdr.Name = "example.test."
			}
		}},
		// An unknown EDNS option must be ignored (RFC 6891 section 6.1.2).
		"unknown-option": {msg: func(m *dns.Msg) {
			if o := m.IsEdns0(); o != nil {
				o.Option = append(o.Option, &dns.EDNS0_LOCAL{Code: 65001, Data: []byte{1, 2, 3}})
			}
		}},
		// No question, and two questions: neither has a defined answer.
		"no-question":   {msg: func(m *dns.Msg) { m.Question = nil }},
		"two-questions": {msg: func(m *dns.Msg) { m.Question = append(m.Question, m.Question[0]) }},
		// A record in the answer section of a query.
		"answer-in-query": {msg: func(m *dns.Msg) {
			rr, _ := dns.NewRR("www.example.test. 60 IN A 192.0.2.1")
			m.Answer = append(m.Answer, rr)
		}},
		// QR set: the message is a response and must not be answered, or
		// two servers could be made to loop (RFC 1035 section 4.1.1).
		"qr-set": {msg: func(m *dns.Msg) { m.Response = true }},
		// Reserved bits set: the header's Z bit (RFC 1035 section 4.1.1: "Must
		// be zero in all queries and responses") and the OPT's Z field (RFC
		// 6891 section 6.1.4: ignored by receivers, zero from senders).
		"header-z": {msg: func(m *dns.Msg) { m.Zero = true }},
		"opt-z": {msg: func(m *dns.Msg) {
			if o := m.IsEdns0(); o != nil {
				o.Hdr.Ttl |= 0x1234
			}
		}},
		// CD and AD set in the query: CD is copied into the response (RFC
		// 4035 section 3.1.6); an authoritative server that does not validate
		// leaves AD clear (RFC 4035 section 3.1.6, RFC 6840 section 5.8).
		"cd-ad": {msg: func(m *dns.Msg) { m.CheckingDisabled, m.AuthenticatedData = true, true }},
		// Octets after the last record.
		"trailing": {wire: func(b []byte) []byte { return append(b, 0xde, 0xad, 0xbe, 0xef) }},
		// A truncated question: the message ends inside QTYPE.
		"short": {wire: func(b []byte) []byte { return b[:len(b)-3] }},
	}
}

// mutation changes a query message before packing (msg) or its packed
// octets (wire); either may be nil.
type mutation struct {
	msg  func(m *dns.Msg)
	wire func(b []byte) []byte
}

// String renders q compactly, e.g. "udp/edns1232 www.EXAMPLE.test. A".
func (q Query) String() string {
	e := "noedns"
	if q.EDNS != 0 {
		e = fmt.Sprintf("edns%d", q.EDNS)
	}
	if q.EDNSVersion != 0 {
		e += fmt.Sprintf("v%d", q.EDNSVersion)
	}
	extra := ""
	if q.RD {
		extra += " +rd"
	}
	if q.DO {
		extra += " +do"
	}
	if q.Class != 0 && q.Class != dns.ClassINET {
		extra += " class=" + dns.Class(q.Class).String()
	}
	if q.Opcode != 0 {
		extra += " opcode=" + dns.OpcodeToString[q.Opcode]
	}
	if q.Mutate != "" {
		extra += " mutate=" + q.Mutate
	}
	return fmt.Sprintf("%s/%s %s %s%s [%s]", q.Net, e, q.Name, typeString(q.Type), extra, q.Category)
}

// Msg builds the query message with the given ID.
func (q Query) Msg(id uint16) *dns.Msg {
	m := new(dns.Msg)
	m.Id = id
	m.RecursionDesired = q.RD
	m.Opcode = q.Opcode
	class := q.Class
	if class == 0 {
		class = dns.ClassINET
	}
	m.Question = []dns.Question{{Name: q.Name, Qtype: q.Type, Qclass: class}}
	if q.EDNS != 0 {
		m.SetEdns0(q.EDNS, q.DO)
		m.IsEdns0().SetVersion(q.EDNSVersion)
	}
	return m
}

// Result is a server's answer to a Query.
type Result struct {
	Msg *dns.Msg
	// Size is the answer's length in octets on the wire.
	Size int
}

// Exchange sends q to addr over q.Net and reads the matching answer. UDP
// answers are read into a 64 KiB buffer whatever the query advertised, so
// that an oversized answer is seen (and reported by CheckSize) rather than
// silently cut.
//
// Each query is tried up to three times, over UDP and TCP alike, as a
// resolver would: loopback can drop a datagram when a socket buffer
// overflows, and on a loaded machine a peer can be descheduled for
// seconds, so one timeout or one connection reset is not a verdict.
//
// A malformed query may legitimately get no answer at all. Whether it got
// one is not decided by a timer, which a loaded machine would fool: the
// query is followed on the same socket by its well-formed form (the
// sentinel), and when the sentinel's answer comes first, the malformed
// query was dropped and Exchange returns ErrDropped. This relies on the
// servers answering one socket's queries in order, which Knot, NSD and
// Tern (one worker per socket) do.
func Exchange(ctx context.Context, addr string, q Query, id uint16) (Result, error) {
	m := q.Msg(id)
	var mut mutation
	if q.Mutate != "" {
		var ok bool
		if mut, ok = mutations()[q.Mutate]; !ok {
			return Result{}, fmt.Errorf("query %s: unknown mutation %q", q, q.Mutate)
		}
	}
	if mut.msg != nil {
		mut.msg(m)
	}
	wire, err := m.Pack()
	if err != nil {
		return Result{}, fmt.Errorf("pack query %s: %w", q, err)
	}
	if mut.wire != nil {
		wire = mut.wire(wire)
	}
	var sentinel []byte
	if q.Mutate != "" {
		if sentinel, err = q.Msg(sentinelID(id)).Pack(); err != nil {
			return Result{}, fmt.Errorf("pack sentinel for %s: %w", q, err)
		}
	}
	const tries = 3
	var lastErr error
	for try := range tries {
		var raw []byte
		raw, lastErr = roundTrip(ctx, addr, q.Net, wire, sentinel)
		// A connection closed unanswered is tried again: a server also
		// closes one whose query arrives later than its I/O timeout
		// (500 ms in Knot and Tern) after a client stall. Closed every
		// time, the query was dropped.
		if errors.Is(lastErr, errClosed) && try < tries-1 && ctx.Err() == nil {
			continue
		}
		if errors.Is(lastErr, ErrDropped) {
			return Result{}, fmt.Errorf("%s to %s: %w", q, addr, lastErr)
		}
		if lastErr != nil {
			if ctx.Err() == nil && retryable(lastErr) {
				continue
			}
			return Result{}, fmt.Errorf("%s to %s: %w", q, addr, lastErr)
		}
		m := new(dns.Msg)
		if err := m.Unpack(raw); err != nil {
			return Result{}, fmt.Errorf("%s to %s: malformed answer of %d octets: %w", q, addr, len(raw), err)
		}
		if m.Id != id {
			return Result{}, fmt.Errorf("%s to %s: answer ID %d, want %d", q, addr, m.Id, id)
		}
		return Result{Msg: m, Size: len(raw)}, nil
	}
	return Result{}, fmt.Errorf("%s to %s (%d tries): %w", q, addr, tries, lastErr)
}

// ErrDropped reports that the server answered a malformed query's
// sentinel, or closed the TCP connection, without answering the query.
var ErrDropped = errors.New("no answer (dropped)")

// errClosed is ErrDropped by a TCP connection closed or reset before any
// answer.
var errClosed = fmt.Errorf("connection closed unanswered: %w", ErrDropped)

// sentinelID is the ID of the sentinel that follows a malformed query
// with ID id: distinct from it, and from every other query's.
func sentinelID(id uint16) uint16 { return id ^ 0x8000 }

// retryable reports whether a failed exchange may succeed when tried
// again: a timeout, or a connection refused, reset or closed before the
// answer (a busy peer's full accept queue, say). A malformed answer is
// not retried: it is the answer.
func retryable(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}

// Per-try waits. Loopback answers take well under a millisecond, but on a
// loaded two-core machine (go test -race beside builds) a peer can stall
// for seconds; each try waits that long before the next.
const (
	dialTimeout = 5 * time.Second
	udpTimeout  = 2 * time.Second
	tcpTimeout  = 5 * time.Second
)

// roundTrip sends one query and returns the raw answer. TCP messages carry
// the two-octet length prefix of RFC 1035 section 4.2.2.
//
// With a sentinel (see Exchange), both are sent at once and the first
// answer decides: the query's, or ErrDropped for the sentinel's. A TCP
// connection closed or reset before any answer is ErrDropped too.
func roundTrip(ctx context.Context, addr, network string, wire, sentinel []byte) ([]byte, error) {
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	timeout := udpTimeout
	if network == "tcp" {
		timeout = tcpTimeout
	}
	if dl, ok := ctx.Deadline(); ok && dl.Before(time.Now().Add(timeout)) {
		timeout = time.Until(dl)
	}
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, fmt.Errorf("set deadline: %w", err)
	}
	var raw []byte
	if network == "udp" {
		for _, p := range [][]byte{wire, sentinel} {
			if p == nil {
				continue
			}
			if _, err := conn.Write(p); err != nil {
				return nil, fmt.Errorf("write: %w", err)
			}
		}
		buf := make([]byte, 65535)
		n, err := conn.Read(buf)
		if err != nil {
			return nil, fmt.Errorf("read: %w", err)
		}
		raw = buf[:n]
	} else {
		framed := binary.BigEndian.AppendUint16(nil, uint16(len(wire)))
		framed = append(framed, wire...)
		if sentinel != nil {
			framed = binary.BigEndian.AppendUint16(framed, uint16(len(sentinel)))
			framed = append(framed, sentinel...)
		}
		if _, err := conn.Write(framed); err != nil {
			return nil, fmt.Errorf("write: %w", err)
		}
		var l [2]byte
		if _, err := io.ReadFull(conn, l[:]); err != nil {
			if sentinel != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)) {
				return nil, fmt.Errorf("%w (%v)", errClosed, err)
			}
			return nil, fmt.Errorf("read length: %w", err)
		}
		raw = make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(conn, raw); err != nil {
			return nil, fmt.Errorf("read message: %w", err)
		}
	}
	if sentinel != nil && len(raw) >= 2 && binary.BigEndian.Uint16(raw) == binary.BigEndian.Uint16(sentinel) {
		return nil, fmt.Errorf("the sentinel was answered first: %w", ErrDropped)
	}
	return raw, nil
}

// CheckSize reports whether a UDP answer exceeds what the query allowed:
// 512 octets without EDNS (RFC 1035 section 4.2.1), else the advertised
// payload size (RFC 6891 section 6.2.5), never less than 512.
func CheckSize(q Query, r Result) error {
	if q.Net != "udp" {
		return nil
	}
	limit := 512
	if q.EDNS > 512 {
		limit = int(q.EDNS)
	}
	if r.Size > limit {
		return fmt.Errorf("UDP answer of %d octets exceeds the %d the query allowed", r.Size, limit)
	}
	return nil
}

// mixCase returns name with the letters' case flipped where the bits of
// pattern say so, as a resolver using 0x20 randomization would send it.
func mixCase(name string, pattern uint64) string {
	b := []byte(name)
	bit := 0
	for i, c := range b {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			if pattern>>(bit%64)&1 == 1 {
				b[i] ^= 0x20
			}
			bit++
		}
	}
	return strings.Clone(string(b))
}
