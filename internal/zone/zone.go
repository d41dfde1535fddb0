// Package zone loads zone files and compiles them into an immutable lookup
// structure for the answer path: owner names in canonical wire form, RRsets
// pre-encoded in wire form, delegation, wildcard and additional-section
// facts computed once at load time (the "adjust" pass of Knot and NSD).
//
// A compiled Zone is never modified; a reload compiles a new one and the
// server publishes it atomically.
package zone

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/tern-dns/tern/internal/prefetch"
	"github.com/tern-dns/tern/internal/wire"
)

// RRset is the pre-encoded records of one owner and type.
type RRset struct {
	Type uint16
	// Where the set's first record came from, for load-time messages;
	// covered is the covered type of an RRSIG set while compiling.
	covered uint16
	file    uint16
	// sigCount and sigTTL describe the RRSIGs covering the set, whose
	// wire form follows Wire in its spare capacity (see Sigs): a header
	// of their own would cost a signed zone 64 bytes per RRset.
	sigCount uint16
	Count    uint32 // number of records
	TTL      uint32 // TTL of the first record
	line     uint32
	sigTTL   uint32
	// Wire holds each record's TYPE, CLASS, TTL, RDLENGTH and RDATA in
	// turn, names uncompressed: everything but the owner, which the
	// writer supplies (usually as a compression pointer).
	Wire []byte
	// targets are the nodes whose addresses belong in the additional
	// section when this RRset is in a response: in-zone NS, MX and SRV
	// targets (RFC 1034 §4.3.2 step 6, RFC 2782). A pointer, since most
	// RRsets have none and a million-record zone feels every word.
	targets *[]*Node
}

// Sigs returns the RRSIGs covering the set (RFC 4035 §2.2) as an RRset
// of their own, and false when there are none.
func (s *RRset) Sigs() (RRset, bool) {
	if s.sigCount == 0 {
		return RRset{}, false
	}
	return RRset{Type: wire.TypeRRSIG, Count: uint32(s.sigCount), TTL: s.sigTTL, Wire: s.Wire[len(s.Wire):cap(s.Wire)]}, true
}

// Additional returns the nodes whose addresses follow this RRset in the
// additional section.
func (s *RRset) Additional() []*Node {
	if s.targets == nil {
		return nil
	}
	return *s.targets
}

// Each calls fn with the wire tail of every record of the set.
func (s *RRset) Each(fn func(tail []byte)) {
	w := s.Wire
	for len(w) >= 10 {
		n := 10 + int(binary.BigEndian.Uint16(w[8:]))
		fn(w[:n])
		w = w[n:]
	}
}

// NodeFlags are facts about a node computed at load time.
type NodeFlags uint8

const (
	// Apex marks the zone's origin.
	Apex NodeFlags = 1 << iota
	// Delegation marks a zone cut: NS records at a name other than the
	// apex (RFC 1034 §4.2.1).
	Delegation
	// Wildcard marks a node whose first label is "*" (RFC 4592 §2.1.1).
	Wildcard
	// NonTerminal marks an empty non-terminal: a name with no records
	// that exists because names below it do (RFC 4592 §2.2.2).
	NonTerminal

	adjusted // compile-time: the adjust pass has seen the node
	hasCNAME
	hasDNAME
	hasNS
)

// Node is one owner name of a zone. The fields an answer reads (name,
// RRsets, cut, flags, cut index: nodeHot bytes) come first, so that in a
// large zone, where each lookup is a cache miss, they lie on one cache
// line, or two for a node that starts in the middle of one (nodes are 96
// bytes: every other node of a slab starts a line).
type Node struct {
	// Name is the owner in canonical wire form (lowercase).
	Name   []byte
	RRsets []RRset
	// Cut is the nearest proper ancestor that is a delegation or owns a
	// DNAME; a node with a Cut is not authoritative data (glue, or
	// occluded). nil for authoritative nodes.
	Cut   *Node
	Flags NodeFlags
	// CutIndex numbers the zone's delegations (nodes flagged Delegation
	// with no Cut) densely from 0, so that the answer path can keep data
	// of its own per delegation in a slice of Zone.Cuts entries; 0 for
	// other nodes.
	CutIndex uint32
	// Parent is the node one label up; nil at the apex.
	Parent *Node
	// WildcardChild is the "*" node directly below, if any.
	WildcardChild *Node
	// NSEC3 is the NSEC3 node whose hash matches this name, in zones
	// signed with NSEC3; nil if none (opt-out, or unsigned).
	NSEC3 *Node
	// Padding to 96 bytes: at 88, seven in eight nodes of a slab would
	// start past the beginning of a line and their hot fields span two.
	_ [8]byte
}

