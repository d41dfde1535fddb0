// Package catalog builds catalog zones (RFC 9432) from a list of member
// zones and interprets a catalog zone's records into the member set and the
// changes a consumer makes. It touches no socket and no served zone: the
// server wires its decisions to zone-add and zone-remove.
package catalog

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/miekg/dns"
)

// Version is the catalog schema version this package produces and accepts
// (RFC 9432 §4.2.1).
const Version = "2"

// ID is the member ID of zone: the hex SHA-1 of the member name's lower-case
// wire form, as Knot makes it. It is stable (the same zone always gets the
// same ID, so a rebuilt catalog does not reset its members, RFC 9432 §5.5)
// and unique in practice.
func ID(zone string) string {
	name := dns.CanonicalName(zone)
	buf := make([]byte, 256)
	n, err := dns.PackDomainName(name, buf, 0, nil, false)
	if err != nil {
		// Not a valid name: hash its text so the ID stays stable.
		sum := sha1.Sum([]byte(name))
		return hex.EncodeToString(sum[:])
	}
	sum := sha1.Sum(buf[:n])
	return hex.EncodeToString(sum[:])
}

// Build returns the records of the catalog zone origin listing members, with
// the given SOA serial: the SOA, NS invalid. (RFC 9432 §4.1), the version TXT
// (§4.2.1) and one PTR per member under zones.<origin> (§4.2.2), ordered by
// name. Duplicate members are listed once.
func Build(origin string, serial uint32, members []string) []dns.RR {
	origin = dns.CanonicalName(origin)
	hdr := func(name string, t uint16) dns.RR_Header {
		return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: 0}
	}
	rrs := []dns.RR{
		&dns.SOA{Hdr: hdr(origin, dns.TypeSOA), Ns: "invalid.", Mbox: "invalid.",
			Serial: serial, Refresh: 60, Retry: 60, Expire: 1209600, Minttl: 0},
		&dns.NS{Hdr: hdr(origin, dns.TypeNS), Ns: "invalid."},
		&dns.TXT{Hdr: hdr("version."+origin, dns.TypeTXT), Txt: []string{Version}},
	}
	seen := make(map[string]bool, len(members))
	var ptrs []dns.RR
	for _, m := range members {
		m = dns.CanonicalName(m)
		if seen[m] {
			continue
		}
		seen[m] = true
		ptrs = append(ptrs, &dns.PTR{Hdr: hdr(ID(m)+".zones."+origin, dns.TypePTR), Ptr: m})
	}
	sort.Slice(ptrs, func(i, j int) bool { return ptrs[i].Header().Name < ptrs[j].Header().Name })
	return append(rrs, ptrs...)
}

// Member is one member zone of a catalog.
type Member struct {
	Zone  string   // the member zone's name, canonical
	ID    string   // its unique label under zones.<catalog>
	COO   string   // change-of-ownership target catalog (RFC 9432 §4.4.1), or ""
	Group []string // group property values (§4.4.2)
}

// Catalog is an interpreted catalog zone.
type Catalog struct {
	Origin  string
	Members map[string]Member // by member zone name
	// Ignored says why member entries were left out (a broken entry makes
	// the catalog consumer ignore that member, not the whole catalog).
	Ignored []string
}

