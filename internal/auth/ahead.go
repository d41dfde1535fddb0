package auth

import (
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// Ahead is a UDP query parsed before its answer, with the zone lookup of
// its name started (zone.Ahead). A worker that receives a batch of
// queries starts them all, advances them with Step, then answers each
// with AnswerAhead: in a zone too large for the CPU's caches each answer
// waits on three or four cache misses in a row (index slot, node, name
// and RRsets), and this way a batch waits on them together.
type Ahead struct {
	q      wire.Query
	res    wire.ParseResult
	rcode  int
	labels [wire.MaxLabels]uint8
	look   zone.Ahead
}

// Start parses pkt into a and starts the lookup of its name in the zone
// that holds it.
func (r *Responder) Start(a *Ahead, pkt []byte) {
	q := &a.q
	a.res, a.rcode = q.Parse(pkt)
	a.look = zone.Ahead{}
	if a.res != wire.Answer || q.QClass != wire.ClassINET {
		return
	}
	labels := a.labels[:q.Labels()]
	for i := range labels {
		labels[i] = uint8(q.SuffixOffset(i))
	}
	if z := r.zones.Load().Find(q.Name(), labels, 0); z != nil {
		z.Ahead(&a.look, q.Name())
	}
}

// Step advances a's lookup by one link.
func (a *Ahead) Step() { a.look.Step() }

// AnswerAhead answers the UDP query started in a, as Answer answers pkt.
func (r *Responder) AnswerAhead(s *Scratch, a *Ahead, pkt []byte, out []byte) []byte {
	s.q = a.q
	return r.answerParsed(s, a.res, a.rcode, pkt, out, false)
}
