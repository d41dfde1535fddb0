package wire

import "encoding/binary"

// maxCompress bounds the compression table. Names beyond it are written
// uncompressed, which is correct, only longer. The table costs only the
// entries a response fills, so the bound is set for the largest TCP
// answers (a thousand MX targets with their addresses).
const maxCompress = 2048

// compEntry records that the name bytes (canonical wire form, lowercase) are
// present in the message at offset off.
type compEntry struct {
	name []byte
	off  uint16
}

// Builder writes a response into a caller-owned buffer. It is reused from
// query to query; Reset prepares it for the next one. Names are compressed
// against the names already written (RFC 1035 §4.1.4) with a small table
// of suffixes instead of a hash map, which is what makes it allocation free.
type Builder struct {
	buf   []byte // len(buf) is the current message length
	limit int    // the message may not grow past this

	comp  [maxCompress]compEntry
	ncomp int

	// Section counts, written into the header by Finish.
	an, ns, ar uint16
}

// Reset starts a new message in buf[:0] that may grow to limit bytes
// (capped by cap(buf)).
func (b *Builder) Reset(buf []byte, limit int) {
	if limit > cap(buf) {
		limit = cap(buf)
	}
	b.buf = buf[:0]
	b.limit = limit
	b.ncomp = 0
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
	b.ncomp = m.ncomp
	b.an, b.ns, b.ar = m.an, m.ns, m.ar
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
		b.comp[b.ncomp] = compEntry{name[o:], uint16(start + o)}
		b.ncomp++
	}
}

// Name writes name (canonical wire form) compressed against earlier names.
func (b *Builder) Name(name []byte) {
	for len(name) > 1 {
		if off, ok := b.lookup(name); ok {
			b.buf = append(b.buf, 0xC0|byte(off>>8), byte(off))
			return
		}
		if b.ncomp < maxCompress && len(b.buf) < 0x3FFF {
			b.comp[b.ncomp] = compEntry{name, uint16(len(b.buf))}
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

func (b *Builder) lookup(name []byte) (uint16, bool) {
	for i := 0; i < b.ncomp; i++ {
		e := &b.comp[i]
		if len(e.name) == len(name) && string(e.name) == string(name) {
			return e.off, true
		}
	}
	return 0, false
}

// RR writes one record: owner (compressed), then tail, which is the
// pre-encoded TYPE, CLASS, TTL, RDLENGTH and RDATA of the record. Names in
// the RDATA of the RFC 1035 types are compressed (RFC 3597 §4 allows
// compression only there); other RDATA is copied as is.
func (b *Builder) RR(owner []byte, tail []byte) {
	b.Name(owner)
	b.rrTail(tail)
}

// RRAt is RR with the owner given as an offset already in the message.
func (b *Builder) RRAt(ownerOff int, tail []byte) {
	b.NameAt(ownerOff)
	b.rrTail(tail)
}

func (b *Builder) rrTail(tail []byte) {
	rtype := binary.BigEndian.Uint16(tail)
	switch rtype {
	case TypeNS, TypeCNAME, TypePTR, TypeMD, TypeMF, TypeMB, TypeMG, TypeMR:
		b.rdataNames(tail, 0, 1)
	case TypeMX:
		b.rdataNames(tail, 2, 1)
	case TypeSOA, TypeMINFO:
		b.rdataNames(tail, 0, 2)
	default:
		b.buf = append(b.buf, tail...)
	}
}

// rdataNames writes the fixed header of tail, then its RDATA with n names
// starting at RDATA offset pre compressed, then patches RDLENGTH.
func (b *Builder) rdataNames(tail []byte, pre, n int) {
	b.buf = append(b.buf, tail[:10+pre]...)
	lenAt := len(b.buf) - 2 - pre
	start := lenAt + 2
	rd := tail[10+pre:]
	for ; n > 0; n-- {
		l := NameLen(rd)
		b.Name(rd[:l])
		rd = rd[l:]
	}
	b.buf = append(b.buf, rd...)
	binary.BigEndian.PutUint16(b.buf[lenAt:], uint16(len(b.buf)-start))
}

// Raw appends bytes as they are.
func (b *Builder) Raw(p []byte) { b.buf = append(b.buf, p...) }

// CountAnswer, CountAuthority and CountAdditional add n records to a
// section's count.
func (b *Builder) CountAnswer(n int)     { b.an += uint16(n) }
func (b *Builder) CountAuthority(n int)  { b.ns += uint16(n) }
func (b *Builder) CountAdditional(n int) { b.ar += uint16(n) }

// OPT appends an OPT record (RFC 6891 §6.1.2) advertising payload, with the
// extended rcode's upper bits, the DO bit, and an optional NSID option.
func (b *Builder) OPT(payload uint16, extRcode uint8, do bool, nsid []byte) {
	var flags byte
	if do {
		flags = 0x80
	}
	rdlen := 0
	if nsid != nil {
		rdlen = 4 + len(nsid)
	}
	b.buf = append(b.buf, 0, 0, TypeOPT, byte(payload>>8), byte(payload), extRcode, 0, flags, 0, byte(rdlen>>8), byte(rdlen))
	if nsid != nil {
		b.buf = append(b.buf, 0, OptionNSID, byte(len(nsid)>>8), byte(len(nsid)))
		b.buf = append(b.buf, nsid...)
	}
	b.ar++
}

// Finish writes the section counts into the header and returns the message.
func (b *Builder) Finish() []byte {
	binary.BigEndian.PutUint16(b.buf[6:], b.an)
	binary.BigEndian.PutUint16(b.buf[8:], b.ns)
	binary.BigEndian.PutUint16(b.buf[10:], b.ar)
	return b.buf
}
