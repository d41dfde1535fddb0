package validator

import (
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/wire"
)

// Denial is what a negative answer claims.
type Denial int

const (
	// NXDomain: the name does not exist (RCODE 3).
	NXDomain Denial = iota + 1
	// NoData: the name exists, or a wildcard would match it, without the
	// type asked (NOERROR with no answer).
	NoData
)

// ProveDenial checks that proof, the NSEC or NSEC3 records of a negative
// answer's authority section (each RRset already verified with
// VerifyRRset), proves the claim for qname and qtype in zone: RFC 4035
// §5.4 (NSEC), RFC 5155 §8.4-8.7 (NSEC3). A NODATA for DS proved by an
// Opt-Out NSEC3 covering the name comes back Secure with OptOut set: the
// delegation is unsigned (RFC 5155 §8.6); an NXDOMAIN proved with one may
// hide an unsigned delegation, so the caller must not call it
// authenticated either (RFC 5155 §9.2).
func (v *Validator) ProveDenial(claim Denial, qname string, qtype uint16, zone string, proof []dns.RR, w *Work) Result {
	qname, zone = dns.Fqdn(qname), dns.Fqdn(zone)
	if !below(qname, zone) {
		return bogus(wire.EDEDNSSECBogus, "%s is not in zone %s", qname, zone)
	}
	var nsecs []*dns.NSEC
	var nsec3s []*dns.NSEC3
	for _, rr := range proof {
		switch rr := rr.(type) {
		case *dns.NSEC:
			if below(rr.Hdr.Name, zone) {
				nsecs = append(nsecs, rr)
			}
		case *dns.NSEC3:
			nsec3s = append(nsec3s, rr)
		}
	}
	if len(nsecs) > 0 {
		return proveNSEC(claim, qname, qtype, zone, nsecs)
	}
	s, r := v.nsec3Set(zone, nsec3s, w)
	if s == nil {
		return r
	}
	return s.prove(claim, qname, qtype)
}

// ProveWildcard checks that an answer for qname whose signature has
// labels labels (fewer than qname's: it was synthesised from the wildcard
// at the last labels labels of qname) comes with the proof that no closer
// name exists: an NSEC covering qname (RFC 4035 §5.3.4), or an NSEC3
// covering the next closer name (RFC 5155 §8.8).
func (v *Validator) ProveWildcard(qname string, labels uint8, zone string, proof []dns.RR, w *Work) Result {
	qname, zone = dns.Fqdn(qname), dns.Fqdn(zone)
	n := dns.CountLabel(qname)
	ce := lastLabels(qname, int(labels))
	if int(labels) >= n || !below(ce, zone) {
		return bogus(wire.EDEDNSSECBogus, "%s: signature labels %d make no wildcard in %s", qname, labels, zone)
	}
	var nsec3s []*dns.NSEC3
	for _, rr := range proof {
		switch rr := rr.(type) {
		case *dns.NSEC:
			if below(rr.Hdr.Name, zone) && nsecCovers(rr, qname) && usableFor(rr, qname) {
				return secure
			}
		case *dns.NSEC3:
			nsec3s = append(nsec3s, rr)
		}
	}
	if len(nsec3s) == 0 {
		return bogus(wire.EDENSECMissing, "%s: wildcard answer without proof that the name does not exist", qname)
	}
	s, r := v.nsec3Set(zone, nsec3s, w)
	if s == nil {
		return r
	}
	nc := lastLabels(qname, int(labels)+1)
	c, r := s.cover(nc)
	if c == nil {
		if r.set() {
			return r
		}
		return bogus(wire.EDENSECMissing, "%s: no NSEC3 covers the next closer name %s of the wildcard answer", qname, nc)
	}
	if c.Flags&1 != 0 {
		return Result{Security: cache.Secure, OptOut: true}
	}
	return secure
}

// lastLabels is the name made of the last n labels of name.
func lastLabels(name string, n int) string {
	idx := dns.Split(name)
	if n >= len(idx) {
		return name
	}
	if n <= 0 {
		return "."
	}
	return name[idx[len(idx)-n]:]
}

// parent is name without its first label; the root's parent is the
// root.
func parent(name string) string {
	i, end := dns.NextLabel(name, 0)
	if end || i >= len(name) {
		return "."
	}
	return name[i:]
}

