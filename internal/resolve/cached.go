package resolve

import (
	"context"
	"net/netip"
	"slices"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
)

// The resolver's use of the RRset cache (Options.Cache): what it answers
// from it, where it starts a descent, what it stores, and the stale
// answers of RFC 8767.

// Refresh resolves the question again from its authorities rather than
// from the cache (the delegations to them may come from it) and stores
// the answer: the prefetch of an answer close to its expiry, which
// cache.Responses.Get reports, so that popular names do not expire.
func (r *Resolver) Refresh(ctx context.Context, name string, qtype uint16) (*Result, error) {
	name = canonical(name)
	return r.resolveBy(ctx, &run{r: r, fresh: dns.Question{Name: name, Qtype: qtype}}, name, qtype)
}

// cached returns, as an authority's answer would be, what the cache holds
// for name/qtype: the RRset, a negative answer, the CNAME of name or the
// DNAME of an ancestor, with the zone to believe it for (its owner). Only data of rank
// RankAnswer or better answers a question: glue and referral NS records
// are for finding servers, not for clients (RFC 2181 §5.4.1).
func (ru *run) cached(name string, qtype uint16) (*dns.Msg, string, bool) {
	return ru.cachedOf(ru.lookup(name), name, qtype)
}

// lookup returns what the cache holds for name (nothing without a
// cache): one lookup for all its types.
func (ru *run) lookup(name string) cache.Name {
	if ru.r.cache == nil {
		return cache.Name{}
	}
	return ru.r.cache.Lookup(name)
}

// cachedOf is cached, with here what the cache holds for name.
func (ru *run) cachedOf(here cache.Name, name string, qtype uint16) (*dns.Msg, string, bool) {
	c := ru.r.cache
	if c == nil || (name == ru.fresh.Name && qtype == ru.fresh.Qtype) {
		return nil, "", false
	}
	// The message is made on a hit only: most lookups of a cold
	// resolution miss.
	newMsg := func() *dns.Msg { return &dns.Msg{MsgHdr: dns.MsgHdr{Authoritative: true}} }
	if e, ok := here.Get(qtype); ok && e.Rank >= cache.RankAnswer {
		m := newMsg()
		ru.known.note(e)
		switch e.Kind {
		case cache.Positive:
			m.Answer = append(e.Records, e.Sigs...)
		case cache.NXDomain:
			m.Rcode, m.Ns = dns.RcodeNameError, e.Records
		case cache.NoData:
			m.Ns = e.Records
		}
		return m, name, true
	}
	if qtype != dns.TypeCNAME {
		if e, ok := here.GetExact(dns.TypeCNAME); ok && e.Kind == cache.Positive && e.Rank >= cache.RankAnswer {
			ru.known.note(e)
			m := newMsg()
			m.Answer = append(e.Records, e.Sigs...)
			return m, name, true
		}
	}
	dnames := c.HasDNAME()
	// RFC 6672 §2.3: a DNAME of an ancestor redirects name; resolve
	// makes the CNAME from it, as from an authority's answer. The
	// ancestors are looked up only when the cache may hold a DNAME.
	for z := name; z != "." && dnames; {
		z = parent(z)
		if e, ok := c.GetExact(z, dns.TypeDNAME); ok && e.Kind == cache.Positive && e.Rank >= cache.RankAnswer {
			ru.known.note(e)
			m := newMsg()
			m.Answer = append(e.Records, e.Sigs...)
			return m, z, true
		}
	}
	return nil, "", false
}

// closest returns the closest enclosing zone of name whose NS records and
// at least one of whose servers' addresses are cached, and its servers,
// so that a descent starts there rather than at the root; ok is false
// when there is none. here is what the cache holds for name, looked up
// already (cached). The servers of a DS record are those of the parent
// (RFC 4035 §3.1.4.1). The servers are appended to servers, the caller's
// space (cachedServers).
func (ru *run) closest(here cache.Name, name string, qtype uint16, servers []Server) (zone string, _ []Server, ok bool) {
	c := ru.r.cache
	if c == nil {
		return "", nil, false
	}
	z := name
	if qtype == dns.TypeDS && z != "." {
		z = parent(z)
	}
	for {
		zn := here
		if z != name {
			zn = c.Lookup(z)
		}
		if s, ok := ru.cachedServers(zn, z, servers); ok {
			return z, s, true
		}
		if z == "." {
			return "", nil, false
		}
		z = parent(z)
	}
}

