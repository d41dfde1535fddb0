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
	// cached are the findings the cache held for data of the result;
	// found are those made here, to be kept in the cache.
	cached findings
	found  []finding
}

// findings are the validator's findings the cache held for the data a
// resolution took from it (cache.Entry.Validated), by the identity of
// the first record of each RRset, and of the SOA of each negative
// answer, as Get decoded them: a finding covers those records and no
// others (data that came another way, or was stored since, is checked).
type findings struct {
	sets, negative map[dns.RR]*cache.Validated
}

// note remembers e's finding, if it has one.
func (f *findings) note(e cache.Entry) {
	if e.Validated == nil || len(e.Records) == 0 {
		return
	}
	if e.Kind == cache.Positive {
		if f.sets == nil {
			f.sets = map[dns.RR]*cache.Validated{}
		}
		f.sets[e.Records[0]] = e.Validated
		return
	}
	if soa := firstSOA(e.Records); soa != nil {
		if f.negative == nil {
			f.negative = map[dns.RR]*cache.Validated{}
		}
		f.negative[soa] = e.Validated
	}
}

// firstSOA returns the first SOA record of rrs, or nil.
func firstSOA(rrs []dns.RR) dns.RR {
	for _, rr := range rrs {
		if rr.Header().Rrtype == dns.TypeSOA {
			return rr
		}
	}
	return nil
}

// finding is what the chain found of an RRset or a negative answer, to be
// kept with its cache entry (cache.SetValidated).
type finding struct {
	name  string
	qtype uint16
	entry cache.Entry
	v     cache.Validated
}

// fromFinding returns v as the validator's Result.
func fromFinding(v *cache.Validated) validator.Result {
	return validator.Result{Security: v.Security, EDE: v.EDE, Text: v.Why}
}

// lookup returns the finding of the RRset (or, negative, the negative
// answer) whose first record (SOA) is first, while it holds on the
// validator's clock.
func (c *trustChain) lookup(negative bool, first dns.RR) *cache.Validated {
	if first == nil {
		return nil
	}
	if _, ok := c.r.NegativeAnchor(first.Header().Name); ok {
		// RFC 7646: a finding made before the anchor was set is not
		// taken below it.
		return nil
	}
	m := c.cached.sets
	if negative {
		m = c.cached.negative
	}
	if v := m[first]; v != nil && c.r.validNow().Before(v.Until) {
		return v
	}
	return nil
}

// keep notes what was found of name/qtype's entry e, valid until until.
func (c *trustChain) keep(name string, qtype uint16, e cache.Entry, r validator.Result, until time.Time) {
	if c.offline || c.r.cache == nil {
		return
	}
	if r.Security == cache.Bogus {
		// The cache drops bogus data after its BogusTTL, sooner.
		until = lifetime(c.r.validNow(), e.Records, nil)
	}
	if !c.r.validNow().Before(until) {
		return
	}
	c.found = append(c.found, finding{name, qtype, e, cache.Validated{Security: r.Security, EDE: r.EDE, Why: r.Text, Until: until}})
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
		if c.tracing() {
			c.event(zone, fmt.Sprintf("%s, as found before (kept until %s)", verdict(t.res), t.expire.UTC().Format(time.RFC3339)))
		}
	}
	return t, ok
}

// validate sets res.Security (and res.EDE, res.Why when not Secure) for
// the question name/qtype. What the cache held of the findings for data
// of res (known) is taken as found; what is found of the rest is kept in
// the cache with the data, so that the next resolution taking it from
// there checks no signature (BenchmarkValidate).
func (r *Resolver) validate(ctx context.Context, name string, qtype uint16, res *Result, known findings) {
	r.validateWith(ctx, name, qtype, res, false, known)
}

