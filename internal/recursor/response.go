package recursor

import (
	"encoding/hex"
	"errors"

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
// unpack (it parsed once: never).
func (r *Recursor) response(query []byte, limit int, res *resolve.Result, err error) []byte {
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
	var e *resolve.Error
	if errors.As(err, &e) {
		code, text := e.EDE()
		return &dns.EDNS0_EDE{InfoCode: code, ExtraText: text}
	}
	// Not a resolution's failure: the Recursor closing, say.
	return &dns.EDNS0_EDE{InfoCode: wire.EDEOther}
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
