package resolve

import (
	"strings"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/validator"
)

// Aggressive use of DNSSEC-validated cache (RFC 8198): the NSEC and NSEC3
// records of answers that validated Secure go into an ordered index per
// zone (cache.Denials), and a question whose name they prove not to exist
// (or to lack the type) is answered from them, NXDOMAIN or NODATA with
// the zone's SOA and the proof, without asking the authorities: a flood
// of random names under a signed zone stops at the resolver once the
// spans between its names are known. The proof is checked by the
// validator's ProveDenial (the one implementation of RFC 4035 §5.4 and
// RFC 5155 §8), on records whose signatures were verified when they came
// (§5.1), so a synthesised answer is Secure without checking a signature
// again. An Opt-Out NSEC3 proves no NXDOMAIN (RFC 5155 §9.2: an unsigned
// delegation may hide there), so none is synthesised from one.

// learnDenials adds the NSEC and NSEC3 records of a Secure result's
// authority section, and the SOA of a negative answer, to the index
// (RFC 8198 §5.1: only validated records). Every RRset of the section
// was verified with its signer's keys for the Result to be Secure.
func (r *Resolver) learnDenials(res *Result) {
	if r.denials == nil || res.Security != cache.Secure || res.Stale {
		return
	}
	sets := RRsets(res.Authority)
	// RFC 8198 §5.4: the records are used no longer than the SOA's
	// MINIMUM (and TTL: RFC 9077) of the negative answer they came in.
	bound := map[string]uint32{}
	for _, set := range sets {
		if set.Type != dns.TypeSOA || len(set.Records) != 1 || len(set.Sigs) == 0 {
			continue
		}
		soa := set.Records[0].(*dns.SOA)
		bound[set.Name] = min(soa.Hdr.Ttl, soa.Minttl)
		r.denials.AddSOA(set.Name, withRRSIGs(set))
	}
	for _, set := range sets {
		if (set.Type != dns.TypeNSEC && set.Type != dns.TypeNSEC3) || len(set.Records) != 1 || len(set.Sigs) == 0 {
			continue
		}
		zone := canonical(set.Sigs[0].SignerName)
		limit, ok := bound[zone]
		if !ok {
			limit = ^uint32(0)
		}
		if n3, ok := set.Records[0].(*dns.NSEC3); ok && (n3.Hash != dns.SHA1 || n3.Flags > 1) {
			continue
		}
		r.denials.Add(zone, withRRSIGs(set), limit)
	}
}

// withRRSIGs is a copy of the RRset's records followed by its RRSIGs
// (the index outlives the Result, whose records its clients may hold).
func withRRSIGs(set RRset) []dns.RR {
	out := make([]dns.RR, 0, len(set.Records)+len(set.Sigs))
	for _, rr := range set.Records {
		out = append(out, dns.Copy(rr))
	}
	for _, s := range set.Sigs {
		out = append(out, dns.Copy(s))
	}
	return out
}

// synthesise answers name/qtype from the index of validated denials, as
// an authority's negative answer would be (AA, the SOA and the proof in
// the authority section), when the records there prove it; ok is false
// when they do not, and the authorities are asked. zone is the zone
// whose records prove it.
func (ru *run) synthesise(name string, qtype uint16) (m *dns.Msg, zone string, ok bool) {
	d := ru.r.denials
	if d == nil || ru.fresh.Name != "" {
		return nil, "", false
	}
	if _, ok := ru.r.NegativeAnchor(name); ok {
		// RFC 7646: nothing is validated there, nor proved.
		return nil, "", false
	}
	// RFC 4035 §3.1.4.1: a DS is its parent zone's.
	start := name
	if qtype == dns.TypeDS && name != "." {
		start = parent(name)
	}
	if zone, ok = d.Closest(start); !ok {
		return nil, "", false
	}
	soa, ok := d.SOA(zone)
	if !ok {
		return nil, "", false
	}
	var proof []cache.Denial
	var claim validator.Denial
	if iterations, salt, ok := d.NSEC3Params(zone); ok {
		proof, claim, ok = nsec3Proof(d, zone, name, iterations, salt)
		if !ok {
			return nil, "", false
		}
	} else if proof, claim, ok = nsecProof(d, zone, name); !ok {
		return nil, "", false
	}
	var rrs []dns.RR
	for _, p := range proof {
		rrs = append(rrs, p.Records[0])
	}
	var w validator.Work
	if res := ru.r.validator.ProveDenial(claim, name, qtype, zone, rrs, &w); !res.Secure() || res.OptOut {
		return nil, "", false
	}
	// RFC 8198 §5.4: the answer lives no longer than any record it is
	// made of.
	ttl := soa.TTL
	for _, p := range proof {
		ttl = min(ttl, p.TTL)
	}
	m = &dns.Msg{MsgHdr: dns.MsgHdr{Authoritative: true}}
	if claim == validator.NXDomain {
		m.Rcode = dns.RcodeNameError
	}
	seen := map[dns.RR]bool{}
	for _, p := range append([]cache.Denial{soa}, proof...) {
		if seen[p.Records[0]] {
			continue
		}
		seen[p.Records[0]] = true
		for _, rr := range p.Records {
			c := dns.Copy(rr)
			c.Header().Ttl = ttl
			m.Ns = append(m.Ns, c)
		}
	}
	return m, zone, true
}