// validateWith is validate; offline, it asks no authority (nor the
// cache) for the chain's DS and DNSKEY records: what the trustCache
// does not hold fails the validation, and nothing is kept.
func (r *Resolver) validateWith(ctx context.Context, name string, qtype uint16, res *Result, offline bool, known findings) {
	// The chain's fetches together take no longer than one resolution
	// may (Limits.Timeout), not that long each.
	ctx, cancel := context.WithTimeout(ctx, r.limits.Timeout)
	defer cancel()
	c := &trustChain{r: r, ctx: ctx, zones: map[string]zoneTrust{}, offline: offline, cached: known}
	if r.trace != nil {
		c.work.Trace = func(e validator.Event) { c.event(e.Zone, e.Text) }
		c.event("", fmt.Sprintf("validating %s %s", name, dns.TypeToString[qtype]))
	}
	defer func() {
		for _, f := range c.found {
			r.cache.SetValidated(f.name, f.qtype, f.entry, f.v)
		}
	}()
	out := c.result(name, qtype, res)
	if c.unprovedWildcard && !offline {
		// The cache keeps a wildcard answer's proof under the NSEC's
		// own owner, which a hit cannot find (until RFC 8198's
		// aggressive use): the authorities are asked again, once.
		fresh, err := r.resolveBy(ctx, &run{r: r, noValidate: true, fresh: dns.Question{Name: canonical(name), Qtype: qtype}}, name, qtype)
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
	if c.tracing() {
		c.event("", fmt.Sprintf("result for %s %s: %s (%d signature checks, %d NSEC3 hashes)", name, dns.TypeToString[qtype], verdict(out), c.work.Checks, c.work.Hashes))
	}
}

// tracing reports whether the Resolver traces (Options.Trace): the
// chain's events are built only then.
func (c *trustChain) tracing() bool { return c.r.trace != nil }

// event gives the trace one decision of the chain, about zone.
func (c *trustChain) event(zone, text string) {
	c.r.trace(Step{Check: &Check{Zone: zone, Text: text}})
}

// verdict is r in words for a trace.
func verdict(r validator.Result) string {
	if r.Security == cache.Bogus {
		return fmt.Sprintf("bogus, EDE %d (%s): %s", r.EDE, dns.ExtendedErrorCodeToString[r.EDE], r.Text)
	}
	return r.String()
}

// keysText lists keys for a trace: key tag, flags and algorithm of each.
func keysText(keys []*dns.DNSKEY) string {
	return joinText(keys, func(k *dns.DNSKEY) string {
		return fmt.Sprintf("%d flags %d alg %s", k.KeyTag(), k.Flags, dns.AlgorithmToString[k.Algorithm])
	})
}

// dsText lists DS records for a trace: key tag, algorithm and digest
// type of each.
func dsText(ds []*dns.DS) string {
	return joinText(ds, func(d *dns.DS) string {
		return fmt.Sprintf("%d alg %s digest %s", d.KeyTag, dns.AlgorithmToString[d.Algorithm], dns.HashToString[d.DigestType])
	})
}

// joinText is each of items in words, joined by "; ".
func joinText[T any](items []T, text func(T) string) string {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = text(it)
	}
	return strings.Join(parts, "; ")
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
		r, sig, _ := c.rrset(set)
		out = worse(out, r)
		if r.Secure() && sig != nil && int(sig.Labels) < dns.CountLabel(set.Name) && !strings.HasPrefix(set.Name, "*.") {
			wildcards = append(wildcards, struct {
				owner  string
				labels uint8
				zone   string
			}{set.Name, sig.Labels, canonical(sig.SignerName)})
		}
		if cn, ok := set.Records[0].(*dns.CNAME); ok && set.Type == dns.TypeCNAME && qtype != dns.TypeCNAME {
			sname = canonical(cn.Target)
		}
	}
	if out.Security == cache.Bogus {
		return out
	}
	negative := res.Rcode == dns.RcodeNameError || (res.Rcode == dns.RcodeSuccess && !hasType(res.Answer, sname, qtype))
	soa := firstSOA(res.Authority)
	if negative {
		if v := c.lookup(true, soa); v != nil {
			return worse(out, fromFinding(v))
		}
	}
	// The proofs (NSEC/NSEC3 of the authority section), each RRset
	// verified; the SOA of a negative answer names its zone. auth is
	// what they are, until when.
	proofs := map[string][]dns.RR{}
	negZone := ""
	auth := secureResult
	authUntil := c.r.validNow().Add(time.Duration(cache.DefaultMaxTTL) * time.Second)
	for _, set := range RRsets(res.Authority) {
		if len(set.Records) == 0 {
			continue
		}
		switch set.Type {
		case dns.TypeSOA:
			negZone = set.Name
			r, _, until := c.rrset(set)
			auth, authUntil = worse(auth, r), minTime(authUntil, until)
		case dns.TypeNSEC, dns.TypeNSEC3:
			r, sig, until := c.rrset(set)
			auth, authUntil = worse(auth, r), minTime(authUntil, until)
			if !r.Secure() || sig == nil {
				continue
			}
			z := canonical(sig.SignerName)
			proofs[z] = append(proofs[z], set.Records...)
		}
	}
	out = worse(out, auth)
	if out.Security != cache.Secure {
		return out
	}
	for _, w := range wildcards {
		// RFC 4035 §5.3.4: the answer was synthesised from a wildcard;
		// no closer name may exist.
		if len(proofs[w.zone]) == 0 {
			c.unprovedWildcard = true
		}
		wr := c.r.validator.ProveWildcard(w.owner, w.labels, w.zone, proofs[w.zone], &c.work)
		if c.tracing() {
			c.event(w.zone, fmt.Sprintf("%s: wildcard expansion (RRSIG labels %d), proof that no closer name exists: %s", w.owner, w.labels, verdict(wr)))
		}
		out = worse(out, wr)
	}
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
	claim, kind := validator.NoData, cache.NoData
	if res.Rcode == dns.RcodeNameError {
		claim, kind = validator.NXDomain, cache.NXDomain
	}
	// The negative answer's finding is kept with its entry (the SOA,
	// its proof and their RRSIGs, under the name and type).
	var d validator.Result
	if len(proofs[negZone]) == 0 {
		d = validator.Result{Security: cache.Bogus, EDE: wire.EDENSECMissing, Text: fmt.Sprintf("%s: negative answer without NSEC or NSEC3 from %s", sname, negZone)}
	} else {
		d = c.r.validator.ProveDenial(claim, sname, qtype, negZone, proofs[negZone], &c.work)
	}
	if d.Secure() && d.OptOut {
		// RFC 5155 §9.2: an Opt-Out proof authenticates nothing.
		d = validator.Result{Security: cache.Insecure, Text: "opt-out NSEC3"}
	}
	if c.tracing() {
		what := "NODATA"
		if claim == validator.NXDomain {
			what = "NXDOMAIN"
		}
		c.event(negZone, fmt.Sprintf("%s for %s %s, proof by %d NSEC/NSEC3 records of %s: %s", what, sname, dns.TypeToString[qtype], len(proofs[negZone]), negZone, verdict(d)))
	}
	c.keep(sname, qtype, cache.Entry{Kind: kind, Records: res.Authority}, worse(auth, d), authUntil)
	return worse(out, d)
}

