package recursor

import (
	"encoding/hex"
	"errors"
	"slices"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/wire"
)

const rcodeServFail = dns.RcodeServerFailure

// response builds the response to query (a client's query, which parsed)
// from a resolution's result: the question as the client wrote it, RA
// set, the answer and authority of the result (without their DNSSEC
// records unless the client set DO), the client's OPT echoed
// with our payload size and its DO bit, AD on data validated Secure, a
// SERVFAIL for Bogus data unless the client set CD, on a failure an EDE saying why
// (RFC 8914) and on a stale answer EDE 3, and TC when it does not fit limit, the client's (RFC 2181
// §9: the client then asks over TCP). nil when the query does not
// unpack (it parsed once: never). The response is written in dst's array
// when it is made the common way (quickResponse) and fits there, else it
// is a new slice.
func (r *Recursor) response(dst, query []byte, limit int, res *resolve.Result, err error) []byte {
	if msg, ok := r.quickResponse(dst, query, limit, res, err); ok {
		return msg
	}
	return r.packedResponse(query, limit, res, err)
}

// minResponseBuf is the least room quickResponse packs a response in:
// RFC 1035 §2.3.4's 512 bytes, which most responses fit. A larger
// response takes a larger buffer, which a flight keeps for its next responses
// (up to maxKeptBytes).
const minResponseBuf = dns.MinMsgSize