// cachedServers returns the servers of zone (zn: what the cache holds
// for it) named by its cached NS records (of any rank), with the
// addresses the cache holds for them (of any rank: glue is what they are
// for), and whether any has an address. The records are read in wire
// form (cache.Name.RData), not as dns.RR; each server's name is looked
// up once for both its types, from its wire form (cache.LookupWire): a
// server whose addresses are cached is named by the cache's own string
// of its name, not a new one. The servers are appended to servers, the
// caller's space, and their addresses are one slice: a server and an
// address slice per server were 4 of the 32 allocations of a resolution of
// BenchmarkMixResolve. The addresses are gathered on the stack first: a
// Server pointing there could not be appended to servers, which may grow
// onto the heap.
func (ru *run) cachedServers(zn cache.Name, zone string, servers []Server) ([]Server, bool) {
	c := ru.r.cache
	why := ""
	if ru.r.trace != nil {
		// Only the trace shows it.
		why = "cached delegation of " + zone
	}
	first := len(servers)
	var addrBuf [8]netip.Addr
	addrs := addrBuf[:0]
	// ends[i] is the end in addrs of the addresses of servers[first+i].
	var endBuf [8]int
	ends := endBuf[:0]
	zn.RData(dns.TypeNS, func(rdata []byte) {
		sn, plain := c.LookupWire(rdata)
		name := sn.Owner()
		if name == "" {
			n, _, err := dns.UnpackDomainName(rdata, 0)
			if err != nil {
				return
			}
			name = canonical(n)
			if !plain {
				sn = c.Lookup(name)
			}
		}
		sn.RData(dns.TypeA, func(rdata []byte) {
			if len(rdata) == 4 {
				addrs = append(addrs, netip.AddrFrom4([4]byte(rdata)))
			}
		})
		sn.RData(dns.TypeAAAA, func(rdata []byte) {
			if len(rdata) == 16 {
				addrs = append(addrs, netip.AddrFrom16([16]byte(rdata)))
			}
		})
		servers = append(servers, Server{Name: name, Why: why})
		ends = append(ends, len(addrs))
	})
	if len(addrs) == 0 {
		return servers, false
	}
	all := slices.Clone(addrs)
	from := 0
	for i, end := range ends {
		if end > from {
			// Its own: an append to it must not write over the next's.
			servers[first+i].Addrs = all[from:end:end]
		}
		from = end
	}
	return servers, true
}

// parent returns the name with its first label removed ("." for a TLD).
func parent(name string) string {
	off, end := dns.NextLabel(name, 0)
	if end {
		return "."
	}
	return name[off:]
}