// nodeHot is the size of Node's answer fields, which Ahead prefetches.
const nodeHot = unsafe.Offsetof(Node{}.CutIndex) + unsafe.Sizeof(Node{}.CutIndex)

// CNAME, DNAME and NS return those RRsets, nil when absent; flags make the
// common "absent" answer a bit test.
func (n *Node) CNAME() *RRset {
	if n.Flags&hasCNAME == 0 {
		return nil
	}
	return n.Get(wire.TypeCNAME)
}

// DNAME returns the node's DNAME RRset or nil.
func (n *Node) DNAME() *RRset {
	if n.Flags&hasDNAME == 0 {
		return nil
	}
	return n.Get(wire.TypeDNAME)
}

// NS returns the node's NS RRset or nil.
func (n *Node) NS() *RRset {
	if n.Flags&hasNS == 0 {
		return nil
	}
	return n.Get(wire.TypeNS)
}

// Get returns the RRset of type t, or nil.
func (n *Node) Get(t uint16) *RRset {
	for i := range n.RRsets {
		if n.RRsets[i].Type == t {
			return &n.RRsets[i]
		}
	}
	return nil
}

// Zone is one compiled zone.
type Zone struct {
	// Origin is the apex name in canonical wire form; Labels is its label
	// count, the root label included.
	Origin []byte
	Labels int
	Apex   *Node
	SOA    *RRset
	// NegTTL is the TTL of the SOA in negative answers: the minimum of the
	// SOA's TTL and its MINIMUM field (RFC 2308 §3, §5).
	NegTTL uint32
	// Serial is the SOA's serial. (Beside NegTTL, in one word: the
	// struct is 320 bytes, a size class, not 328 in a 352-byte block;
	// a hundred thousand small zones feel 32 bytes each.)
	Serial uint32
	// NegSOA is the SOA record's wire tail with NegTTL in place of its
	// TTL, and NegSOASigs its RRSIGs with the same TTL: a negative answer's
	// SOA and signatures live only as long as the negative TTL.
	NegSOA     []byte
	NegSOASigs *RRset
	// Cuts is the number of delegations (see Node.CutIndex).
	Cuts int

	// Records, Names: counts for reports.
	Records int
	Names   int
	// Warnings are the problems loading worked around (see Warning).
	Warnings []Warning
	// files are the zone's files, which RRsets' positions index.
	files []string

	// Signed is set when the apex has a DNSKEY RRset: answers to DO
	// queries then carry RRSIGs and proofs (RFC 4035 §3.1).
	Signed bool
	// Unavailable marks a placeholder for a configured zone that could not
	// be loaded: it holds only Origin and Labels, and names under it are
	// answered SERVFAIL, as Knot does, rather than REFUSED or from a
	// parent zone. (It sits in Signed's padding: the struct does not grow.)
	Unavailable bool
	// NSEC3 is the zone's NSEC3 chain, nil for NSEC or unsigned zones.
	NSEC3 *NSEC3Chain
	// nsec3Owners are the nodes of every owner of NSEC3 records or their
	// RRSIGs, sorted by name, chain or not (an unsigned zone's, or an
	// owner that is no hash): what the zone holds, for differences and
	// transfers.
	nsec3Owners []*Node

	index    index
	nsec     []*Node  // nodes with NSEC, in canonical order
	nsecKeys [][]byte // their wire.CanonicalKey, for binary search
	// nsecHeads are the first 8 bytes of each key, big-endian and
	// zero-padded: the search compares these dense words and reads a
	// whole key only when they tie, instead of following a pointer to
	// a key elsewhere in memory at every step.
	nsecHeads []uint64
}

// Lookup returns the node named name (canonical wire form), or nil.
func (z *Zone) Lookup(name []byte) *Node {
	return z.index.get(name)
}

// Set is every zone the server serves, immutable once built. Finding the
// zone for a name costs one map probe per label of the name, however many
// zones there are. Its zones are kept in a ByOrigin by their origins'
// wire form, so that a new Set with a few zones changed (With) copies
// only their shards: a zone added beside 100,000 copies about 400
// entries, not 100,000.
type Set struct {
	m ByOrigin[*Zone]
}

