package wire

import "encoding/binary"

// The compression table (RFC 1035 §4.1.4) holds the name suffixes written
// uncompressed where a pointer can reach them (offsets up to 0x3FFF). A
// name is compressed to its longest suffix in the table. The first
// linearMax entries are searched one by one, as most answers have a
// handful and comparing is cheaper than hashing there; past them the
// entries are indexed by an open-addressed hash table of suffix hashes, so
// that the cost of compressing a name depends on its labels, not on the
// names already written. (Searching one by one throughout cost milliseconds
// for a 64 KiB answer of 1000 MX records and their addresses:
// BenchmarkLargeAnswer in internal/auth.)
const (
	// maxCompress bounds the entries; names beyond it are written
	// uncompressed, which is correct, only longer. The 16 KiB a pointer
	// reaches holds about 700 entries in the 1000-MX answer.
	maxCompress = 2048
	// linearMax is the number of entries searched one by one.
	linearMax = 32
	// compSlots is the hash table's size, a power of two, so that it is
	// at most half full; compShift keeps the hash's top log2(compSlots)
	// bits, which pick the slot.
	compSlots = 2 * maxCompress
	compShift = 32 - 12 // 1<<12 == compSlots, as the check below holds

	// maxPointer is the largest offset a compression pointer holds.
	maxPointer = 0x3FFF
)

// compShift must pick exactly log2(compSlots) bits: a negative constant
// converted to uint does not compile, so a change to maxCompress that
// leaves compShift behind fails the build instead of overrunning slots.
const (
	_ = uint(compSlots - 1<<(32-compShift))
	_ = uint(1<<(32-compShift) - compSlots)
)

// compEntry records that the name (canonical wire form, lowercase for the
// question's suffixes) is present in the message at offset off; hash is
// its suffixHash once the table is hashed.
type compEntry struct {
	name []byte
	off  uint16
	hash uint32
}

// Builder writes a response into a caller-owned buffer. It is reused from
// query to query; Reset prepares it for the next one. Names are compressed
// against the names already written with a fixed-size table of suffixes
// instead of a map, which is what makes it allocation free.
type Builder struct {
	buf   []byte // len(buf) is the current message length
	limit int    // the message may not grow past this

	comp  [maxCompress]compEntry
	ncomp int
	// slots, once hashed is set (the first name written with linearMax
	// entries in the table), holds the entries' indexes + 1 (0: empty),
	// probed linearly. Entries leave last in, first out
	// (Rollback, Reset), which undoes their insertion exactly: no
	// tombstones, and only the slots a message used are cleared.
	hashed bool
	slots  [compSlots]uint16
	// starts and hashes hold the label offsets and suffix hashes of the
	// name being written (here rather than on the stack, which would
	// zero them for every name).
	starts [MaxLabels + 1]uint8
	hashes [MaxLabels + 1]uint32

	// Section counts, written into the header by Finish.
	an, ns, ar uint16
	// opt is the offset of the RDLENGTH of the OPT record OPT wrote,
	// which Option grows.
	opt int
}

// Reset starts a new message in buf[:0] that may grow to limit bytes
// (capped by cap(buf)).
func (b *Builder) Reset(buf []byte, limit int) {
	if b.hashed {
		b.unwind(0)
		b.hashed = false
	}
	b.ncomp = 0
	b.buf = buf[:0]
	b.limit = min(limit, cap(buf))
	b.an, b.ns, b.ar = 0, 0, 0
}

// Len is the current length of the message.
func (b *Builder) Len() int { return len(b.buf) }

// Limit is the size the message may not exceed.
func (b *Builder) Limit() int { return b.limit }

// SetLimit changes the size limit (to reserve room for a trailing OPT).
func (b *Builder) SetLimit(n int) { b.limit = n }

// Bytes returns the message written so far.
func (b *Builder) Bytes() []byte { return b.buf }

// Mark is a position to roll back to when an RRset does not fit.
type Mark struct {
	n     int
	ncomp int
	an    uint16
	ns    uint16
	ar    uint16
}

