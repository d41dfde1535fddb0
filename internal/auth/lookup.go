package auth

import (
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

type kind uint8

const (
	kindFound    kind = iota // node is the name itself
	kindWildcard             // node is the wildcard that synthesizes the name
	kindReferral             // node is the zone cut above (or at) the name
	kindDNAME                // node owns the DNAME the name is below
	kindNXDomain             // node is the closest encloser; nothing matches
)

type result struct {
	kind kind
	node *zone.Node
}

// lookup finds name (canonical wire form, labels its label offsets) in z,
// per RFC 1034 §4.3.2 step 3 and RFC 4592 §3.3.1. The exact name is tried
// first, since most queries hit; otherwise labels are removed one at a time
// until a node exists: that is the closest encloser, as empty
// non-terminals are nodes too.
func lookup(z *zone.Zone, name []byte, labels []uint8, qtype uint16) result {
	if n := z.Lookup(name); n != nil {
		if c := n.Cut; c != nil {
			return cutResult(c)
		}
		// RFC 4035 §3.1.4.1: DS at a cut is the parent's data.
		if n.Flags&zone.Delegation != 0 && qtype != wire.TypeDS {
			return result{kindReferral, n}
		}
		return result{kindFound, n}
	}
	// The apex is in every zone, so the loop ends with a node before it
	// runs out of labels.
	for i := 1; i < len(labels); i++ {
		suffix := name[labels[i]:]
		if len(suffix) < len(z.Origin) {
			break
		}
		ce := z.Lookup(suffix)
		if ce == nil {
			continue
		}
		if c := ce.Cut; c != nil {
			return cutResult(c)
		}
		if ce.Flags&zone.Delegation != 0 {
			return result{kindReferral, ce}
		}
		// RFC 6672 §2.3: names below a DNAME owner are redirected.
		if ce.DNAME() != nil {
			return result{kindDNAME, ce}
		}
		// RFC 4592 §3.3.1: the source of synthesis is "*" at the closest
		// encloser, and only there.
		if w := ce.WildcardChild; w != nil {
			return result{kindWildcard, w}
		}
		return result{kindNXDomain, ce}
	}
	return result{kindNXDomain, z.Apex}
}

func cutResult(c *zone.Node) result {
	if c.Flags&zone.Delegation != 0 {
		return result{kindReferral, c}
	}
	return result{kindDNAME, c}
}