// minTime returns the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
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
		if s.Type == dns.TypeDNAME && s.Name != name && subDomain(s.Name, name) {
			return true
		}
	}
	return false
}

// rrset validates one RRset: with the keys of the zone that signed it,
// or, unsigned, as part of an unsigned zone (RFC 4035 §5.2: the zone
// above it must have proved it has no DS). It returns the signature that
// verified (of a Secure RRset), and until when the outcome holds. A
// finding the cache held for the RRset is taken as it is; one made here
// is kept.
func (c *trustChain) rrset(set RRset) (validator.Result, *dns.RRSIG, time.Time) {
	if nta, ok := c.r.NegativeAnchor(set.Name); ok {
		// RFC 7646 §2: not validated, whatever zone signed it (the
		// anchor need not be a cut), nor a finding of before the
		// anchor taken; nothing is fetched for it, and nothing kept
		// (a zero time: the finding would outlive the anchor).
		if c.tracing() {
			c.event(nta, fmt.Sprintf("%s %s: not validated, below the negative trust anchor %s", set.Name, dns.TypeToString[set.Type], nta))
		}
		return validator.Result{Security: cache.Insecure, Text: "below the negative trust anchor " + nta}, nil, time.Time{}
	}
	if v := c.lookup(false, set.Records[0]); v != nil {
		var sig *dns.RRSIG
		if v.Security == cache.Secure {
			sig = signer(set)
		}
		if c.tracing() {
			c.event("", fmt.Sprintf("%s %s: %s, as found before (kept with the cached RRset until %s)", set.Name, dns.TypeToString[set.Type], verdict(fromFinding(v)), v.Until.UTC().Format(time.RFC3339)))
		}
		return fromFinding(v), sig, v.Until
	}
	r, sig, t := c.verify(set)
	if c.tracing() {
		c.event("", fmt.Sprintf("%s %s: %s", set.Name, dns.TypeToString[set.Type], verdict(r)))
	}
	until := lifetime(c.r.validNow(), set.Records, set.Sigs)
	if t.expire.Before(until) {
		// The chain's keys or proved unsigned delegation it follows
		// from; zero when the chain had no outcome to keep.
		until = t.expire
	}
	e := cache.Entry{Records: set.Records}
	for _, s := range set.Sigs {
		e.Sigs = append(e.Sigs, s)
	}
	c.keep(set.Name, set.Type, e, r, until)
	return r, sig, until
}

