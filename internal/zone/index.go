package zone

import (
	"hash/maphash"
	"math/bits"
	"unsafe"

	"github.com/tern-dns/tern/internal/prefetch"
)

// index finds a zone's nodes by name: an open-addressed table of (hash,
// node) pairs with linear probing, at most half full. A lookup in a
// large zone is a chain of cache misses; a Go map costs one for its
// control word and slot and another for the key's bytes, which live with
// the names. Here one 16-byte slot holds the full hash and the node, so a
// probe reads one line, and the name is compared (on the node's line and
// the name's) only when the hashes match. Linear probing keeps a
// collision's next candidate on the same line.
type index struct {
	slots []indexSlot
	mask  uint64
	seed  maphash.Seed
}

type indexSlot struct {
	hash uint64
	node *Node // nil: empty
}

// newIndex builds the index of nodes.
func newIndex(nodes []*Node) index {
	// A power of two at least twice the count: at most half full, so
	// an absent name (the closest-encloser search asks for several)
	// ends after a probe or two.
	size := uint64(1) << bits.Len64(uint64(2*len(nodes)|1))
	x := index{slots: make([]indexSlot, size), mask: size - 1, seed: maphash.MakeSeed()}
	for _, n := range nodes {
		h := maphash.Bytes(x.seed, n.Name)
		i := h & x.mask
		for x.slots[i].node != nil {
			i = (i + 1) & x.mask
		}
		x.slots[i] = indexSlot{h, n}
	}
	return x
}

// get returns the node named name, or nil.
func (x *index) get(name []byte) *Node {
	if len(x.slots) == 0 {
		return nil
	}
	h := maphash.Bytes(x.seed, name)
	for i := h & x.mask; ; i = (i + 1) & x.mask {
		s := &x.slots[i]
		if s.node == nil {
			return nil
		}
		if s.hash == h && string(s.node.Name) == string(name) {
			return s.node
		}
	}
}

// Ahead is a name lookup started early: a server that holds a batch of
// queries starts each one's lookup, then advances them all in steps, each
// step prefetching the next link of the chain (index slot, node, name and
// RRsets), so that the batch's cache misses overlap instead of following
// one another. It only warms the cache; Lookup gives the answer.
type Ahead struct {
	slot   *indexSlot
	node   *Node
	signed bool // the zone is signed: prefetch the signatures' lines too
}

// Ahead starts the lookup of name (canonical wire form) into a.
func (z *Zone) Ahead(a *Ahead, name []byte) {
	a.slot, a.node, a.signed = nil, nil, z.Signed
	if len(z.index.slots) == 0 {
		return
	}
	a.slot = &z.index.slots[maphash.Bytes(z.index.seed, name)&z.index.mask]
	prefetch.Line(uintptr(unsafe.Pointer(a.slot)))
}

// Step prefetches the next link: the node of the slot (the lines of its
// answer fields), then the node's name, whose line also holds its small
// RRsets' wire form (in a signed zone, with the two lines after it, for
// the signatures: see intern and attachSigs), and its RRsets. A lookup
// that probes past its first slot is left to Lookup.
func (a *Ahead) Step() {
	switch {
	case a.slot != nil:
		a.node, a.slot = a.slot.node, nil
		if a.node != nil {
			prefetch.Range(uintptr(unsafe.Pointer(a.node)), nodeHot)
		}
	case a.node != nil:
		n := a.node
		a.node = nil
		if len(n.Name) > 0 {
			size := uintptr(len(n.Name))
			if a.signed {
				size += 128
			}
			prefetch.Range(uintptr(unsafe.Pointer(&n.Name[0])), size)
		}
		if len(n.RRsets) > 0 {
			prefetch.Range(uintptr(unsafe.Pointer(&n.RRsets[0])), unsafe.Sizeof(RRset{}))
		}
	}
}
