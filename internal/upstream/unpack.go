package upstream

import (
	"encoding/binary"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
)

// Unpack parses pkt, an upstream answer, into the dns.Msg that
// (*dns.Msg).Unpack makes of it. The usual answer of an authority (one
// question; A, AAAA, NS, CNAME, DNAME and SOA records; an OPT record
// without options) is read by a parser of its own in a few allocations:
// the message, its question, its sections and its OPT record in one,
// each other record in one (an A's address with it), a name's string shared by every name that
// points at it and none for the question when it is spelt as hint (the
// name asked). dns.Msg.Unpack, which took about twelve allocations and
// a tenth of a cold resolution's instructions for a one-record answer,
// reads the rest: anything else, and anything the parser is stricter
// about (forward compression pointers, names with octets that
// presentation form escapes, records whose RDATA is short or empty).
// FuzzUnpack holds the two to the same result.
func Unpack(pkt []byte, hint string) (*dns.Msg, error) {
	var r reader
	return r.unpack(pkt, hint)
}

// unpack is Unpack with r's memory, which it resets.
func (r *reader) unpack(pkt []byte, hint string) (*dns.Msg, error) {
	if m, ok := r.unpackCommon(pkt, hint); ok {
		return m, nil
	}
	m := new(dns.Msg)
	if err := m.Unpack(pkt); err != nil {
		return nil, err
	}
	return m, nil
}

// inlineRRs is the number of records a message is parsed with in the
// same allocation as itself: an answer and its OPT record, a negative
// answer's SOA, a small referral.
const inlineRRs = 4

// parsed is a message as unpackCommon allocates it.
type parsed struct {
	m   dns.Msg
	q   [1]dns.Question
	rrs [inlineRRs]dns.RR
	opt dns.OPT
}

// aRR and aaaaRR are an address record allocated with its address.
type aRR struct {
	rr dns.A
	ip [4]byte
}

type aaaaRR struct {
	rr dns.AAAA
	ip [16]byte
}

// maxPointers bounds the compression pointers followed in one name: a
// name has at most 127 labels, and dns.UnpackDomainName refuses more than
// 126 pointers; a name that needs more is left to it.
const maxPointers = 32

// known is a name already read: where it started in the message, how far
// into the message reading it went, and its string.
type known struct {
	off, next, reach int
	s                string
}

// reader reads the names of one message, remembering the last few read
// so that a pointer to one of them makes no new string. It is the
// parser's memory (a name's octets as read, the names read), off the
// stack: an exchange reads its answer with the reader of its pooled
// buffers, whose names keep their strings until the next answer read
// there. On the stack they were 576 of the bytes of unpackCommon's and
// name's frames (520 and 448 locals at 2838765, 192 and 200 without),
// which are at the bottom of a resolution's deepest call: the stack its
// goroutine grows to (resolve's TestStackUse).
type reader struct {
	names [8]known
	n     int
	buf   [254]byte
}

// name reads the name at off of msg as dns.UnpackDomainName does and
// returns its presentation form and the offset after it (after its first
// pointer, if any). ok is false when it cannot read it, or would read it
// otherwise than UnpackDomainName: pointers must point backwards, and
// labels must hold no octet presentation form escapes. hint is returned
// when the name is spelt so.
func (r *reader) name(msg []byte, off int, hint string) (string, int, bool) {
	buf := &r.buf
	n, next, pointers, start, reach := 0, -1, 0, off, 0
	for {
		if n == 0 {
			// Nothing read yet: a name read before from here is the
			// same name, if reading it stayed within msg.
			for i := range min(r.n, len(r.names)) {
				if k := r.names[i]; k.off == off && k.reach <= len(msg) {
					if next < 0 {
						next = k.next
					}
					return k.s, next, true
				}
			}
		}
		if off >= len(msg) {
			return "", 0, false
		}
		c := int(msg[off])
		switch {
		case c == 0:
			reach = max(reach, off+1)
			if next < 0 {
				next = off + 1
			}
			s := "."
			switch {
			case n == 0:
			case string(buf[:n]) == hint:
				s = hint
			default:
				s = string(buf[:n])
			}
			r.names[r.n%len(r.names)] = known{start, next, reach, s}
			r.n++
			return s, next, true
		case c&0xC0 == 0xC0:
			if off+2 > len(msg) || pointers == maxPointers {
				return "", 0, false
			}
			pointers++
			ptr := int(binary.BigEndian.Uint16(msg[off:]) & 0x3FFF)
			if ptr >= off {
				return "", 0, false
			}
			reach = max(reach, off+2)
			if next < 0 {
				next = off + 2
			}
			off = ptr
		case c > 63:
			return "", 0, false
		default:
			// dns.UnpackDomainName's budget: the labels and their
			// separators at most 254 octets.
			if off+1+c > len(msg) || n+c+1 > len(buf) {
				return "", 0, false
			}
			for _, b := range msg[off+1 : off+1+c] {
				if wire.Escaped(b) {
					return "", 0, false
				}
			}
			n += copy(buf[n:], msg[off+1:off+1+c])
			buf[n] = '.'
			n++
			off += 1 + c
			reach = max(reach, off)
		}
	}
}

