package zone

// Differences between two versions of a zone (RFC 1995): what an IXFR
// sends and what a journal keeps.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
)

// RR is one record in wire form: Owner is the owner name in canonical
// wire form (lowercase, uncompressed) and Tail the rest (TYPE, CLASS,
// TTL, RDLENGTH, RDATA, names uncompressed), as RRset.Wire holds it.
// Both may alias a compiled zone's memory and must not be changed.
type RR struct {
	Owner []byte
	Tail  []byte
}

// Type is the record's type.
func (r RR) Type() uint16 { return binary.BigEndian.Uint16(r.Tail) }

// Unpack returns the record as miekg/dns's type, for what builds messages
// with it (NOTIFY, tests).
func (r RR) Unpack() (dns.RR, error) {
	msg := make([]byte, 0, len(r.Owner)+len(r.Tail))
	rr, _, err := dns.UnpackRR(append(append(msg, r.Owner...), r.Tail...), 0)
	return rr, err
}

// rdata is the record's RDATA.
func (r RR) rdata() []byte { return r.Tail[10:] }

// Diff is the difference between two versions of a zone, as one sequence
// of an IXFR response carries it (RFC 1995 §4): the old SOA and the
// records deleted, then the new SOA and the records added. Deleted and
// Added hold no SOA and are sorted by CompareRR; a record whose TTL
// changed is deleted with the old TTL and added with the new one.
type Diff struct {
	From, To       uint32 // the old and the new serial
	OldSOA, NewSOA RR
	Deleted, Added []RR
}

// CompareRR orders records by owner in canonical name order (RFC 4034
// §6.1, through wire.CanonicalKey), then type, RDATA and TTL: a total
// order in which two records compare equal exactly when they are the
// same record with the same TTL. ka and kb are the owners' canonical keys.
func CompareRR(ka []byte, a RR, kb []byte, b RR) int {
	if c := bytes.Compare(ka, kb); c != 0 {
		return c
	}
	if ta, tb := a.Type(), b.Type(); ta != tb {
		if ta < tb {
			return -1
		}
		return 1
	}
	if c := bytes.Compare(a.rdata(), b.rdata()); c != 0 {
		return c
	}
	// CLASS is always IN in a zone; the TTL decides last.
	return bytes.Compare(a.Tail[4:8], b.Tail[4:8])
}

// keyed is a record with its owner's canonical key, for sorting.
type keyed struct {
	key []byte
	rr  RR
}

func compareKeyed(a, b keyed) int { return CompareRR(a.key, a.rr, b.key, b.rr) }

// Compare returns the difference that turns old into new, two versions
// of the same zone. Only names whose records changed cost more than a
// hash lookup: for each name of new the same name of old is looked up
// (and the reverse for names old alone has), unchanged RRsets are
// compared as whole wire images, and only the changed records are sorted.
func Compare(old, new *Zone) (*Diff, error) {
	if old == nil || new == nil || old.SOA == nil || new.SOA == nil {
		return nil, errors.New("comparing zone versions: a version without an SOA")
	}
	if string(old.Origin) != string(new.Origin) {
		return nil, fmt.Errorf("comparing zone versions: origins %s and %s differ", NameString(old.Origin), NameString(new.Origin))
	}
	var del, add []keyed
	var key []byte // scratch: a name's key, copied only when it is used
	node := func(dst []keyed, n *Node, sets []RRset, other []RRset) []keyed {
		key = wire.CanonicalKey(key, n.Name)
		var k []byte
		for i := range sets {
			s := &sets[i]
			o := findSet(other, s.Type)
			if o >= 0 && sameSets(sets[i:i+1], other[o:o+1]) {
				continue
			}
			if k == nil {
				k = bytes.Clone(key)
			}
			if o >= 0 {
				// Changed: the records of s that the other set lacks.
				dst = appendMissing(dst, k, n.Name, s, &other[o])
			} else {
				dst = appendAll(dst, k, n.Name, s)
			}
		}
		return dst
	}
	// Names in both versions are compared once, from new's side; old's
	// names are looked up in new only when some of them were not met
	// there (names removed), which halves the lookups of the common case.
	matched := 0
	new.Nodes(func(n *Node) {
		m := old.Lookup(n.Name)
		if m == nil {
			add = node(add, n, n.RRsets, nil)
			return
		}
		matched++
		add = node(add, n, n.RRsets, m.RRsets)
		del = node(del, m, m.RRsets, n.RRsets)
	})
	if matched < old.Names {
		old.Nodes(func(n *Node) {
			if new.Lookup(n.Name) == nil {
				del = node(del, n, n.RRsets, nil)
			}
		})
	}
	// NSEC3 owners live outside the name tree (RFC 5155 §7.2.8): the two
	// lists of them, each sorted by name, are walked side by side.
	on, nn := old.NSEC3Owners(), new.NSEC3Owners()
	i, j := 0, 0
	for i < len(on) || j < len(nn) {
		switch c := compareNSEC3(on, nn, i, j); {
		case c < 0:
			del = node(del, on[i], on[i].RRsets, nil)
			i++
		case c > 0:
			add = node(add, nn[j], nn[j].RRsets, nil)
			j++
		default:
			del = node(del, on[i], on[i].RRsets, nn[j].RRsets)
			add = node(add, nn[j], nn[j].RRsets, on[i].RRsets)
			i++
			j++
		}
	}
	slices.SortFunc(del, compareKeyed)
	slices.SortFunc(add, compareKeyed)
	d := &Diff{From: old.Serial, To: new.Serial,
		OldSOA: old.SOARecord(), NewSOA: new.SOARecord(),
		Deleted: unkey(del), Added: unkey(add)}
	return d, nil
}