// Mark returns the current position.
func (b *Builder) Mark() Mark { return Mark{len(b.buf), b.ncomp, b.an, b.ns, b.ar} }

// Rollback forgets everything written after m.
func (b *Builder) Rollback(m Mark) {
	b.buf = b.buf[:m.n]
	if b.hashed {
		b.unwind(m.ncomp)
	}
	b.ncomp = m.ncomp
	b.an, b.ns, b.ar = m.an, m.ns, m.ar
}

// unwind takes the entries from the last down to the n-th out of the hash
// table.
func (b *Builder) unwind(n int) {
	for i := b.ncomp; i > n; i-- {
		s := b.comp[i-1].hash >> compShift
		for b.slots[s] != uint16(i) {
			s = (s + 1) & (compSlots - 1)
		}
		b.slots[s] = 0
	}
}

// Overflow reports whether the message has grown past its limit. Writers
// append freely (the buffer has room for the largest message) and callers
// check Overflow at RRset boundaries, then Rollback.
func (b *Builder) Overflow() bool { return len(b.buf) > b.limit }

// Header writes the 12-byte header with zero counts.
func (b *Builder) Header(id, flags uint16) {
	b.buf = append(b.buf, byte(id>>8), byte(id), byte(flags>>8), byte(flags), 0, 0, 0, 0, 0, 0, 0, 0)
}

// SetFlags overwrites the header's flag word.
func (b *Builder) SetFlags(flags uint16) { binary.BigEndian.PutUint16(b.buf[2:], flags) }

// Question copies the client's question (raw, with the client's case: the
// answer echoes it) and makes its name and suffixes available for
// compression, using the lowercased name and label offsets parsed into q.
func (b *Builder) Question(raw []byte, q *Query) {
	start := len(b.buf)
	b.buf = append(b.buf, raw...)
	b.buf[4], b.buf[5] = 0, 1
	name := q.Name()
	for i := 0; i < q.nlabels-1 && b.ncomp < maxCompress; i++ {
		o := int(q.labels[i])
		b.comp[b.ncomp] = compEntry{name: name[o:], off: uint16(start + o)}
		b.ncomp++
	}
}

// Name writes name (canonical wire form) compressed against earlier names:
// its longest suffix already in the message becomes a pointer, and the
// suffixes it writes out become available to the names after it.
func (b *Builder) Name(name []byte) {
	for len(name) > 1 {
		if b.hashed || b.ncomp >= linearMax {
			b.nameHashed(name)
			return
		}
		if off, ok := b.lookup(name); ok {
			b.buf = append(b.buf, 0xC0|byte(off>>8), byte(off))
			return
		}
		if len(b.buf) <= maxPointer {
			b.comp[b.ncomp] = compEntry{name: name, off: uint16(len(b.buf))}
			b.ncomp++
		}
		l := int(name[0]) + 1
		b.buf = append(b.buf, name[:l]...)
		name = name[l:]
	}
	b.buf = append(b.buf, 0)
}

// NameAt writes a pointer to offset off, for owners already in the message
// (0xC00C for the QNAME).
func (b *Builder) NameAt(off int) {
	b.buf = append(b.buf, 0xC0|byte(off>>8), byte(off))
}

// lookup searches the entries one by one (fewer than linearMax).
func (b *Builder) lookup(name []byte) (uint16, bool) {
	for i := 0; i < b.ncomp; i++ {
		e := &b.comp[i]
		if len(e.name) == len(name) && string(e.name) == string(name) {
			return e.off, true
		}
	}
	return 0, false
}

// index puts entry i (an index + 1) with hash h into the hash table.
func (b *Builder) index(i int, h uint32) {
	b.comp[i-1].hash = h
	s := h >> compShift
	for b.slots[s] != 0 {
		s = (s + 1) & (compSlots - 1)
	}
	b.slots[s] = uint16(i)
}

