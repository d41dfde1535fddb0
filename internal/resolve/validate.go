package resolve

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/validator"
	"github.com/tern-dns/tern/internal/wire"
)

// DNSSEC validation of a Result (Options.Validate): the chain of trust is
// built from the closest trust anchor down to the zone that signed each
// RRset, the DNSKEY RRset of every zone cut checked against its parent's
// DS RRset (the anchor's DS at the top), each DS RRset against the
// parent's keys (RFC 4035 §5). DS and DNSKEY records are fetched by
// ordinary resolutions of this Resolver (cached as any other), themselves
// not validated on their own: the chain checks them.

// trustChain is the state of the validation of one client query: the keys of
// the zones already validated, and the validator's Work (RFC 4035 §5 work
// bounded per client query, KeyTrap).
type trustChain struct {
	r    *Resolver
	ctx  context.Context
	work validator.Work
	// zones are the outcomes per zone apex: Secure with keys, Insecure
	// (an unsigned delegation at or above it) or Bogus.
	zones map[string]zoneTrust
	// unprovedWildcard is set when a wildcard answer came without any
	// proof from its zone.
	unprovedWildcard bool
	// offline: nothing is fetched (validateWith).
	offline bool
}

// zoneTrust is what the chain found of one zone.
type zoneTrust struct {
	res  validator.Result
	keys []*dns.DNSKEY
	// expire is when the records it follows from expire: the smallest
	// TTL of the DS and DNSKEY RRsets (or of the proof of no DS), and
	// their signatures' expiration.
	expire time.Time
}

// maxTrusted bounds the zone cuts a trustCache holds; when full it is
// emptied (the chains are built again, from the RRset cache).
const maxTrusted = 10000

// trustCache holds, across resolutions, the Secure (with their keys) and
// Insecure outcomes of the chain at zone cuts until their records
// expire, so that a resolution checks the signatures of its answer and
// not again those of the chain down to it (BenchmarkValidate). Bogus
// outcomes are not kept: they are tried again.
type trustCache struct {
	mu sync.Mutex
	m  map[string]zoneTrust
}

func (tc *trustCache) get(zone string, now time.Time) (zoneTrust, bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	t, ok := tc.m[zone]
	if !ok || !now.Before(t.expire) {
		return zoneTrust{}, false
	}
	return t, true
}

