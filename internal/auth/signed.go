package auth

import (
	"errors"

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
	// an entry allows nothing.
	ACLs map[string]acl.List
}

// SetAccess publishes new keys and ACLs; queries in flight finish with
// the ones they started with.
func (r *Responder) SetAccess(a *Access) { r.access.Store(a) }

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
