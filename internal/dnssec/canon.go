package dnssec

import (
	"fmt"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
)

// canonicalKey returns the wire.CanonicalKey of a presentation name: a
// byte string whose bytewise order is the canonical name order of RFC 4034
// §6.1. Packing to wire form first resolves presentation escapes such as
// \065 or \. correctly.
func canonicalKey(name string) (string, error) {
	var w [wire.MaxName + 1]byte
	n, err := dns.PackDomainName(dns.Fqdn(name), w[:], 0, nil, false)
	if err != nil {
		return "", fmt.Errorf("canonical form of %q: %w", name, err)
	}
	var k [wire.MaxKey]byte
	return string(wire.CanonicalKey(k[:0], w[:n])), nil
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
