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
	count int
}

type indexSlot struct {
	hash uint64
	node *Node // nil: empty
}

// newIndex returns an empty index with room for about hint names. The
// compiler fills it as it meets names, and the zone keeps it.
func newIndex(hint int) index {
	x := index{seed: maphash.MakeSeed()}
	x.resize(hint)
	return x
}

// resize makes the table the smallest power of two at least twice n (and
// at least 2), so that it is at most half full: an absent name (the
// closest-encloser search asks for several) ends after a probe or two.
// The stored hashes place the slots again without hashing a name.
func (x *index) resize(n int) {
	old := x.slots
	size := uint64(1) << bits.Len64(uint64(max(2*n, 2)-1))
	x.slots, x.mask = make([]indexSlot, size), size-1
	for _, s := range old {
		if s.node != nil {
			x.place(s)
		}
	}
}

func (x *index) place(s indexSlot) {
	i := s.hash & x.mask
	for x.slots[i].node != nil {
		i = (i + 1) & x.mask
	}
	x.slots[i] = s
}

// fit shrinks a table that the size hint made more than twice as large
// as its names need.
func (x *index) fit() {
	if len(x.slots) > 4*max(x.count, 1) {
		x.resize(x.count)
	}
}

// add puts node n, whose name is not in the index yet and hashes to h
// (from find), into it.
func (x *index) add(n *Node, h uint64) {
	if 2*(x.count+1) > len(x.slots) {
		x.resize(len(x.slots)) // doubles it
	}
	x.place(indexSlot{h, n})
	x.count++
}

// get returns the node named name, or nil.
func (x *index) get(name []byte) *Node {
	n, _ := x.find(name)
	return n
}

// find returns the node named name, or nil, and the name's hash (0 in
// the zero index, which finds nothing and takes nothing).
func (x *index) find(name []byte) (*Node, uint64) {
	if len(x.slots) == 0 {
		return nil, 0
	}
	h := maphash.Bytes(x.seed, name)
	for i := h & x.mask; ; i = (i + 1) & x.mask {
		s := &x.slots[i]
		if s.node == nil {
			return nil, h
		}
		if s.hash == h && string(s.node.Name) == string(name) {
			return s.node, h
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
