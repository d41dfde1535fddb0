package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// A minimal DNS codec: just enough to build a query and to see what kind of
// answer came back (header flags, rcode and the record types per section).

var typeCodes = map[string]uint16{
	"A": 1, "NS": 2, "CNAME": 5, "SOA": 6, "PTR": 12, "MX": 15, "TXT": 16,
	"AAAA": 28, "SRV": 33, "OPT": 41, "DS": 43, "RRSIG": 46, "NSEC": 47,
	"DNSKEY": 48, "NSEC3": 50,
}

var rcodeNames = []string{"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED"}

func rcodeName(rc int) string {
	if rc < len(rcodeNames) {
		return rcodeNames[rc]
	}
	return fmt.Sprintf("RCODE%d", rc)
}

func typeName(t uint16) string {
	for k, v := range typeCodes {
		if v == t {
			return k
		}
	}
	return fmt.Sprintf("TYPE%d", t)
}

// buildQuery returns a query for name/qtype with RD clear; with edns it
// carries an EDNS0 OPT record (4096-byte payload), with do also the DO bit.
func buildQuery(id uint16, name, qtype string, edns, do bool) ([]byte, error) {
	edns = edns || do
	t, ok := typeCodes[strings.ToUpper(qtype)]
	if !ok {
		return nil, fmt.Errorf("unknown type %q", qtype)
	}
	b := make([]byte, 12, 512)
	binary.BigEndian.PutUint16(b[0:], id)
	binary.BigEndian.PutUint16(b[4:], 1) // QDCOUNT
	if edns {
		binary.BigEndian.PutUint16(b[10:], 1) // ARCOUNT
	}
	name = strings.TrimSuffix(name, ".")
	if name != "" {
		for _, l := range strings.Split(name, ".") {
			if len(l) == 0 || len(l) > 63 {
				return nil, fmt.Errorf("bad name %q", name)
			}
			b = append(b, byte(len(l)))
			b = append(b, l...)
		}
	}
	b = append(b, 0, byte(t>>8), byte(t), 0, 1)
	if edns {
		// root name, TYPE OPT, class = payload size, TTL = ext-rcode/version/DO, RDLEN 0
		var doBit byte
		if do {
			doBit = 0x80
		}
		b = append(b, 0, 0, 41, 0x10, 0x00, 0, 0, doBit, 0, 0, 0)
	}
	return b, nil
}

// reply is what we learn from a response.
type reply struct {
	id       uint16
	qr, aa   bool
	tc, ra   bool
	rcode    int
	sections [3][]uint16 // answer, authority, additional RR types
	do       bool        // OPT present with DO set
}

func (r reply) has(section int, t string) bool {
	for _, x := range r.sections[section] {
		if x == typeCodes[t] {
			return true
		}
	}
	return false
}

func (r reply) String() string {
	var flags []string
	if r.qr {
		flags = append(flags, "qr")
	}
	if r.aa {
		flags = append(flags, "aa")
	}
	if r.tc {
		flags = append(flags, "tc")
	}
	if r.ra {
		flags = append(flags, "ra")
	}
	sec := func(ts []uint16) string {
		var s []string
		for _, t := range ts {
			s = append(s, typeName(t))
		}
		return strings.Join(s, ",")
	}
	return fmt.Sprintf("%s flags=%s an=[%s] ns=[%s] ar=[%s]", rcodeName(r.rcode),
		strings.Join(flags, ","), sec(r.sections[0]), sec(r.sections[1]), sec(r.sections[2]))
}

var errShort = errors.New("truncated message")

// skipName returns the offset just past the (possibly compressed) name at off.
func skipName(m []byte, off int) (int, error) {
	for {
		if off >= len(m) {
			return 0, errShort
		}
		l := int(m[off])
		switch {
		case l == 0:
			return off + 1, nil
		case l&0xc0 == 0xc0:
			return off + 2, nil
		default:
			off += 1 + l
		}
	}
}

func parseReply(m []byte) (reply, error) {
	var r reply
	if len(m) < 12 {
		return r, errShort
	}
	r.id = binary.BigEndian.Uint16(m[0:])
	r.qr = m[2]&0x80 != 0
	r.aa = m[2]&0x04 != 0
	r.tc = m[2]&0x02 != 0
	r.ra = m[3]&0x80 != 0
	r.rcode = int(m[3] & 0x0f)
	counts := [4]int{}
	for i := range counts {
		counts[i] = int(binary.BigEndian.Uint16(m[4+2*i:]))
	}
	off := 12
	var err error
	for i := 0; i < counts[0]; i++ {
		if off, err = skipName(m, off); err != nil {
			return r, err
		}
		off += 4
	}
	for s := 0; s < 3; s++ {
		for i := 0; i < counts[s+1]; i++ {
			if off, err = skipName(m, off); err != nil {
				return r, err
			}
			if off+10 > len(m) {
				return r, errShort
			}
			t := binary.BigEndian.Uint16(m[off:])
			ttl := binary.BigEndian.Uint32(m[off+4:])
			rdlen := int(binary.BigEndian.Uint16(m[off+8:]))
			if t == 41 {
				r.do = ttl&0x8000 != 0
			}
			r.sections[s] = append(r.sections[s], t)
			off += 10 + rdlen
			if off > len(m) {
				return r, errShort
			}
		}
	}
	return r, nil
}
