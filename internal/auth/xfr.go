package auth

import (
	"encoding/binary"
	"errors"
	"log/slog"
	"net/netip"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/acl"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/tsig"
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// xfrMessage is the size an AXFR message is filled to (a record that does
// not fit an empty one gets up to 65535 bytes). Knot fills each message to
// 64 KiB; at 16 KiB a stream buffers a quarter of that per transfer,
// while the messages are still large enough that the per-message costs
// (a write, a TSIG's HMAC finalisation) stay small against the records'.
const xfrMessage = 16 << 10

// maxTransfers bounds the transfers out at a time (BIND's transfers-out
// is 10 by default): each holds a goroutine and a message buffer, and an
// allowed client could otherwise pipeline any number on one connection.
// One more is answered SERVFAIL, as Knot answers a transfer it cannot
// start, and the client tries again later.
const maxTransfers = 32

// errRecordTooLarge stops a transfer of a record that does not fit a
// message by itself.
var errRecordTooLarge = errors.New("a record too large for a message")

// isTransfer reports whether qtype is AXFR or IXFR, in one comparison:
// the plain query path pays nothing more for transfers.
func isTransfer(qtype uint16) bool { return qtype-wire.TypeIXFR <= wire.TypeAXFR-wire.TypeIXFR }

// answerTransfer answers an AXFR or IXFR query (RFC 5936, RFC 1995):
// for a zone served here (the question's name its apex, else NOTAUTH, as
// Knot answers) that has loaded (else SERVFAIL), from a client its ACL
// allows a transfer (else REFUSED). Over UDP, AXFR gets NOTIMP (RFC 5936
// §4.2 leaves UDP AXFR undefined; Knot answers NOTIMP) and IXFR the
// zone's SOA alone (RFC 1995 §2: the client then asks over TCP). Over TCP
// the zone is streamed from another goroutine through the request's
// deferred Reply, and answerTransfer returns nil.
func (r *Responder) answerTransfer(s *Scratch, pkt, out []byte, tcp bool) []byte {
	q := &s.q
	if q.QClass != wire.ClassINET && q.QClass != wire.ClassANY {
		return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeRefused)
	}
	if !tcp && q.QType == wire.TypeAXFR {
		return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeNotImp)
	}
	z := r.zones.Load().set.Get(q.Name())
	switch {
	case z == nil:
		return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeNotAuth)
	case z.Unavailable:
		return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeServFail)
	case !r.transferAllowed(s, z):
		return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeRefused)
	}
	ixfr := q.QType == wire.TypeIXFR
	var serial uint32
	if ixfr {
		var ok bool
		serial, ok = ixfrSerial(pkt)
		if !ok {
			// RFC 1995 §3: the query's authority section holds the
			// client's SOA; without it the query is malformed.
			return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeFormErr)
		}
		// RFC 1995 §2: over UDP, and whenever the client is as new as
		// we are (RFC 1982 order), the answer is the SOA alone.
		if !tcp || wire.SerialCompare(z.Serial, serial) <= 0 {
			return r.soaOnly(s, pkt, out, tcp, z)
		}
		// The differences since serial, from the journal, or when it
		// has none the whole zone, as AXFR sends it (RFC 1995 §4): the
		// stream finds out which (xfrStream.difference), off the
		// query path.
	}
	if s.req == nil || r.transfers.Add(1) > maxTransfers {
		// Too many at once, or an in-process caller without a
		// transport to stream to.
		if s.req != nil {
			r.transfers.Add(-1)
		}
		return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeServFail)
	}
	reply := s.req.Defer()
	if reply == nil {
		r.transfers.Add(-1)
		return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeServFail)
	}
	st := &xfrStream{
		z:        z,
		id:       q.ID,
		flags:    wire.ReplyFlags(q.Flags) | wire.FlagAA,
		q:        *q,
		question: append([]byte(nil), pkt[wire.HeaderLen:q.QuestionEnd]...),
		edns:     q.EDNS,
		do:       q.DO,
		payload:  uint16(r.payload),
		reply:    reply,
		log:      r.log,
		ixfr:     ixfr,
		from:     serial,
		journals: r.journals.Load(),
	}
	if s.tsig != nil {
		st.signer = s.tsig.Signer()
		st.key = s.tsig.KeyName()
	}
	if s.req != nil {
		st.client = s.req.Remote()
	}
	go func() {
		defer r.transfers.Add(-1)
		st.run()
	}()
	return nil
}

