package validator

import (
	"fmt"
	"io"
	"strings"

	"github.com/miekg/dns"
)

// Anchors are trust anchors (RFC 4033 §2): DS records, by owner, that a
// chain of trust starts from.
type Anchors map[string][]*dns.DS

// rootDS are the root zone's key-signing keys as IANA publishes them
// (root-anchors.xml; Debian's dns-root-data ships the same in
// /usr/share/dns/root.ds): KSK-2017 (tag 20326) and KSK-2024 (tag 38696).
const rootDS = `. IN DS 20326 8 2 E06D44B80B8F1D39A95C0B0D7C65D08458E880409BBC683457104237C7F8EC8D
. IN DS 38696 8 2 683D2D0ACB8C9B712A1948B27F741219298D0A450D612C483AF444A4C0FB2B16
`

// RootAnchors are the embedded root trust anchors.
func RootAnchors() Anchors {
	a, err := ReadAnchors(strings.NewReader(rootDS), "embedded root anchors")
	if err != nil {
		panic(err) // impossible: the text above parses
	}
	return a
}

// ReadAnchors reads trust anchors in zone-file form, DS or DNSKEY records
// (a DNSKEY stands for its SHA-256 DS), as BIND's, Unbound's and Knot
// Resolver's anchor files and Debian's /usr/share/dns/root.key hold them.
// Other record types are errors, named with file:line.
func ReadAnchors(r io.Reader, file string) (Anchors, error) {
	a := Anchors{}
	zp := dns.NewZoneParser(r, ".", file)
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		owner := dns.CanonicalName(rr.Header().Name)
		switch rr := rr.(type) {
		case *dns.DS:
			a[owner] = append(a[owner], rr)
		case *dns.DNSKEY:
			if rr.Flags&dns.ZONE == 0 {
				return nil, fmt.Errorf("%s: DNSKEY %d of %s: not a zone key (flags %d)", file, rr.KeyTag(), owner, rr.Flags)
			}
			ds := rr.ToDS(dns.SHA256)
			if ds == nil {
				return nil, fmt.Errorf("%s: DNSKEY %d of %s: no SHA-256 digest of it", file, rr.KeyTag(), owner)
			}
			a[owner] = append(a[owner], ds)
		default:
			return nil, fmt.Errorf("%s: %s %s: a trust anchor is a DS or DNSKEY record", file, owner, dns.TypeToString[rr.Header().Rrtype])
		}
	}
	if err := zp.Err(); err != nil {
		return nil, fmt.Errorf("trust anchors: %w", err)
	}
	if len(a) == 0 {
		return nil, fmt.Errorf("%s: no trust anchor in it", file)
	}
	return a, nil
}

// Closest returns the anchor at name or closest above it, with its
// owner; none when no anchor is at or above name.
func (a Anchors) Closest(name string) (string, []*dns.DS) {
	name = dns.CanonicalName(name)
	for {
		if ds, ok := a[name]; ok {
			return name, ds
		}
		if name == "." {
			return "", nil
		}
		name = parent(name)
	}
}