// unpackCommon is Unpack's own parser; ok is false when it leaves pkt to
// dns.Msg.Unpack.
func (r *reader) unpackCommon(pkt []byte, hint string) (*dns.Msg, bool) {
	if len(pkt) < 12 || binary.BigEndian.Uint16(pkt[4:]) != 1 {
		return nil, false
	}
	an, ns, ar := int(binary.BigEndian.Uint16(pkt[6:])), int(binary.BigEndian.Uint16(pkt[8:])), int(binary.BigEndian.Uint16(pkt[10:]))
	r.n = 0
	qname, off, ok := r.name(pkt, 12, hint)
	if !ok || off+4 > len(pkt) {
		return nil, false
	}
	total := an + ns + ar
	// A record takes at least 11 octets: counts that promise more than
	// the packet holds are a lie, and no slice is made for them.
	if total*11 > len(pkt)-off-4 {
		return nil, false
	}
	p := new(parsed)
	m := &p.m
	bits := binary.BigEndian.Uint16(pkt[2:])
	m.Id = binary.BigEndian.Uint16(pkt)
	m.Response = bits&(1<<15) != 0
	m.Opcode = int(bits>>11) & 0xF
	m.Authoritative = bits&(1<<10) != 0
	m.Truncated = bits&(1<<9) != 0
	m.RecursionDesired = bits&(1<<8) != 0
	m.RecursionAvailable = bits&(1<<7) != 0
	m.Zero = bits&(1<<6) != 0
	m.AuthenticatedData = bits&(1<<5) != 0
	m.CheckingDisabled = bits&(1<<4) != 0
	m.Rcode = int(bits & 0xF)
	p.q[0] = dns.Question{Name: qname, Qtype: binary.BigEndian.Uint16(pkt[off:]), Qclass: binary.BigEndian.Uint16(pkt[off+2:])}
	m.Question = p.q[:]
	off += 4
	rrs := p.rrs[:]
	if total > len(rrs) {
		rrs = make([]dns.RR, total)
	}
	var opt *dns.OPT
	for i := range total {
		var rr dns.RR
		rr, off, ok = r.record(pkt, off, i >= an+ns, &p.opt)
		if !ok {
			return nil, false
		}
		if o, isOPT := rr.(*dns.OPT); isOPT {
			if opt != nil {
				return nil, false // both would be p.opt
			}
			opt = o
		}
		rrs[i] = rr
	}
	// Three-index slices: an append to one section must not write over
	// the next.
	if an > 0 {
		m.Answer = rrs[:an:an]
	}
	if ns > 0 {
		m.Ns = rrs[an : an+ns : an+ns]
	}
	if ar > 0 {
		m.Extra = rrs[an+ns : total : total]
	}
	if opt != nil {
		// RFC 6891 §6.1.3: the upper eight bits of the extended RCODE.
		m.Rcode |= int(opt.Hdr.Ttl>>24) << 4
	}
	return m, true
}

// record reads the record at off of msg, returning it and the offset
// after it; ok is false for a type it does not read, RDATA other than the
// type's, and an OPT record outside the additional section or with
// options. An OPT record is read into opt.
func (r *reader) record(msg []byte, off int, additional bool, opt *dns.OPT) (dns.RR, int, bool) {
	owner, off, ok := r.name(msg, off, "")
	if !ok || off+10 > len(msg) {
		return nil, 0, false
	}
	h := dns.RR_Header{Name: owner, Rrtype: binary.BigEndian.Uint16(msg[off:]), Class: binary.BigEndian.Uint16(msg[off+2:]),
		Ttl: binary.BigEndian.Uint32(msg[off+4:]), Rdlength: binary.BigEndian.Uint16(msg[off+8:])}
	off += 10
	end := off + int(h.Rdlength)
	if end > len(msg) {
		return nil, 0, false
	}
	// Names in RDATA are read within it, as dns.UnpackRR reads them.
	rd := msg[:end]
	switch h.Rrtype {
	case dns.TypeA:
		if h.Rdlength != 4 {
			return nil, 0, false
		}
		a := &aRR{rr: dns.A{Hdr: h}}
		copy(a.ip[:], rd[off:])
		a.rr.A = a.ip[:]
		return &a.rr, end, true
	case dns.TypeAAAA:
		if h.Rdlength != 16 {
			return nil, 0, false
		}
		a := &aaaaRR{rr: dns.AAAA{Hdr: h}}
		copy(a.ip[:], rd[off:])
		a.rr.AAAA = a.ip[:]
		return &a.rr, end, true
	case dns.TypeNS, dns.TypeCNAME, dns.TypeDNAME:
		if h.Rdlength == 0 {
			return nil, 0, false
		}
		target, next, ok := r.name(rd, off, "")
		if !ok || next != end {
			return nil, 0, false
		}
		switch h.Rrtype {
		case dns.TypeNS:
			return &dns.NS{Hdr: h, Ns: target}, end, true
		case dns.TypeCNAME:
			return &dns.CNAME{Hdr: h, Target: target}, end, true
		}
		return &dns.DNAME{Hdr: h, Target: target}, end, true
	case dns.TypeSOA:
		if h.Rdlength == 0 {
			return nil, 0, false
		}
		mname, p, ok := r.name(rd, off, "")
		if !ok || p >= end {
			return nil, 0, false
		}
		rname, p, ok := r.name(rd, p, "")
		if !ok || p+20 != end {
			return nil, 0, false
		}
		return &dns.SOA{Hdr: h, Ns: mname, Mbox: rname, Serial: binary.BigEndian.Uint32(rd[p:]), Refresh: binary.BigEndian.Uint32(rd[p+4:]),
			Retry: binary.BigEndian.Uint32(rd[p+8:]), Expire: binary.BigEndian.Uint32(rd[p+12:]), Minttl: binary.BigEndian.Uint32(rd[p+16:])}, end, true
	case dns.TypeOPT:
		if !additional || h.Rdlength != 0 {
			return nil, 0, false
		}
		opt.Hdr = h
		return opt, end, true
	}
	return nil, 0, false
}
