package auth

import (
	"encoding/binary"
	"net/netip"

	"github.com/tern-dns/tern/internal/acl"
	"github.com/tern-dns/tern/internal/tsig"
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// UpdateRequest is a dynamic update (RFC 2136) the Responder accepted
// for a zone: its ACL allows the client (RFC 3007: its address and the
// TSIG key that signed it, verified) to update it.
type UpdateRequest struct {
	// Origin is the zone, as zone.NameString writes it.
	Origin string
	// Msg is the message as received, TSIG record included; it is the
	// handler's (a copy).
	Msg []byte
	// Client is who sent it (zero for in-process callers), Key the name
	// of the TSIG key that signed it ("" unsigned).
	Client netip.AddrPort
	Key    string
}

// maxUpdates bounds the UPDATEs waiting for their handler at a time:
// each holds a goroutine and its message, and the handler applies them
// one at a time per zone. One more is answered SERVFAIL, as a transfer
// past maxTransfers is, and the client tries again.
const maxUpdates = 64

// OnUpdate makes the Responder hand each UPDATE it accepts to fn and
// answer it with the RCODE fn returns (RFC 2136 §3.8), once fn returns:
// fn runs on a goroutine of its own, off the query path, so that it may
// wait for the change to reach the disk (the answer must not go out
// before). nil (the default) refuses every UPDATE.
func (r *Responder) OnUpdate(fn func(*UpdateRequest) int) {
	if fn == nil {
		r.updated.Store(nil)
		return
	}
	r.updated.Store(&fn)
}

// answerUpdate answers an UPDATE (RFC 2136 §3.1): a zone section of one
// name of type SOA (else FORMERR: Parse), naming a zone served here in
// class IN (else NOTAUTH), that has loaded (else SERVFAIL), from a client
// its ACL allows action update (else REFUSED, logged; a TSIG that does
// not verify was answered NOTAUTH before this, RFC 8945 §5.2). The
// update itself is the OnUpdate function's, whose RCODE the response
// carries: the header and zone section of the request, and an OPT
// record when it had one (§3.8), TSIG-signed when it was signed.
func (r *Responder) answerUpdate(s *Scratch, pkt, out []byte, tcp bool) []byte {
	q := &s.q
	if q.QType != wire.TypeSOA {
		return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeFormErr)
	}
	var z *zone.Zone
	if q.QClass == wire.ClassINET {
		z = r.zones.Load().set.Get(q.Name())
	}
	switch {
	case z == nil:
		return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeNotAuth)
	case z.Unavailable:
		return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeServFail)
	}
	req := &UpdateRequest{Origin: zone.NameString(z.Origin)}
	if s.req != nil {
		req.Client = s.req.Remote()
	}
	if s.tsig != nil {
		req.Key = s.tsig.KeyName()
	}
	fn := r.updated.Load()
	if !r.allowed(s, z, acl.Update) || fn == nil {
		if r.log != nil {
			attrs := []any{"zone", req.Origin, "client", req.Client.String()}
			if req.Key != "" {
				attrs = append(attrs, "key", req.Key)
			}
			r.log.Warn("UPDATE refused: no acl allows it", attrs...)
		}
		return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeRefused)
	}
	req.Msg = append([]byte(nil), pkt...)
	var signer *tsig.Signer
	if s.tsig != nil {
		signer = s.tsig.Signer()
	}
	payload := uint16(r.payload)
	parsed := *q
	if s.req == nil {
		// An in-process caller, without a transport to answer later
		// through: the update is made before Answer returns.
		resp := updateResponse(req.Msg, &parsed, payload, (*fn)(req))
		return append(out[:0], resp...)
	}
	if r.updates.Add(1) > maxUpdates {
		r.updates.Add(-1)
		return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeServFail)
	}
	reply := s.req.Defer()
	if reply == nil {
		r.updates.Add(-1)
		return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeServFail)
	}
	go func() {
		defer r.updates.Add(-1)
		defer reply.Close()
		resp := updateResponse(req.Msg, &parsed, payload, (*fn)(req))
		if signer != nil {
			var err error
			if resp, err = signer.Sign(resp); err != nil {
				return
			}
		}
		reply.Send(resp)
	}()
	return nil
}

// updateResponse is the response to the UPDATE pkt, parsed into q, with
// rcode (RFC 2136 §3.8): its ID, opcode and zone section, QR set, the
// other sections empty, and an OPT record (payload, the DO bit echoed)
// when it had one.
func updateResponse(pkt []byte, q *wire.Query, payload uint16, rcode int) []byte {
	b := make([]byte, q.QuestionEnd, q.QuestionEnd+11)
	copy(b, pkt[:q.QuestionEnd])
	binary.BigEndian.PutUint16(b[2:], wire.ReplyFlags(q.Flags)|uint16(rcode&0xF))
	binary.BigEndian.PutUint16(b[4:], 1)
	clear(b[6:wire.HeaderLen])
	if q.EDNS {
		b[11] = 1
		var do byte
		if q.DO {
			do = 0x80
		}
		// Owner root, TYPE OPT, CLASS the payload, TTL extended
		// RCODE 0, version 0, DO and zero flags, RDLENGTH 0.
		b = append(b, 0, 0, byte(wire.TypeOPT), byte(payload>>8), byte(payload), 0, 0, do, 0, 0, 0)
	}
	return b
}
