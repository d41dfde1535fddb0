package zone

// The adjust pass, once every record is in: signatures beside what
// they cover, node flags and cuts, additional-section links.

import (
	"encoding/binary"

	"github.com/miekg/dns"
	"github.com/tern-dns/tern/internal/wire"
)

// attachSigs moves each RRSIG set onto the RRset it covers. Signatures
// whose RRset is absent stay as data, so a query for RRSIG finds them.
func (c *compiler) attachSigs(n *Node) {
	keep := n.RRsets[:0]
	sigs := c.sigScratch[:0]
	for _, s := range n.RRsets {
		if s.Type == dns.TypeRRSIG {
			sigs = append(sigs, s)
		} else {
			keep = append(keep, s)
		}
	}
	c.sigScratch = sigs
	if len(sigs) == 0 {
		sortSets(n.RRsets)
		return
	}
	// The name moves beside the signed sets' wire form, which attach
	// carves next, so that an answer from a large signed zone reads name,
	// records and signatures from neighbouring cache lines (see intern).
	n.Name = append(carve(&c.signedWires, len(n.Name)), n.Name...)
	var orphans []RRset
	for _, sig := range sigs {
		if t := n.set(sig.covered, 0); t != nil {
			c.checkValidity(n, &sig)
			c.attach(t, &sig)
		} else {
			orphans = append(orphans, sig)
		}
	}
	// Only what stays, copied to a slab that holds nothing else, so the
	// slabs the sets were built in become garbage: a signed zone has a
	// million of these.
	need := len(keep) + min(len(orphans), 1)
	if cap(c.finalSlab)-len(c.finalSlab) < need {
		c.finalSlab = make([]RRset, 0, max(1024, need))
	}
	at := len(c.finalSlab)
	c.finalSlab = append(c.finalSlab, keep...)
	n.RRsets = c.finalSlab[at : len(c.finalSlab) : at+need]
	c.finalSlab = c.finalSlab[:at+need]
	if len(orphans) > 0 {
		merged := RRset{Type: dns.TypeRRSIG, TTL: orphans[0].TTL, file: orphans[0].file, line: orphans[0].line}
		for _, o := range orphans {
			merged.Wire = append(merged.Wire, o.Wire...)
			merged.Count += o.Count
		}
		n.RRsets = append(n.RRsets, merged)
	}
	sortSets(n.RRsets)
}

// attach puts the signatures of set t behind its records, in the spare
// capacity of t.Wire (RRset.Sigs reads them there). The copies come from
// an arena of their own, so the arena the sets were built in becomes
// garbage once a node's sets have all moved.
func (c *compiler) attach(t, sig *RRset) {
	const maxArenaSet = 4 << 10
	n := len(t.Wire) + len(sig.Wire)
	var w []byte
	if n > maxArenaSet {
		w = make([]byte, 0, n)
	} else {
		w = carve(&c.signedWires, n)
	}
	w = append(w, t.Wire...)
	w = append(w, sig.Wire...)
	t.Wire = w[:len(t.Wire):n]
	t.sigCount = uint16(min(sig.Count, 0xffff))
	t.sigTTL = sig.TTL
}

// sortSets orders a node's RRsets by type (insertion sort: nodes have few).
func sortSets(s []RRset) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].Type < s[j-1].Type; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// adjust computes a node's flags and checks its rules. Parents are
// adjusted first, since a node's cut is its parent's.
func (c *compiler) adjust(n *Node) {
	if n.Flags&adjusted != 0 {
		return
	}
	n.Flags |= adjusted
	c.attachSigs(n)
	for i := range n.RRsets {
		sameTTL(&n.RRsets[i])
	}
	for _, s := range n.RRsets {
		switch s.Type {
		case dns.TypeCNAME:
			n.Flags |= hasCNAME
		case dns.TypeDNAME:
			n.Flags |= hasDNAME
		case dns.TypeNS:
			n.Flags |= hasNS
		}
	}
	if len(n.RRsets) == 0 {
		n.Flags |= NonTerminal
	}
	if n.NS() != nil && n.Flags&Apex == 0 {
		n.Flags |= Delegation
	}
	if p := n.Parent; p != nil {
		c.adjust(p)
		if p.Cut != nil {
			n.Cut = p.Cut
		} else if p.Flags&Delegation != 0 || p.DNAME() != nil {
			n.Cut = p
		}
		if n.Flags&Wildcard != 0 {
			p.WildcardChild = n
		}
	}
	c.check(n)
}

// additional links an RRset to the in-zone nodes whose addresses go into
// the additional section with it.
func (c *compiler) additional(s *RRset) {
	d := wire.RDataOf(s.Type)
	if d == nil || !d.Additional() {
		return
	}
	var seen []*Node
	s.Each(func(tail []byte) {
		target := d.AdditionalName(tail[10:])
		if target == nil {
			return
		}
		var low [256]byte
		copy(low[:], target)
		wire.Lower(low[:len(target)], low[:len(target)])
		t := c.nodes.get(low[:len(target)])
		if t == nil || (t.Get(dns.TypeA) == nil && t.Get(dns.TypeAAAA) == nil) {
			if s.Type != dns.TypeSRV {
				c.checkTarget(s, target, t)
			}
			return
		}
		for _, x := range seen {
			if x == t {
				return
			}
		}
		seen = append(seen, t)
	})
	if len(seen) > 0 {
		s.targets = &seen
	}
}

// sameTTL gives every record of an RRset the set's lowest TTL. RFC 2181
// §5.2: TTLs in an RRset must agree, and a set whose TTLs differ is to be
// treated "as if all TTLs in the RRSet had been set to the value of the
// lowest TTL in the RRSet."
func sameTTL(s *RRset) {
	for w := s.Wire; len(w) >= 10; w = w[10+int(binary.BigEndian.Uint16(w[8:])):] {
		if binary.BigEndian.Uint32(w[4:]) != s.TTL {
			binary.BigEndian.PutUint32(w[4:], s.TTL)
		}
	}
}
