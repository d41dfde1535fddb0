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
