package wire

import "encoding/binary"

// TTLOffsets appends to dst the offset in msg of the TTL field of every
// record of msg's answer, authority and additional sections except the
// OPT pseudo-record (whose TTL field holds the extended rcode and flags,
// RFC 6891 §6.1.3), and reports whether msg parsed: a response cache
// decrements those TTLs by the time an answer spent cached.
func TTLOffsets(msg []byte, dst []uint16) ([]uint16, bool) {
	if len(msg) < HeaderLen || len(msg) > 0xFFFF {
		return dst, false
	}
	qd := int(binary.BigEndian.Uint16(msg[4:]))
	rrs := int(binary.BigEndian.Uint16(msg[6:])) + int(binary.BigEndian.Uint16(msg[8:])) + int(binary.BigEndian.Uint16(msg[10:]))
	off := HeaderLen
	for i := 0; i < qd; i++ {
		var ok bool
		if off, ok = skipName(msg, off); !ok || off+4 > len(msg) {
			return dst, false
		}
		off += 4
	}
	for i := 0; i < rrs; i++ {
		start, ok := skipName(msg, off)
		if !ok {
			return dst, false
		}
		end, rtype, ok := SkipRecord(msg, off)
		if !ok {
			return dst, false
		}
		if rtype != TypeOPT {
			dst = append(dst, uint16(start+4))
		}
		off = end
	}
	return dst, off == len(msg)
}
