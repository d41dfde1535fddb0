package zone

// Intake: each parsed record into its node and RRset, as it is read.

import (
	"encoding/binary"
	"errors"

	"github.com/miekg/dns"
	"github.com/tern-dns/tern/internal/wire"
)

// node returns the node for a canonical wire name, creating it and its
// ancestors up to the apex (which makes empty non-terminals exist).
func (c *compiler) node(owner []byte) *Node {
	// A name's records come together: the last node saves the lookup.
	if n := c.lastNode; n != nil && string(n.Name) == string(owner) {
		return n
	}
	n, h := c.nodes.find(owner)
	if n != nil {
		c.lastNode = n
		return n
	}
	name := c.intern(owner)
	n = c.newNode(name)
	c.nodes.add(n, h)
	c.list = append(c.list, n)
	if c.z.Origin != nil && len(name) > len(c.z.Origin) {
		// Siblings come together in zone files: the last parent
		// saves a map lookup per name.
		up := name[int(name[0])+1:]
		if p := c.lastParent; p != nil && string(p.Name) == string(up) {
			n.Parent = p
		} else {
			n.Parent = c.node(up)
			c.lastParent = n.Parent
		}
		if name[0] == 1 && name[1] == '*' {
			n.Flags |= Wildcard
		}
	} else {
		n.Flags |= Apex
	}
	c.lastNode = n // after the parents' lookups, which set it too
	return n
}

// nsec3Node returns the node of an NSEC3 owner, kept out of the name tree
// (RFC 5155 §7.2.8: NSEC3 owners are not part of the name space).
func (c *compiler) nsec3Node(name []byte) *Node {
	if n, ok := c.n3map[bytesString(name)]; ok {
		return n
	}
	if c.n3map == nil {
		c.n3map = make(map[string]*Node)
	}
	n := c.newNode(c.intern(name))
	c.n3map[bytesString(n.Name)] = n
	c.nsec3 = append(c.nsec3, n)
	return n
}

// add compiles one record parsed by miekg/dns, and reports whether the
// zone keeps it.
func (c *compiler) add(rr dns.RR, file string, line int) bool {
	p := pos{c.fileIndex(file), uint32(line)}
	h := rr.Header()
	if h.Class != dns.ClassINET {
		c.errorf(&p, "class %s is not IN", dns.ClassToString[h.Class])
		return false
	}
	switch h.Rrtype {
	case dns.TypeOPT, dns.TypeTSIG, dns.TypeTKEY, dns.TypeAXFR, dns.TypeIXFR, dns.TypeANY:
		c.errorf(&p, "type %s cannot be zone data", dns.TypeToString[h.Rrtype])
		return false
	}
	n, err := dns.PackDomainName(h.Name, c.owner[:], 0, nil, false)
	if err != nil {
		c.errorf(&p, "owner %s: %v", h.Name, err)
		return false
	}
	name := c.owner[:n]
	wire.Lower(name, name)
	if !wire.InZone(name, c.z.Origin) {
		// Knot, NSD and BIND load such a zone without the record.
		c.warnf(&p, "%s is outside the zone %s: record ignored", h.Name, c.origin)
		return false
	}
	tail, err := c.tail(rr)
	if err != nil {
		c.errorf(&p, "cannot encode %s record: %v", dns.TypeToString[h.Rrtype], err)
		return false
	}
	c.addTail(p, name, tail)
	return true
}

// addTail compiles one record given as its lower-cased owner, inside the
// zone, and its tail (TYPE, CLASS IN, TTL, RDLENGTH, RDATA, as tail
// returns it). Both readers end here: miekg/dns's through add, the fast
// reader directly.
func (c *compiler) addTail(p pos, name, tail []byte) {
	typ := binary.BigEndian.Uint16(tail)
	ttl := binary.BigEndian.Uint32(tail[4:])
	rdata := tail[10:]
	covered := uint16(0)
	if typ == dns.TypeRRSIG && len(rdata) >= 2 {
		covered = binary.BigEndian.Uint16(rdata)
	}
	var node *Node
	if typ == dns.TypeNSEC3 || covered == dns.TypeNSEC3 {
		node = c.nsec3Node(name)
	} else {
		node = c.node(name)
	}
	set := node.set(typ, covered)
	if set == nil {
		rs := RRset{Type: typ, covered: covered, TTL: ttl, file: p.file, line: p.line}
		node.RRsets = c.appendSet(node.RRsets, rs)
		set = &node.RRsets[len(node.RRsets)-1]
	} else if c.duplicate(setID{node, typ, covered}, set, tail) {
		// RFC 2181 §5: identical records are one record.
		return
	}
	if typ == dns.TypeSOA {
		c.soa = append(c.soa, p)
		if len(c.soa) == 1 {
			// SOA RDATA: MNAME, RNAME, then SERIAL ... MINIMUM.
			if off := wire.NameLen(rdata); off < len(rdata) {
				if m := wire.NameLen(rdata[off:]); len(rdata) == off+m+20 {
					fixed := rdata[off+m:]
					c.z.Serial = binary.BigEndian.Uint32(fixed)
					c.z.NegTTL = min(ttl, binary.BigEndian.Uint32(fixed[16:]))
				}
			}
		}
	}
	if ttl != set.TTL && !c.warningsFull() {
		c.warnf(&p, "TTL %d differs from the TTL %d of the %s RRset (first record at %s): the set is served with the lowest (RFC 2181 §5.2)",
			ttl, set.TTL, dns.Type(typ), c.position(pos{set.file, set.line}))
	}
	if ttl < set.TTL {
		set.TTL = ttl
	}
	set.Wire = c.appendWire(set.Wire, tail)
	set.Count++
	c.z.Records++
}

// set finds the RRset of a type (for RRSIGs: of a covered type) being built.
func (n *Node) set(t, covered uint16) *RRset {
	for i := range n.RRsets {
		if s := &n.RRsets[i]; s.Type == t && s.covered == covered {
			return s
		}
	}
	return nil
}

// duplicate reports whether set already holds a record with tail's RDATA.
// Small sets are scanned; large ones get an index.
func (c *compiler) duplicate(id setID, set *RRset, tail []byte) bool {
	rd := tail[10:]
	if idx := c.seen[id]; idx != nil {
		if idx[string(rd)] {
			return true
		}
		idx[string(rd)] = true
		return false
	}
	found := false
	set.Each(func(t []byte) {
		if string(t[10:]) == string(rd) {
			found = true
		}
	})
	if !found && set.Count >= 16 {
		idx := make(map[string]bool, 2*set.Count)
		set.Each(func(t []byte) { idx[string(t[10:])] = true })
		idx[string(rd)] = true
		c.seen[id] = idx
	}
	return found
}

// tail encodes rr without its owner: TYPE, CLASS, TTL, RDLENGTH, RDATA,
// names in RDATA uncompressed. The result aliases c.buf.
func (c *compiler) tail(rr dns.RR) ([]byte, error) {
	if c.buf == nil {
		// Made on first use: the fast reader never needs it.
		c.buf = make([]byte, 65535+512)
	}
	n, err := dns.PackRR(rr, c.buf, 0, nil, false)
	if err != nil {
		return nil, err
	}
	ownerLen := wire.NameLen(c.buf[:n])
	if ownerLen+10 > n {
		return nil, errors.New("short record")
	}
	return c.buf[ownerLen:n], nil
}
