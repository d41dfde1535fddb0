package auth

import (
	"encoding/binary"

	"github.com/tern-dns/tern/internal/acl"
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// published is what Publish swaps in: the zone set, and each of its zones
// as served, by origin (canonical wire form), in the set's shards
// (zone.ShardOf), so that a publication of a few changed zones prepares
// and copies only their shards; access is the Access they were prepared
// with.
type published struct {
	set    *zone.Set
	zones  [zone.SetShards]map[string]*served
	access *Access
}

// served is a zone with the parts of its answers that do not depend on
// the query, precomputed when it is published. They are the Responder's:
// a compiled zone is never written once built.
type served struct {
	z *zone.Zone
	// referrals holds each delegation's referral without and with DNSSEC
	// records, indexed by its Node.CutIndex.
	referrals [][2]block
	// negative is the authority section's SOA of negative answers,
	// without and with its RRSIGs.
	negative [2]block
	// metric is the zone's index in the Responder's metrics (0: none).
	metric uint32
	// query is the zone's query ACL, compiled from Access.ACLs' rules
	// for acl.Query: only clients it contains are answered (others get
	// REFUSED), and the answers go to no response cache, which a later
	// client's question would hit without the check. nil: everyone is
	// answered.
	query *acl.Table
}

// block is a run of response records written once at publication, to be
// copied into responses instead of being built per query: Knot and NSD
// spend most of a referral's time on name compression, which a copy
// avoids. It was written after a question for the name of its node; ptrs
// are the offsets of the compression pointers in wire, which copyBlock
// shifts by the difference between the real question's length and that
// one's. A block with no wire was not precomputed.
type block struct {
	wire           []byte
	ptrs           []uint16
	authority, add uint16 // record counts
}

// publish prepares the zones of set, reusing what old (nil at first)
// prepared for the zones it shares with set: a shard of set that old's
// set holds too is taken whole (when its query ACLs are the same), so
// that the cost of a publication is that of the shards changed.
// Each zone gets the query ACL the Access being served gives it.
func (r *Responder) publish(set *zone.Set, old *published) *published {
	access := r.access.Load()
	p := &published{set: set, access: access}
	// One Scratch for every zone prepared: its buffers cost more to
	// make than a small zone's blocks (a hosting provider's hundred
	// thousand zones).
	var s *Scratch
	for i := range zone.SetShards {
		if old != nil && old.access.queryShard(access, i) && set.SameShard(old.set, i) {
			p.zones[i] = old.zones[i]
			continue
		}
		zs := set.Shard(i)
		if len(zs) == 0 {
			continue
		}
		m := make(map[string]*served, len(zs))
		for _, z := range zs {
			sz := old.zone(z)
			if sz == nil {
				if s == nil {
					s = new(Scratch)
				}
				sz = r.prepare(s, z)
			}
			if q := access.queryTable(z.Origin); q != sz.query {
				// A copy: the old one may be answering queries still.
				c := *sz
				c.query = q
				sz = &c
			}
			m[string(z.Origin)] = sz
		}
		p.zones[i] = m
	}
	return p
}

// queryShard reports whether a and b give the zones of shard i the same
// query ACLs (nil has none).
func (a *Access) queryShard(b *Access, i int) bool {
	if a == b {
		return true
	}
	var x, y *zone.ByOrigin[*acl.Table]
	if a != nil {
		x = a.query
	}
	if b != nil {
		y = b.query
	}
	return x.SameShard(y, i)
}

// zone returns p's served z, or nil (also when p is nil).
func (p *published) zone(z *zone.Zone) *served {
	if p == nil {
		return nil
	}
	if sz := p.zones[zone.ShardOf(z.Origin)][string(z.Origin)]; sz != nil && sz.z == z {
		return sz
	}
	return nil
}

// find returns the most specific zone that contains name, given as its
// label offsets (labels[i] is where the i-th label starts), or nil: one
// map probe per label, whatever the number of zones. skip is the number
// of leading labels not to consider: find(…, 1) finds the parent zone of
// an apex.
func (p *published) find(name []byte, labels []uint8, skip int) *served {
	for i := skip; i < len(labels); i++ {
		suffix := name[labels[i]:]
		if sz, ok := p.zones[zone.ShardOf(suffix)][string(suffix)]; ok {
			return sz
		}
	}
	return nil
}

// prepare precomputes z's referrals, with and without DNSSEC, and the
// SOA of its negative answers, in s.
func (r *Responder) prepare(s *Scratch, z *zone.Zone) *served {
	sz := &served{z: z, referrals: make([][2]block, z.Cuts), metric: r.metrics.Zone(zone.NameString(z.Origin))}
	z.Nodes(func(n *zone.Node) {
		if n.Flags&zone.Delegation == 0 || n.Cut != nil {
			return
		}
		for do := 0; do < 2; do++ {
			if do == 1 && !z.Signed {
				break
			}
			sz.referrals[n.CutIndex][do] = r.referralBlock(s, z, n, do == 1)
		}
	})
	if z.NegSOA != nil {
		// Without the SOA's signatures the two are alike and share
		// their bytes: a hundred thousand small zones keep one each.
		sz.negative[0] = r.negativeBlock(s, z, false)
		sz.negative[1] = sz.negative[0]
		if z.NegSOASigs != nil {
			sz.negative[1] = r.negativeBlock(s, z, true)
		}
	}
	return sz
}

// referralBlock writes the referral for cut after a question for the cut
// name itself and keeps the records.
func (r *Responder) referralBlock(s *Scratch, z *zone.Zone, cut *zone.Node, do bool) block {
	b := &s.b
	if !s.questionFor(cut.Name) {
		return block{}
	}
	start := b.Len()
	s.naddl, s.nproved, s.nwild = 0, 0, 0
	s.dnssec = do
	if flags := r.referral(s, z, cut, 0); flags&wire.FlagTC != 0 {
		return block{}
	}
	return keep(b.Finish(), start)
}

// negativeBlock writes the SOA of negative answers (with DO, and its
// RRSIGs) after a question for the origin and keeps the records.
func (r *Responder) negativeBlock(s *Scratch, z *zone.Zone, do bool) block {
	b := &s.b
	if !s.questionFor(z.Origin) {
		return block{}
	}
	start := b.Len()
	b.RR(z.Origin, z.NegSOA)
	b.CountAuthority(1)
	if do && z.NegSOASigs != nil {
		r.writeRecords(s, authoritySec, z.NegSOASigs, z.Origin, -1)
	}
	return keep(b.Finish(), start)
}

// keep copies the records of msg from start on, which fill its authority
// and additional sections, into a block.
func keep(msg []byte, start int) block {
	blk := block{
		wire:      append([]byte(nil), msg[start:]...),
		authority: binary.BigEndian.Uint16(msg[8:]),
		add:       binary.BigEndian.Uint16(msg[10:]),
	}
	if !findPointers(msg, start, int(blk.authority)+int(blk.add), &blk.ptrs) {
		return block{}
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
		// Pointers are only in the names the builder compresses (the
		// RDATA descriptor's FieldName); fixed fields are stepped over.
		if d := wire.RDataOf(rtype); d != nil && d.Compressed() {
			for _, f := range d.Fields() {
				if n := f.Size(); n > 0 {
					off += n
					continue
				}
				if f == wire.FieldRest {
					break
				}
				if !name() {
					return false
				}
			}
		}
		off = end
	}
	return off == len(msg)
}

// copyBlock appends a precomputed block, shifting its compression
// pointers by delta, and reports whether it fit.
func (s *Scratch) copyBlock(blk *block, delta int) bool {
	b := &s.b
	if b.Len()+len(blk.wire) > b.Limit() {
		return false
	}
	at := b.Len()
	b.Raw(blk.wire)
	buf := b.Bytes()
	for _, p := range blk.ptrs {
		i := at + int(p)
		v := int(binary.BigEndian.Uint16(buf[i:])&0x3FFF) + delta
		binary.BigEndian.PutUint16(buf[i:], 0xC000|uint16(v))
	}
	b.CountAuthority(int(blk.authority))
	b.CountAdditional(int(blk.add))
	return true
}
