package rrl

import (
	"encoding/binary"

	"github.com/tern-dns/tern/internal/wire"
)

// Types read by Classify.
const (
	typeNS    = 2
	typeSOA   = 6
	typeRRSIG = 46
)

// Classify reads a response: its kind, the offset of the name its
// account is keyed by (the QNAME for a positive answer, the wildcard's
// source name, the zone of a negative answer, the delegation of a
// referral) and its QTYPE, and qend, the offset past its question. A
// response it cannot read is an Error.
//
// A wildcard answer is known by its signatures (RFC 4035 §5.3.4: an
// RRSIG whose labels field is less than its owner's label count): a
// wildcard answer of an unsigned zone, or without DO, is Positive.
func Classify(resp []byte) (k Kind, name int, qtype uint16, qend int) {
	if len(resp) < wire.HeaderLen {
		return Error, 0, 0, len(resp)
	}
	qd := binary.BigEndian.Uint16(resp[4:])
	an := int(binary.BigEndian.Uint16(resp[6:]))
	ns := int(binary.BigEndian.Uint16(resp[8:]))
	off := wire.HeaderLen
	if qd == 1 {
		end, ok := wire.SkipName(resp, off)
		if !ok || end+4 > len(resp) {
			return Error, 0, 0, wire.HeaderLen
		}
		qtype = binary.BigEndian.Uint16(resp[end:])
		off = end + 4
	} else if qd != 0 {
		return Error, 0, 0, wire.HeaderLen
	}
	qend = off
	rcode := resp[3] & 0xF
	if qd == 0 || (rcode != 0 && rcode != 3) {
		return Error, 0, qtype, qend
	}
	name = wire.HeaderLen
	if rcode == 0 && an > 0 {
		// The answer: a wildcard's signature marks it.
		for i := 0; i < an; i++ {
			start := off
			end, t, ok := wire.SkipRecord(resp, off)
			if !ok {
				return Positive, name, qtype, qend
			}
			if t == typeRRSIG {
				if src, ok := wildcardSource(resp, start); ok {
					return Wildcard, src, qtype, qend
				}
			}
			off = end
		}
		return Positive, name, qtype, qend
	}
	k = NoData
	if rcode == 3 {
		k = NXDomain
	}
	for i := 0; i < an; i++ {
		end, _, ok := wire.SkipRecord(resp, off)
		if !ok {
			return k, name, qtype, qend
		}
		off = end
	}
	for i := 0; i < ns; i++ {
		start := off
		end, t, ok := wire.SkipRecord(resp, off)
		if !ok {
			break
		}
		switch {
		case t == typeSOA:
			return k, start, qtype, qend
		case t == typeNS && k == NoData && resp[2]&0x04 == 0:
			// NS in authority without AA: a delegation.
			return Referral, start, qtype, qend
		}
		off = end
	}
	return k, name, qtype, qend
}

// wildcardSource is, for the RRSIG at resp[off], the offset of its
// owner's suffix of as many labels as the signature's labels field when
// that is fewer than the owner has: the name the wildcard's '*' stood
// beside.
func wildcardSource(resp []byte, off int) (int, bool) {
	end, ok := wire.SkipName(resp, off)
	if !ok || end+10+4 > len(resp) {
		return 0, false
	}
	sigLabels := int(resp[end+10+3])
	n, ok := labels(resp, off)
	if !ok || sigLabels >= n {
		return 0, false
	}
	return suffix(resp, off, n-sigLabels)
}

// labels counts the labels of the name at msg[off], pointers followed.
func labels(msg []byte, off int) (int, bool) {
	n := 0
	for hops := 0; hops < 128; {
		if off >= len(msg) {
			return 0, false
		}
		l := int(msg[off])
		switch {
		case l == 0:
			return n, true
		case l&0xC0 == 0xC0:
			if off+1 >= len(msg) {
				return 0, false
			}
			off = (l&0x3F)<<8 | int(msg[off+1])
			hops++
			continue
		case l > 63:
			return 0, false
		}
		n++
		off += 1 + l
	}
	return 0, false
}

// suffix is the offset of the name at msg[off] without its first skip
// labels, pointers followed.
func suffix(msg []byte, off, skip int) (int, bool) {
	for hops := 0; hops < 128; {
		if off >= len(msg) {
			return 0, false
		}
		l := int(msg[off])
		switch {
		case l&0xC0 == 0xC0:
			if off+1 >= len(msg) {
				return 0, false
			}
			off = (l&0x3F)<<8 | int(msg[off+1])
			hops++
			continue
		case skip == 0:
			return off, true
		case l == 0 || l > 63:
			return 0, false
		}
		skip--
		off += 1 + l
	}
	return 0, false
}