// NSEC3Owners returns the nodes of the zone's NSEC3 owners, sorted by
// name: every owner of NSEC3 records or of their RRSIGs, whether or not
// they form a chain (NSEC3.Nodes holds those that do). With Nodes, they
// are every record of the zone, what a transfer sends.
func (z *Zone) NSEC3Owners() []*Node { return z.nsec3Owners }

// compareNSEC3 orders on[i] against nn[j] by name, an exhausted side last.
func compareNSEC3(on, nn []*Node, i, j int) int {
	switch {
	case i == len(on):
		return 1
	case j == len(nn):
		return -1
	}
	return bytes.Compare(on[i].Name, nn[j].Name)
}

// findSet returns the index of the RRset of type t in sets, or -1.
func findSet(sets []RRset, t uint16) int {
	for i := range sets {
		if sets[i].Type == t {
			return i
		}
	}
	return -1
}

// SOARecord is the zone's SOA record; the zone must have one (a loaded
// zone has, a Placeholder has not).
func (z *Zone) SOARecord() RR { return RR{z.Origin, firstTail(z.SOA)} }

func firstTail(s *RRset) []byte {
	return s.Wire[:10+int(binary.BigEndian.Uint16(s.Wire[8:]))]
}

// eachRecord calls fn with every record tail of s, its signatures after,
// but not an SOA record: the SOAs of a difference travel apart (Diff.OldSOA,
// NewSOA), and its signatures with the other records.
func eachRecord(s *RRset, fn func(tail []byte)) {
	if s.Type != wire.TypeSOA {
		s.Each(fn)
	}
	if sigs, ok := s.Sigs(); ok {
		sigs.Each(fn)
	}
}

// EachRecord calls fn with every record of z but its SOA (whose
// signatures it includes), NSEC3 owners' last, in no order: the zone as
// a stream of records, without the sort SortedRecords costs. fn's record
// aliases z's memory and must not be changed.
func (z *Zone) EachRecord(fn func(RR)) {
	each := func(n *Node) {
		for i := range n.RRsets {
			eachRecord(&n.RRsets[i], func(t []byte) { fn(RR{n.Name, t}) })
		}
	}
	z.Nodes(each)
	for _, n := range z.NSEC3Owners() {
		each(n)
	}
}

func appendAll(dst []keyed, key, owner []byte, s *RRset) []keyed {
	eachRecord(s, func(t []byte) { dst = append(dst, keyed{key, RR{owner, t}}) })
	return dst
}

// appendMissing appends the records of s (signatures included) that o
// lacks, byte for byte (a TTL change makes a record missing).
func appendMissing(dst []keyed, key, owner []byte, s, o *RRset) []keyed {
	var have map[string]bool
	var small [][]byte
	n := int(o.Count) + int(o.sigCount)
	if n > 16 {
		have = make(map[string]bool, n)
	}
	eachRecord(o, func(t []byte) {
		if have != nil {
			have[string(t)] = true
		} else {
			small = append(small, t)
		}
	})
	eachRecord(s, func(t []byte) {
		found := false
		if have != nil {
			found = have[string(t)]
		} else {
			for _, u := range small {
				if string(u) == string(t) {
					found = true
					break
				}
			}
		}
		if !found {
			dst = append(dst, keyed{key, RR{owner, t}})
		}
	})
	return dst
}

func unkey(ks []keyed) []RR {
	if len(ks) == 0 {
		return nil
	}
	out := make([]RR, len(ks))
	for i, k := range ks {
		out[i] = k.rr
	}
	return out
}

