package wire

import (
	"encoding/binary"
	"errors"
)

// Reading records out of received messages (a zone transfer's): names
// decompressed, into the form zone data holds.

// errMalformed is the error of a name or record that runs past its
// message or breaks RFC 1035's rules.
var errMalformed = errors.New("malformed record")

// AppendName reads the name at off of msg, following compression
// pointers (RFC 1035 §4.1.4), and appends it uncompressed to dst. It
// returns dst and the offset in msg after the name as it is there (after
// its first pointer, if any). A pointer must point backwards, so that a
// loop cannot be made; labels over 63 octets, the label types of RFC
// 6891 §5 and names over 255 octets are errors.
func AppendName(dst, msg []byte, off int) ([]byte, int, error) {
	start := len(dst)
	next := -1
	for {
		if off >= len(msg) {
			return dst, 0, errMalformed
		}
		l := int(msg[off])
		switch {
		case l == 0:
			dst = append(dst, 0)
			if len(dst)-start > 255 {
				return dst, 0, errMalformed
			}
			if next < 0 {
				next = off + 1
			}
			return dst, next, nil
		case l&0xC0 == 0xC0:
			if off+2 > len(msg) {
				return dst, 0, errMalformed
			}
			ptr := int(binary.BigEndian.Uint16(msg[off:]) & 0x3FFF)
			if ptr >= off {
				return dst, 0, errMalformed
			}
			if next < 0 {
				next = off + 2
			}
			off = ptr
		case l > 63:
			return dst, 0, errMalformed
		default:
			if off+1+l > len(msg) || len(dst)-start+1+l > 254 {
				return dst, 0, errMalformed
			}
			dst = append(dst, msg[off:off+1+l]...)
			off += 1 + l
		}
	}
}

// AppendRecord reads the record at off of msg and appends it to dst as
// zone data holds one: its owner, then TYPE, CLASS, TTL, RDLENGTH and
// RDATA, every name uncompressed (the names of the RDATA found by the
// type's descriptor, RDataOf: a name RFC 3597 §4 says is never
// compressed is decompressed all the same, as other readers do; RDATA
// of other types is copied as it is). It returns dst, the owner's length
// at the start of what was appended, and the offset after the record.
// A record whose RDATA does not match its descriptor, runs past the
// message, or grows beyond 65,535 octets is an error.
func AppendRecord(dst, msg []byte, off int) (_ []byte, owner, next int, _ error) {
	start := len(dst)
	dst, off, err := AppendName(dst, msg, off)
	if err != nil {
		return dst, 0, 0, err
	}
	owner = len(dst) - start
	if off+10 > len(msg) {
		return dst, 0, 0, errMalformed
	}
	rdlen := int(binary.BigEndian.Uint16(msg[off+8:]))
	rdata, end := off+10, off+10+rdlen
	if end > len(msg) {
		return dst, 0, 0, errMalformed
	}
	dst = append(dst, msg[off:rdata]...)
	lenAt := len(dst) - 2
	d := RDataOf(binary.BigEndian.Uint16(msg[off:]))
	if d == nil {
		return append(dst, msg[rdata:end]...), owner, end, nil
	}
	p := rdata
	for _, f := range d.Fields() {
		switch f {
		case FieldName, FieldNameUncompressed:
			if p >= end {
				return dst, 0, 0, errMalformed
			}
			// The name starts inside the RDATA; a pointer may lead
			// anywhere before it.
			if dst, p, err = AppendName(dst, msg[:end], p); err != nil {
				return dst, 0, 0, err
			}
		case FieldRest:
			dst = append(dst, msg[p:end]...)
			p = end
		default:
			n := f.Size()
			if p+n > end {
				return dst, 0, 0, errMalformed
			}
			dst = append(dst, msg[p:p+n]...)
			p += n
		}
	}
	if p != end {
		return dst, 0, 0, errMalformed
	}
	n := len(dst) - lenAt - 2
	if n > 0xFFFF {
		return dst, 0, 0, errMalformed
	}
	binary.BigEndian.PutUint16(dst[lenAt:], uint16(n))
	return dst, owner, end, nil
}