// transferAllowed reports whether z's ACL allows s's query a transfer:
// from its client's address, signed with its key (if any).
func (r *Responder) transferAllowed(s *Scratch, z *zone.Zone) bool {
	return r.allowed(s, z, acl.Transfer)
}

// allowed reports whether the zone's ACL allows the client of s's
// query (its address and TSIG key) action.
func (r *Responder) allowed(s *Scratch, z *zone.Zone, action acl.Action) bool {
	a := r.access.Load()
	if a == nil {
		return false
	}
	l, _ := a.ACLs.Get(zone.NameString(z.Origin))
	if len(l) == 0 {
		return false
	}
	var key string
	if s.tsig != nil {
		key = s.tsig.KeyName()
	}
	var addr netip.Addr // no client known: only rules without addresses match
	if s.req != nil {
		addr = s.req.Remote().Addr()
	}
	return l.Allow(addr, key, action) != nil
}

// ixfrSerial reads the client's serial from the SOA in an IXFR query's
// authority section (RFC 1995 §3).
func ixfrSerial(pkt []byte) (uint32, bool) {
	var m dns.Msg
	if err := m.Unpack(pkt); err != nil || len(m.Ns) != 1 {
		return 0, false
	}
	soa, ok := m.Ns[0].(*dns.SOA)
	if !ok {
		return 0, false
	}
	return soa.Serial, true
}

// soaOnly answers with z's SOA record alone in the answer section.
func (r *Responder) soaOnly(s *Scratch, pkt, out []byte, tcp bool, z *zone.Zone) []byte {
	q := &s.q
	limit := 65535
	if !tcp {
		limit = r.udpLimit(q)
	}
	b := &s.b
	b.Reset(out, limit)
	s.invalid = false
	flags := wire.ReplyFlags(q.Flags) | wire.FlagAA
	b.Header(q.ID, flags)
	b.Question(pkt[wire.HeaderLen:q.QuestionEnd], q)
	if q.EDNS {
		b.SetLimit(limit - r.optLen(q))
	}
	b.RRAt(wire.HeaderLen, firstRecord(z.SOA.Wire))
	b.CountAnswer(1)
	return r.finish(s, 0)
}

// firstRecord is the first record of an RRset's wire form.
func firstRecord(w []byte) []byte {
	return w[:10+int(binary.BigEndian.Uint16(w[8:]))]
}

// xfrStream is one AXFR (or IXFR answered in full) being sent: the zone
// version it started with, whole, whatever is published meanwhile (RFC
// 5936 §2.2: the transfer is of one version), in messages of xfrMessage
// bytes, each built, signed and sent before the next, so that a zone of
// any size takes one message's memory.
type xfrStream struct {
	z     *zone.Zone
	id    uint16
	flags uint16
	// q is the query, parsed (its name is the question's, lowercased,
	// for compression), and question the question as the client wrote it.
	q        wire.Query
	question []byte
	edns, do bool
	payload  uint16
	signer   *tsig.Signer // nil: unsigned
	reply    *server.Reply
	log      *slog.Logger
	// client and key say who asked, for the log.
	client netip.AddrPort
	key    string
	// ixfr: an IXFR; from is the client's serial, journals where the
	// differences since are found (nil: none), and incremental is set
	// when they were found and sent.
	ixfr        bool
	from        uint32
	journals    *journalsBox
	incremental bool

	b        wire.Builder
	buf      []byte
	records  int // in the message being built
	messages int
	total    int // records sent
	bytes    int
	err      error
}

