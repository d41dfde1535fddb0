package auth

import (
	"encoding/binary"

	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// prepare precomputes the parts of responses that do not depend on the
// query: each delegation's referral, with and without DNSSEC. It runs
// once per zone, before the zone is published.
func (r *Responder) prepare(set *zone.Set) {
	for _, z := range set.Zones() {
		if z.Prepared.Load() {
			continue
		}
		var s Scratch
		z.Nodes(func(n *zone.Node) {
			if n.Flags&zone.Delegation == 0 || n.Cut != nil {
				return
			}
			var ref [2]*zone.Block
			for do := 0; do < 2; do++ {
				if do == 1 && !z.Signed {
					break
				}
				ref[do] = r.referralBlock(&s, z, n, do == 1)
			}
			n.Referral = &ref
		})
		if z.NegSOA != nil {
			var neg [2]*zone.Block
			for do := 0; do < 2; do++ {
				neg[do] = r.negativeBlock(&s, z, do == 1)
			}
			z.Negative = &neg
		}
		z.Prepared.Store(true)
	}
}

// referralBlock writes the referral for cut after a question for the cut
// name itself and keeps the records.
func (r *Responder) referralBlock(s *Scratch, z *zone.Zone, cut *zone.Node, do bool) *zone.Block {
	b := &s.b
	if !s.questionFor(cut.Name) {
		return nil
	}
	start := b.Len()
	s.naddl, s.nproved, s.nwild = 0, 0, 0
	s.dnssec = do
	if flags := r.referral(s, z, cut, 0); flags&wire.FlagTC != 0 {
		return nil
	}
	msg := b.Finish()
	blk := &zone.Block{
		Wire:      append([]byte(nil), msg[start:]...),
		Authority: binary.BigEndian.Uint16(msg[8:]),
		Add:       binary.BigEndian.Uint16(msg[10:]),
	}
	if !findPointers(msg, start, int(blk.Authority)+int(blk.Add), &blk.Ptrs) {
		return nil
	}
	return blk
}

// negativeBlock writes the SOA of negative answers (with DO, and its
// RRSIGs) after a question for the origin and keeps the records.
func (r *Responder) negativeBlock(s *Scratch, z *zone.Zone, do bool) *zone.Block {
	b := &s.b
	if !s.questionFor(z.Origin) {
		return nil
	}
	start := b.Len()
	b.RR(z.Origin, z.NegSOA)
	b.CountAuthority(1)
	if do && z.NegSOASigs != nil {
		r.writeRecords(s, authoritySec, z.NegSOASigs, z.Origin, -1)
	}
	msg := b.Finish()
	blk := &zone.Block{Wire: append([]byte(nil), msg[start:]...), Authority: binary.BigEndian.Uint16(msg[8:])}
	if !findPointers(msg, start, int(blk.Authority), &blk.Ptrs) {
		return nil
	}
	return blk
}

// questionFor starts a message in s whose question is name, type A.
func (s *Scratch) questionFor(name []byte) bool {
	pkt := make([]byte, 0, wire.HeaderLen+len(name)+4)
	pkt = append(pkt, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0)
	pkt = append(pkt, name...)
	pkt = append(pkt, 0, wire.TypeA, 0, wire.ClassINET)
	if res, _ := s.q.Parse(pkt); res != wire.Answer {
		return false
	}
	if cap(s.out) == 0 {
		s.out = make([]byte, 0, BufferSize)
	}
	s.b.Reset(s.out, 65535)
	s.b.Header(0, 0)
	s.b.Question(pkt[wire.HeaderLen:], &s.q)
	return true
}

// findPointers records the offsets (relative to start) of the
// compression pointers in the n records at msg[start:].
func findPointers(msg []byte, start, n int, ptrs *[]uint16) bool {
	off := start
	name := func() bool {
		for off < len(msg) {
			l := int(msg[off])
			switch {
			case l == 0:
				off++
				return true
			case l&0xC0 == 0xC0:
				*ptrs = append(*ptrs, uint16(off-start))
				off += 2
				return true
			}
			off += l + 1
		}
		return false
	}
	for i := 0; i < n; i++ {
		if !name() || off+10 > len(msg) {
			return false
		}
		rtype := binary.BigEndian.Uint16(msg[off:])
		rdlen := int(binary.BigEndian.Uint16(msg[off+8:]))
		off += 10
		end := off + rdlen
		switch rtype {
		case wire.TypeNS, wire.TypeCNAME, wire.TypePTR:
			if !name() {
				return false
			}
		case wire.TypeMX:
			off += 2
			if !name() {
				return false
			}
		case wire.TypeSOA:
			if !name() || !name() {
				return false
			}
		}
		off = end
	}
	return off == len(msg)
}

// copyBlock appends a precomputed block, shifting its compression
// pointers by delta, and reports whether it fit.
func (s *Scratch) copyBlock(blk *zone.Block, delta int) bool {
	b := &s.b
	if b.Len()+len(blk.Wire) > b.Limit() {
		return false
	}
	at := b.Len()
	b.Raw(blk.Wire)
	buf := b.Bytes()
	for _, p := range blk.Ptrs {
		i := at + int(p)
		v := int(binary.BigEndian.Uint16(buf[i:])&0x3FFF) + delta
		binary.BigEndian.PutUint16(buf[i:], 0xC000|uint16(v))
	}
	b.CountAuthority(int(blk.Authority))
	b.CountAdditional(int(blk.Add))
	return true
}
