package auth

import (
	"errors"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/acl"
	"github.com/tern-dns/tern/internal/tsig"
	"github.com/tern-dns/tern/internal/wire"
)

// Access is what decides who may do what with the zones beyond asking
// them questions: the TSIG keys the server shares with others, and each
// zone's ACL. It is published whole (SetAccess), as zones are.
type Access struct {
	// Keys are the TSIG keys; nil: none (a signed query gets BADKEY).
	Keys *tsig.Keyring
	// ACLs are the zones' rules, by origin in presentation form,
	// lowercase and fully qualified ("example.com."). A zone without
	// an entry allows nothing but queries; one with rules for
	// acl.Query answers only the clients they allow (by address).
	ACLs map[string]acl.List

	// query are the zones' query ACLs compiled (acl.List.QueryTable),
	// by origin in wire form; made by SetAccess.
	query map[string]*acl.Table
}

// SetAccess publishes new keys and ACLs; queries in flight finish with
// the ones they started with. The zones are published again with their
// query ACLs (and the response caches' answers forgotten).
func (r *Responder) SetAccess(a *Access) {
	r.publishing.Lock()
	defer r.publishing.Unlock()
	if a != nil {
		a.query = make(map[string]*acl.Table)
		for origin, l := range a.ACLs {
			t := l.QueryTable()
			if t == nil {
				continue
			}
			var buf [wire.MaxName]byte
			n, err := dns.PackDomainName(dns.CanonicalName(origin), buf[:], 0, nil, false)
			if err != nil {
				continue
			}
			a.query[string(buf[:n])] = t
		}
	}
	r.access.Store(a)
	r.zones.Store(r.publish(r.zones.Load().set, r.zones.Load()))
	r.gen.Add(1)
}

// queryTable returns the query ACL of the zone whose origin (wire form)
// is origin, nil when it has none (a nil a has none).
func (a *Access) queryTable(origin []byte) *acl.Table {
	if a == nil || len(a.query) == 0 {
		return nil
	}
	return a.query[string(origin)]
}

// keys returns the keyring being served, nil when there is none.
func (r *Responder) keys() *tsig.Keyring {
	if a := r.access.Load(); a != nil {
		return a.Keys
	}
	return nil
}

// answerSigned answers a query that carries a TSIG record (RFC 8945
// §5.2): verified first, answered NOTAUTH with the TSIG error when it
// fails (BADKEY and BADSIG unsigned, BADTIME and BADTRUNC signed), or
// dropped when its MAC's length is one no HMAC sends, else answered as
// the same query without TSIG would be and signed with its key. A
// signed answer over the client's size limit is replaced by a truncated
// one (TC, question only), signed too, so the client retries over TCP.
func (r *Responder) answerSigned(s *Scratch, res wire.ParseResult, rcode int, pkt, out []byte, tcp bool, a *Ahead) []byte {
	q := &s.q
	at := q.TSIG
	req, err := r.keys().Verify(pkt, at)
	if errors.Is(err, tsig.ErrDrop) {
		// RFC 8945 §5.2.2.1: a MAC of a length no HMAC sends is
		// dropped and logged.
		if r.log != nil {
			attrs := []any{"err", err}
			if s.req != nil {
				attrs = append(attrs, "client", s.req.Remote().String())
			}
			r.log.Warn("TSIG: query dropped", attrs...)
		}
		return nil
	}
	if err != nil {
		// The record's framing parsed but its RDATA does not.
		return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeFormErr)
	}
	var resp []byte
	if req.Error != 0 {
		// RFC 8945 §5.2: NOTAUTH, whatever the question.
		resp = r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeNotAuth)
	} else {
		q.TSIG, s.tsig = 0, req
		resp = r.answerParsed(s, res, rcode, pkt, out, tcp, a)
		s.tsig = nil
	}
	if resp == nil {
		return nil
	}
	signed, err := req.Signer().Sign(resp)
	if err != nil {
		return nil
	}
	limit := 65535
	if !tcp {
		limit = r.udpLimit(q)
	}
	if len(signed) > limit {
		resp = r.headerOnly(s, pkt, out, tcp, wire.FlagTC, 0)
		if signed, err = req.Signer().Sign(resp); err != nil {
			return nil
		}
	}
	return append(out[:0], signed...)
}

// headerOnly writes into out a response to s's query of the header (with
// flags and rcode), the question and the OPT record when the query had
// one.
func (r *Responder) headerOnly(s *Scratch, pkt, out []byte, tcp bool, flags uint16, rcode int) []byte {
	q := &s.q
	limit := 65535
	if !tcp {
		limit = r.udpLimit(q)
	}
	s.b.Reset(out, limit)
	s.invalid = false
	flags |= wire.ReplyFlags(q.Flags)
	s.b.Header(q.ID, flags)
	return r.errorResponse(s, pkt, flags, rcode)
}
