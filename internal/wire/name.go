package wire

import "github.com/miekg/dns"

// Helpers on uncompressed names in wire form, shared by the zone compiler
// and the answer path.

// NameLen returns the length of the uncompressed name at the start of p,
// its root label included. p must hold a whole name (zone data is
// validated at compile time).
func NameLen(p []byte) int {
	n := 0
	for n < len(p) && p[n] != 0 {
		n += int(p[n]) + 1
	}
	return n + 1
}

// InZone reports whether name is origin or below it: origin must be a
// suffix of name that starts at a label boundary.
func InZone(name, origin []byte) bool {
	if len(name) < len(origin) || string(name[len(name)-len(origin):]) != string(origin) {
		return false
	}
	i := 0
	for i < len(name)-len(origin) {
		i += int(name[i]) + 1
	}
	return i == len(name)-len(origin)
}

// Lower copies src into dst with ASCII letters lowercased (RFC 4343: names
// compare without regard to case); dst and src may be the same slice.
func Lower(dst, src []byte) {
	for i, c := range src {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
}

// NameWire returns name, a domain name in presentation form ("a.test."),
// in uncompressed wire form, its case kept.
func NameWire(name string) ([]byte, error) {
	var buf [256]byte
	n, err := dns.PackDomainName(name, buf[:], 0, nil, false)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), buf[:n]...), nil
}

// NameText returns name, an uncompressed name in wire form, in
// presentation form ("a.test."), as dns.UnpackDomainName writes it (with
// its escapes), and false when name is not a whole uncompressed name of
// at most MaxName octets.
// A name with no octet to escape, the usual case, takes one pass and
// one allocation, the string: UnpackDomainName's byte-by-byte appends
// were most of a deferred answer's share of making the resolution's
// question (internal/recursor).
func NameText(name []byte) (string, bool) {
	var buf [MaxName]byte
	b, ok := AppendNameText(buf[:0], name)
	return string(b), ok
}

// AppendNameText appends NameText's presentation form of name to dst;
// false, and dst as it was, when NameText's is false. With room in dst
// and no octet to escape it allocates nothing: the resolver looks its
// questions in flight up with it, and makes a string only for a new one.
func AppendNameText(dst, name []byte) ([]byte, bool) {
	n0 := len(dst)
	for i := 0; ; {
		if i >= len(name) {
			return dst[:n0], false
		}
		l := int(name[i])
		switch {
		case l == 0:
			if i+1 > MaxName {
				// RFC 1035 §3.1: 255 octets at most, the root's
				// included (dns.UnpackDomainName refuses it too).
				return dst[:n0], false
			}
			if len(dst) == n0 {
				return append(dst, '.'), true
			}
			return dst, true
		case l > 63 || i+1+l > len(name) || len(dst)-n0+l+1 > MaxName:
			return dst[:n0], false
		}
		for _, c := range name[i+1 : i+1+l] {
			if escaped[c] {
				s, _, err := dns.UnpackDomainName(name, 0)
				if err != nil {
					return dst[:n0], false
				}
				return append(dst[:n0], s...), true
			}
		}
		dst = append(append(dst, name[i+1:i+1+l]...), '.')
		i += 1 + l
	}
}

// Escaped reports whether dns.UnpackDomainName escapes the octet c in a
// label (as \c or \DDD): a reader that makes presentation form without
// escapes leaves names with such octets to it.
func Escaped(c byte) bool { return escaped[c] }

// escaped marks the octets dns.UnpackDomainName escapes in a label: the
// specials it writes after a backslash, and as \DDD those outside
// printable ASCII.
var escaped = func() (e [256]bool) {
	for c := range e {
		e[c] = c <= ' ' || c > '~'
	}
	for _, c := range ".'@;()\"\\" {
		e[c] = true
	}
	return e
}()
