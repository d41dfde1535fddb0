package auth

import (
	"github.com/tern-dns/tern/internal/acl"
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// OnNotify makes the Responder call fn with the origin of each NOTIFY
// (RFC 1996) it accepts: for a zone served here, from a client the
// zone's ACL allows notify. fn must not block (it runs on the query
// path's goroutine); nil (the default) answers every NOTIFY NOTIMP.
func (r *Responder) OnNotify(fn func(origin string)) {
	if fn == nil {
		r.notified.Store(nil)
		return
	}
	r.notified.Store(&fn)
}

// answerNotify answers a NOTIFY: RFC 1996 §3.7's "IN SOA" question of a
// zone served here (else NOTAUTH, as Knot answers), from a client its ACL
// allows (else REFUSED, logged), is acknowledged with the question
// echoed and AA (§4.7), and the OnNotify function told.
func (r *Responder) answerNotify(s *Scratch, pkt, out []byte, tcp bool) []byte {
	q := &s.q
	fn := r.notified.Load()
	if fn == nil || q.QType != wire.TypeSOA || (q.QClass != wire.ClassINET && q.QClass != wire.ClassANY) {
		return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeNotImp)
	}
	z := r.zones.Load().set.Get(q.Name())
	if z == nil {
		return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeNotAuth)
	}
	origin := zone.NameString(z.Origin)
	if !r.allowed(s, z, acl.Notify) {
		attrs := []any{"zone", origin}
		if s.req != nil {
			attrs = append(attrs, "client", s.req.Remote().String())
		}
		if s.tsig != nil {
			attrs = append(attrs, "key", s.tsig.KeyName())
		}
		if r.log != nil {
			r.log.Warn("NOTIFY refused: no acl allows it", attrs...)
		}
		return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeRefused)
	}
	(*fn)(origin)
	return r.headerOnly(s, pkt, out, tcp, wire.FlagAA, 0)
}