// run sends the transfer: for an IXFR the differences since the client's
// serial when the journal has them, else the whole zone; then logs it.
func (st *xfrStream) run() {
	began := time.Now()
	defer st.reply.Close()
	st.buf = make([]byte, 0, xfrMessage+1024)
	st.start()
	z := st.z
	if d := st.difference(); d != nil {
		st.incremental = true
		st.sendDifference(d)
	} else {
		st.sendZone()
	}
	st.flush()
	if st.log == nil {
		return
	}
	args := []any{"zone", zone.NameString(z.Origin), "serial", z.Serial, "client", st.client.String(), "key", st.key,
		"messages", st.messages, "records", st.total, "bytes", st.bytes, "took", time.Since(began).Round(time.Millisecond)}
	what := "AXFR out"
	switch {
	case st.incremental:
		what = "IXFR out"
		args = append(args, "from", st.from)
	case st.ixfr:
		what = "IXFR out, the whole zone"
		args = append(args, "from", st.from)
	}
	if st.err != nil {
		st.log.Warn(what+" broken off", append(args, "err", st.err)...)
		return
	}
	st.log.Info(what, args...)
}

// sendZone sends the whole zone: the SOA first, every RRset of every node
// (with its RRSIGs), the NSEC3 owners', and the SOA again (RFC 5936 §2.2).
func (st *xfrStream) sendZone() {
	z := st.z
	soa := firstRecord(z.SOA.Wire)
	st.add(z.Origin, soa)
	if sigs, ok := z.SOA.Sigs(); ok {
		st.addSet(z.Origin, &sigs)
	}
	z.Nodes(func(n *zone.Node) {
		for i := range n.RRsets {
			rs := &n.RRsets[i]
			if rs.Type == wire.TypeSOA && n == z.Apex {
				continue
			}
			st.addSet(n.Name, rs)
			if sigs, ok := rs.Sigs(); ok {
				st.addSet(n.Name, &sigs)
			}
		}
	})
	// Every NSEC3 owner, chain or not (zone.Zone.NSEC3Owners): the
	// records a zone file holds, as the journal's differences count them.
	for _, n := range z.NSEC3Owners() {
		for i := range n.RRsets {
			st.addSet(n.Name, &n.RRsets[i])
			if sigs, ok := n.RRsets[i].Sigs(); ok {
				st.addSet(n.Name, &sigs)
			}
		}
	}
	st.add(z.Origin, soa)
}

// addSet adds every record of rs, owned by owner.
func (st *xfrStream) addSet(owner []byte, rs *zone.RRset) {
	rs.Each(func(tail []byte) { st.add(owner, tail) })
}

// start begins a message: header, question, room for the OPT record.
func (st *xfrStream) start() {
	b := &st.b
	b.Reset(st.buf, xfrMessage)
	b.Header(st.id, st.flags)
	b.Question(st.question, &st.q)
	if st.edns {
		b.SetLimit(xfrMessage - 11)
	}
	st.records = 0
}

// add writes one record to the message, sending the message first when
// the record does not fit.
func (st *xfrStream) add(owner, tail []byte) {
	if st.err != nil || st.put(owner, tail) {
		return
	}
	if st.records > 0 {
		st.flush()
		st.start()
		if st.put(owner, tail) {
			return
		}
	}
	// A record larger than a message's share: alone in a message of
	// its own, up to DNS's limit less the OPT and TSIG records' room.
	st.b.SetLimit(65535 - 11 - 400)
	if !st.put(owner, tail) {
		st.err = errRecordTooLarge
		return
	}
	st.flush()
	st.start()
}

// put writes one record if it fits the message, and reports whether it
// did.
func (st *xfrStream) put(owner, tail []byte) bool {
	b := &st.b
	m := b.Mark()
	b.RR(owner, tail)
	b.CountAnswer(1)
	if b.Overflow() {
		b.Rollback(m)
		return false
	}
	st.records++
	return true
}

// flush sends the message being built, with the OPT record and the TSIG.
func (st *xfrStream) flush() {
	if st.err != nil {
		return
	}
	b := &st.b
	if st.edns {
		b.OPT(st.payload, 0, st.do, nil)
	}
	msg := b.Finish()
	if st.signer != nil {
		var err error
		if msg, err = st.signer.Sign(msg); err != nil {
			st.err = err
			return
		}
	}
	st.messages++
	st.total += st.records
	st.bytes += len(msg)
	st.err = st.reply.Send(msg)
}
