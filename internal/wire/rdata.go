package wire

// Field is the kind of one RDATA field.
type Field uint8

// The field kinds of RDATA descriptors.
const (
	// FieldName is a domain name that may be compressed in a message:
	// names in the RDATA of the types of RFC 1035 only (RFC 3597 §4).
	FieldName Field = iota + 1
	// FieldNameUncompressed is a domain name that is never compressed
	// (RFC 3597 §4: the types defined after RFC 1035, such as SRV, RFC
	// 2782; DNAME, RFC 6672 §2.5; RRSIG and NSEC, RFC 4034 §3.1.7, §4.1.1).
	FieldNameUncompressed
	// Field8, Field16 and Field32 are unsigned integers of 1, 2 and 4
	// octets, big-endian.
	Field8
	Field16
	Field32
	// FieldPeriod is 4 octets of seconds (SOA's REFRESH, RETRY, EXPIRE
	// and MINIMUM), which a zone file may write with units, as a TTL.
	FieldPeriod
	// FieldRest is the rest of the RDATA, opaque to the descriptor.
	FieldRest
)

// Size returns the field's length in octets, or 0 for names and the rest,
// whose length depends on the data.
func (f Field) Size() int {
	switch f {
	case Field8:
		return 1
	case Field16:
		return 2
	case Field32, FieldPeriod:
		return 4
	}
	return 0
}

// RData describes the RDATA of one record type: its fields in order, and
// which of its names, if any, is a host whose addresses go into the
// additional section with the record (RFC 1034 §4.3.2 step 6 for NS, RFC
// 1035 §3.3.9 for MX, RFC 2782 for SRV). It is the one table of where
// names are for the builder (which names to compress), the zone compiler
// (additional targets), the zone file reader (how to encode the simple
// types) and the answer precomputation (where compression pointers are).
type RData struct {
	fields [maxFields]Field
	n      uint8
	// compressed is the number of fields up to and including the last
	// FieldName (0: no name is compressed).
	compressed uint8
	// additional is the index + 1 of the field naming the host whose
	// addresses go into the additional section (0: none).
	additional uint8
}

const maxFields = 9

// rdataTable holds the descriptors of the types whose RDATA has names,
// indexed by type; a zero entry means none (the RDATA is opaque here).
var rdataTable = [...]RData{
	TypeNS:    rdata(1, FieldName),
	TypeMD:    rdata(0, FieldName),
	TypeMF:    rdata(0, FieldName),
	TypeCNAME: rdata(0, FieldName),
	TypeSOA:   rdata(0, FieldName, FieldName, Field32, FieldPeriod, FieldPeriod, FieldPeriod, FieldPeriod),
	TypeMB:    rdata(0, FieldName),
	TypeMG:    rdata(0, FieldName),
	TypeMR:    rdata(0, FieldName),
	TypePTR:   rdata(0, FieldName),
	TypeMINFO: rdata(0, FieldName, FieldName),
	TypeMX:    rdata(2, Field16, FieldName),
	TypeRP:    rdata(0, FieldNameUncompressed, FieldNameUncompressed),
	TypeAFSDB: rdata(0, Field16, FieldNameUncompressed),
	TypeRT:    rdata(0, Field16, FieldNameUncompressed),
	TypePX:    rdata(0, Field16, FieldNameUncompressed, FieldNameUncompressed),
	TypeSRV:   rdata(4, Field16, Field16, Field16, FieldNameUncompressed),
	TypeKX:    rdata(0, Field16, FieldNameUncompressed),
	TypeDNAME: rdata(0, FieldNameUncompressed),
	TypeRRSIG: rdata(0, Field16, Field8, Field8, Field32, Field32, Field32, Field16, FieldNameUncompressed, FieldRest),
	TypeNSEC:  rdata(0, FieldNameUncompressed, FieldRest),
}

// rdata builds a descriptor; additional is the index + 1 of the field
// naming the additional section's host, 0 for none.
func rdata(additional uint8, fields ...Field) RData {
	d := RData{n: uint8(len(fields)), additional: additional}
	for i, f := range fields {
		d.fields[i] = f
		if f == FieldName {
			d.compressed = uint8(i + 1)
		}
	}
	return d
}

// RDataOf returns the descriptor of type t, or nil when its RDATA holds
// no names (or the type is unknown): then it is opaque, copied as it is.
func RDataOf(t uint16) *RData {
	if int(t) < len(rdataTable) && rdataTable[t].n > 0 {
		return &rdataTable[t]
	}
	return nil
}

// Fields returns the fields in order.
func (d *RData) Fields() []Field { return d.fields[:d.n] }

// Compressed reports whether a name of the RDATA is compressed in
// messages.
func (d *RData) Compressed() bool { return d.compressed > 0 }

// Additional reports whether a name of the RDATA is a host whose
// addresses go into the additional section.
func (d *RData) Additional() bool { return d.additional > 0 }

// AdditionalName returns that name in rdata (uncompressed wire form), or
// nil when the type has none or rdata is too short to hold it.
func (d *RData) AdditionalName(rdata []byte) []byte {
	if d.additional == 0 {
		return nil
	}
	off := 0
	for _, f := range d.fields[:d.additional-1] {
		n := f.Size()
		if n == 0 {
			n = NameLen(rdata[min(off, len(rdata)):])
		}
		off += n
	}
	if off >= len(rdata) {
		return nil
	}
	n := NameLen(rdata[off:])
	if n > len(rdata)-off {
		return nil
	}
	return rdata[off : off+n]
}