// nameHashed is Name once the table holds linearMax entries, and hashes
// it the first time: the hashes of all the name's suffixes in one pass
// from the root, then one probe per suffix, longest first.
func (b *Builder) nameHashed(name []byte) {
	if !b.hashed {
		b.hashed = true
		for i := 1; i <= b.ncomp; i++ {
			b.index(i, b.suffixHashes(b.comp[i-1].name)[0])
		}
	}
	hs := b.suffixHashes(name)
	starts := &b.starts
	start := len(b.buf)
	k := 0
	for ; name[starts[k]] != 0; k++ {
		suffix := name[starts[k]:]
		if off, ok := b.find(hs[k], suffix); ok {
			b.buf = append(b.buf, name[:starts[k]]...)
			b.buf = append(b.buf, 0xC0|byte(off>>8), byte(off))
			break
		}
	}
	if name[starts[k]] == 0 {
		b.buf = append(b.buf, name...)
	}
	// Enter the suffixes written out, longest first, as Name does.
	for i := 0; i < k; i++ {
		off := start + int(starts[i])
		if off > maxPointer || b.ncomp >= maxCompress {
			break
		}
		b.comp[b.ncomp] = compEntry{name: name[starts[i]:], off: uint16(off)}
		b.ncomp++
		b.index(b.ncomp, hs[i])
	}
}

// find probes the hash table for the entry holding name, whose hash is h.
func (b *Builder) find(h uint32, name []byte) (uint16, bool) {
	for s := h >> compShift; ; s = (s + 1) & (compSlots - 1) {
		i := b.slots[s]
		if i == 0 {
			return 0, false
		}
		e := &b.comp[i-1]
		if e.hash == h && len(e.name) == len(name) && string(e.name) == string(name) {
			return e.off, true
		}
	}
}

// suffixHashes fills b.starts with the offsets of name's labels and
// b.hashes with the hash of the suffix starting at each, and returns the
// hashes. A suffix's hash is its first label (length octet included)
// folded into the hash of the rest, so one pass from the root gives them
// all. The label is folded eight octets at a time, one multiplication per
// word, and the top 32 bits of a final multiplication, which depend on
// every octet, are the hash (the slot comes from its top bits). Folding an
// octet at a time (FNV-1a) cost one multiplication's latency per octet:
// 57% of the server's CPU on 1000-MX answers over TCP, whose exchanges
// are 60 octets long (profile of tern serve under tern perf -T).
func (b *Builder) suffixHashes(name []byte) *[MaxLabels + 1]uint32 {
	const (
		seed = 0xcbf29ce484222325
		mul  = 0x9E3779B97F4A7C15
	)
	starts, hs := &b.starts, &b.hashes
	n := 0
	for i := 0; name[i] != 0; i += int(name[i]) + 1 {
		starts[n] = uint8(i)
		n++
	}
	starts[n] = uint8(len(name) - 1)
	h := uint64(seed)
	hs[n] = uint32((h * mul) >> 32)
	for k := n - 1; k >= 0; k-- {
		label := name[starts[k]:starts[k+1]]
		for ; len(label) >= 8; label = label[8:] {
			h = (h ^ binary.LittleEndian.Uint64(label)) * mul
			h ^= h >> 29
		}
		// The last 0-7 octets, zero-padded: the label's length octet
		// already fixes how many there are. Where eight octets end with
		// them, one load and a shift give the same word as the loop.
		var w uint64
		if end := int(starts[k+1]); len(label) > 0 && end >= 8 {
			w = binary.LittleEndian.Uint64(name[end-8:end]) >> (64 - 8*len(label))
		} else {
			for i, c := range label {
				w |= uint64(c) << (8 * i)
			}
		}
		h = (h ^ w) * mul
		h ^= h >> 29
		hs[k] = uint32((h * mul) >> 32)
	}
	return hs
}

// RR writes one record: owner (compressed), then tail, which is the
// pre-encoded TYPE, CLASS, TTL, RDLENGTH and RDATA of the record. Names in
// the RDATA of the RFC 1035 types are compressed (RFC 3597 §4 allows
// compression only there; RDataOf says where they are); other RDATA is
// copied as is.
func (b *Builder) RR(owner []byte, tail []byte) {
	b.Name(owner)
	b.rrTail(tail)
}