// learn stores what a server of zone answered to q, after sort dropped
// its records out of the zone's bailiwick: a referral's NS records, DS
// records (or the NSEC or NSEC3 proving there are none) and glue at the rank of a non-authoritative answer's authority and
// additional sections; an answer's RRsets at the rank of its answer
// section, its zone's NS records and their addresses, and the negative
// answer at the end of its CNAME chain (RFC 2308 §5).
func (ru *run) learn(m *dns.Msg, zone string, q dns.Question, next *delegation) {
	c := ru.r.cache
	if c == nil {
		return
	}
	clampTTLs(c, m)
	if next != nil {
		ns := owned(m.Ns, next.zone, dns.TypeNS)
		ru.store(ns, cache.RankAdditional)
		ru.store(glue(m.Extra, zone, ns), cache.RankAdditional)
		// RFC 4035 §3.1.4: the child's DS RRset and its RRSIGs, which
		// a validator needs to trust the child's keys; at the rank of
		// the rest of a referral, so that a DS question is still
		// answered by the parent's authoritative answer, but there for
		// the validator to read (cache.Get takes any rank).
		ru.store(withSigs(owned(m.Ns, next.zone, dns.TypeDS), m.Ns, next.zone, dns.TypeDS), cache.RankAdditional)
		// Without a DS, the NSEC or NSEC3 proving there is none (RFC
		// 4035 §3.1.4.1, RFC 5155 §7.2.7): an NSEC is owned by the
		// child's name, an NSEC3 by its hash in the parent (Get of the
		// owner finds either; an Opt-Out NSEC3 covering the name is
		// kept too, but only an ordered index would find it). The
		// child's apex NSEC has the same owner and type: an
		// authoritative answer's replaces this one, so a validator
		// reading it must check the RRSIG's signer is the parent.
		ru.store(proof(m.Ns), cache.RankAdditional)
		return
	}
	rank := cache.RankAnswer
	if m.Authoritative {
		rank = cache.RankAuthAnswer
	}
	answer, dname := onChain(m.Answer, q)
	ru.store(answer, rank)
	ns := owned(m.Ns, zone, dns.TypeNS)
	if m.Authoritative {
		ru.store(ns, cache.RankAuthority)
	}
	// The NSEC and NSEC3 RRsets of a negative or wildcard answer's
	// proof, each under its own owner with its RRSIGs: what a validator
	// (and RFC 8198's aggressive use of them) looks up by name; a
	// negative entry holds its proof as well, and answers keep using
	// that.
	proofRank := cache.RankAdditional
	if m.Authoritative {
		proofRank = cache.RankAuthority
	}
	ru.store(proof(m.Ns), proofRank)
	ru.store(glue(m.Extra, zone, ns), cache.RankAdditional)
	if !m.Authoritative || q.Qtype == dns.TypeANY || dname {
		return
	}
	// The name the chain ends at, and its negative answer.
	cur := canonical(q.Name)
	for range m.Answer {
		cn := firstOwned(m.Answer, cur, dns.TypeCNAME)
		if cn == nil || q.Qtype == dns.TypeCNAME {
			break
		}
		cur = canonical(cn.(*dns.CNAME).Target)
	}
	if !subDomain(zone, cur) || firstOwned(m.Answer, cur, q.Qtype) != nil || (q.Qtype != dns.TypeCNAME && firstOwned(m.Answer, cur, dns.TypeCNAME) != nil) {
		return
	}
	kind := cache.NoData
	if m.Rcode == dns.RcodeNameError {
		kind = cache.NXDomain
	}
	// The SOA and what else the authority section holds but NS records
	// (NSEC, NSEC3 and their RRSIGs, for issue 12); the cache refuses a
	// negative answer without an SOA.
	var auth []dns.RR
	for _, rr := range m.Ns {
		if rr.Header().Rrtype != dns.TypeNS {
			auth = append(auth, rr)
		}
	}
	c.Put(cur, q.Qtype, cache.Entry{Kind: kind, Records: auth, Rank: cache.RankAuthority})
}