// hasType reports whether a type bitmap holds t.
func hasType(bitmap []uint16, t uint16) bool { return slices.Contains(bitmap, t) }

// commonLabels is the number of labels a and b share from the right.
func commonLabels(a, b string) int { return dns.CompareDomainName(a, b) }

// nsecCovers reports whether n covers name: name sorts strictly between
// n's owner and next name, or after the owner when n is the zone's last
// NSEC (its next name is the apex).
func nsecCovers(n *dns.NSEC, name string) bool {
	owner, next := n.Hdr.Name, n.NextDomain
	if !canonicalLess(owner, name) {
		return false
	}
	if canonicalLess(owner, next) {
		return canonicalLess(name, next)
	}
	return below(name, next)
}

// usableFor reports whether n may deny anything about name: an NSEC at
// an ancestor of name that is a delegation from the parent's side (NS
// without SOA) or holds a DNAME says nothing about the names below it
// (RFC 6840 §4.1).
func usableFor(n *dns.NSEC, name string) bool {
	if equalNames(n.Hdr.Name, name) || !below(name, n.Hdr.Name) {
		return true
	}
	delegation := hasType(n.TypeBitMap, dns.TypeNS) && !hasType(n.TypeBitMap, dns.TypeSOA)
	return !delegation && !hasType(n.TypeBitMap, dns.TypeDNAME)
}

// proveNSEC is ProveDenial with NSEC records (RFC 4035 §5.4).
func proveNSEC(claim Denial, qname string, qtype uint16, zone string, nsecs []*dns.NSEC) Result {
	var cover *dns.NSEC
	for _, n := range nsecs {
		if equalNames(n.Hdr.Name, qname) {
			if claim == NXDomain {
				return bogus(wire.EDEDNSSECBogus, "NXDOMAIN for %s, but an NSEC shows it exists", qname)
			}
			return nodataAt(qname, qtype, n.TypeBitMap)
		}
		if nsecCovers(n, qname) && usableFor(n, qname) {
			cover = n
		}
	}
	if cover == nil {
		return bogus(wire.EDENSECMissing, "no NSEC covers %s", qname)
	}
	// An NSEC whose next name is below qname shows that qname is an
	// empty non-terminal: it exists, with no data (RFC 4035 §3.1.3.2).
	if below(cover.NextDomain, qname) {
		if claim == NXDomain {
			return bogus(wire.EDEDNSSECBogus, "NXDOMAIN for %s, an empty non-terminal", qname)
		}
		return secure
	}
	// The closest encloser is the longest ancestor of qname that the
	// covering NSEC's names show to exist; the wildcard below it must not
	// exist (NXDOMAIN) or lack the type (NODATA).
	n := max(commonLabels(qname, cover.Hdr.Name), commonLabels(qname, cover.NextDomain))
	ce := lastLabels(qname, n)
	if !below(ce, zone) {
		ce = zone
	}
	wild := "*." + ce
	if ce == "." {
		wild = "*."
	}
	for _, m := range nsecs {
		if claim == NoData && equalNames(m.Hdr.Name, wild) {
			return nodataAt(wild, qtype, m.TypeBitMap)
		}
		if claim == NXDomain && nsecCovers(m, wild) && usableFor(m, wild) {
			return secure
		}
	}
	if claim == NoData {
		return bogus(wire.EDENSECMissing, "NODATA for %s: %s does not exist and no NSEC shows the wildcard %s", qname, qname, wild)
	}
	return bogus(wire.EDENSECMissing, "NXDOMAIN for %s: no NSEC denies the wildcard %s", qname, wild)
}