// RRAt is RR with the owner given as an offset already in the message.
func (b *Builder) RRAt(ownerOff int, tail []byte) {
	b.NameAt(ownerOff)
	b.rrTail(tail)
}

// rrTail writes tail, compressing the names its type's descriptor marks
// compressible (RFC 3597 §4) and patching RDLENGTH after them.
func (b *Builder) rrTail(tail []byte) {
	d := RDataOf(binary.BigEndian.Uint16(tail))
	if d == nil || d.compressed == 0 {
		b.buf = append(b.buf, tail...)
		return
	}
	b.buf = append(b.buf, tail[:10]...)
	lenAt := len(b.buf) - 2
	rd := tail[10:]
	for _, f := range d.fields[:d.compressed] {
		n := f.Size()
		switch {
		case f == FieldName:
			l := NameLen(rd)
			b.Name(rd[:l])
			rd = rd[l:]
			continue
		case n == 0: // an uncompressed name
			n = NameLen(rd)
		}
		b.buf = append(b.buf, rd[:n]...)
		rd = rd[n:]
	}
	b.buf = append(b.buf, rd...)
	binary.BigEndian.PutUint16(b.buf[lenAt:], uint16(len(b.buf)-lenAt-2))
}

// Raw appends bytes as they are.
func (b *Builder) Raw(p []byte) { b.buf = append(b.buf, p...) }

// CountAnswer adds n records to the answer section's count: RR and RRAt
// write records without counting them, so that a caller counts a whole
// set at once.
func (b *Builder) CountAnswer(n int) { b.an += uint16(n) }

// CountAuthority adds n records to the authority section's count.
func (b *Builder) CountAuthority(n int) { b.ns += uint16(n) }

// CountAdditional adds n records to the additional section's count.
func (b *Builder) CountAdditional(n int) { b.ar += uint16(n) }

// OPT appends an OPT record (RFC 6891 §6.1.2) advertising payload, with the
// extended rcode's upper bits, the DO bit, and an optional NSID option.
// Further options follow it with Option and EDE.
func (b *Builder) OPT(payload uint16, extRcode uint8, do bool, nsid []byte) {
	var flags byte
	if do {
		flags = 0x80
	}
	b.buf = append(b.buf, 0, 0, TypeOPT, byte(payload>>8), byte(payload), extRcode, 0, flags, 0, 0, 0)
	b.opt = len(b.buf) - 2
	b.ar++
	if nsid != nil {
		b.Option(OptionNSID, nsid)
	}
}

// Option appends an EDNS option (RFC 6891 §6.1.2: OPTION-CODE,
// OPTION-LENGTH, OPTION-DATA) to the OPT record just written by OPT,
// which must be the last record in the message.
func (b *Builder) Option(code uint16, data []byte) {
	b.buf = append(b.buf, byte(code>>8), byte(code), byte(len(data)>>8), byte(len(data)))
	b.buf = append(b.buf, data...)
	rdlen := binary.BigEndian.Uint16(b.buf[b.opt:])
	binary.BigEndian.PutUint16(b.buf[b.opt:], rdlen+4+uint16(len(data)))
}

// EDE appends an Extended DNS Error option (RFC 8914 §2) with infoCode and
// no EXTRA-TEXT to the OPT record just written by OPT.
func (b *Builder) EDE(infoCode uint16) {
	data := [2]byte{byte(infoCode >> 8), byte(infoCode)}
	b.Option(OptionEDE, data[:])
}

// Finish writes the section counts into the header and returns the message.
func (b *Builder) Finish() []byte {
	binary.BigEndian.PutUint16(b.buf[6:], b.an)
	binary.BigEndian.PutUint16(b.buf[8:], b.ns)
	binary.BigEndian.PutUint16(b.buf[10:], b.ar)
	return b.buf
}