// onChain returns the records of answer on q's chain, as resolve reads
// it: from q's name, the DNAME that redirects it (not the CNAME a server
// made from it: the resolver makes its own, RFC 6672 §3.2), else its
// records of q's type, else its CNAME and on from the target; with their
// RRSIGs. Other records, though in the answering zone's bailiwick, are
// not the answer to q and are not cached (RFC 2181 §5.4.1 ranks answer
// data as the answer to the question; Unbound's scrubber removes them
// too): a zone's server could otherwise plant records of names below its
// cuts, which other servers are authoritative for. dname reports whether
// the chain went through a DNAME.
func onChain(answer []dns.RR, q dns.Question) (out []dns.RR, dname bool) {
	// The RRsets kept, few: searched one by one rather than in a map
	// (two maps were a tenth of the allocations of a cold resolution).
	// Every link of the chain is a record of answer, so that a loop
	// ends within len(answer) links.
	var buf [4]rrsetKey
	keep := buf[:0]
	add := func(k rrsetKey) {
		if !slices.Contains(keep, k) {
			keep = append(keep, k)
		}
	}
	cur := canonical(q.Name)
	for range len(answer) + 1 {
		if dn := redirecting(answer, cur); dn != nil {
			dname = true
			add(rrsetKey{canonical(dn.Hdr.Name), dns.TypeDNAME})
			cn, ok := synthesize(dn, cur)
			if !ok {
				break
			}
			cur = canonical(cn.Target)
			continue
		}
		if firstOwned(answer, cur, q.Qtype) != nil {
			for _, rr := range answer {
				if ownedBy(rr, cur, q.Qtype) {
					add(rrsetKey{cur, rr.Header().Rrtype})
				}
			}
			break
		}
		cn := firstOwned(answer, cur, dns.TypeCNAME)
		if cn == nil {
			break
		}
		add(rrsetKey{cur, dns.TypeCNAME})
		cur = canonical(cn.(*dns.CNAME).Target)
	}
	// The usual answer is all on the chain: answer itself, not a copy
	// of it (store keeps nothing of the slice).
	for i, rr := range answer {
		if !onKept(rr, keep) {
			out = make([]dns.RR, i, len(answer)-1)
			copy(out, answer[:i])
			for _, rr := range answer[i+1:] {
				if onKept(rr, keep) {
					out = append(out, rr)
				}
			}
			return out, dname
		}
	}
	return answer, dname
}

// onKept reports whether rr belongs to one of the RRsets keep, an RRSIG
// to the RRset it covers.
func onKept(rr dns.RR, keep []rrsetKey) bool {
	h := rr.Header()
	t := h.Rrtype
	if sig, ok := rr.(*dns.RRSIG); ok {
		t = sig.TypeCovered
	}
	for _, k := range keep {
		if k.t == t && equalFold(k.name, h.Name) {
			return true
		}
	}
	return false
}

// rrsetKey names an RRset: its owner (canonical) and type.
type rrsetKey struct {
	name string
	t    uint16
}

// clampTTLs sets the TTLs of m's records to those the cache keeps them
// for, so that clients are told the same from the cache and from the
// authorities: each within the cache's bounds, and an SOA in the
// authority section (a negative answer's) at the smaller of its TTL and
// its MINIMUM (RFC 2308 §5).
func clampTTLs(c *cache.Cache, m *dns.Msg) {
	for i, sec := range [][]dns.RR{m.Answer, m.Ns, m.Extra} {
		for _, rr := range sec {
			h := rr.Header()
			if soa, ok := rr.(*dns.SOA); ok && i == 1 {
				h.Ttl = c.Clamp(cache.NXDomain, min(h.Ttl, soa.Minttl))
			} else if h.Rrtype != dns.TypeOPT {
				h.Ttl = c.Clamp(cache.Positive, h.Ttl)
			}
		}
	}
}

// store puts the RRsets of rrs in the cache, each with the RRSIGs that
// cover it (RRSIGs of records not in rrs are not stored).
func (ru *run) store(rrs []dns.RR, rank cache.Rank) {
	if len(rrs) == 0 {
		// Most of learn's calls: grouping nothing cost a map's set-up.
		return
	}
	if name, t, ok := oneRRset(rrs); ok {
		// The common case, one RRset without signatures (an answer's):
		// stored as it is, without grouping.
		ru.r.cache.Put(name, t, cache.Entry{Rank: rank, Records: rrs})
		return
	}
	in := make([]dns.RR, 0, len(rrs))
	for _, rr := range rrs {
		if rr.Header().Class == dns.ClassINET {
			in = append(in, rr)
		}
	}
	for _, set := range RRsets(in) {
		if len(set.Records) > 0 {
			e := cache.Entry{Rank: rank, Records: set.Records}
			for _, sig := range set.Sigs {
				e.Sigs = append(e.Sigs, sig)
			}
			ru.r.cache.Put(set.Name, set.Type, e)
		}
	}
}

