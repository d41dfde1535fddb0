package validator

import (
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

// RootAnchors are the embedded root trust anchors. Anchor files are
// read by internal/trustanchor.
func RootAnchors() Anchors {
	a := Anchors{}
	for _, line := range strings.Split(strings.TrimSpace(rootDS), "\n") {
		rr, err := dns.NewRR(line)
		if err != nil {
			panic(err) // impossible: the text above parses
		}
		a["."] = append(a["."], rr.(*dns.DS))
	}
	return a
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