func (tc *trustCache) put(zone string, t zoneTrust, now time.Time) {
	if t.res.Security == cache.Bogus || !now.Before(t.expire) {
		return
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.m == nil || len(tc.m) >= maxTrusted {
		tc.m = map[string]zoneTrust{}
	}
	tc.m[zone] = t
}

// lifetime is when records and their signatures sigs stop being valid
// from now: the smallest TTL, or the earliest signature expiration
// (RFC 4035 §5.3.3: the TTL of a validated RRset is bounded by it).
func lifetime(now time.Time, records []dns.RR, sigs []*dns.RRSIG) time.Time {
	end := now.Add(time.Duration(cache.DefaultMaxTTL) * time.Second)
	for _, rr := range records {
		if e := now.Add(time.Duration(rr.Header().Ttl) * time.Second); e.Before(end) {
			end = e
		}
	}
	for _, sig := range sigs {
		if e := time.Unix(int64(sig.Expiration), 0); e.Before(end) {
			end = e
		}
	}
	return end
}

// known returns what is known of the cut at zone: from this chain, or
// from the Resolver's trustCache.
func (c *trustChain) known(zone string) (zoneTrust, bool) {
	if t, ok := c.zones[zone]; ok {
		return t, true
	}
	t, ok := c.r.trusted.get(zone, c.r.validNow())
	if ok {
		c.zones[zone] = t
	}
	return t, ok
}

// validate sets res.Security (and res.EDE, res.Why when not Secure) for
// the question name/qtype.
func (r *Resolver) validate(ctx context.Context, name string, qtype uint16, res *Result) {
	r.validateWith(ctx, name, qtype, res, false)
}

// validateWith is validate; offline, it asks no authority (nor the
// cache) for the chain's DS and DNSKEY records: what the trustCache
// does not hold fails the validation.
func (r *Resolver) validateWith(ctx context.Context, name string, qtype uint16, res *Result, offline bool) {
	// The chain's fetches together take no longer than one resolution
	// may (Limits.Timeout), not that long each.
	ctx, cancel := context.WithTimeout(ctx, r.limits.Timeout)
	defer cancel()
	c := &trustChain{r: r, ctx: ctx, zones: map[string]zoneTrust{}, offline: offline}
	out := c.result(name, qtype, res)
	if c.unprovedWildcard && !offline {
		// The cache keeps a wildcard answer's proof under the NSEC's
		// own owner, which a hit cannot find (until RFC 8198's
		// aggressive use): the authorities are asked again, once.
		fresh, err := r.resolveBy(ctx, &run{r: r, noValidate: true, fresh: dns.Question{Name: dns.CanonicalName(name), Qtype: qtype}}, name, qtype)
		if err == nil {
			res.Rcode, res.Answer, res.Authority = fresh.Rcode, fresh.Answer, fresh.Authority
			c.unprovedWildcard = false
			out = c.result(name, qtype, res)
		}
	}
	res.Security, res.EDE, res.Why = out.Security, out.EDE, out.Text
	if out.Security == cache.Secure {
		res.EDE, res.Why = 0, ""
	}
}

// worse returns the weaker of two outcomes: Bogus over Insecure over
// Secure (an answer is only as secure as its least secure RRset).
func worse(a, b validator.Result) validator.Result {
	rank := func(r validator.Result) int {
		switch r.Security {
		case cache.Secure:
			return 0
		case cache.Insecure:
			return 1
		}
		return 2
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

var secureResult = validator.Result{Security: cache.Secure}

// result validates the RRsets of res and, for a negative answer, its
// proof.
func (c *trustChain) result(name string, qtype uint16, res *Result) validator.Result {
	out := secureResult
	sname := name
	var wildcards []struct {
		owner  string
		labels uint8
		zone   string
	}
	answer := RRsets(res.Answer)
	for _, set := range answer {
		if len(set.Records) == 0 {
			continue
		}
		// RFC 6672 §5.3.1: a CNAME made from a DNAME is unsigned; the
		// DNAME's signature covers it.
		if set.Type == dns.TypeCNAME && len(set.Sigs) == 0 && dnameOver(answer, set.Name) {
			sname = set.Records[0].(*dns.CNAME).Target
			continue
		}
		r, sig := c.rrset(set)
		out = worse(out, r)
		if r.Secure() && sig != nil && int(sig.Labels) < dns.CountLabel(set.Name) && !strings.HasPrefix(set.Name, "*.") {
			wildcards = append(wildcards, struct {
				owner  string
				labels uint8
				zone   string
			}{set.Name, sig.Labels, dns.CanonicalName(sig.SignerName)})
		}
		if cn, ok := set.Records[0].(*dns.CNAME); ok && set.Type == dns.TypeCNAME && qtype != dns.TypeCNAME {
			sname = dns.CanonicalName(cn.Target)
		}
	}
	if out.Security == cache.Bogus {
		return out
	}
	// The proofs (NSEC/NSEC3 of the authority section), each RRset
	// verified; the SOA of a negative answer names its zone.
	proofs := map[string][]dns.RR{}
	negZone := ""
	for _, set := range RRsets(res.Authority) {
		if len(set.Records) == 0 {
			continue
		}
		switch set.Type {
		case dns.TypeSOA:
			negZone = set.Name
			if r, _ := c.rrset(set); !r.Secure() {
				out = worse(out, r)
			}
		case dns.TypeNSEC, dns.TypeNSEC3:
			r, sig := c.rrset(set)
			if !r.Secure() {
				out = worse(out, r)
				continue
			}
			z := dns.CanonicalName(sig.SignerName)
			proofs[z] = append(proofs[z], set.Records...)
		}
	}
	if out.Security != cache.Secure {
		return out
	}
	for _, w := range wildcards {
		// RFC 4035 §5.3.4: the answer was synthesised from a wildcard;
		// no closer name may exist.
		if len(proofs[w.zone]) == 0 {
			c.unprovedWildcard = true
		}
		out = worse(out, c.r.validator.ProveWildcard(w.owner, w.labels, w.zone, proofs[w.zone], &c.work))
	}
	negative := res.Rcode == dns.RcodeNameError || (res.Rcode == dns.RcodeSuccess && !hasType(res.Answer, sname, qtype))
	if !negative || out.Security != cache.Secure {
		return out
	}
	if negZone == "" {
		// RFC 4035 §5.4: a signed zone's negative answer comes with its
		// SOA and proof; without them it must be under an unsigned
		// delegation.
		t := c.trust(sname)
		if t.res.Security == cache.Secure {
			return validator.Result{Security: cache.Bogus, EDE: wire.EDENSECMissing, Text: fmt.Sprintf("%s: negative answer without SOA and proof", sname)}
		}
		return t.res
	}
	claim := validator.NoData
	if res.Rcode == dns.RcodeNameError {
		claim = validator.NXDomain
	}
	if len(proofs[negZone]) == 0 {
		return validator.Result{Security: cache.Bogus, EDE: wire.EDENSECMissing, Text: fmt.Sprintf("%s: negative answer without NSEC or NSEC3 from %s", sname, negZone)}
	}
	d := c.r.validator.ProveDenial(claim, sname, qtype, negZone, proofs[negZone], &c.work)
	if d.Secure() && d.OptOut {
		// RFC 5155 §9.2: an Opt-Out proof authenticates nothing.
		d = validator.Result{Security: cache.Insecure, Text: "opt-out NSEC3"}
	}
	return worse(out, d)
}

// hasType reports whether rrs holds a record of name and type t.
func hasType(rrs []dns.RR, name string, t uint16) bool {
	for _, rr := range rrs {
		if h := rr.Header(); h.Rrtype == t && strings.EqualFold(h.Name, name) {
			return true
		}
	}
	return false
}

// dnameOver reports whether sets hold a DNAME owned by an ancestor of name.
func dnameOver(sets []RRset, name string) bool {
	for _, s := range sets {
		if s.Type == dns.TypeDNAME && s.Name != name && dns.IsSubDomain(s.Name, name) {
			return true
		}
	}
	return false
}

// rrset validates one RRset: with the keys of the zone that signed it,
// or, unsigned, as part of an unsigned zone (RFC 4035 §5.2: the zone
// above it must have proved it has no DS).
func (c *trustChain) rrset(set RRset) (validator.Result, *dns.RRSIG) {
	if len(set.Sigs) == 0 {
		t := c.trust(set.Name)
		if t.res.Security == cache.Secure {
			return validator.Result{Security: cache.Bogus, EDE: wire.EDERRSIGsMissing, Text: fmt.Sprintf("%s %s: no RRSIG in a signed zone", set.Name, dns.TypeToString[set.Type])}, nil
		}
		return t.res, nil
	}
	zone := dns.CanonicalName(set.Sigs[0].SignerName)
	if !dns.IsSubDomain(zone, set.Name) {
		return validator.Result{Security: cache.Bogus, EDE: wire.EDEDNSSECBogus, Text: fmt.Sprintf("%s: signer %s is not an ancestor", set.Name, zone)}, nil
	}
	t := c.trust(zone)
	if !t.res.Secure() {
		return t.res, nil
	}
	return c.r.validator.VerifyRRset(set.Records, set.Sigs, t.keys, zone, &c.work)
}

// trust returns what the chain of trust says of the zone at or above
// name: built from the closest trust anchor down, one label at a time
// (RFC 4035 §5.1-5.2). Each name below the anchor is asked its DS: a
// signed DS RRset leads to the name's DNSKEY RRset, validated against it;
// a proved absence of DS at a delegation ends the chain Insecure; a
// proved absence elsewhere (a name inside the zone) passes on.
func (c *trustChain) trust(name string) zoneTrust {
	name = dns.CanonicalName(name)
	anchor, ds := c.r.anchors.Closest(name)
	if ds == nil {
		return zoneTrust{res: validator.Result{Security: cache.Insecure, Text: "no trust anchor above " + name}}
	}
	anchor = dns.CanonicalName(anchor)
	t, ok := c.known(anchor)
	if !ok {
		t = c.keysOf(anchor, ds)
		c.r.trusted.put(anchor, t, c.r.validNow())
	}
	zone := anchor
	labels := dns.SplitDomainName(name)
	for i := len(labels) - dns.CountLabel(anchor) - 1; i >= 0 && t.res.Secure(); i-- {
		n := dns.CanonicalName(strings.Join(labels[i:], ".") + ".")
		if known, ok := c.known(n); ok {
			t, zone = known, n
			continue
		}
		next, cut := c.step(zone, t.keys, n)
		if cut {
			t, zone = next, n
			c.zones[n] = t
			c.r.trusted.put(n, t, c.r.validNow())
		} else if !next.res.Secure() {
			t = next
		}
	}
	return t
}

// keysOf fetches and validates the DNSKEY RRset of zone against ds.
func (c *trustChain) keysOf(zone string, ds []*dns.DS) zoneTrust {
	res, err := c.fetch(zone, dns.TypeDNSKEY)
	if err != nil {
		t := zoneTrust{res: validator.Result{Security: cache.Bogus, EDE: wire.EDEDNSKEYMissing, Text: fmt.Sprintf("%s DNSKEY: %v", zone, err)}}
		c.zones[zone] = t
		return t
	}
	var keys []*dns.DNSKEY
	var sigs []*dns.RRSIG
	for _, set := range RRsets(res.Answer) {
		if set.Name == zone && set.Type == dns.TypeDNSKEY {
			for _, rr := range set.Records {
				if k, ok := rr.(*dns.DNSKEY); ok {
					keys = append(keys, k)
				}
			}
			sigs = set.Sigs
		}
	}
	r, valid := c.r.validator.VerifyKeys(zone, keys, sigs, ds, &c.work)
	rrs := make([]dns.RR, len(keys))
	for i, k := range keys {
		rrs[i] = k
	}
	t := zoneTrust{res: r, keys: valid, expire: lifetime(c.r.validNow(), rrs, sigs)}
	c.zones[zone] = t
	return t
}

// step asks the DS of n, below zone (whose keys are validated): cut
// reports a zone cut at n, with the trust of n's zone; otherwise next is
// Secure when n is proved to be no cut, or not Secure with why.
func (c *trustChain) step(zone string, keys []*dns.DNSKEY, n string) (next zoneTrust, cut bool) {
	res, err := c.fetch(n, dns.TypeDS)
	if err != nil {
		return zoneTrust{res: validator.Result{Security: cache.Bogus, EDE: wire.EDEDNSSECBogus, Text: fmt.Sprintf("%s DS: %v", n, err)}}, false
	}
	for _, set := range RRsets(res.Answer) {
		if set.Name != n || set.Type != dns.TypeDS || len(set.Records) == 0 {
			continue
		}
		r, _ := c.r.validator.VerifyRRset(set.Records, set.Sigs, keys, zone, &c.work)
		if !r.Secure() {
			return zoneTrust{res: r}, true
		}
		var ds []*dns.DS
		for _, rr := range set.Records {
			ds = append(ds, rr.(*dns.DS))
		}
		t := c.keysOf(n, ds)
		if e := lifetime(c.r.validNow(), set.Records, set.Sigs); e.Before(t.expire) {
			t.expire = e
		}
		return t, true
	}
	// No DS: the parent's proof, each NSEC/NSEC3 RRset signed by zone.
	var proof []dns.RR
	var proofSigs []*dns.RRSIG
	for _, set := range RRsets(res.Authority) {
		if (set.Type != dns.TypeNSEC && set.Type != dns.TypeNSEC3) || len(set.Records) == 0 {
			continue
		}
		if r, _ := c.r.validator.VerifyRRset(set.Records, set.Sigs, keys, zone, &c.work); !r.Secure() {
			return zoneTrust{res: r}, false
		}
		proof = append(proof, set.Records...)
		proofSigs = append(proofSigs, set.Sigs...)
	}
	if len(proof) == 0 {
		return zoneTrust{res: validator.Result{Security: cache.Bogus, EDE: wire.EDENSECMissing, Text: fmt.Sprintf("%s DS: no DS and no proof of its absence from %s", n, zone)}}, false
	}
	d := c.r.validator.ProveDenial(validator.NoData, n, dns.TypeDS, zone, proof, &c.work)
	if !d.Secure() {
		return zoneTrust{res: d}, false
	}
	if d.OptOut || unsignedCut(proof, n) {
		// RFC 4035 §5.2, RFC 5155 §8.9: a proved unsigned delegation.
		return zoneTrust{res: validator.Result{Security: cache.Insecure, Text: fmt.Sprintf("%s: unsigned delegation from %s", n, zone)},
			expire: lifetime(c.r.validNow(), proof, proofSigs)}, true
	}
	return zoneTrust{res: secureResult}, false
}

// unsignedCut reports whether the NSEC or NSEC3 record of n in proof shows
// a delegation (NS without SOA in its type bitmap).
func unsignedCut(proof []dns.RR, n string) bool {
	cutTypes := func(types []uint16) bool {
		ns, soa := false, false
		for _, t := range types {
			ns = ns || t == dns.TypeNS
			soa = soa || t == dns.TypeSOA
		}
		return ns && !soa
	}
	for _, rr := range proof {
		switch rr := rr.(type) {
		case *dns.NSEC:
			if strings.EqualFold(rr.Hdr.Name, n) {
				return cutTypes(rr.TypeBitMap)
			}
		case *dns.NSEC3:
			if rr.Match(n) {
				return cutTypes(rr.TypeBitMap)
			}
		}
	}
	return false
}

// fetch resolves a DS or DNSKEY RRset for the chain: an ordinary
// resolution (cached), not itself validated.
func (c *trustChain) fetch(name string, qtype uint16) (*Result, error) {
	if c.offline {
		return nil, fmt.Errorf("%s %s: not known without asking", name, dns.TypeToString[qtype])
	}
	return c.r.resolveBy(c.ctx, &run{r: c.r, noValidate: true}, name, qtype)
}

// validNow is the validator's clock (validator.Options.Now), which the
// trustCache's entries expire by, as signatures do.
func (r *Resolver) validNow() time.Time {
	if r.validClock != nil {
		return r.validClock()
	}
	return time.Now()
}
