package zone

// Arenas and slabs the compiler allocates nodes, RRsets and wire form
// from: few large allocations instead of one per record.

import "unsafe"

// intern copies a wire name into the arena of small RRsets' wire form
// (see appendWire): a zone file gives a name's records right after it, so
// the name and its records' wire form share a cache line, and an answer
// from a large zone compares the one and copies the other for one miss.
func (c *compiler) intern(name []byte) []byte {
	return append(carve(&c.wires, len(name)), name...)
}

// newNode allocates a node from a slab: a million nodes are a few hundred
// allocations instead of a million.
func (c *compiler) newNode(name []byte) *Node {
	if len(c.nodeSlab) == cap(c.nodeSlab) {
		c.nodeSlab = make([]Node, 0, slabSize(cap(c.nodeSlab), 4, 1024))
	}
	c.nodeSlab = append(c.nodeSlab, Node{Name: name})
	return &c.nodeSlab[len(c.nodeSlab)-1]
}

// appendSet appends an RRset to a node's list: in place when the list
// is the set slab's last (the node's records came together), else by
// copying it to the slab's end.
func (c *compiler) appendSet(l []RRset, s RRset) []RRset {
	end := len(c.setSlab)
	if len(l) > 0 && end > 0 && end < cap(c.setSlab) && &c.setSlab[end-1] == &l[len(l)-1] {
		c.setSlab = append(c.setSlab, s)
		return c.setSlab[end-len(l) : end+1 : end+1]
	}
	if cap(c.setSlab)-end < len(l)+1 {
		c.setSlab = make([]RRset, 0, max(slabSize(cap(c.setSlab), 4, 1024), len(l)+1))
		end = 0
	}
	c.setSlab = append(c.setSlab, l...)
	c.setSlab = append(c.setSlab, s)
	return c.setSlab[end:len(c.setSlab):len(c.setSlab)]
}

// appendWire appends a record's tail to a set's wire form. Small sets
// live in an arena of pointer-free memory the collector never scans; a
// set that is the arena's last grows in place, which is the common case
// of an RRset's records written one after another.
func (c *compiler) appendWire(w, tail []byte) []byte {
	const maxArenaSet = 2 << 10
	if len(w)+len(tail) > maxArenaSet {
		return append(w, tail...)
	}
	end := len(c.wires)
	if len(w) > 0 && end >= len(w) && cap(c.wires)-end >= len(tail) && &c.wires[end-1] == &w[len(w)-1] {
		c.wires = append(c.wires, tail...)
		return c.wires[end-len(w) : len(c.wires) : len(c.wires)]
	}
	return append(append(carve(&c.wires, len(w)+len(tail)), w...), tail...)
}

// carve takes an empty slice with capacity n from the end of a byte
// arena, starting a new chunk when the current one is too full: 512 bytes,
// then each twice the last up to 256 KiB.
func carve(arena *[]byte, n int) []byte {
	if cap(*arena)-len(*arena) < n {
		*arena = make([]byte, 0, max(slabSize(cap(*arena), 512, 256<<10), n))
	}
	at := len(*arena)
	*arena = (*arena)[:at+n]
	return (*arena)[at : at : at+n]
}

// slabSize is the size of a slab that follows one of size last: twice
// it, from least up to most. A small zone (a hosting provider's, by the
// hundred thousand) takes a few small slabs; a large one quickly gets
// slabs of the largest size, a few hundred allocations for a million
// names.
func slabSize(last, least, most int) int {
	return min(max(2*last, least), most)
}

// trimArenas moves a small zone's names and wire form out of arena
// chunks mostly empty into copies of the size they use: a zone of a few
// records (a hosting provider's, by the hundred thousand) fills 170
// bytes of the first 512-byte chunk, and the rest would stay allocated
// as long as the zone is served. The copies keep the layout (a name
// beside its records' wire form). Only zones of at most trimNodes nodes
// are walked for the slices to move, so a large zone's load pays
// nothing; a slice missed would only keep the old chunk alive, still
// holding the same bytes.
func (c *compiler) trimArenas() {
	const trimNodes, leastSaving = 64, 64
	if len(c.list)+len(c.nsec3) > trimNodes {
		return
	}
	var old, fresh [2][]byte
	for i, a := range [2][]byte{c.wires, c.signedWires} {
		if len(a) > 0 && cap(a)-len(a) >= leastSaving {
			old[i], fresh[i] = a, append(make([]byte, 0, len(a)), a...)
		}
	}
	if fresh[0] == nil && fresh[1] == nil {
		return
	}
	move := func(b []byte) []byte {
		if cap(b) == 0 {
			return b
		}
		p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		for i, a := range old {
			base := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
			if fresh[i] == nil || p < base || p >= base+uintptr(len(a)) {
				continue
			}
			// carve keeps every slice's capacity within the arena's
			// length: the copy holds it all.
			at := int(p - base)
			return fresh[i][at : at+len(b) : at+cap(b)]
		}
		return b
	}
	for _, nodes := range [2][]*Node{c.list, c.nsec3} {
		for _, n := range nodes {
			n.Name = move(n.Name)
			for i := range n.RRsets {
				n.RRsets[i].Wire = move(n.RRsets[i].Wire)
			}
		}
	}
	c.wires, c.signedWires = nil, nil
}
