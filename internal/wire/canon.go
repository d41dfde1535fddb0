package wire

import (
	"fmt"

	"github.com/miekg/dns"
)

// Canonical name order (RFC 4034 §6.1): names sort by their labels from
// the rightmost, each label compared as an octet string with ASCII upper
// case folded to lower case, a label that is a prefix of another sorting
// first, and a name with fewer labels before the names below it.
//
// A canonical key is a byte string whose bytewise order is that order, so
// that sorting and searching compare keys with one string comparison: the
// labels right to left, upper case folded, each followed by the separator
// 0x00. Inside a label the octets 0x00 and 0x01 are written as 0x01 0x01
// and 0x01 0x02, so a 0x00 in a key is always a separator: without that,
// `b.a.` and `a\000b.` would have the same key. The mapping of label
// octets is increasing and prefix-free and the separator sorts below
// every encoded octet, which keeps byte order equal to canonical order;
// names without those two octets (all but contrived ones) cost one byte
// per label, so the keys stay dense where a search compares their first
// bytes as a word (zone.NSECCover).

// MaxKey bounds the length of a canonical key: a name of MaxName octets
// made of 0x00 octets doubles, less its length octets.
const MaxKey = 2 * MaxName

// CanonicalKey appends the canonical key of name (wire form, uncompressed)
// to dst[:0] and returns it.
func CanonicalKey(dst, name []byte) []byte {
	var offs [MaxLabels]uint8
	n := 0
	for i := 0; i < len(name) && name[i] != 0 && n < len(offs); i += int(name[i]) + 1 {
		offs[n] = uint8(i)
		n++
	}
	dst = dst[:0]
	for j := n - 1; j >= 0; j-- {
		o := int(offs[j])
		for _, c := range name[o+1 : min(o+1+int(name[o]), len(name))] {
			switch {
			case c <= 1:
				dst = append(dst, 1, c+1)
			case c >= 'A' && c <= 'Z':
				dst = append(dst, c+'a'-'A')
			default:
				dst = append(dst, c)
			}
		}
		dst = append(dst, 0)
	}
	return dst
}

// KeyParent returns the canonical key of the parent of the name whose key
// is k (k without its last label), and false for the root.
func KeyParent[K ~string | ~[]byte](k K) (K, bool) {
	if len(k) == 0 {
		return k, false
	}
	i := len(k) - 2
	for i >= 0 && k[i] != 0 {
		i--
	}
	return k[:i+1], true
}

// KeyBelow reports whether the name whose key is child is strictly below
// the name whose key is parent. A key ends with a separator, the only
// place a 0x00 occurs, so a prefix of a key that is a key ends at a label
// boundary.
func KeyBelow[K ~string | ~[]byte](child, parent K) bool {
	return len(child) > len(parent) && string(child[:len(parent)]) == string(parent)
}

// CanonicalNameKey returns the CanonicalKey of a name in presentation
// form. Packing to wire form first resolves presentation escapes such as
// \065 or \. correctly.
func CanonicalNameKey(name string) (string, error) {
	var k [MaxKey]byte
	key, err := AppendCanonicalNameKey(k[:0], name)
	return string(key), err
}

// AppendCanonicalNameKey is CanonicalNameKey into dst[:0], which a
// caller may keep on its stack (MaxKey bytes) so that nothing is
// allocated.
func AppendCanonicalNameKey(dst []byte, name string) ([]byte, error) {
	var w [MaxName + 1]byte
	if !dns.IsFqdn(name) {
		name += "."
	}
	n, err := dns.PackDomainName(name, w[:], 0, nil, false)
	if err != nil {
		return nil, fmt.Errorf("canonical form of %q: %w", name, err)
	}
	return CanonicalKey(dst, w[:n]), nil
}

// CanonicalLess reports whether name a sorts before name b (presentation
// form) in the canonical order of RFC 4034 §6.1. Unparseable names sort
// by their text. It allocates nothing for fully qualified names (the
// validator's NSEC checks call it several times per proof).
func CanonicalLess(a, b string) bool {
	var ba, bb [MaxKey]byte
	ka, erra := AppendCanonicalNameKey(ba[:0], a)
	kb, errb := AppendCanonicalNameKey(bb[:0], b)
	if erra != nil || errb != nil {
		return a < b
	}
	return string(ka) < string(kb)
}