// Parse interprets the records of the catalog zone origin. A catalog without
// exactly one version TXT of "2" is invalid (RFC 9432 §4.2.1: a consumer
// MUST NOT process a version it does not know): Parse returns an error and
// the caller keeps its previous state. Member entries that are malformed
// (more than one PTR, the same member under two IDs) are ignored and listed in
// Ignored; records the RFC does not define are ignored (§4.3).
func Parse(origin string, rrs []dns.RR) (*Catalog, error) {
	origin = dns.CanonicalName(origin)
	zones := "zones." + origin
	var versions []string
	ptrs := map[string][]string{}   // ID -> member names
	coo := map[string][]string{}    // ID -> coo targets
	groups := map[string][]string{} // ID -> group values
	for _, rr := range rrs {
		h := rr.Header()
		if h.Class != dns.ClassINET {
			continue
		}
		name := dns.CanonicalName(h.Name)
		if name == "version."+origin {
			if t, ok := rr.(*dns.TXT); ok {
				versions = append(versions, strings.Join(t.Txt, ""))
			}
			continue
		}
		if !dns.IsSubDomain(zones, name) || name == zones {
			continue
		}
		labels := dns.SplitDomainName(strings.TrimSuffix(name, "."+zones))
		switch {
		case len(labels) == 1:
			if p, ok := rr.(*dns.PTR); ok {
				id := strings.ToLower(labels[0])
				ptrs[id] = append(ptrs[id], dns.CanonicalName(p.Ptr))
			}
		case len(labels) == 2 && strings.EqualFold(labels[0], "coo"):
			if p, ok := rr.(*dns.PTR); ok {
				id := strings.ToLower(labels[1])
				coo[id] = append(coo[id], dns.CanonicalName(p.Ptr))
			}
		case len(labels) == 2 && strings.EqualFold(labels[0], "group"):
			if t, ok := rr.(*dns.TXT); ok {
				id := strings.ToLower(labels[1])
				groups[id] = append(groups[id], strings.Join(t.Txt, ""))
			}
		}
	}
	if len(versions) != 1 || versions[0] != Version {
		return nil, fmt.Errorf("catalog %s: version.%s TXT is %q, want exactly one %q (RFC 9432 §4.2.1)",
			origin, origin, versions, Version)
	}
	c := &Catalog{Origin: origin, Members: map[string]Member{}}
	ids := make([]string, 0, len(ptrs))
	for id := range ptrs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	byZone := map[string][]string{}
	for _, id := range ids {
		names := ptrs[id]
		if len(names) != 1 {
			c.Ignored = append(c.Ignored, fmt.Sprintf("%s.%s: %d PTR records, want one (RFC 9432 §4.2.2)", id, zones, len(names)))
			continue
		}
		byZone[names[0]] = append(byZone[names[0]], id)
	}
	for zone, idsOf := range byZone {
		if len(idsOf) != 1 {
			c.Ignored = append(c.Ignored, fmt.Sprintf("%s: listed under %d IDs %v, want one (RFC 9432 §4.2.2)", zone, len(idsOf), idsOf))
			continue
		}
		id := idsOf[0]
		m := Member{Zone: zone, ID: id, Group: groups[id]}
		if len(coo[id]) == 1 {
			m.COO = coo[id][0]
		}
		c.Members[zone] = m
	}
	sort.Strings(c.Ignored)
	return c, nil
}

// Kind is what a consumer does to a member zone.
type Kind int

// The kinds of Change.
const (
	Add     Kind = iota // serve the zone as a secondary of the catalog's primaries
	Remove              // stop serving it; delete its data after the grace period
	Reset               // the member's ID changed: drop its data and transfer it afresh (RFC 9432 §5.5)
	Adopt               // another catalog handed it over by its coo property (§5.4): keep the data
	Release             // it left this catalog for its coo target: stop serving it from here but keep the data (§5.4)
)

// String names k in lower case (add, remove, ...).
func (k Kind) String() string {
	return [...]string{"add", "remove", "reset", "adopt", "release"}[k]
}

// Change is one decision about a member zone.
type Change struct {
	Kind Kind
	Zone string
}

// Owner tells who owns a zone the consumer serves already: the catalog
// origin and the member's entry there; ok false when it serves no such zone.
type Owner func(zone string) (catalog string, m Member, ok bool)

// Changes returns the changes a consumer makes when catalog next replaces
// prev (nil before the first version), in zone order. owner reports zones
// served already and by which catalog (nil: none). RFC 9432 §5:
//   - a member new in next is added, unless another catalog owns it and its
//     entry there has no coo property naming next (§5.4: the consumer MUST
//     NOT take it over); with such a coo it is adopted;
//   - a member that leaves is removed, or released when its last entry named
//     a coo target (that catalog takes it over);
//   - a member whose ID changed is reset (§5.5).
func Changes(prev, next *Catalog, owner Owner) []Change {
	var out []Change
	for zone, m := range next.Members {
		var old Member
		had := false
		if prev != nil {
			old, had = prev.Members[zone]
		}
		switch {
		case had && old.ID != m.ID:
			out = append(out, Change{Reset, zone})
		case had:
		default:
			if owner != nil {
				if cat, om, ok := owner(zone); ok && cat != next.Origin {
					if om.COO == next.Origin {
						out = append(out, Change{Adopt, zone})
					}
					continue
				}
			}
			out = append(out, Change{Add, zone})
		}
	}
	if prev != nil {
		for zone, old := range prev.Members {
			if _, ok := next.Members[zone]; ok {
				continue
			}
			if old.COO != "" && old.COO != next.Origin {
				out = append(out, Change{Release, zone})
				continue
			}
			out = append(out, Change{Remove, zone})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Zone < out[j].Zone })
	return out
}
