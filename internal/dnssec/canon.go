package dnssec

import (
	"fmt"

	"github.com/miekg/dns"
)

// canonicalKey returns a byte string whose bytewise order is the canonical
// DNS name order of RFC 4034 §6.1: names are compared label by label from
// the rightmost label, each label as a case-folded (ASCII only) octet string
// where a shorter label sorts before a longer one it prefixes.
//
// Encoding: labels from right to left, each followed by the separator 0x00
// 0x00; a 0x00 octet inside a label is written as 0x00 0x01 so the encoding
// stays order preserving. Working on the wire form also resolves
// presentation escapes such as \065 or \. correctly.
func canonicalKey(name string) (string, error) {
	var wire [256]byte
	n, err := dns.PackDomainName(dns.Fqdn(name), wire[:], 0, nil, false)
	if err != nil {
		return "", fmt.Errorf("canonical form of %q: %w", name, err)
	}
	// Collect label offsets (wire form: length-prefixed labels ending in 0).
	var offs [128]int
	nl := 0
	for off := 0; off < n && wire[off] != 0; off += int(wire[off]) + 1 {
		offs[nl] = off
		nl++
	}
	out := make([]byte, 0, n+2*nl)
	for i := nl - 1; i >= 0; i-- {
		off := offs[i]
		l := int(wire[off])
		for _, c := range wire[off+1 : off+1+l] {
			switch {
			case c == 0:
				out = append(out, 0, 1)
			case c >= 'A' && c <= 'Z':
				out = append(out, c+('a'-'A'))
			default:
				out = append(out, c)
			}
		}
		out = append(out, 0, 0)
	}
	return string(out), nil
}

// CanonicalLess reports whether name a sorts before name b in the canonical
// order of RFC 4034 §6.1. Unparseable names sort by their text.
func CanonicalLess(a, b string) bool {
	ka, erra := canonicalKey(a)
	kb, errb := canonicalKey(b)
	if erra != nil || errb != nil {
		return a < b
	}
	return ka < kb
}

// isBelow reports whether canonical key child is strictly below parent.
// Canonical keys are label sequences from the root, so a descendant's key
// has its ancestor's key as a prefix that ends on a label boundary.
func isBelow(child, parent string) bool {
	return len(child) > len(parent) && child[:len(parent)] == parent &&
		(len(parent) == 0 || (parent[len(parent)-2] == 0 && parent[len(parent)-1] == 0))
}

// labelEnds returns the offsets just past each label separator in
// canonical key k, scanning forward so escaped zero octets (0x00 0x01) are
// never mistaken for separators (0x00 0x00).
func labelEnds(k string) []int {
	var ends []int
	for i := 0; i+1 < len(k); i++ {
		if k[i] == 0 {
			if k[i+1] == 0 {
				ends = append(ends, i+2)
			}
			i++ // skip the second octet of a separator or an escape
		}
	}
	return ends
}

// parentKey returns the canonical key of the parent name (one label
// removed), or false at the root.
func parentKey(k string) (string, bool) {
	ends := labelEnds(k)
	switch len(ends) {
	case 0:
		return "", false
	case 1:
		return "", true
	}
	return k[:ends[len(ends)-2]], true
}

// labelCount returns the number of labels encoded in canonical key k.
func labelCount(k string) int {
	return len(labelEnds(k))
}
