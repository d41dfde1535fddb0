package resolve

import (
	"encoding/binary"
	"unsafe"

	"github.com/miekg/dns"
)

// subDomain reports whether child is parent or a name below it, as
// dns.IsSubDomain does (names in presentation form, compared label by
// label without regard to ASCII case), without its allocations: it
// splits both names into slices of label offsets, four of them in a cold
// resolution, where the bailiwick checks of every record call it. Names
// fully qualified and without escapes (every name an answer unpacks to
// but those with special characters) are compared here as suffixes
// ending at a label boundary; others go to dns.IsSubDomain.
func subDomain(parent, child string) bool {
	if !plainName(parent) || !plainName(child) {
		return dns.IsSubDomain(parent, child)
	}
	if parent == "." {
		return true
	}
	i := len(child) - len(parent)
	return i >= 0 && (i == 0 || child[i-1] == '.') && equalFold(child[i:], parent)
}

// plainName reports whether name is fully qualified, with labels that
// are not empty and without escapes: its labels end at its dots.
func plainName(name string) bool {
	if name == "." {
		return true
	}
	if len(name) < 2 || name[0] == '.' || name[len(name)-1] != '.' {
		return false
	}
	// Eight octets at a time: strings.Contains and IndexByte, a call
	// each and two passes, took 190 instructions a name of 20 octets,
	// and subDomain asks of two names on every record's bailiwick check.
	const ones = 0x0101010101010101
	b := unsafe.Slice(unsafe.StringData(name), len(name)) // read only
	dot := false                                          // the octet before is a dot
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		dots, escapes := zeroOctets(x^'.'*ones), zeroOctets(x^'\\'*ones)
		if escapes != 0 || dots&(dots<<8) != 0 || (dot && dots&0x80 != 0) {
			return false
		}
		dot = dots>>63 != 0
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case '\\':
			return false
		case '.':
			if dot {
				return false
			}
			dot = true
		default:
			dot = false
		}
	}
	return true
}

// zeroOctets returns x with the top bit of each octet that is zero set,
// and every other bit clear (exactly: no borrow from one octet into the
// next, unlike the (x-ones)&^x trick).
func zeroOctets(x uint64) uint64 {
	const low7 = 0x7F7F7F7F7F7F7F7F
	return ^((x&low7 + low7) | x | low7)
}

// equalFold reports whether a and b are equal without regard to ASCII
// case (RFC 4343; strings.EqualFold also folds Unicode, which names in
// presentation form compare without).
func equalFold(a, b string) bool {
	if a == b {
		return true
	}
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x != y && lower(x) != lower(y) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// canonical is dns.CanonicalName (fully qualified, lowercase): name
// itself when it already is, without the decoding of every character as
// a rune that dns.CanonicalName's strings.Map does (on the bailiwick
// checks of every record, a twentieth of a cold resolution's
// instructions). A name with other than ASCII octets (which names
// presented from the wire do not have: miekg/dns escapes them) goes to
// dns.CanonicalName, which would replace invalid UTF-8.
func canonical(name string) string {
	if !dns.IsFqdn(name) || !lowerASCII(name) {
		return dns.CanonicalName(name)
	}
	return name
}

// lowerASCII reports whether s has no ASCII capital and no octet over
// 0x7F, eight octets at a time (a resolution makes its names canonical
// some ten times; octet by octet it was 2% of a cold one's instructions).
func lowerASCII(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	b := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		// With every octet under 0x80, adding 0x80-'A' to each sets
		// its top bit when it is 'A' or more, adding 0x80-'Z'-1 when it
		// is over 'Z', neither carrying into the next octet.
		if x&highs != 0 || (x+(0x80-'A')*ones)&^(x+(0x80-'Z'-1)*ones)&highs != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; ('A' <= c && c <= 'Z') || c >= 0x80 {
			return false
		}
	}
	return true
}