// oneRRset reports whether rrs are one RRset of class IN without
// RRSIGs, and its canonical owner and type.
func oneRRset(rrs []dns.RR) (string, uint16, bool) {
	if len(rrs) == 0 {
		return "", 0, false
	}
	h0 := rrs[0].Header()
	for _, rr := range rrs {
		h := rr.Header()
		if h.Class != dns.ClassINET || h.Rrtype != h0.Rrtype || h.Rrtype == dns.TypeRRSIG || !equalFold(h.Name, h0.Name) {
			return "", 0, false
		}
	}
	return canonical(h0.Name), h0.Rrtype, true
}

// glue returns the address records of extra owned by the names of the NS
// records ns and within zone's bailiwick (RFC 2181 §5.4.1).
func glue(extra []dns.RR, zone string, ns []dns.RR) []dns.RR {
	if len(extra) == 0 || len(ns) == 0 {
		return nil
	}
	names := map[string]bool{}
	for _, rr := range ns {
		names[canonical(rr.(*dns.NS).Ns)] = true
	}
	var out []dns.RR
	for _, rr := range extra {
		h := rr.Header()
		owner := canonical(h.Name)
		if (h.Rrtype == dns.TypeA || h.Rrtype == dns.TypeAAAA) && names[owner] && subDomain(zone, owner) {
			out = append(out, rr)
		}
	}
	return out
}

// Stale answers name/qtype from the cache alone, following cached
// CNAMEs: from entries past their TTL within the stale window (RFC 8767,
// Result.Stale set) as well as live ones. It is the answer RFC 8767 §5
// gives a client whose question's resolution has outlasted the client
// response timer, while the resolution goes on. ok is false when the
// cache holds no whole answer. With validation on, the answer is
// validated with the chains already built (nothing is asked: the caller
// is a timer), and ok is false unless it is Secure or Insecure: the
// client then waits for the resolution.
func (r *Resolver) Stale(name string, qtype uint16) (*Result, bool) {
	ru := &run{r: r}
	res, ok := ru.stale(canonical(name), qtype)
	if ok && r.validator != nil {
		r.validateWith(context.Background(), name, qtype, res, true, ru.known)
		ok = res.Security != cache.Bogus
	}
	return res, ok
}

// stale answers name/qtype from the cache's entries, live or past their
// TTL within the stale window (RFC 8767), following cached CNAMEs; ok is
// false when the cache holds no whole answer. A failed resolution takes
// it only when some of it is stale (res.Stale): a live answer would have
// been found before asking.
func (ru *run) stale(name string, qtype uint16) (*Result, bool) {
	c := ru.r.cache
	if c == nil {
		return nil, false
	}
	res := &Result{}
	cur := name
	for range ru.r.limits.CNAMEs + 1 {
		here := c.Lookup(cur)
		e, ok := here.GetStale(qtype)
		if ok && e.Rank >= cache.RankAnswer {
			res.Stale = res.Stale || e.Stale
			ru.known.note(e)
			switch e.Kind {
			case cache.Positive:
				res.Answer = append(append(res.Answer, e.Records...), e.Sigs...)
			case cache.NXDomain:
				res.Rcode, res.Authority = dns.RcodeNameError, e.Records
			case cache.NoData:
				res.Authority = e.Records
			}
			return res, true
		}
		if qtype == dns.TypeCNAME {
			break
		}
		e, ok = here.GetStale(dns.TypeCNAME)
		if !ok || e.Kind != cache.Positive || e.Rank < cache.RankAnswer {
			break
		}
		res.Stale = res.Stale || e.Stale
		ru.known.note(e)
		res.Answer = append(append(res.Answer, e.Records...), e.Sigs...)
		cur = canonical(e.Records[0].(*dns.CNAME).Target)
	}
	return nil, false
}
