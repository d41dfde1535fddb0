// Package auth answers queries from compiled zones: the authoritative
// answer algorithm of RFC 1034 §4.3.2 with wildcards (RFC 4592), DNAME
// (RFC 6672), negative answers (RFC 2308), EDNS (RFC 6891) and the CHAOS
// identity names.
//
// The answer path touches only byte slices and immutable zone data: it
// takes no lock and allocates nothing.
package auth

import (
	"encoding/binary"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/tsig"
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// MaxChain bounds the CNAME and DNAME links followed for one query, which
// also makes loops harmless.
const MaxChain = 12

// DefaultUDPPayload is the EDNS payload size advertised and honoured by
// default: the DNS flag day 2020 value, which avoids IP fragmentation.
const DefaultUDPPayload = 1232

// Options configure a Responder.
type Options struct {
	// UDPPayload is the largest UDP response sent to EDNS clients and the
	// size advertised in the OPT record; 0 means DefaultUDPPayload.
	UDPPayload int
	// NSID is the RFC 5001 server identifier; nil disables it.
	NSID []byte
	// Chaos enables the CHAOS class identity answers.
	Chaos bool
	// ID answers id.server. and hostname.bind.; Version answers
	// version.server. and version.bind. An empty value is REFUSED.
	ID, Version string
	// Log receives what happens off the query path (zone transfers);
	// nil: nothing is logged.
	Log *slog.Logger
	// Metrics gives each zone the index its queries count under
	// (Worker.CountIn); nil: none.
	Metrics *metrics.Set
}

// Responder answers queries from the zones published to it.
type Responder struct {
	zones atomic.Pointer[published]
	// notified is called with each NOTIFY accepted (OnNotify); nil:
	// NOTIFY is not implemented.
	notified atomic.Pointer[func(origin string)]
	// updated is handed each UPDATE accepted (OnUpdate); nil: UPDATEs
	// are refused. updates counts those waiting for it (maxUpdates).
	updated atomic.Pointer[func(*UpdateRequest) int]
	updates atomic.Int32
	// access holds the TSIG keys and the zones' ACLs (SetAccess); nil:
	// no keys, no transfers.
	access atomic.Pointer[Access]
	// transfers counts the transfers out being sent (maxTransfers).
	transfers atomic.Int32
	// journals are the differences IXFR sends (SetJournals); nil: none.
	journals atomic.Pointer[journalsBox]
	// gen counts publications, after each Store: a Cache tagged with an
	// older count holds answers from replaced zones.
	gen atomic.Uint64
	// publishing orders publications, each of which reuses what the one
	// before it prepared; queries never take it.
	publishing sync.Mutex
	payload    int
	log        *slog.Logger
	metrics    *metrics.Set
	nsid       []byte
	chaos      bool
	id         []byte // TXT RDATA, pre-encoded
	version    []byte
}

// New returns a Responder serving zones.
func New(zones *zone.Set, opt Options) *Responder {
	r := &Responder{payload: opt.UDPPayload, nsid: opt.NSID, chaos: opt.Chaos, log: opt.Log, metrics: opt.Metrics}
	if r.payload == 0 {
		r.payload = DefaultUDPPayload
	}
	r.payload = max(512, min(r.payload, 65535))
	r.id = txtRData(opt.ID)
	r.version = txtRData(opt.Version)
	if zones == nil {
		zones = zone.NewSet()
	}
	r.Publish(zones)
	return r
}

// Publish swaps in a new set of zones, after precomputing what their
// answers can share (for the zones it did not serve already). Queries in
// flight finish with the set they started with; the next ones see the new
// one, whole.
func (r *Responder) Publish(zones *zone.Set) {
	r.publishing.Lock()
	defer r.publishing.Unlock()
	r.zones.Store(r.publish(zones, r.zones.Load()))
	r.gen.Add(1)
}

// Zones returns the set being served.
func (r *Responder) Zones() *zone.Set { return r.zones.Load().set }

// Scratch is the per-worker state of the answer path, reused from query to
// query so that answering allocates nothing. It is not safe for concurrent
// use: give each worker its own.
type Scratch struct {
	q wire.Query
	b wire.Builder
	// sigs holds the RRSIG view of the RRset being written (a local
	// would escape through the writers' pointer parameters).
	sigs zone.RRset

	// name holds the current name of a CNAME/DNAME chain, lowercased, and
	// labels its label offsets.
	name   [wire.MaxName]byte
	labels [wire.MaxLabels]uint8
	tail   [wire.MaxName + 10]byte
	// addl are the RRsets whose Additional nodes follow the answer;
	// written marks which addresses went in, for their RRSIGs.
	addl    [8]*zone.RRset
	naddl   int
	written [4096]bool
	visited [MaxChain + 1]*zone.Node

	// DNSSEC state of the current answer: whether to add RRSIGs and
	// proofs, the NSEC/NSEC3 nodes already in the authority section, and
	// the wildcard answers whose proofs are still to be written.
	dnssec  bool
	proved  [maxProofs]*zone.Node
	nproved int
	wild    [MaxChain]wildProof
	nwild   int
	key     [wire.MaxKey]byte
	qend    int    // where the question ends in the response
	overTCP bool   // the query came over TCP
	out     []byte // a response buffer for precomputation
	hashBuf [2*wire.MaxName + 20]byte
	wname   [wire.MaxName + 2]byte
	// cache, when set, answers repeated UDP questions (see Cache).
	cache *Cache
	// invalid asks finish for an EDE option with INFO-CODE Invalid Data
	// (the question is in a zone that failed to load).
	invalid bool
	// tsig is the verified TSIG of the query being answered, set only
	// while answerSigned answers one (nil otherwise), for the ACL of a
	// transfer.
	tsig *tsig.Request
	// req is the request being answered, when a Worker answers one (nil
	// for callers of Answer): transfers need its client and its Reply.
	req *server.Request
	// zone is the metrics index of the zone the answer came from (0:
	// none), for the Worker's count.
	zone uint32
	// private is set when the answer came from a zone with a query
	// ACL: it depends on the client, so it is not cached.
	private bool
}

// BufferSize is the size of the response buffer Answer needs.
const BufferSize = 65535 + 512

// Answer answers the query in pkt, writing the response into out (which
// needs capacity BufferSize) and returning it, or nil when the packet gets
// no answer. tcp selects TCP's size limit instead of UDP's.
func (r *Responder) Answer(s *Scratch, pkt []byte, out []byte, tcp bool) []byte {
	res, rcode := s.q.Parse(pkt)
	return r.answerParsed(s, res, rcode, pkt, out, tcp, nil)
}

// answerParsed is Answer for pkt parsed into s.q with result res, rcode;
// a, when not nil, is the query's Ahead, with its cache key's hash.
func (r *Responder) answerParsed(s *Scratch, res wire.ParseResult, rcode int, pkt []byte, out []byte, tcp bool, a *Ahead) []byte {
	q := &s.q
	b := &s.b
	s.overTCP = tcp
	s.zone = 0
	s.private = false
	if res == wire.Drop {
		return nil
	}
	if q.TSIG != 0 {
		// RFC 8945: verified, answered, signed; off the plain path.
		return r.answerSigned(s, res, rcode, pkt, out, tcp, a)
	}
	if isTransfer(q.QType) && res == wire.Answer {
		// Before the cache: whether a transfer is allowed depends on
		// the client.
		return r.answerTransfer(s, pkt, out, tcp)
	}
	limit := 65535
	if !tcp {
		limit = r.udpLimit(q)
	}
	var (
		question []byte
		v        uint32
		h        uint64
	)
	c := s.cache
	if c != nil && !tcp && res == wire.Answer && q.Opcode == wire.OpcodeQuery {
		question, v = pkt[wire.HeaderLen:q.QuestionEnd], variant(q, limit)
		var hit []byte
		if a != nil && a.keyed {
			h = a.h
			hit = c.getHashed(r.gen.Load(), q, question, v, h, out)
		} else {
			hit, h = c.get(r.gen.Load(), q, question, v, out)
		}
		c.count(hit != nil)
		if hit != nil {
			s.zone = c.hitZone
			return hit
		}
	}
	b.Reset(out, limit)
	s.invalid = false
	flags := wire.ReplyFlags(q.Flags)
	b.Header(q.ID, flags)
	if res == wire.Error {
		if rcode == wire.RcodeNotImp && q.Opcode == wire.OpcodeNotify {
			// Off the query path: only errors come here.
			return r.answerNotify(s, pkt, out, tcp)
		}
		if rcode == wire.RcodeNotImp && q.Opcode == wire.OpcodeUpdate {
			return r.answerUpdate(s, pkt, out, tcp)
		}
		return r.errorResponse(s, pkt, flags, rcode)
	}
	b.Question(pkt[wire.HeaderLen:q.QuestionEnd], q)
	s.qend = b.Len()
	if q.EDNS {
		b.SetLimit(limit - r.optLen(q))
	}
	switch q.QClass {
	case wire.ClassINET, wire.ClassANY:
		// QCLASS * (RFC 1035 §3.2.5) matches our class IN data, as Knot
		// and NSD answer it.
		flags = r.answerIN(s, flags)
	case wire.ClassCHAOS:
		flags = r.answerChaos(s, flags)
	default:
		flags |= wire.RcodeRefused
	}
	b.SetFlags(flags)
	resp := r.finish(s, 0)
	if question != nil && !s.private {
		c.put(h, question, v, resp, s.zone)
	}
	return resp
}

// udpLimit is the largest UDP response to q: 512 without EDNS; with it,
// RFC 6891 §6.2.5: never less than 512, never more than we chose.
func (r *Responder) udpLimit(q *wire.Query) int {
	if !q.EDNS {
		return 512
	}
	return max(512, min(int(q.UDPSize), r.payload))
}

func (r *Responder) optLen(q *wire.Query) int {
	n := 11
	if q.NSID && r.nsid != nil {
		n += 4 + len(r.nsid)
	}
	return n
}

// finish appends the OPT record when the query had one and returns the
// message.
func (r *Responder) finish(s *Scratch, extRcode uint8) []byte {
	q := &s.q
	b := &s.b
	if q.EDNS {
		var nsid []byte
		if q.NSID {
			nsid = r.nsid
		}
		// RFC 3225 §3: the DO bit is copied into the response.
		b.OPT(uint16(r.payload), extRcode, q.DO, nsid)
		if s.invalid {
			// RFC 8914 §2: EDE is an EDNS option, so it is sent
			// only when the query had EDNS. optLen reserves no room
			// for its 6 bytes: it comes only with a SERVFAIL holding
			// nothing but the question and the OPT record.
			b.EDE(wire.EDEInvalidData)
		}
	}
	return b.Finish()
}

// errorResponse answers a query that failed to parse or is not supported.
func (r *Responder) errorResponse(s *Scratch, pkt []byte, flags uint16, rcode int) []byte {
	q := &s.q
	b := &s.b
	ext := b.ErrorReply(pkt, q, flags, rcode)
	if q.EDNS || ext != 0 {
		return r.finish(s, ext)
	}
	return b.Finish()
}

// answerIN answers a class IN query and returns the header flags.
func (r *Responder) answerIN(s *Scratch, flags uint16) uint16 {
	q := &s.q
	if q.QType == wire.TypeOPT {
		return flags | wire.RcodeFormErr
	}
	zones := r.zones.Load()
	name := q.Name()
	labels := s.labels[:q.Labels()]
	for i := range labels {
		labels[i] = uint8(q.SuffixOffset(i))
	}
	sz := zones.find(name, labels, 0)
	if sz == nil {
		// RFC 1034 §4.3.2 step 2: not authoritative; we do not recurse.
		return flags | wire.RcodeRefused
	}
	if q.QType == wire.TypeDS && len(sz.z.Origin) == len(name) {
		// RFC 4035 §3.1.4.1: DS lives on the parent side of a cut; when we
		// also serve the parent, answer from there.
		if p := zones.find(name, labels, 1); p != nil {
			sz = p
		}
	}
	s.zone = sz.metric
	if sz.query != nil {
		// The zone answers only the clients its query ACL allows (as
		// Knot's and BIND's allow-query), and its answers are not
		// cached: a hit is not checked.
		s.private = true
		if s.req == nil || !sz.query.Contains(s.req.Remote().Addr()) {
			return flags | wire.RcodeRefused
		}
	}
	if sz.z.Unavailable {
		// A configured zone that failed to load: RFC 1035 §4.1.1's
		// SERVFAIL ("a problem with the name server"), without AA, as
		// Knot answers it; REFUSED would say this server is not meant to
		// serve the zone at all. Knot 3.2 adds EDE 24 (Invalid Data),
		// without EXTRA-TEXT, when the query has EDNS; so do we.
		s.invalid = true
		return flags | wire.RcodeServFail
	}
	copy(s.name[:], name)
	return r.answerZone(s, sz, flags, len(name), len(labels))
}

// section is where put writes an RRset.
type section uint8

const (
	answerSec section = iota
	authoritySec
	additionalSec
)

// answerZone runs the lookup of RFC 1034 §4.3.2 step 3 for the name in
// s.name, following CNAME and DNAME links inside sz's zone.
func (r *Responder) answerZone(s *Scratch, sz *served, flags uint16, nameLen, nlabels int) uint16 {
	q := &s.q
	z := sz.z
	s.naddl, s.nproved, s.nwild = 0, 0, 0
	s.visited[0] = nil
	// RFC 4035 §3.1: DNSSEC records go only to clients that set DO.
	s.dnssec = q.DO && z.Signed
	flags |= wire.FlagAA
	ownerOff := wire.HeaderLen // the owner of the next answer, as a pointer; -1: write s.name
	for chain := 0; ; chain++ {
		name := s.name[:nameLen]
		res := lookup(z, name, s.labels[:nlabels], q.QType)
		switch res.kind {
		case kindReferral:
			if chain == 0 {
				flags &^= wire.FlagAA
				// The precomputed referral was written after a question
				// for the cut name: shift its pointers by the difference.
				if cut := res.node; int(cut.CutIndex) < len(sz.referrals) {
					ref := &sz.referrals[cut.CutIndex][s.do()]
					if ref.wire != nil && s.copyBlock(ref, nameLen-len(cut.Name)) {
						return flags
					}
				}
			}
			return r.referral(s, z, res.node, flags)
		case kindNXDomain:
			return r.negative(s, sz, res.node, kindNXDomain, flags|wire.RcodeNXDomain)
		case kindDNAME:
			if s.seen(res.node) {
				return r.done(s, z, flags)
			}
			rc, ok := r.dname(s, res.node, ownerOff, nameLen)
			if rc != 0 {
				return flags | uint16(rc)
			}
			if !ok {
				return flags | wire.FlagTC
			}
			if q.QType == wire.TypeCNAME {
				// The synthesized CNAME is the answer (RFC 6672 §3.1).
				return r.done(s, z, flags)
			}
		case kindFound, kindWildcard:
			n := res.node
			// A CNAME answers a CNAME or ANY question itself; for other
			// types the chain is followed (RFC 1034 §3.6.2), except for
			// RRSIG and NSEC, which live beside the CNAME at the alias
			// (RFC 4035 §2.5 requires them there), as Knot answers.
			cname := n.CNAME()
			if cname == nil || q.QType == wire.TypeCNAME || q.QType == wire.TypeANY ||
				q.QType == wire.TypeRRSIG || q.QType == wire.TypeNSEC {
				return r.positive(s, sz, n, res.kind, ownerOff, flags)
			}
			if s.seen(n) {
				// A loop: every link is in the answer already.
				return r.done(s, z, flags)
			}
			if !r.put(s, answerSec, cname, nil, ownerOff) {
				return flags | wire.FlagTC
			}
			if res.kind == kindWildcard && !s.queueWildcard(n) {
				return flags | wire.FlagTC
			}
			if !s.followCNAME(cname) {
				return r.done(s, z, flags)
			}
		}
		// The chain continues at s.name (set by followCNAME or dname).
		nameLen = wire.NameLen(s.name[:])
		nlabels = labelOffsets(s.name[:nameLen], s.labels[:])
		ownerOff = -1
		if chain+1 >= MaxChain || !wire.InZone(s.name[:nameLen], z.Origin) {
			// RFC 1034 §4.3.2 step 3a follows chains; out of the zone or
			// too long, we stop and the client continues.
			return r.done(s, z, flags)
		}
	}
}

// do is 1 when the answer carries DNSSEC records, else 0: the index of
// the precomputed blocks that match.
func (s *Scratch) do() int {
	if s.dnssec {
		return 1
	}
	return 0
}

// seen records n as visited in this chain and reports whether it was.
func (s *Scratch) seen(n *zone.Node) bool {
	for i := 0; i < len(s.visited) && s.visited[i] != nil; i++ {
		if s.visited[i] == n {
			return true
		}
	}
	for i := range s.visited {
		if s.visited[i] == nil {
			s.visited[i] = n
			if i+1 < len(s.visited) {
				s.visited[i+1] = nil
			}
			return false
		}
	}
	return true
}

// followCNAME sets s.name to the CNAME's target; false if it is malformed.
func (s *Scratch) followCNAME(set *zone.RRset) bool {
	rd := set.Wire[10:]
	n := wire.NameLen(rd)
	if n > len(rd) {
		return false
	}
	wire.Lower(s.name[:], rd[:n])
	return true
}

// positive writes the answer from node n (found, or the wildcard that
// synthesizes s.name) for the query type, or a NODATA.
func (r *Responder) positive(s *Scratch, sz *served, n *zone.Node, k kind, ownerOff int, flags uint16) uint16 {
	q := &s.q
	if k == kindWildcard && !s.queueWildcard(n) {
		// RFC 4035 §3.1.3.3: a wildcard answer proves the name itself
		// does not exist; RFC 4035 §3.1.1: no proof, no answer without TC.
		return flags | wire.FlagTC
	}
	wrote := false
	switch q.QType {
	case wire.TypeANY:
		for i := range n.RRsets {
			if !r.put(s, answerSec, &n.RRsets[i], nil, ownerOff) {
				return flags | wire.FlagTC
			}
			wrote = true
			if !s.overTCP {
				// RFC 8482 §4.2: over UDP one RRset is enough.
				break
			}
		}
	case wire.TypeRRSIG:
		var ok bool
		if wrote, ok = r.rrsigs(s, n, ownerOff); !ok {
			return flags | wire.FlagTC
		}
	default:
		if set := n.Get(q.QType); set != nil {
			if !r.put(s, answerSec, set, nil, ownerOff) {
				return flags | wire.FlagTC
			}
			wrote = true
		}
	}
	if !wrote {
		// RFC 2308 §2.2: NODATA, the name exists (an empty non-terminal
		// too, RFC 4592 §2.2.2) but has no data of this type.
		return r.negative(s, sz, n, k, flags)
	}
	return r.done(s, sz.z, flags)
}

// rrsigs answers a query for RRSIG at node n with the signatures of one
// covered type, the lowest at the name, over UDP and TCP, as Knot 3.2
// does: every signature at the name made a 41-byte query draw 905 bytes
// from a small signed zone, the largest amplification the server offered
// (RFC 8482 §4.2 answers ANY with one RRset for the same reason). The
// signatures are in the set they cover, or, when that set is absent, in
// the node's own RRSIG set (orphans). wrote reports whether there were
// any, ok that they fit.
func (r *Responder) rrsigs(s *Scratch, n *zone.Node, ownerOff int) (wrote, ok bool) {
	var signed *zone.RRset // the lowest type with signatures (sets are in type order)
	for i := range n.RRsets {
		if _, ok := n.RRsets[i].Sigs(); ok {
			signed = &n.RRsets[i]
			break
		}
	}
	orphans := n.Get(wire.TypeRRSIG)
	low := uint16(0xFFFF)
	if orphans != nil {
		low = lowestCovered(orphans)
	}
	if signed != nil && (orphans == nil || signed.Type < low) {
		s.sigs, _ = signed.Sigs()
		return true, r.putPlain(s, answerSec, &s.sigs, nil, ownerOff)
	}
	if orphans == nil {
		return false, true
	}
	return true, r.putCovering(s, orphans, low, ownerOff)
}

// lowestCovered returns the lowest type covered by the RRSIG set sigs.
func lowestCovered(sigs *zone.RRset) uint16 {
	low := uint16(0xFFFF)
	for w := sigs.Wire; len(w) >= 12; w = w[10+int(binary.BigEndian.Uint16(w[8:])):] {
		low = min(low, binary.BigEndian.Uint16(w[10:]))
	}
	return low
}

// putCovering writes the records of the RRSIG set sigs that cover type t
// into the answer section, owned by the pointer ownerOff or s.name.
func (r *Responder) putCovering(s *Scratch, sigs *zone.RRset, t uint16, ownerOff int) bool {
	b := &s.b
	m := b.Mark()
	n := 0
	for w := sigs.Wire; len(w) >= 10; {
		l := 10 + int(binary.BigEndian.Uint16(w[8:]))
		if l >= 12 && binary.BigEndian.Uint16(w[10:]) == t {
			if ownerOff < 0 {
				ownerOff = b.Len()
				b.RR(s.name[:wire.NameLen(s.name[:])], w[:l])
			} else {
				b.RRAt(ownerOff, w[:l])
			}
			n++
		}
		w = w[l:]
	}
	b.CountAnswer(n)
	if b.Overflow() {
		b.Rollback(m)
		return false
	}
	return true
}

// done ends an answer: the queued wildcard proofs, then the additional
// section.
func (r *Responder) done(s *Scratch, z *zone.Zone, flags uint16) uint16 {
	if !r.wildcardProofs(s, z) {
		return flags | wire.FlagTC
	}
	return r.additional(s, flags)
}

// negative writes the SOA into the authority section with the negative
// TTL of RFC 2308 §3 and, for DO queries in signed zones, the proof of
// RFC 4035 §3.1.3 or RFC 5155 §7.2. n is the closest encloser for
// NXDOMAIN, the node itself for NODATA, the wildcard for wildcard NODATA.
func (r *Responder) negative(s *Scratch, sz *served, n *zone.Node, k kind, flags uint16) uint16 {
	b := &s.b
	z := sz.z
	if !r.wildcardProofs(s, z) {
		return flags | wire.FlagTC
	}
	if z.NegSOA == nil {
		return flags
	}
	m := b.Mark()
	ok := true
	if neg := &sz.negative[s.do()]; neg.wire != nil && b.Len() == s.qend {
		// Nothing before it but the question: the precomputed SOA (and
		// its RRSIGs) fits, shifted from a question for the origin.
		ok = s.copyBlock(neg, len(s.q.Name())-len(z.Origin))
	} else {
		b.RR(z.Origin, z.NegSOA)
		b.CountAuthority(1)
		ok = !b.Overflow()
		if ok && s.dnssec {
			if sig := z.NegSOASigs; sig != nil {
				ok = r.putPlain(s, authoritySec, sig, z.Origin, -1)
			}
		}
	}
	if ok && s.dnssec {
		{
			ok = r.denial(s, z, n, k)
		}
	}
	if !ok {
		// RFC 4035 §3.1.1: no room for the proof means TC, not an
		// answer without it.
		b.Rollback(m)
		return flags | wire.FlagTC
	}
	return flags
}

// referral writes the NS set of the cut into the authority section, with
// DO its DS or the proof that there is none (RFC 4035 §3.1.4), and its
// glue into the additional section (RFC 1034 §4.3.2 step 3b).
func (r *Responder) referral(s *Scratch, z *zone.Zone, cut *zone.Node, flags uint16) uint16 {
	if !r.wildcardProofs(s, z) {
		return flags | wire.FlagTC
	}
	b := &s.b
	m := b.Mark()
	ns := cut.NS()
	ok := r.putPlain(s, authoritySec, ns, cut.Name, -1)
	if ok && s.dnssec {
		if ds := cut.Get(wire.TypeDS); ds != nil {
			ok = r.put(s, authoritySec, ds, cut.Name, -1)
		} else {
			ok = r.noDS(s, z, cut)
		}
	}
	if !ok {
		b.Rollback(m)
		return flags | wire.FlagTC
	}
	s.queueAdditional(ns)
	return r.additionalFor(s, cut, flags)
}

// put writes an RRset, and with DO its RRSIGs, into sec; the owner is a
// pointer to ownerOff, or owner, or s.name when owner is nil. It returns
// false, after rolling back, when the records do not fit.
func (r *Responder) put(s *Scratch, sec section, set *zone.RRset, owner []byte, ownerOff int) bool {
	b := &s.b
	m := b.Mark()
	if owner == nil && ownerOff < 0 {
		owner = s.name[:wire.NameLen(s.name[:])]
	}
	off := r.writeRecords(s, sec, set, owner, ownerOff)
	if s.dnssec {
		if sig, ok := set.Sigs(); ok {
			s.sigs = sig
			r.writeRecords(s, sec, &s.sigs, nil, off)
		}
	}
	if b.Overflow() {
		b.Rollback(m)
		return false
	}
	if sec != additionalSec {
		s.queueAdditional(set)
	}
	return true
}

// putPlain is put without the RRSIGs.
func (r *Responder) putPlain(s *Scratch, sec section, set *zone.RRset, owner []byte, ownerOff int) bool {
	b := &s.b
	m := b.Mark()
	if owner == nil && ownerOff < 0 {
		owner = s.name[:wire.NameLen(s.name[:])]
	}
	r.writeRecords(s, sec, set, owner, ownerOff)
	if b.Overflow() {
		b.Rollback(m)
		return false
	}
	return true
}

// writeRecords writes the records of set into sec and returns the offset
// of the owner name, for the records that follow to point at.
func (r *Responder) writeRecords(s *Scratch, sec section, set *zone.RRset, owner []byte, ownerOff int) int {
	b := &s.b
	w := set.Wire
	for len(w) >= 10 {
		n := 10 + int(binary.BigEndian.Uint16(w[8:]))
		if ownerOff >= 0 {
			b.RRAt(ownerOff, w[:n])
		} else {
			// Written once in full; later records point at it.
			ownerOff = b.Len()
			b.RR(owner, w[:n])
		}
		w = w[n:]
	}
	switch sec {
	case answerSec:
		b.CountAnswer(int(set.Count))
	case authoritySec:
		b.CountAuthority(int(set.Count))
	default:
		b.CountAdditional(int(set.Count))
	}
	return ownerOff
}

// queueAdditional remembers that the addresses of set's targets follow.
func (s *Scratch) queueAdditional(set *zone.RRset) {
	if len(set.Additional()) > 0 && s.naddl < len(s.addl) {
		s.addl[s.naddl] = set
		s.naddl++
	}
}

// additional writes the queued A and AAAA RRsets into the additional
// section. One that does not fit is left out and the next is tried, as
// Knot does: additional data is a courtesy (RFC 2181 §9), except the glue
// of a referral below its cut (RFC 9471 §3: "If message size constraints
// prevent the inclusion of all in-domain glue records over UDP, the server
// MUST set the TC flag"); cut is the referral's cut or nil.
func (r *Responder) additional(s *Scratch, flags uint16) uint16 {
	return r.additionalFor(s, nil, flags)
}

func (r *Responder) additionalFor(s *Scratch, cut *zone.Node, flags uint16) uint16 {
	s.eachAddress(func(k int, n *zone.Node, set *zone.RRset) {
		ok := r.putPlain(s, additionalSec, set, n.Name, -1)
		if !ok && cut != nil && (n.Cut == cut || n == cut) {
			flags |= wire.FlagTC
		}
		if k < len(s.written) {
			s.written[k] = ok
		}
	})
	if !s.dnssec {
		return flags
	}
	// The signatures go after all the addresses, as Knot places them:
	// RFC 4035 §3.1.1: "If space does not permit inclusion of both the
	// RRset and its associated RRSIG RRs, the name server MAY retain the
	// RRset while dropping the RRSIG RRs."
	s.eachAddress(func(k int, n *zone.Node, set *zone.RRset) {
		if k < len(s.written) && s.written[k] {
			if sig, ok := set.Sigs(); ok {
				s.sigs = sig
				r.putPlain(s, additionalSec, &s.sigs, n.Name, -1)
			}
		}
	})
	return flags
}

// eachAddress calls fn with the A and AAAA RRsets of every queued
// additional target, in order, each target once; k counts the calls.
func (s *Scratch) eachAddress(fn func(k int, n *zone.Node, set *zone.RRset)) {
	k := 0
	for i := 0; i < s.naddl; i++ {
		for _, n := range s.addl[i].Additional() {
			if s.dupAdditional(i, n) {
				continue
			}
			for _, t := range [2]uint16{wire.TypeA, wire.TypeAAAA} {
				if set := n.Get(t); set != nil {
					fn(k, n, set)
					k++
				}
			}
		}
	}
}

// dupAdditional reports whether node n is among the targets of the
// RRsets queued before the i-th (each RRset's own list has no duplicates).
func (s *Scratch) dupAdditional(i int, n *zone.Node) bool {
	for j := 0; j < i; j++ {
		for _, m := range s.addl[j].Additional() {
			if m == n {
				return true
			}
		}
	}
	return false
}

// dname writes the DNAME of node d and the CNAME it synthesizes for the
// current name (RFC 6672 §3.1), and sets s.name to the CNAME's target.
// It returns a nonzero rcode when the new name is too long (YXDOMAIN,
// RFC 6672 §2.2), and ok false when the answer does not fit.
func (r *Responder) dname(s *Scratch, d *zone.Node, ownerOff, nameLen int) (rcode int, ok bool) {
	b := &s.b
	set := d.DNAME()
	m := b.Mark()
	if !r.put(s, answerSec, set, d.Name, -1) {
		return 0, false
	}
	target := set.Wire[10:]
	target = target[:wire.NameLen(target)]
	prefix := nameLen - len(d.Name)
	newLen := prefix + len(target)
	if newLen > wire.MaxName {
		return wire.RcodeYXDomain, true
	}
	// The synthesized CNAME: owner is the current name, TTL the DNAME's;
	// it is not signed (RFC 6672 §5.3.1).
	t := s.tail[:]
	copy(t, set.Wire[:10])
	binary.BigEndian.PutUint16(t, wire.TypeCNAME)
	binary.BigEndian.PutUint16(t[8:], uint16(newLen))
	copy(t[10:], s.name[:prefix])
	copy(t[10+prefix:], target)
	if ownerOff >= 0 {
		b.RRAt(ownerOff, t[:10+newLen])
	} else {
		b.RR(s.name[:nameLen], t[:10+newLen])
	}
	b.CountAnswer(1)
	if b.Overflow() {
		b.Rollback(m)
		return 0, false
	}
	wire.Lower(s.name[:], t[10:10+newLen])
	return 0, true
}

func labelOffsets(name []byte, out []uint8) int {
	n, i := 0, 0
	for i < len(name) && n < len(out) {
		out[n] = uint8(i)
		n++
		if name[i] == 0 {
			break
		}
		i += int(name[i]) + 1
	}
	return n
}

// txtRData encodes s as the RDATA of a TXT record, nil for "".
func txtRData(s string) []byte {
	if s == "" {
		return nil
	}
	var out []byte
	for len(s) > 255 {
		out = append(out, 255)
		out = append(out, s[:255]...)
		s = s[255:]
	}
	out = append(out, byte(len(s)))
	return append(out, s...)
}
