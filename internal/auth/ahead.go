package auth

import (
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// Ahead is a UDP query parsed before its answer, with the memory its
// answer will read starting to load. A worker that receives a batch of
// queries starts them all, advances them with Step, then answers each
// with AnswerAhead, so that the batch waits on its cache misses together
// instead of one after another: the response cache's set and stored
// response, and on a miss the zone lookup's chain (index slot, node, name
// and RRsets, zone.Ahead), three or four misses in a row in a zone too
// large for the CPU's caches.
type Ahead struct {
	q      wire.Query
	res    wire.ParseResult
	rcode  int
	labels [wire.MaxLabels]uint8
	look   zone.Ahead
	// h is the hash of the query's response-cache key, when keyed.
	h     uint64
	keyed bool
	stage aheadStage
}

type aheadStage uint8

const (
	aheadDone  aheadStage = iota // nothing more to prefetch
	aheadCache                   // next: look in the cache's set
	aheadZone                    // next: a step of the zone lookup
)

// Steps is how many times a batch's Aheads are stepped: the cache's
// stored response (or the start of the zone lookup), then the lookup's
// node, then its name and RRsets.
const Steps = 3

// Start parses pkt into a and starts loading what its answer reads first:
// the response cache's set for it (s's cache), or without one, the zone
// lookup of its name.
func (r *Responder) Start(s *Scratch, a *Ahead, pkt []byte) {
	q := &a.q
	a.res, a.rcode = q.Parse(pkt)
	a.look = zone.Ahead{}
	a.keyed, a.stage = false, aheadDone
	if a.res != wire.Answer {
		return
	}
	if c := s.cache; c != nil && q.Opcode == wire.OpcodeQuery {
		a.h = c.hash(pkt[wire.HeaderLen:q.QuestionEnd], variant(q, r.udpLimit(q)))
		a.keyed, a.stage = true, aheadCache
		c.prefetchSet(a.h)
		return
	}
	r.startZone(a)
}

// startZone starts the lookup of a's name in the zone that holds it.
func (r *Responder) startZone(a *Ahead) {
	q := &a.q
	if q.QClass != wire.ClassINET {
		return
	}
	labels := a.labels[:q.Labels()]
	for i := range labels {
		labels[i] = uint8(q.SuffixOffset(i))
	}
	if sz := r.zones.Load().find(q.Name(), labels, 0); sz != nil {
		sz.z.Ahead(&a.look, q.Name())
		a.stage = aheadZone
	}
}

// Step advances a by one link: from the cache's set to its stored
// response, or when there is none to the zone lookup, and then along the
// lookup. s is the Scratch a was started with.
func (r *Responder) Step(s *Scratch, a *Ahead) {
	switch a.stage {
	case aheadCache:
		a.stage = aheadDone
		if !s.cache.prefetchData(r.gen.Load(), a.h) {
			r.startZone(a)
		}
	case aheadZone:
		a.look.Step()
	}
}

// AnswerAhead answers the UDP query started in a, as Answer answers pkt.
func (r *Responder) AnswerAhead(s *Scratch, a *Ahead, pkt []byte, out []byte) []byte {
	s.q = a.q
	return r.answerParsed(s, a.res, a.rcode, pkt, out, false, a)
}