// nodataAt checks a NODATA claim for name and qtype against the type
// bitmap of the NSEC or NSEC3 record matching it (RFC 4035 §5.4, RFC 5155
// §8.5-8.7): neither the type nor a CNAME may be there; a delegation
// (NS without SOA) proves only the absence of DS, and an apex (SOA) never
// does, since the DS of a zone is in its parent.
func nodataAt(name string, qtype uint16, bitmap []uint16) Result {
	switch {
	case hasType(bitmap, qtype):
		return bogus(wire.EDEDNSSECBogus, "NODATA for %s %s, but the denial shows the type", name, dns.TypeToString[qtype])
	case hasType(bitmap, dns.TypeCNAME):
		return bogus(wire.EDEDNSSECBogus, "NODATA for %s %s, but the denial shows a CNAME", name, dns.TypeToString[qtype])
	case qtype != dns.TypeDS && hasType(bitmap, dns.TypeNS) && !hasType(bitmap, dns.TypeSOA):
		return bogus(wire.EDEDNSSECBogus, "NODATA for %s %s from the parent side of a delegation", name, dns.TypeToString[qtype])
	case qtype == dns.TypeDS && hasType(bitmap, dns.TypeSOA) && name != ".":
		return bogus(wire.EDEDNSSECBogus, "NODATA for %s DS from the child zone's apex", name)
	}
	return secure
}

// nsec3Set is the NSEC3 records of one zone that one proof may use, with
// the hashes computed for it.
type nsec3Set struct {
	v      *Validator
	w      *Work
	zone   string
	recs   []*dns.NSEC3
	hashes map[string]string
}

// nsec3Set keeps the records of nsec3s that a validator may use: SHA-1
// (RFC 5155 §8.1), flags zero or Opt-Out, owned by a hash label directly
// below zone, and with the parameters of the first such (§8.2). NSEC3
// records above the iteration limits make the answer insecure or bogus
// (RFC 9276 §3.2). A nil set comes with the Result to answer.
func (v *Validator) nsec3Set(zone string, nsec3s []*dns.NSEC3, w *Work) (*nsec3Set, Result) {
	s := &nsec3Set{v: v, w: w, zone: zone, hashes: map[string]string{}}
	for _, n := range nsec3s {
		if n.Hash != dns.SHA1 || n.Flags > 1 || !equalNames(parent(n.Hdr.Name), zone) || dns.CountLabel(n.Hdr.Name) != dns.CountLabel(zone)+1 {
			continue
		}
		if len(s.recs) > 0 && (n.Iterations != s.recs[0].Iterations || !strings.EqualFold(n.Salt, s.recs[0].Salt)) {
			continue
		}
		s.recs = append(s.recs, n)
	}
	if len(s.recs) == 0 {
		if len(nsec3s) > 0 {
			return nil, insecure(wire.EDEDNSSECIndeterminate, "no NSEC3 record of %s with a supported hash and flags", zone)
		}
		return nil, bogus(wire.EDENSECMissing, "no NSEC or NSEC3 records for a denial in %s", zone)
	}
	it := int(s.recs[0].Iterations)
	switch {
	case it > v.limits.NSEC3Bogus:
		return nil, bogus(wire.EDEUnsupportedNSEC3Iterations, "NSEC3 of %s with %d iterations (more than %d)", zone, it, v.limits.NSEC3Bogus)
	case it > v.limits.NSEC3Insecure:
		return nil, insecure(wire.EDEUnsupportedNSEC3Iterations, "NSEC3 of %s with %d iterations (more than %d)", zone, it, v.limits.NSEC3Insecure)
	}
	return s, Result{}
}

// hash is name's NSEC3 hash, counted against the Work's budget; "" with a
// Bogus Result when the budget is spent.
func (s *nsec3Set) hash(name string) (string, Result) {
	key := strings.ToLower(name)
	if h, ok := s.hashes[key]; ok {
		return h, Result{}
	}
	cost := int(s.recs[0].Iterations) + 1
	if s.w.Hashes+cost > s.v.limits.Hashes {
		return "", bogus(wire.EDEDNSSECBogus, "more than %d NSEC3 hash computations for one query", s.v.limits.Hashes)
	}
	s.w.Hashes += cost
	h := dns.HashName(key, dns.SHA1, s.recs[0].Iterations, s.recs[0].Salt)
	s.hashes[key] = h
	return h, Result{}
}

// ownerHash is the hash label of n's owner, upper case as HashName
// writes hashes.
func ownerHash(n *dns.NSEC3) string {
	i, _ := dns.NextLabel(n.Hdr.Name, 0)
	return strings.ToUpper(n.Hdr.Name[:i-1])
}

// match returns the record whose owner is name's hash, if any.
func (s *nsec3Set) match(name string) (*dns.NSEC3, Result) {
	h, r := s.hash(name)
	if h == "" {
		return nil, r
	}
	for _, n := range s.recs {
		if ownerHash(n) == h {
			return n, Result{}
		}
	}
	return nil, Result{}
}