// signer returns the first RRSIG of set by an ancestor of its owner: the
// one whose labels tell a wildcard expansion (RFC 4035 §5.3.4) when set
// was found Secure before.
func signer(set RRset) *dns.RRSIG {
	for _, sig := range set.Sigs {
		if subDomain(canonical(sig.SignerName), set.Name) {
			return sig
		}
	}
	return nil
}

// verify is rrset's check, with the chain's outcome at the zone it
// depends on.
func (c *trustChain) verify(set RRset) (validator.Result, *dns.RRSIG, zoneTrust) {
	if len(set.Sigs) == 0 {
		t := c.trust(set.Name)
		if t.res.Security == cache.Secure {
			return validator.Result{Security: cache.Bogus, EDE: wire.EDERRSIGsMissing, Text: fmt.Sprintf("%s %s: no RRSIG in a signed zone", set.Name, dns.TypeToString[set.Type])}, nil, t
		}
		return t.res, nil, t
	}
	zone := canonical(set.Sigs[0].SignerName)
	if !subDomain(zone, set.Name) {
		return validator.Result{Security: cache.Bogus, EDE: wire.EDEDNSSECBogus, Text: fmt.Sprintf("%s: signer %s is not an ancestor", set.Name, zone)}, nil, zoneTrust{}
	}
	t := c.trust(zone)
	if !t.res.Secure() {
		return t.res, nil, t
	}
	if c.tracing() {
		c.event(zone, fmt.Sprintf("%s %s: checked with the keys of %s", set.Name, dns.TypeToString[set.Type], zone))
	}
	r, sig := c.r.validator.VerifyRRset(set.Records, set.Sigs, t.keys, zone, &c.work)
	return r, sig, t
}