// quickResponse is response for the common case, the one response
// took nearly all its time on: a response that fits limit without
// compression (which response then sends uncompressed too: miekg's
// Truncate turns compression off for a message that fits without it).
// It writes the same bytes, without unpacking the query into a dns.Msg
// and without a second message for the response: the header, the
// question as the client wrote it (copied, wire.Query tells where it
// ends), the answer and authority sections as miekg packs them, and the
// OPT record by hand. ok is false when the response does not fit, or
// anything else is out of the ordinary (an rcode that needs EDNS's
// extended bits, a query that does not parse): response then builds it
// the general way. msg is written in dst's array when it has room
// (minResponseBuf at least), else in a new one; dst must not overlap
// query.
func (r *Recursor) quickResponse(dst, query []byte, limit int, res *resolve.Result, err error) (msg []byte, ok bool) {
	var q wire.Query
	if pr, _ := q.Parse(query); pr != wire.Answer || res.Rcode < 0 || res.Rcode > 0xF {
		return nil, false
	}
	cd := q.Flags&wire.FlagCD != 0
	flags := wire.ReplyFlags(q.Flags) | wire.FlagRA
	rcode := res.Rcode
	// RFC 4035 §3.2.3, RFC 6840 §5.7: AD on data validated Secure, to a
	// client that set DO or AD.
	if res.Security == cache.Secure && (q.DO || q.Flags&wire.FlagAD != 0) {
		flags |= wire.FlagAD
	}
	var sections dns.Msg
	if q.DO {
		sections.Answer, sections.Ns = res.Answer, res.Authority
	} else {
		// RFC 4035 §3.2.1: the RRSIG, NSEC and NSEC3 records the
		// resolution kept go only to a client that set DO.
		sections.Answer, sections.Ns = res.WithoutDNSSEC(q.QType)
	}
	bogus := res.Security == cache.Bogus && !cd
	if bogus {
		// RFC 4035 §5.5: bogus data is not given, but to a client that
		// set CD (§3.2.2: it validates for itself).
		rcode, sections.Answer, sections.Ns = rcodeServFail, nil, nil
	}
	// The options of the OPT record, in the order response adds them.
	var nsid []byte
	var edeCode uint16
	var edeText string
	hasEDE := false
	if q.EDNS {
		if r.nsid != nil && q.NSID {
			// RFC 5001 §2.2: the identifier, to a client that asked.
			nsid = r.nsid
		}
		hasEDE = true
		switch {
		case bogus:
			// RFC 8914: why the data was bogus.
			edeCode, edeText = res.EDE, res.Why
		case res.Rcode == rcodeServFail:
			edeCode, edeText = edeParts(err)
		case res.Security == cache.Insecure && res.EDE == wire.EDEUnsupportedNSEC3Iterations:
			// RFC 9276 §3.2: an answer made insecure by NSEC3
			// iterations above the limit says so with EDE 27.
			edeCode, edeText = res.EDE, res.Why
		case res.Stale:
			// RFC 8767 §4, RFC 8914 §4.4: an answer past its TTL,
			// given because no authority answered.
			edeCode = dns.ExtendedErrorCodeStaleAnswer
		default:
			hasEDE = false
		}
	}
	question := query[wire.HeaderLen:q.QuestionEnd]
	optLen := 0
	if q.EDNS {
		optLen = 11
		if nsid != nil {
			optLen += 4 + len(nsid)
		}
		if hasEDE {
			optLen += 4 + 2 + len(edeText)
		}
	}
	// The answer and authority sections, uncompressed, are packed
	// straight into dst's array where they go in the message: after a
	// header (whose counts are all this takes from it) that PackBuffer
	// writes len(question) bytes in, where the message's header and
	// question are then written over it. dst is a flight's buffer, kept
	// with the flight (mesh.answer). A 64 KiB buffer from a sync.Pool
	// cost a copy of the sections (145 of BenchmarkDeferred's 3,120
	// instructions per response), a buffer live per P and one in the
	// pool's victim cache, and one allocated anew when a P had built no
	// response for two GC cycles.
	if cap(dst) < minResponseBuf {
		dst = make([]byte, 0, minResponseBuf)
	}
	room := dst[len(question):cap(dst)]
	packed, perr := sections.PackBuffer(room)
	if perr != nil || len(packed) < wire.HeaderLen {
		return nil, false
	}
	// The header, the question, the sections, the OPT record.
	n := len(question) + len(packed)
	size := n + optLen
	if size > max(limit, dns.MinMsgSize) || optLen > 11+0xFFFF {
		return nil, false
	}
	ar := byte(0)
	if q.EDNS {
		ar = 1
	}
	// The header, its counts read before it is written over them.
	header := [wire.HeaderLen]byte{byte(q.ID >> 8), byte(q.ID), byte(flags >> 8), byte(flags) | byte(rcode), 0, 1,
		packed[6], packed[7], packed[8], packed[9], // ANCOUNT, NSCOUNT
		0, ar}
	if &packed[0] != &room[0] {
		// dst had no room for the sections: PackBuffer packed them
		// into an array of its own. One with room for them all and
		// the byte more PackBuffer asks for (the next use then packs
		// in place), the sections copied where they go.
		dst = make([]byte, 0, size+1)
		copy(dst[wire.HeaderLen+len(question):n], packed[wire.HeaderLen:])
	}
	msg = slices.Grow(dst[:n], optLen)
	copy(msg, header[:])
	copy(msg[wire.HeaderLen:], question)
	if q.EDNS {
		// RFC 6891 §6.1.2-3: the root, TYPE OPT, our payload size as
		// CLASS, then extended rcode 0, version 0 and DO as the TTL.
		var do byte
		if q.DO {
			do = 0x80
		}
		rdlen := optLen - 11
		msg = append(msg, 0, 0, wire.TypeOPT, byte(r.payload>>8), byte(r.payload), 0, 0, do, 0, byte(rdlen>>8), byte(rdlen))
		if nsid != nil {
			msg = append(msg, 0, wire.OptionNSID, byte(len(nsid)>>8), byte(len(nsid)))
			msg = append(msg, nsid...)
		}
		if hasEDE {
			l := 2 + len(edeText)
			msg = append(msg, 0, wire.OptionEDE, byte(l>>8), byte(l), byte(edeCode>>8), byte(edeCode))
			msg = append(msg, edeText...)
		}
	}
	return msg, true
}