// SetShards is the number of shards of a Set (and of a ByOrigin).
const SetShards = 256

// ShardOf is the shard of the Set that holds the zone whose origin is
// name (canonical wire form): a multiplicative hash of its first and
// last eight octets and its length, a few instructions on the query
// path. Origins differ at their start (a hosting provider's customers)
// or at their end (one name under several TLDs), which it mixes both
// of; names alike at both ends share a shard, which makes With copy
// more, never answers wrong.
func ShardOf(name []byte) int {
	n := len(name)
	var a, b uint64
	if n >= 8 {
		a = binary.LittleEndian.Uint64(name)
		b = binary.LittleEndian.Uint64(name[n-8:])
	} else {
		for i, c := range name {
			a |= uint64(c) << (8 * i)
		}
	}
	h := (a ^ bits.RotateLeft64(b, 29) ^ uint64(n)) * 0x9E3779B97F4A7C15
	return int(h >> 56)
}

// NewSet builds a Set; a later zone with the same origin replaces an
// earlier one.
func NewSet(zones ...*Zone) *Set {
	s := &Set{}
	for _, z := range zones {
		i := ShardOf(z.Origin)
		if s.m.shards[i] == nil {
			s.m.shards[i] = make(map[string]*Zone)
		}
		s.m.shards[i][string(z.Origin)] = z
	}
	for _, m := range s.m.shards {
		s.m.n += len(m)
	}
	return s
}

// With returns a Set of s's zones with changes made: each origin (its
// wire form as a string) served by its zone, or no longer served when
// it maps to nil. s is unchanged, and shares with the result every
// shard no change falls in. A nil s is an empty Set.
func (s *Set) With(changes map[string]*Zone) *Set {
	var m *ByOrigin[*Zone]
	if s != nil {
		m = &s.m
	}
	return &Set{m: *m.With(changes, func(z *Zone) bool { return z == nil })}
}

// SameShard reports whether s and o hold shard i in common (the same
// zones: a shard With did not copy).
func (s *Set) SameShard(o *Set, i int) bool { return s.m.SameShard(&o.m, i) }

// Shard returns the zones of shard i, in no particular order.
func (s *Set) Shard(i int) []*Zone {
	out := make([]*Zone, 0, len(s.m.shards[i]))
	for _, z := range s.m.shards[i] {
		out = append(out, z)
	}
	return out
}

// Nodes calls fn for every node of the zone, in no particular order: the
// index's, which is the hash order, so that each node, its RRsets and
// its name and wire form would be cache misses one after another in a
// zone larger than the caches. The walk prefetches ahead instead, the
// node nodeAhead slots on and the name and RRsets of the one setsAhead
// on (loaded by then), overlapping the misses of a walk of the whole
// zone (an AXFR, a comparison of versions).
func (z *Zone) Nodes(fn func(*Node)) {
	const nodeAhead, setsAhead = 32, 16
	slots := z.index.slots
	for i := range slots {
		if j := i + nodeAhead; j < len(slots) && slots[j].node != nil {
			prefetch.Range(uintptr(unsafe.Pointer(slots[j].node)), nodeHot)
		}
		if j := i + setsAhead; j < len(slots) && slots[j].node != nil {
			n := slots[j].node
			if len(n.Name) > 0 {
				// The name's line holds a small RRset's wire form too
				// (see intern).
				prefetch.Range(uintptr(unsafe.Pointer(&n.Name[0])), uintptr(len(n.Name)))
			}
			if len(n.RRsets) > 0 {
				prefetch.Range(uintptr(unsafe.Pointer(&n.RRsets[0])), unsafe.Sizeof(RRset{}))
			}
		}
		if n := slots[i].node; n != nil {
			fn(n)
		}
	}
}

// Zones returns the zones in no particular order.
func (s *Set) Zones() []*Zone {
	out := make([]*Zone, 0, s.m.n)
	for _, z := range s.m.All() {
		out = append(out, z)
	}
	return out
}

// Len is the number of zones.
func (s *Set) Len() int { return s.m.n }

// Get returns the zone whose origin is exactly name, or nil.
func (s *Set) Get(name []byte) *Zone { return s.m.GetBytes(name) }

// bytesString views b as a string without copying; b must never change,
// which holds for compiled zone data.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
