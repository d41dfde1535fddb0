package auth

import (
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// wildProof is a wildcard answer whose proof that the name itself does not
// exist (RFC 4035 §3.1.3.3, RFC 5155 §7.2.6) is still to be written: the
// proof goes into the authority section, after the whole answer.
type wildProof struct {
	w    *zone.Node // the wildcard that synthesized name
	name [wire.MaxName]byte
	n    int
}

// maxProofs bounds the NSEC and NSEC3 RRsets of one answer: one per
// wildcard expansion, at most one per link of a chain (MaxChain), and
// those of the answer's end: three for an NSEC3 NXDOMAIN (RFC 5155
// §7.2.2), fewer for the other denials and for a referral's no-DS proof.
const maxProofs = MaxChain + 3

// queueWildcard remembers that s.name was synthesized from wildcard w. It
// reports false when the queue is full, which a chain of at most MaxChain
// links cannot make it; the answer is then truncated rather than sent
// without the proof (RFC 4035 §3.1.1).
func (s *Scratch) queueWildcard(w *zone.Node) bool {
	if !s.dnssec {
		return true
	}
	if s.nwild == len(s.wild) {
		return false
	}
	p := &s.wild[s.nwild]
	p.w = w
	p.n = copy(p.name[:], s.name[:wire.NameLen(s.name[:])])
	s.nwild++
	return true
}

// wildcardProofs writes the queued wildcard proofs.
func (r *Responder) wildcardProofs(s *Scratch, z *zone.Zone) bool {
	for i := 0; i < s.nwild; i++ {
		p := &s.wild[i]
		name := p.name[:p.n]
		var ok bool
		if z.NSEC3 != nil {
			// RFC 5155 §7.2.6: the NSEC3 covering the next closer name;
			// the closest encloser is the wildcard's parent.
			ok = r.nextCloser(s, z, name, p.w.Parent)
		} else {
			ok = r.nsecCover(s, z, name)
		}
		if !ok {
			return false
		}
	}
	s.nwild = 0
	return true
}

// denial writes the proof of a negative answer: n is the closest encloser
// (NXDOMAIN), the node (NODATA) or the wildcard (wildcard NODATA).
func (r *Responder) denial(s *Scratch, z *zone.Zone, n *zone.Node, k kind) bool {
	name := s.name[:wire.NameLen(s.name[:])]
	if ch := z.NSEC3; ch != nil {
		switch k {
		case kindNXDomain:
			// RFC 5155 §7.2.2: closest encloser proof plus the NSEC3
			// covering the wildcard at the closest encloser.
			return r.closestEncloser(s, z, name, n) && r.nsec3Cover(s, z, r.wildcardName(s, n))
		case kindWildcard:
			// RFC 5155 §7.2.5: the closest encloser, the next closer
			// (queued with the wildcard), and the wildcard's own NSEC3.
			return r.nsec3Match(s, n.Parent) && r.nsec3Match(s, n)
		default:
			// RFC 5155 §7.2.3; §7.2.4 when an opt-out span holds the
			// name (a DS query at an unsigned delegation).
			if n.NSEC3 != nil {
				return r.nsec3Match(s, n)
			}
			return r.closestProvable(s, z, name, n)
		}
	}
	switch k {
	case kindNXDomain:
		// RFC 4035 §3.1.3.2: the NSEC covering the name and the one
		// proving no wildcard could have matched.
		return r.nsecCover(s, z, name) && r.nsecCover(s, z, r.wildcardName(s, n))
	default:
		// RFC 4035 §3.1.3.1 and §3.1.3.4: the node's own NSEC; an empty
		// non-terminal has none and is covered by its predecessor's.
		if set := n.Get(wire.TypeNSEC); set != nil {
			return r.proof(s, n, set)
		}
		return r.nsecCover(s, z, n.Name)
	}
}

// noDS proves a delegation has no DS (RFC 4035 §3.1.4, RFC 5155 §7.2.7).
func (r *Responder) noDS(s *Scratch, z *zone.Zone, cut *zone.Node) bool {
	if z.NSEC3 != nil {
		if cut.NSEC3 != nil {
			return r.nsec3Match(s, cut)
		}
		// Opt-out: the closest provable encloser and the opt-out NSEC3
		// covering the next closer name.
		return r.closestProvable(s, z, cut.Name, cut.Parent)
	}
	if set := cut.Get(wire.TypeNSEC); set != nil {
		return r.proof(s, cut, set)
	}
	return true
}

// closestProvable writes the closest provable encloser proof for name,
// starting the search at node from (RFC 5155 §7.2.1 with opt-out).
func (r *Responder) closestProvable(s *Scratch, z *zone.Zone, name []byte, from *zone.Node) bool {
	a := from
	for a != nil && a.NSEC3 == nil {
		a = a.Parent
	}
	if a == nil {
		return true
	}
	return r.closestEncloser(s, z, name, a)
}

// closestEncloser writes the NSEC3 matching the closest encloser ce and
// the one covering the next closer name (RFC 5155 §7.2.1).
func (r *Responder) closestEncloser(s *Scratch, z *zone.Zone, name []byte, ce *zone.Node) bool {
	return r.nsec3Match(s, ce) && r.nextCloser(s, z, name, ce)
}

// nextCloser writes the NSEC3 covering the next closer name of name with
// respect to ce: name cut to one label more than ce.
func (r *Responder) nextCloser(s *Scratch, z *zone.Zone, name []byte, ce *zone.Node) bool {
	extra := countLabels(name) - countLabels(ce.Name) - 1
	if extra < 0 {
		return true
	}
	for ; extra > 0; extra-- {
		name = name[int(name[0])+1:]
	}
	return r.nsec3Cover(s, z, name)
}

// nsec3Cover writes the NSEC3 that matches or covers the hash of name.
func (r *Responder) nsec3Cover(s *Scratch, z *zone.Zone, name []byte) bool {
	n, _ := z.NSEC3.Find(z.NSEC3.Hash(name, s.hashBuf[:]))
	return r.proof(s, n, n.Get(wire.TypeNSEC3))
}

// nsec3Match writes the NSEC3 whose hash is n's name, if it has one.
func (r *Responder) nsec3Match(s *Scratch, n *zone.Node) bool {
	if n == nil || n.NSEC3 == nil {
		return true
	}
	return r.proof(s, n.NSEC3, n.NSEC3.Get(wire.TypeNSEC3))
}

// nsecCover writes the NSEC that matches or covers name.
func (r *Responder) nsecCover(s *Scratch, z *zone.Zone, name []byte) bool {
	n := z.NSECCover(wire.CanonicalKey(s.key[:0], name))
	if n == nil {
		return true
	}
	return r.proof(s, n, n.Get(wire.TypeNSEC))
}

// proof writes one NSEC or NSEC3 RRset with its RRSIGs into the authority
// section, once per answer. With no room left to remember it (which
// maxProofs rules out) it reports false, for TC, rather than risk writing
// a proof twice.
func (r *Responder) proof(s *Scratch, n *zone.Node, set *zone.RRset) bool {
	if set == nil {
		return true
	}
	for i := 0; i < s.nproved; i++ {
		if s.proved[i] == n {
			return true
		}
	}
	if s.nproved == len(s.proved) || !r.put(s, authoritySec, set, n.Name, -1) {
		return false
	}
	s.proved[s.nproved] = n
	s.nproved++
	return true
}

// wildcardName returns "*." + n's name in scratch space.
func (r *Responder) wildcardName(s *Scratch, n *zone.Node) []byte {
	s.wname[0], s.wname[1] = 1, '*'
	l := copy(s.wname[2:], n.Name)
	return s.wname[:2+l]
}

func countLabels(name []byte) int {
	n := 0
	for i := 0; i < len(name) && name[i] != 0; i += int(name[i]) + 1 {
		n++
	}
	return n
}