// nsecProof finds in zone's NSEC records those that would prove name
// absent, or without data (its own NSEC, or the covering one of an
// empty non-terminal), and the claim they would prove; the caller checks
// the proof. The wildcard at the closest encloser must be denied too
// (RFC 4035 §5.4), or show no data: a wildcard that has the type would
// make a positive answer, which is not synthesised here.
func nsecProof(d *cache.Denials, zone, name string) ([]cache.Denial, validator.Denial, bool) {
	p, ok := d.NSEC(zone, name)
	if !ok {
		return nil, 0, false
	}
	n := p.Records[0].(*dns.NSEC)
	if strings.EqualFold(n.NextDomain, name) {
		// name exists; its own NSEC is not known.
		return nil, 0, false
	}
	if strings.EqualFold(n.Hdr.Name, name) || subDomain(name, n.NextDomain) {
		return []cache.Denial{p}, validator.NoData, true
	}
	// The closest encloser: the longest ancestor of name the covering
	// NSEC's names show to exist.
	labels := max(dns.CompareDomainName(name, n.Hdr.Name), dns.CompareDomainName(name, n.NextDomain), dns.CountLabel(zone))
	ce := name
	if idx := dns.Split(name); labels == 0 {
		ce = "."
	} else if labels < len(idx) {
		ce = name[idx[len(idx)-labels]:]
	}
	wild := "*." + ce
	if ce == "." {
		wild = "*."
	}
	pw, ok := d.NSEC(zone, wild)
	if !ok {
		return nil, 0, false
	}
	if strings.EqualFold(pw.Records[0].Header().Name, wild) {
		return []cache.Denial{p, pw}, validator.NoData, true
	}
	return []cache.Denial{p, pw}, validator.NXDomain, true
}

// nsec3Proof is nsecProof with NSEC3 records (RFC 5155 §8.4-8.7): the
// closest encloser's matching record, the record covering the next
// closer name and the one matching or covering the wildcard.
func nsec3Proof(d *cache.Denials, zone, name string, iterations uint16, salt string) ([]cache.Denial, validator.Denial, bool) {
	var cover cache.Denial
	for n := name; ; n = parent(n) {
		h := dns.HashName(n, dns.SHA1, iterations, salt)
		p, ok := d.NSEC3(zone, h)
		if !ok {
			return nil, 0, false
		}
		if ownerLabel(p.Records[0]) == h {
			if n == name {
				return []cache.Denial{p}, validator.NoData, true
			}
			wild := "*." + n
			if n == "." {
				wild = "*."
			}
			hw := dns.HashName(wild, dns.SHA1, iterations, salt)
			pw, ok := d.NSEC3(zone, hw)
			if !ok {
				return nil, 0, false
			}
			claim := validator.NXDomain
			if ownerLabel(pw.Records[0]) == hw {
				claim = validator.NoData
			}
			return []cache.Denial{p, cover, pw}, claim, true
		}
		if n == zone || n == "." {
			return nil, 0, false
		}
		cover = p
	}
}

// ownerLabel is the first label of rr's owner in upper case, as
// dns.HashName writes a hash.
func ownerLabel(rr dns.RR) string {
	name := rr.Header().Name
	i, _ := dns.NextLabel(name, 0)
	return strings.ToUpper(name[:max(i-1, 0)])
}