// cover returns a record whose hash interval covers name's hash, if any
// (the last record of the chain wraps around).
func (s *nsec3Set) cover(name string) (*dns.NSEC3, Result) {
	h, r := s.hash(name)
	if h == "" {
		return nil, r
	}
	for _, n := range s.recs {
		owner, next := ownerHash(n), strings.ToUpper(n.NextDomain)
		if owner < next && owner < h && h < next || owner >= next && (h > owner || h < next) {
			return n, Result{}
		}
	}
	return nil, Result{}
}

// closestEncloser is the closest encloser proof of RFC 5155 §8.3: the
// longest ancestor of qname (or qname itself) with a matching record, and
// the name one label longer toward qname (the next closer name), whose
// hash a record must cover; ce == qname when qname itself matches. A
// failed proof returns a Result to answer.
func (s *nsec3Set) closestEncloser(qname string) (ce string, ceRec *dns.NSEC3, ncCover *dns.NSEC3, res Result) {
	nc := ""
	for name := qname; ; name = parent(name) {
		m, r := s.match(name)
		if r.set() {
			return "", nil, nil, r
		}
		if m != nil {
			ce, ceRec = name, m
			break
		}
		if equalNames(name, s.zone) || name == "." {
			return "", nil, nil, bogus(wire.EDENSECMissing, "no NSEC3 matches an ancestor of %s in %s", qname, s.zone)
		}
		nc = name
	}
	// The closest encloser may not be a delegation point or a DNAME:
	// its NSEC3 then belongs to the parent side and says nothing about
	// the names below it (RFC 5155 §8.3, RFC 6840 §4.1).
	if ce != qname && (hasType(ceRec.TypeBitMap, dns.TypeNS) && !hasType(ceRec.TypeBitMap, dns.TypeSOA) || hasType(ceRec.TypeBitMap, dns.TypeDNAME)) {
		return "", nil, nil, bogus(wire.EDEDNSSECBogus, "the closest encloser %s of %s is a delegation or DNAME", ce, qname)
	}
	if ce == qname {
		return ce, ceRec, nil, Result{}
	}
	c, r := s.cover(nc)
	if c == nil {
		if r.set() {
			return "", nil, nil, r
		}
		return "", nil, nil, bogus(wire.EDENSECMissing, "no NSEC3 covers the next closer name %s of %s", nc, qname)
	}
	return ce, ceRec, c, Result{}
}

// prove is ProveDenial with NSEC3 records (RFC 5155 §8.4-8.7).
func (s *nsec3Set) prove(claim Denial, qname string, qtype uint16) Result {
	ce, ceRec, ncCover, r := s.closestEncloser(qname)
	if r.set() {
		return r
	}
	if ce == qname {
		if claim == NXDomain {
			return bogus(wire.EDEDNSSECBogus, "NXDOMAIN for %s, but an NSEC3 shows it exists", qname)
		}
		// §8.5, and §8.6 for DS with a matching record.
		return nodataAt(qname, qtype, ceRec.TypeBitMap)
	}
	optOut := ncCover.Flags&1 != 0
	wild := "*." + ce
	if ce == "." {
		wild = "*."
	}
	if claim == NoData {
		// §8.6: no DS at an unsigned delegation left out of an Opt-Out
		// chain.
		if qtype == dns.TypeDS && optOut {
			return Result{Security: cache.Secure, OptOut: true}
		}
		// §8.7: a wildcard that matches, without the type.
		m, r := s.match(wild)
		if r.set() {
			return r
		}
		if m == nil {
			return bogus(wire.EDENSECMissing, "NODATA for %s: it does not exist and no NSEC3 shows the wildcard %s", qname, wild)
		}
		return nodataAt(wild, qtype, m.TypeBitMap)
	}
	// §8.4: the wildcard at the closest encloser does not exist either.
	c, r := s.cover(wild)
	if c == nil {
		if r.set() {
			return r
		}
		return bogus(wire.EDENSECMissing, "NXDOMAIN for %s: no NSEC3 denies the wildcard %s", qname, wild)
	}
	return Result{Security: cache.Secure, OptOut: optOut}
}