// Empty reports whether the difference changes nothing but perhaps the SOA.
func (d *Diff) Empty() bool { return len(d.Deleted) == 0 && len(d.Added) == 0 }

// Merge condenses two consecutive differences, a (from X to Y) and then
// b (from Y to Z), into one from X to Z (RFC 1995 §5 allows a server to
// send condensed differences): a record that a adds and b deletes, or a
// deletes and b adds back, appears in neither list.
func Merge(a, b *Diff) (*Diff, error) {
	if a.To != b.From {
		return nil, fmt.Errorf("merging zone differences: %d→%d does not continue %d→%d", b.From, b.To, a.From, a.To)
	}
	// Cancelled pairs: a's additions that b deletes, a's deletions b adds.
	addA, delB := cancel(a.Added, b.Deleted)
	delA, addB := cancel(a.Deleted, b.Added)
	return &Diff{From: a.From, To: b.To, OldSOA: a.OldSOA, NewSOA: b.NewSOA,
		Deleted: union(delA, delB), Added: union(addA, addB)}, nil
}

// cancel returns x and y, both sorted, without the records they share.
func cancel(x, y []RR) (ox, oy []RR) {
	walk(x, y, func(r RR, inX, inY bool) {
		switch {
		case !inY:
			ox = append(ox, r)
		case !inX:
			oy = append(oy, r)
		}
	})
	return ox, oy
}

// union merges two sorted lists; a record in both appears once.
func union(x, y []RR) []RR {
	if len(x) == 0 {
		return y
	}
	if len(y) == 0 {
		return x
	}
	out := make([]RR, 0, len(x)+len(y))
	walk(x, y, func(r RR, _, _ bool) { out = append(out, r) })
	return out
}

// walk calls fn with the records of two sorted lists in order, each
// record in both once, saying which lists hold it.
func walk(x, y []RR, fn func(r RR, inX, inY bool)) {
	var kx, ky []byte
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		kx = wire.CanonicalKey(kx, x[i].Owner)
		ky = wire.CanonicalKey(ky, y[j].Owner)
		switch c := CompareRR(kx, x[i], ky, y[j]); {
		case c < 0:
			fn(x[i], true, false)
			i++
		case c > 0:
			fn(y[j], false, true)
			j++
		default:
			fn(x[i], true, true)
			i++
			j++
		}
	}
	for ; i < len(x); i++ {
		fn(x[i], true, false)
	}
	for ; j < len(y); j++ {
		fn(y[j], false, true)
	}
}

// SortedRecords returns every record of the zone, the SOA first and then the
// rest sorted by CompareRR: the zone as a list, for tests and transfers.
func (z *Zone) SortedRecords() []RR {
	var ks []keyed
	var key []byte
	each := func(n *Node) {
		key = wire.CanonicalKey(key, n.Name)
		k := bytes.Clone(key)
		for i := range n.RRsets {
			ks = appendAll(ks, k, n.Name, &n.RRsets[i])
		}
	}
	z.Nodes(each)
	for _, n := range z.NSEC3Owners() {
		each(n)
	}
	slices.SortFunc(ks, compareKeyed)
	out := make([]RR, 0, len(ks)+1)
	if z.SOA != nil {
		out = append(out, z.SOARecord())
	}
	return append(out, unkey(ks)...)
}

// Digest is a fingerprint of the zone's content: the sum of an FNV-1a hash
// of each record (owner and tail), so that it needs no sorting. Two
// versions with the same records have the same digest, whatever their
// order; a journal keeps it to tell, after a restart, whether the zone
// it leads to is the one being served (a file edited without a new
// serial is not).
func (z *Zone) Digest() uint64 {
	var sum uint64
	add := func(owner []byte) func([]byte) {
		return func(tail []byte) {
			h := uint64(14695981039346656037)
			for _, b := range owner {
				h = (h ^ uint64(b)) * 1099511628211
			}
			for _, b := range tail {
				h = (h ^ uint64(b)) * 1099511628211
			}
			sum += h
		}
	}
	each := func(n *Node) {
		fn := add(n.Name)
		for i := range n.RRsets {
			n.RRsets[i].Each(fn)
			if sigs, ok := n.RRsets[i].Sigs(); ok {
				sigs.Each(fn)
			}
		}
	}
	z.Nodes(each)
	for _, n := range z.NSEC3Owners() {
		each(n)
	}
	return sum
}