// packedResponse is response through miekg/dns: unpack the query, make
// the response as a dns.Msg, truncate it to limit, pack it.
func (r *Recursor) packedResponse(query []byte, limit int, res *resolve.Result, err error) []byte {
	var q dns.Msg
	if q.Unpack(query) != nil || len(q.Question) != 1 {
		return nil
	}
	m := new(dns.Msg)
	m.SetReply(&q)
	m.RecursionAvailable = true
	m.Rcode = res.Rcode
	m.Answer = res.Answer
	m.Ns = res.Authority
	do := q.IsEdns0() != nil && q.IsEdns0().Do()
	// RFC 4035 §3.2.3, RFC 6840 §5.7: AD on data validated Secure, to a
	// client that set DO or AD.
	m.AuthenticatedData = res.Security == cache.Secure && (do || q.AuthenticatedData)
	if opt := q.IsEdns0(); opt == nil || !opt.Do() {
		// RFC 4035 §3.2.1: the RRSIG, NSEC and NSEC3 records the
		// resolution kept go only to a client that set DO.
		m.Answer, m.Ns = res.WithoutDNSSEC(q.Question[0].Qtype)
	}
	bogus := res.Security == cache.Bogus && !q.CheckingDisabled
	if bogus {
		// RFC 4035 §5.5: bogus data is not given, but to a client that
		// set CD (§3.2.2: it validates for itself).
		m.Rcode, m.Answer, m.Ns = rcodeServFail, nil, nil
	}
	m.Compress = true
	if opt := q.IsEdns0(); opt != nil {
		m.SetEdns0(uint16(r.payload), opt.Do())
		if r.nsid != nil && hasNSID(opt) {
			// RFC 5001 §2.2: the identifier, to a client that asked.
			m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_NSID{Code: dns.EDNS0NSID, Nsid: hex.EncodeToString(r.nsid)})
		}
		switch {
		case bogus:
			// RFC 8914: why the data was bogus.
			m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_EDE{InfoCode: res.EDE, ExtraText: res.Why})
		case res.Rcode == rcodeServFail:
			m.IsEdns0().Option = append(m.IsEdns0().Option, ede(err))
		case res.Security == cache.Insecure && res.EDE == wire.EDEUnsupportedNSEC3Iterations:
			// RFC 9276 §3.2: an answer made insecure by NSEC3
			// iterations above the limit says so with EDE 27.
			m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_EDE{InfoCode: res.EDE, ExtraText: res.Why})
		case res.Stale:
			// RFC 8767 §4, RFC 8914 §4.4: an answer past its TTL,
			// given because no authority answered.
			m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_EDE{InfoCode: dns.ExtendedErrorCodeStaleAnswer})
		}
	}
	m.Truncate(limit)
	msg, perr := m.Pack()
	if perr != nil {
		return nil
	}
	return msg
}

// hasNSID reports whether opt asks for the NSID (RFC 5001 §2.1).
func hasNSID(opt *dns.OPT) bool {
	for _, o := range opt.Option {
		if o.Option() == dns.EDNS0NSID {
			return true
		}
	}
	return false
}

// ede is the Extended DNS Error of a failed resolution (RFC 8914): its
// reason's code and what failed as EXTRA-TEXT (resolve.Error.EDE).
func ede(err error) *dns.EDNS0_EDE {
	code, text := edeParts(err)
	return &dns.EDNS0_EDE{InfoCode: code, ExtraText: text}
}

// edeParts is ede's INFO-CODE and EXTRA-TEXT.
func edeParts(err error) (uint16, string) {
	var e *resolve.Error
	if errors.As(err, &e) {
		return e.EDE()
	}
	// Not a resolution's failure: the Recursor closing, say.
	return wire.EDEOther, ""
}

// errorResponse writes the response to the query w.q holds (parsed, or
// failed to with rcode) that carries no data: the header with ID and
// ReplyFlags, RA when ra, the question when it parsed, and the OPT
// (with the extended rcode's upper bits, and an EDE of infoCode when it
// is not 0) when the query had one.
func (w *Worker) errorResponse(pkt, out []byte, rcode int, ra bool, infoCode uint16) []byte {
	q, b := &w.q, &w.b
	b.Reset(out, 65535)
	flags := wire.ReplyFlags(q.Flags)
	if ra {
		flags |= wire.FlagRA
	}
	b.Header(q.ID, flags)
	ext := b.ErrorReply(pkt, q, flags, rcode)
	if q.EDNS || ext != 0 {
		var nsid []byte
		if q.NSID {
			nsid = w.r.nsid
		}
		b.OPT(uint16(w.r.payload), ext, q.DO, nsid)
		if infoCode != 0 {
			b.EDE(infoCode)
		}
	}
	return b.Finish()
}