// trust returns what the chain of trust says of the zone at or above
// name: built from the closest trust anchor down, one label at a time
// (RFC 4035 §5.1-5.2). Each name below the anchor is asked its DS: a
// signed DS RRset leads to the name's DNSKEY RRset, validated against it;
// a proved absence of DS at a delegation ends the chain Insecure; a
// proved absence elsewhere (a name inside the zone) passes on.
func (c *trustChain) trust(name string) zoneTrust {
	name = canonical(name)
	if nta, ok := c.r.NegativeAnchor(name); ok {
		// RFC 7646 §2: the chain is not followed into the domain (a
		// negative answer there without SOA asks for its trust).
		if c.tracing() {
			c.event(nta, fmt.Sprintf("%s: chain not followed, below the negative trust anchor %s", name, nta))
		}
		return zoneTrust{res: validator.Result{Security: cache.Insecure, Text: "below the negative trust anchor " + nta}}
	}
	anchors := c.r.anchors
	if c.r.anchorSource != nil {
		anchors = c.r.anchorSource.Anchors()
	}
	anchor, ds := anchors.Closest(name)
	if ds == nil {
		return zoneTrust{res: validator.Result{Security: cache.Insecure, Text: "no trust anchor above " + name}}
	}
	anchor = canonical(anchor)
	t, ok := c.known(anchor)
	if !ok {
		if c.tracing() {
			c.event(anchor, "trust anchor: DS "+dsText(ds))
		}
		t = c.keysOf(anchor, ds)
		c.r.trusted.put(anchor, t, c.r.validNow())
	}
	zone := anchor
	labels := dns.SplitDomainName(name)
	for i := len(labels) - dns.CountLabel(anchor) - 1; i >= 0 && t.res.Secure(); i-- {
		n := canonical(strings.Join(labels[i:], ".") + ".")
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
	if c.tracing() {
		c.event(zone, fmt.Sprintf("DNSKEY set: %s", keysText(keys)))
	}
	r, valid := c.r.validator.VerifyKeys(zone, keys, sigs, ds, &c.work)
	rrs := make([]dns.RR, len(keys))
	for i, k := range keys {
		rrs[i] = k
	}
	t := zoneTrust{res: r, keys: valid, expire: lifetime(c.r.validNow(), rrs, sigs)}
	if c.tracing() {
		if r.Secure() {
			c.event(zone, fmt.Sprintf("keys secure: %s", keysText(valid)))
		} else {
			c.event(zone, "keys "+verdict(r))
		}
	}
	c.zones[zone] = t
	return t
}

// step asks the DS of n, below zone (whose keys are validated): cut
// reports a zone cut at n, with the trust of n's zone; otherwise next is
// Secure when n is proved to be no cut, or not Secure with why.
func (c *trustChain) step(zone string, keys []*dns.DNSKEY, n string) (next zoneTrust, cut bool) {
	res, err := c.fetch(n, dns.TypeDS)
	if err != nil {
		if c.tracing() {
			c.event(n, fmt.Sprintf("DS from %s: %v", zone, err))
		}
		return zoneTrust{res: validator.Result{Security: cache.Bogus, EDE: wire.EDEDNSSECBogus, Text: fmt.Sprintf("%s DS: %v", n, err)}}, false
	}
	for _, set := range RRsets(res.Answer) {
		if set.Name != n || set.Type != dns.TypeDS || len(set.Records) == 0 {
			continue
		}
		var ds []*dns.DS
		for _, rr := range set.Records {
			ds = append(ds, rr.(*dns.DS))
		}
		if c.tracing() {
			c.event(n, fmt.Sprintf("zone cut; DS set from %s: %s", zone, dsText(ds)))
		}
		r, _ := c.r.validator.VerifyRRset(set.Records, set.Sigs, keys, zone, &c.work)
		if !r.Secure() {
			if c.tracing() {
				c.event(n, "DS set "+verdict(r))
			}
			return zoneTrust{res: r}, true
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
		if c.tracing() {
			for _, rr := range set.Records {
				c.event(n, "no DS; proof from "+zone+": "+strings.ReplaceAll(rr.String(), "\t", " "))
			}
		}
		if r, _ := c.r.validator.VerifyRRset(set.Records, set.Sigs, keys, zone, &c.work); !r.Secure() {
			if c.tracing() {
				c.event(n, "proof of no DS "+verdict(r))
			}
			return zoneTrust{res: r}, false
		}
		proof = append(proof, set.Records...)
		proofSigs = append(proofSigs, set.Sigs...)
	}
	if len(proof) == 0 {
		r := validator.Result{Security: cache.Bogus, EDE: wire.EDENSECMissing, Text: fmt.Sprintf("%s DS: no DS and no proof of its absence from %s", n, zone)}
		if c.tracing() {
			c.event(n, verdict(r))
		}
		return zoneTrust{res: r}, false
	}
	d := c.r.validator.ProveDenial(validator.NoData, n, dns.TypeDS, zone, proof, &c.work)
	if !d.Secure() {
		if c.tracing() {
			c.event(n, "proof of no DS "+verdict(d))
		}
		return zoneTrust{res: d}, false
	}
	if d.OptOut || unsignedCut(proof, n) {
		// RFC 4035 §5.2, RFC 5155 §8.9: a proved unsigned delegation.
		r := validator.Result{Security: cache.Insecure, Text: fmt.Sprintf("%s: unsigned delegation from %s", n, zone)}
		if c.tracing() {
			why := "its NSEC/NSEC3 shows NS without SOA"
			if d.OptOut {
				why = "an opt-out NSEC3 covers it"
			}
			c.event(n, fmt.Sprintf("no DS proved (%s): insecure, unsigned delegation from %s", why, zone))
		}
		return zoneTrust{res: r, expire: lifetime(c.r.validNow(), proof, proofSigs)}, true
	}
	if c.tracing() {
		c.event(n, "no DS proved, and no zone cut here: the chain goes on with the keys of "+zone)
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