// Apply returns the records of the version d leads to, given those of
// the version it starts from as SortedRecords lists them (SOA first, the rest
// sorted). A record d deletes that recs lacks, or adds that recs has
// already, is an error: the difference does not start from recs.
func (d *Diff) Apply(recs []RR) ([]RR, error) {
	if len(recs) == 0 || recs[0].Type() != wire.TypeSOA || string(recs[0].Tail) != string(d.OldSOA.Tail) {
		return nil, fmt.Errorf("applying the difference %d→%d: the zone's SOA is not its old SOA", d.From, d.To)
	}
	rest := recs[1:]
	out := make([]RR, 0, len(recs)+len(d.Added)-len(d.Deleted))
	out = append(out, d.NewSOA)
	var kr, kd, ka []byte
	i, j, k := 0, 0, 0
	for i < len(rest) {
		kr = wire.CanonicalKey(kr, rest[i].Owner)
		if j < len(d.Deleted) {
			kd = wire.CanonicalKey(kd, d.Deleted[j].Owner)
			c := CompareRR(kr, rest[i], kd, d.Deleted[j])
			if c == 0 {
				i++
				j++
				continue
			}
			if c > 0 {
				return nil, fmt.Errorf("applying the difference %d→%d: deleted record %s %d is not in the zone", d.From, d.To, NameString(d.Deleted[j].Owner), d.Deleted[j].Type())
			}
		}
		for k < len(d.Added) {
			ka = wire.CanonicalKey(ka, d.Added[k].Owner)
			c := CompareRR(ka, d.Added[k], kr, rest[i])
			if c > 0 {
				break
			}
			if c == 0 {
				return nil, fmt.Errorf("applying the difference %d→%d: added record %s %d is in the zone already", d.From, d.To, NameString(d.Added[k].Owner), d.Added[k].Type())
			}
			out = append(out, d.Added[k])
			k++
		}
		out = append(out, rest[i])
		i++
	}
	if j < len(d.Deleted) {
		return nil, fmt.Errorf("applying the difference %d→%d: deleted record %s %d is not in the zone", d.From, d.To, NameString(d.Deleted[j].Owner), d.Deleted[j].Type())
	}
	return append(out, d.Added[k:]...), nil
}

// ApplyZone returns the records of the version d leads to from z, the
// version it starts from, in no order (what CompileRecords takes): the
// new SOA, every other record of z but those d deletes, and those it
// adds. Unlike Apply it neither needs nor makes a sorted list: O(zone)
// without the sort that SortedRecords costs. A record d deletes that z
// lacks, or adds that z has, is an error.
func (d *Diff) ApplyZone(z *Zone) ([]RR, error) {
	if z.SOA == nil || string(z.SOARecord().Tail) != string(d.OldSOA.Tail) {
		return nil, fmt.Errorf("applying the difference %d→%d: the zone's SOA is not its old SOA", d.From, d.To)
	}
	// Owners are wire names, which end at their root label: owner and
	// tail side by side name a record unambiguously.
	deleted := make(map[string]bool, len(d.Deleted))
	var key []byte
	for _, r := range d.Deleted {
		key = append(append(key[:0], r.Owner...), r.Tail...)
		deleted[string(key)] = false
	}
	found := 0
	out := make([]RR, 0, z.Records+len(d.Added))
	out = append(out, d.NewSOA)
	z.EachRecord(func(r RR) {
		if len(deleted) > 0 {
			key = append(append(key[:0], r.Owner...), r.Tail...)
			if seen, ok := deleted[string(key)]; ok {
				if !seen {
					deleted[string(key)] = true
					found++
				}
				return
			}
		}
		out = append(out, r)
	})
	if found != len(deleted) {
		for _, r := range d.Deleted {
			if !deleted[string(r.Owner)+string(r.Tail)] {
				return nil, fmt.Errorf("applying the difference %d→%d: deleted record %s %d is not in the zone", d.From, d.To, NameString(r.Owner), r.Type())
			}
		}
	}
	for _, r := range d.Added {
		// A record both deleted and added (an RRSIG moving between
		// the sets it is kept with) is not in the zone twice.
		if _, del := deleted[string(r.Owner)+string(r.Tail)]; !del && z.holds(r) {
			return nil, fmt.Errorf("applying the difference %d→%d: added record %s %d is in the zone already", d.From, d.To, NameString(r.Owner), r.Type())
		}
	}
	return append(out, d.Added...), nil
}

// holds reports whether z has the record r (its TTL included).
func (z *Zone) holds(r RR) bool {
	n := z.Lookup(r.Owner)
	if n == nil {
		for _, m := range z.NSEC3Owners() {
			if bytes.Equal(m.Name, r.Owner) {
				n = m
				break
			}
		}
	}
	if n == nil {
		return false
	}
	has := false
	for i := range n.RRsets {
		eachRecord(&n.RRsets[i], func(t []byte) { has = has || bytes.Equal(t, r.Tail) })
	}
	return has
}
