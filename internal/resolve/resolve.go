// Package resolve is the iterative resolver: starting from the root
// servers, learnt from the root hints by priming (RFC 8109), or from the
// configured servers of a stub zone, it follows referrals down to the
// servers of the zone that holds the answer, asking each only for the part
// of the name it needs (QNAME minimisation, RFC 9156), resolving name server names that come without usable glue and
// following CNAME chains and DNAME redirections (RFC 6672) across zones;
// the names of a forward zone it asks of recursive resolvers instead. It
// holds no sockets: it asks through an upstream.Exchanger, so that tests
// drive it with canned answers. With a cache (Options.Cache) it answers
// from what it learned, starts a descent at the closest cached delegation,
// and may serve stale answers when every authority fails (cached.go).
package resolve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/upstream"
	"github.com/tern-dns/tern/internal/validator"
)

// Limits bound the work one resolution may do, against loops and the
// amplification attacks that turn a resolver against authorities
// (NXNSAttack, tsuNAME). The defaults are those the modern resolvers
// converged on.
type Limits struct {
	// Queries bounds the upstream queries of one resolution, NS names'
	// sub-resolutions included (default 50).
	Queries int
	// CNAMEs bounds the length of a CNAME chain (default 11).
	CNAMEs int
	// Referrals bounds the referrals followed in one descent from the
	// root (default 30).
	Referrals int
	// NSNames bounds the NS names without glue resolved per delegation
	// (default 5; NXNSAttack).
	NSNames int
	// Depth bounds the nesting of sub-resolutions of NS names (default 4).
	Depth int
	// RRset bounds the records of one RRset in an answer; a server that
	// sends more is lame (default 100, BIND's after CVE-2024-1737).
	RRset int
	// Timeout bounds the time of one resolution (default 10s). A
	// resolution's deadline is Timeout from its start rounded down to a
	// multiple of Timeout/64, shared by the resolutions whose deadlines
	// round alike (Resolver.withTimeout): one may end up to Timeout/64
	// sooner.
	Timeout time.Duration
}

// DefaultLimits are the limits used where Options leaves one zero.
var DefaultLimits = Limits{Queries: 50, CNAMEs: 11, Referrals: 30, NSNames: 5, Depth: 4, RRset: 100, Timeout: 10 * time.Second}

// Options configure a Resolver.
type Options struct {
	// Hints are the root servers; nil means the embedded IANA hints.
	Hints []Server
	// Limits; each zero field takes its DefaultLimits value.
	Limits Limits
	// Port is the port authorities are asked on (default 53).
	Port uint16
	// Trace, when set, is called after every upstream query.
	Trace func(Step)
	// Now is the clock (default time.Now); tests advance their own.
	Now func() time.Time
	// Infra is the infrastructure cache the servers are chosen by; nil
	// means one of the Resolver's own, on the Resolver's clock. Resolvers
	// may share one.
	Infra *Infra
	// Cache, when set, is consulted before asking and filled with what
	// authorities answer; its clock (cache.Options.Now, which should be
	// Now) is the one its TTLs expire by, and its stale window turns
	// serve-stale on. Nil: every resolution starts at the root servers.
	Cache *cache.Cache
	// NoMinimise turns QNAME minimisation (RFC 9156, on by default,
	// relaxed) off: every server is asked the full question.
	NoMinimise bool
	// FailureTTL is how long a failed resolution is first remembered and
	// answered SERVFAIL from memory (RFC 9520 §3.2): default 5 seconds,
	// at least 1 second; each failure in a row doubles it, up to 5
	// minutes. Negative turns failure caching off.
	FailureTTL time.Duration
	// Forward are the forward zones: a question at or below a zone's
	// name goes, with RD=1 and in full, to the zone's servers (recursive
	// resolvers), and their answers are trusted for the zone without AA;
	// nothing is iterated there.
	Forward []Zone
	// Stub are the stub zones: the resolution of a name at or below a
	// zone's name starts at the zone's servers, asked as its authorities
	// (RD=0), rather than at the root; their referrals are followed.
	// The deepest forward or stub zone of a name applies (a forward zone
	// where both have the same name).
	Stub []Zone
	// NoIPv4 and NoIPv6 turn a family of server addresses off, as
	// Unbound's do-ip4: no and do-ip6: no: its addresses (glue, hints,
	// configured servers) are not asked, and NS names are not resolved
	// to it. By default both are used, IPv4 first. With both off no
	// server is asked.
	NoIPv4, NoIPv6 bool
	// CaseRandom sends each question's name with its letters in random
	// case and accepts only an answer that repeats it (0x20,
	// draft-vixie-dnsext-dns0x20; Unbound's use-caps-for-id), off by
	// default: a few servers do not echo the case, and are asked again
	// without it after a timeout. It needs an Exchanger that takes
	// upstream.Options (upstream.Client does); with another it is off.
	CaseRandom bool
	// NoDNSSEC asks the authorities without the DO bit (on by default:
	// RFC 4035 §3.2.1, a validating resolver asks for DNSSEC records):
	// they then send no RRSIG, NSEC or NSEC3 records and nothing can be
	// validated. It needs an Exchanger that takes upstream.Options; with
	// another the DO bit is never set.
	NoDNSSEC bool
	// Validate turns DNSSEC validation on (off by default for now): each
	// Result gets a Security from the chain of trust built down from
	// Anchors (validate.go). It needs the DO bit (not NoDNSSEC).
	Validate bool
	// NoAggressiveNSEC turns the aggressive use of validated NSEC and
	// NSEC3 records off (RFC 8198; on by default with Validate and a
	// Cache, as Unbound's aggressive-nsec since 1.15): negative answers
	// are then only those cached for their own name and type.
	NoAggressiveNSEC bool
	// NegativeAnchors are negative trust anchors (RFC 7646): no
	// validation at or below each of these names, whose data is then
	// Insecure. SetNegativeAnchors replaces them.
	NegativeAnchors []string
	// Anchors are the trust anchors; nil means validator.RootAnchors.
	Anchors validator.Anchors
	// AnchorSource, when set, gives the trust anchors in force at each
	// validation instead of Anchors: a trustanchor.Store, which RFC
	// 5011 keeps current.
	AnchorSource interface{ Anchors() validator.Anchors }
	// Validator configures the checks (its clock, its limits).
	Validator validator.Options
}

// Zone is a domain whose servers are configured, not found from the root:
// a forward or a stub zone.
type Zone struct {
	Name    string
	Servers []netip.AddrPort
}

// configured is a forward or stub zone as the resolution starts there.
type configured struct {
	zone    string
	servers []Server
	forward bool
}

// Resolver resolves names iteratively. It is safe for concurrent use.
type Resolver struct {
	ex     upstream.Exchanger
	hints  []Server
	limits Limits
	port   uint16
	trace  func(Step)
	now    func() time.Time
	cache  *cache.Cache
	// noMinimise is Options.NoMinimise.
	noMinimise bool
	// configured are the forward and stub zones by name.
	configured map[string]*configured
	// caseRandom is Options.CaseRandom, where the Exchanger can check
	// the case of answers.
	caseRandom bool
	// noDNSSEC is Options.NoDNSSEC.
	noDNSSEC bool
	// validator is set when Options.Validate is, with anchors.
	validator *validator.Validator
	anchors   validator.Anchors
	// anchorSource is Options.AnchorSource.
	anchorSource interface{ Anchors() validator.Anchors }
	// trusted are the chain's outcomes at zone cuts (validate.go);
	// validClock is validator.Options.Now.
	trusted    *trustCache
	validClock func() time.Time
	// denials are the validated NSEC and NSEC3 records (aggressive.go),
	// nil unless validating with a cache.
	denials *cache.Denials
	// ntas are the negative trust anchors (nta.go).
	ntas atomic.Pointer[ntaSet]
	// noIPv4, noIPv6 are Options.NoIPv4, NoIPv6; families are the
	// address types of NS names resolved, in order (A, AAAA).
	noIPv4, noIPv6 bool
	families       []uint16

	// primed is the root servers learnt by priming (RFC 8109), nil
	// until the first resolution; primeMu is held while priming.
	primed  atomic.Pointer[primed]
	primeMu sync.Mutex
	infra   *Infra
	fails   *failures
	// deadline is the resolutions' shared deadline context of the
	// latest slot (withTimeout).
	deadline atomic.Pointer[sharedDeadline]
}

// New returns a Resolver that asks through ex.
func New(ex upstream.Exchanger, opt Options) *Resolver {
	r := &Resolver{ex: ex, hints: opt.Hints, limits: opt.Limits, port: opt.Port, trace: opt.Trace, now: opt.Now, infra: opt.Infra, cache: opt.Cache,
		noMinimise: opt.NoMinimise, noDNSSEC: opt.NoDNSSEC}
	if r.hints == nil {
		r.hints = RootHints()
	}
	r.noIPv4, r.noIPv6 = opt.NoIPv4, opt.NoIPv6
	if opt.Validate {
		r.validator, r.anchors, r.anchorSource = validator.New(opt.Validator), opt.Anchors, opt.AnchorSource
		r.trusted, r.validClock = &trustCache{}, opt.Validator.Now
		if r.anchors == nil {
			r.anchors = validator.RootAnchors()
		}
		if opt.Cache != nil && !opt.NoAggressiveNSEC {
			r.denials = cache.NewDenials(0, opt.Cache.Now)
		}
		r.SetNegativeAnchors(opt.NegativeAnchors)
	}
	if _, ok := ex.(upstream.OptionsExchanger); ok {
		r.caseRandom = opt.CaseRandom
	}
	if !r.noIPv4 {
		r.families = append(r.families, dns.TypeA)
	}
	if !r.noIPv6 {
		r.families = append(r.families, dns.TypeAAAA)
	}
	r.configured = map[string]*configured{}
	for _, zs := range []struct {
		zones   []Zone
		forward bool
	}{{opt.Stub, false}, {opt.Forward, true}} {
		for _, z := range zs.zones {
			name := canonical(z.Name)
			c := &configured{zone: name, forward: zs.forward}
			kind, why := "stub", "stub zone "+name
			if zs.forward {
				kind, why = "forwarder", "forwarder for "+name
			}
			for _, a := range z.Servers {
				c.servers = append(c.servers, Server{Name: kind + " " + a.String(), Addrs: []netip.Addr{a.Addr()}, Why: why, Port: a.Port(), Recursive: zs.forward})
			}
			r.configured[name] = c
		}
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.infra == nil {
		r.infra = NewInfra(InfraOptions{Now: r.now})
	}
	r.fails = newFailures(opt.FailureTTL)
	d := DefaultLimits
	for _, l := range []struct {
		v   *int
		def int
	}{{&r.limits.Queries, d.Queries}, {&r.limits.CNAMEs, d.CNAMEs}, {&r.limits.Referrals, d.Referrals}, {&r.limits.NSNames, d.NSNames}, {&r.limits.Depth, d.Depth}, {&r.limits.RRset, d.RRset}} {
		if *l.v <= 0 {
			*l.v = l.def
		}
	}
	if r.limits.Timeout <= 0 {
		r.limits.Timeout = d.Timeout
	}
	if r.port == 0 {
		r.port = 53
	}
	return r
}

// Result is the outcome of a resolution, as a response to a client that
// set DO would carry it (RFC 4035 §3.1): each RRset with the RRSIGs the
// authorities sent for it, which a client without DO must not be given
// (StripDNSSEC). RRsets splits a section into what the validator's
// VerifyRRset takes (records and their signatures), and Authority's
// NSEC and NSEC3 records are the proof its ProveDenial and ProveWildcard
// take.
type Result struct {
	// Rcode is NOERROR (an answer or NODATA), NXDOMAIN or, with an
	// error, SERVFAIL.
	Rcode int
	// Answer is the CNAME chain, if any, followed by the records of the
	// type asked, each RRset followed by its RRSIGs (a CNAME made from a
	// DNAME has none: RFC 6672 §5.3.1).
	Answer []dns.RR
	// Authority holds the SOA of a negative answer and its RRSIGs, and
	// the NSEC or NSEC3 records (with their RRSIGs) of the answering
	// zones: the proof of a negative answer (RFC 4035 §3.1.3.1-2), or
	// that no closer name matched a wildcard answer (§3.1.3.3).
	Authority []dns.RR
	// Queries is the number of upstream queries the resolution sent.
	Queries int
	// Stale is set on an answer from cache entries past their TTL,
	// given because no authority answered (RFC 8767; EDE 3, Stale
	// Answer).
	Stale bool
	// Security is the DNSSEC validation state with Options.Validate
	// (cache.Unchecked without): Secure, Insecure or Bogus, the latter
	// with EDE (RFC 8914 INFO-CODE) and Why saying why.
	Security cache.Security
	EDE      uint16
	Why      string
}

// Step is one upstream query, as the trace hook sees it.
type Step struct {
	// Depth is 0 for the client's question, more inside the resolution
	// of an NS name.
	Depth    int
	Question dns.Question
	// Zone is the zone cut the server was asked as a server of.
	Zone       string
	ServerName string
	Server     netip.AddrPort
	// Why says why this server was asked (root hint, glue from a zone,
	// address resolved).
	Why string
	// Selection says why the infrastructure cache put this server where
	// it was among the zone's: its RTT estimate, drawn among the fast
	// ones, never asked, or a probe of a server not answering.
	Selection string
	// Passed are the servers of the zone the infrastructure cache passed
	// over before this one (lame for the zone, or not answering).
	Passed []string
	// Timeout is how long the answer was waited for.
	Timeout time.Duration
	// Recursive is set when the question went with RD=1 to a forwarder.
	Recursive bool
	// CaseRandom is set when the question's name went in random case
	// (0x20; Question holds it as sent), and only an answer repeating
	// it was accepted.
	CaseRandom bool
	// Minimisation says how the question relates to the name resolved
	// (RFC 9156): empty when it is that name's, "QNAME minimised" when
	// it is an ancestor's with QTYPE A, or why the full name is asked
	// after a minimised question.
	Minimisation string
	// Outcome says what came back: an answer, a referral, a negative
	// answer, or why the server was passed over.
	Outcome string
	// GlueUsed and GlueIgnored are the address records of a referral,
	// used or dropped as out of the delegating zone's bailiwick.
	GlueUsed, GlueIgnored []string
	// Dropped counts answer and authority records dropped as out of
	// bailiwick.
	Dropped int
	Took    time.Duration
	// Check, when set, makes the Step not an upstream query but one
	// decision of DNSSEC validation (Options.Validate), as it was made:
	// the other fields but Depth are then zero.
	Check *Check
}

// Check is one decision of DNSSEC validation, for the trace hook: the
// chain of trust as it is built (a zone cut's DS and DNSKEY RRsets, each
// DS matched to a key, each RRSIG checked, the proof of an unsigned
// delegation, negative trust anchors) and the answer's security.
type Check struct {
	// Zone is the zone whose keys or data were checked ("" for the
	// outcome of the whole answer).
	Zone string
	// Text says what was checked and what came of it.
	Text string
}

// Resolve resolves the question (name, type, class IN). A failure returns
// a SERVFAIL Result and an *Error saying why.
func (r *Resolver) Resolve(ctx context.Context, name string, qtype uint16) (*Result, error) {
	return r.resolveBy(ctx, &run{r: r}, name, qtype)
}

// resolveBy is Resolve carried out by the run ru.
func (r *Resolver) resolveBy(ctx context.Context, ru *run, name string, qtype uint16) (*Result, error) {
	name = canonical(name)
	ru.name, ru.qtype = name, qtype
	parent := ctx
	ctx, cancel := r.withTimeout(ctx)
	defer cancel()
	res, err := ru.resolve(ctx, name, qtype, 0)
	e, _ := errors.AsType[*Error](err)
	if e != nil && len(ru.limits) > 0 && (e.Reason == NoReachableAuthority || e.Reason == NetworkError) {
		e.Summary = strings.Join(ru.limits, ", ") + " hit; " + cmp.Or(e.Summary, e.Detail)
	}
	switch {
	case err == nil && ru.queries > 0:
		r.fails.forget(name, qtype)
	case err != nil && parent.Err() == nil && (e == nil || !e.Cached):
		// Not when the caller gave up: that says nothing of the
		// question.
		r.fails.put(name, qtype, err, r.now())
	}
	if err != nil {
		if res, ok := ru.stale(canonical(name), qtype); ok && res.Stale {
			if r.validator != nil && !ru.noValidate {
				// The cache holds data as it came, bogus or not: a
				// stale answer is validated as a fresh one.
				r.validate(parent, name, qtype, res, ru.known)
			}
			res.Queries = ru.queries
			return res, nil
		}
		return &Result{Rcode: dns.RcodeServerFailure, Queries: ru.queries}, err
	}
	switch {
	case ru.synthesised && len(res.Answer) == 0:
		// RFC 8198: made of records validated when they came.
		res.Security = cache.Secure
	case r.validator != nil && !ru.noValidate:
		r.validate(parent, name, qtype, res, ru.known)
		r.learnDenials(res)
	}
	res.Queries = ru.queries
	return res, nil
}

// deadlineSlots is how many shared deadlines a Limits.Timeout holds
// (withTimeout).
const deadlineSlots = 64

// sharedDeadline is a deadline context that the resolutions of one slot
// share, and what it was made of.
type sharedDeadline struct {
	parent context.Context
	at     time.Time
	ctx    context.Context
	// cancel is never called: the context's timer releases it at the
	// deadline.
	cancel context.CancelFunc
}

// withTimeout returns the context of a resolution that begins now: parent
// with the deadline Limits.Timeout from now, rounded down to a multiple of
// Timeout/deadlineSlots, or parent itself when its deadline is sooner;
// and the function that releases it. The
// resolutions of one parent whose deadlines round alike share one
// context, the resolver's latest: context.WithTimeout per resolution was
// 6 of the 17 allocations and 400 of the 1430 bytes of a resolution of
// BenchmarkMixResolve (the context, its timer and closures, its Done
// channel, which the upstream Client selects on), and took a cancellable
// parent's lock twice (its set of children).
func (r *Resolver) withTimeout(parent context.Context) (context.Context, context.CancelFunc) {
	at := time.Now().Add(r.limits.Timeout)
	if d, ok := parent.Deadline(); ok && !d.After(at) {
		// The parent's deadline comes first (a validation's, whose
		// fetches share its time): it is the resolution's.
		return parent, keep
	}
	if slot := int64(r.limits.Timeout / deadlineSlots); slot > 0 {
		// On the nanoseconds: time.Time.Truncate's division by a
		// duration that does not divide a second took 2,200
		// instructions, 4% of a resolution of BenchmarkMixResolve.
		ns := at.UnixNano()
		at = time.Unix(0, ns-ns%slot)
	}
	// Only parents of comparable types are kept, so that comparing one
	// with another parent cannot panic (an interface comparison does
	// when both hold the same uncomparable type).
	cur := r.deadline.Load()
	if cur != nil && cur.at.Equal(at) && cur.parent == parent {
		return cur.ctx, keep
	}
	ctx, cancel := context.WithDeadline(parent, at)
	if reflect.TypeOf(parent).Comparable() && r.deadline.CompareAndSwap(cur, &sharedDeadline{parent: parent, at: at, ctx: ctx, cancel: cancel}) {
		return ctx, keep
	}
	return ctx, cancel
}

// keep is the release of a shared deadline context: nothing, its timer
// releases it.
func keep() {}

// run is the state of one resolution.
type run struct {
	r       *Resolver
	queries int
	// name and qtype are the question resolved (the failure cache's
	// key); failChecked is set once the failure cache was looked up.
	name        string
	qtype       uint16
	failChecked bool
	// limits are the limits hit on the way that did not end the
	// resolution at once (NS names per delegation, nesting), to tell in
	// a failure it may follow from.
	limits []string
	// fresh is the question a Refresh asks the authorities, not the
	// cache.
	fresh dns.Question
	// noValidate is set on the resolutions of DS and DNSKEY records the
	// validator's chain makes: the chain checks them.
	noValidate bool
	// synthesised is set when the answer to the question itself came
	// from validated NSEC or NSEC3 records (aggressive.go).
	synthesised bool
	// known are the validator's findings the cache held for the data
	// the resolution took from it (validate.go).
	known findings
}

// hit notes a limit hit.
func (ru *run) hit(limit string) {
	if !slices.Contains(ru.limits, limit) {
		ru.limits = append(ru.limits, limit)
	}
}

// resolve answers name/qtype, following CNAME chains and DNAME
// redirections: within an answer as far as the answering zone vouches for
// it, then from the root for a name in another zone.
func (ru *run) resolve(ctx context.Context, name string, qtype uint16, depth int) (*Result, error) {
	rs := &resultSpace{}
	res := &rs.Result
	res.Answer = rs.answer[:0]
	// The names of the chain so far, for its loops and its limit, on
	// the stack for a short chain: a map literal was 200 bytes of
	// resolve's frame, which is above each query's.
	var seenBuf [4]string
	seen := append(seenBuf[:0], name)
	for {
		m, zone, err := ru.iterate(ctx, name, qtype, depth)
		if err != nil {
			return nil, err
		}
		cur := name
		for {
			var target string
			if dn := redirecting(m.Answer, cur); dn != nil {
				// RFC 6672 §3.2: the DNAME redirects cur (and nothing
				// can exist below it, §2.3, so it comes before records
				// of cur); the CNAME the server synthesized beside it is
				// not trusted but made again from the DNAME (as Unbound
				// and BIND do), and both go into the answer, DNAME first
				// (§3.1).
				res.Answer = append(res.Answer, withSigs([]dns.RR{dn}, m.Answer, dn.Hdr.Name, dns.TypeDNAME)...)
				cn, ok := synthesize(dn, cur)
				if !ok {
					// RFC 6672 §2.2: the name is too long to be
					// redirected: YXDOMAIN, as the server says.
					res.Rcode = dns.RcodeYXDomain
					res.Authority = append(res.Authority, proof(m.Ns)...)
					return res, nil
				}
				res.Answer = append(res.Answer, cn)
				if qtype == dns.TypeCNAME {
					res.Rcode = dns.RcodeSuccess
					res.Authority = append(res.Authority, proof(m.Ns)...)
					return res, nil
				}
				target = cn.Target
			} else if a := appendOwned(res.Answer, m.Answer, cur, qtype); len(a) > len(res.Answer) {
				res.Answer = withSigs(a, m.Answer, cur, qtype)
				res.Rcode = dns.RcodeSuccess
				// RFC 4035 §3.1.3.3: a wildcard answer comes with the
				// proof that no closer name matched.
				res.Authority = append(res.Authority, proof(m.Ns)...)
				return res, nil
			} else if cn := owned(m.Answer, cur, dns.TypeCNAME); len(cn) > 0 {
				res.Answer = append(res.Answer, withSigs(cn[:1], m.Answer, cur, dns.TypeCNAME)...)
				target = canonical(cn[0].(*dns.CNAME).Target)
			} else {
				break
			}
			// A DNAME redirection is a link of the chain as a CNAME is.
			if err := ru.chainEnds(seen, name, target); err != nil {
				return nil, err
			}
			seen = append(seen, target)
			cur = target
		}
		// RFC 6604 §2.1: the rcode is about the last name of the chain;
		// it is believed only from a server authoritative for it, and a
		// NOERROR only with the SOA of a NODATA: the last name may be
		// below a cut in the zone, which the server then only refers to.
		if cur == name || (subDomain(zone, cur) && m.Authoritative && (m.Rcode == dns.RcodeNameError || hasSOA(m.Ns))) {
			res.Rcode = m.Rcode
			for _, rr := range m.Ns {
				if rr.Header().Rrtype == dns.TypeSOA {
					res.Authority = append(res.Authority, withSigs([]dns.RR{rr}, m.Ns, rr.Header().Name, dns.TypeSOA)...)
					break
				}
			}
			// RFC 4035 §3.1.3.1-2: the NSEC or NSEC3 records that prove
			// the name or the type does not exist.
			res.Authority = append(res.Authority, proof(m.Ns)...)
			return res, nil
		}
		// The chain leaves the zone that answered: its next name is
		// resolved from the root; the proofs of wildcard links so far
		// are kept.
		res.Authority = append(res.Authority, proof(m.Ns)...)
		name = cur
	}
}

// chainEnds is the error of a CNAME chain of name whose next link,
// target, would go beyond Limits.CNAMEs or back to a name of the chain
// seen, or nil.
//
//go:noinline
func (ru *run) chainEnds(seen []string, name, target string) error {
	if len(seen) > ru.r.limits.CNAMEs {
		return &Error{Reason: CNAMELimit, Name: name, Detail: fmt.Sprintf("a chain of more than %d CNAME and DNAME links", ru.r.limits.CNAMEs)}
	}
	if slices.Contains(seen, target) {
		return &Error{Reason: CNAMELoop, Name: name, Detail: "the CNAME chain comes back to " + target}
	}
	return nil
}

// resultSpace is a Result with room for an answer's first record in the
// same allocation: the answer's own slice was one of the 11 allocations
// of a resolution of BenchmarkMixResolve. One record: a Result of 88
// bytes is in Go's 96-byte size class, the first record's slice in the
// 16, resultSpace in the 112; a longer answer grows from there as it grew
// from the first record's slice.
type resultSpace struct {
	Result
	answer [1]dns.RR
}

// hasSOA reports whether rrs hold an SOA record.
func hasSOA(rrs []dns.RR) bool {
	return slices.ContainsFunc(rrs, func(rr dns.RR) bool { return rr.Header().Rrtype == dns.TypeSOA })
}

// redirecting returns the DNAME of rrs that redirects name: the one owned
// by an ancestor of name (RFC 6672 §2.3: a DNAME redirects the names
// below its owner, not the owner itself), or nil.
func redirecting(rrs []dns.RR, name string) *dns.DNAME {
	for _, rr := range rrs {
		dn, ok := rr.(*dns.DNAME)
		if !ok {
			continue
		}
		owner := canonical(dn.Hdr.Name)
		if owner != name && subDomain(owner, name) {
			return dn
		}
	}
	return nil
}

// synthesize returns the CNAME that dn redirects name with (RFC 6672
// §2.2: the owner's suffix of name replaced by the DNAME's target), with
// the DNAME's TTL (§3.1), and false when the new name would be longer
// than 255 octets.
func synthesize(dn *dns.DNAME, name string) (*dns.CNAME, bool) {
	owner, target := canonical(dn.Hdr.Name), canonical(dn.Target)
	prefix := name // "www.a.example." below "a.example." is "www."
	if owner != "." {
		prefix = name[:len(name)-len(owner)]
	}
	to := prefix + target
	if target == "." {
		to = prefix
	}
	if _, ok := dns.IsDomainName(to); !ok {
		return nil, false
	}
	return &dns.CNAME{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: dn.Hdr.Ttl}, Target: to}, true
}

// iterate follows referrals from the root to the zone that answers
// name/qtype and returns that answer (its records all in bailiwick of the
// zone) and the zone.
//
// Unless Options.NoMinimise, the servers are asked minimised questions
// (RFC 9156): the name's ancestor one label below the zone cut known
// (several for long names, §2.3), with QTYPE A (§2.1: NS is mishandled by
// too many servers), until the ancestor is the name itself, asked with
// its own type. A referral moves the cut down; a NOERROR answer (NODATA
// at an empty non-terminal, or records of the ancestor) adds labels.
// Minimisation is relaxed, as Unbound's default (qname-minimisation-strict:
// no): an NXDOMAIN for an ancestor (which RFC 8020 would make final, but
// servers answer so for empty non-terminals), an unusable answer (REFUSED,
// SERVFAIL, lame) is followed by the full question to
// the same zone's servers, and so is a DNAME above the name (but not a
// minimised question no server answered at all: the failure stands, where
// Unbound asks the full question after three timeouts). Such a
// failure says nothing of whether the server serves the zone (servers and
// middleboxes mishandle minimised questions): it must not make the server
// lame for the zone.
func (ru *run) iterate(ctx context.Context, name string, qtype uint16, depth int) (*dns.Msg, string, error) {
	// What the cache holds for name, looked up once for cached and
	// closest.
	here := ru.lookup(name)
	if m, zone, ok := ru.cachedOf(here, name, qtype); ok {
		return m, zone, nil
	}
	if m, zone, ok := ru.synthesise(name, qtype); ok {
		ru.synthesised = ru.synthesised || (name == ru.name && qtype == ru.qtype)
		return m, zone, nil
	}
	// The cached servers' space: a zone's usual few.
	var serverBuf [4]Server
	zone, servers, fromCache := ru.closest(here, name, qtype, serverBuf[:0])
	forward := false
	if c := ru.r.zoneOf(name, qtype); c != nil && (c.forward || !fromCache || !subDomain(c.zone, zone)) {
		// A forward zone, or a stub zone deeper than the closest
		// cached cut: the configured servers, never the root's way.
		zone, servers, fromCache, forward = c.zone, c.servers, false, c.forward
	} else if !fromCache {
		var err error
		if servers, err = ru.roots(ctx); err != nil {
			return nil, "", err
		}
		zone = "."
	}
	// A forwarder resolves the full question itself.
	min := minimiser{name: name, off: ru.r.noMinimise || forward}
	min.reset(zone)
	var note string // why the full name is asked after minimised ones
	for referrals := 0; ; {
		qname, qt := min.next(qtype)
		why := note
		if qname != name {
			why = minimised
			if m, _, ok := ru.cached(qname, qt); ok && m.Rcode == dns.RcodeSuccess {
				// RFC 9156 §3: an ancestor known to exist (its records
				// or a NODATA cached) needs no question.
				min.sent = qname
				continue
			}
		}
		m, next, err := ru.ask(ctx, zone, servers, qname, qt, why, depth)
		if e, ok := errors.AsType[*Error](err); ok && e.Name == qname {
			e.Name = name // the name resolved, not the ancestor asked
		}
		if err != nil && fromCache && !fatal(err) {
			// The cached servers failed (renumbered, gone): from the
			// root once more.
			if servers, err = ru.roots(ctx); err != nil {
				return nil, "", err
			}
			zone, fromCache = ".", false
			min.sent = ""
			min.reset(zone)
			continue
		}
		fromCache = false
		if qname != name && !fatal(err) && (err != nil || next == nil) {
			// An answer for the ancestor asked, or none.
			switch e, ok := errors.AsType[*Error](err); {
			case err != nil && (!ok || !e.answered):
				// No server answered at all: the full question would
				// meet the same silence (and cost as many queries).
				return nil, "", err
			case err != nil:
				note = "full QNAME: the minimised one failed"
				min.off = true
				continue
			case m.Rcode == dns.RcodeNameError:
				note = "full QNAME: the minimised one was NXDOMAIN"
				min.off = true
				continue
			case redirecting(m.Answer, name) != nil:
				note = "full QNAME: a DNAME redirects it"
				min.off = true
				continue
			}
			min.sent = qname
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if next == nil {
			return m, zone, nil
		}
		if referrals++; referrals > ru.r.limits.Referrals {
			return nil, "", ru.referralLimit(name)
		}
		zone, servers = next.zone, next.servers
		min.reset(zone)
	}
}

// referralLimit is the error of a resolution of name beyond
// Limits.Referrals. Not inlined, as query's cold paths are not.
//
//go:noinline
func (ru *run) referralLimit(name string) error {
	return &Error{Reason: ReferralLimit, Name: name, Detail: fmt.Sprintf("more than %d referrals", ru.r.limits.Referrals)}
}

// minimised is the note (Step.Minimisation) of a minimised question.
const minimised = "QNAME minimised (RFC 9156)"

// RFC 9156 §2.3's bounds on the minimised queries of one name below one
// zone cut: MaxMinimiseCount queries at most, the first MinimiseOneLab of
// them adding one label each, the rest spreading the remaining labels.
const (
	MaxMinimiseCount = 10
	MinimiseOneLab   = 4
)

// minimiser chooses the minimised questions for name (RFC 9156 §3).
type minimiser struct {
	name string
	off  bool // the full question is asked
	// sent is the ancestor of name last asked (or the zone cut, when
	// none has been asked of its servers) and count the number of
	// minimised questions asked below the cut.
	sent  string
	count int
}

// reset starts again below a new zone cut. As Unbound does, an ancestor
// asked below the cut already (several labels were added at once) is
// kept.
func (mn *minimiser) reset(zone string) {
	if mn.sent == "" || !subDomain(zone, mn.sent) {
		mn.sent, mn.count = zone, 0
	}
}

// next returns the question to ask: the name with qtype once minimisation
// is off or the next ancestor is the name itself, else the next ancestor
// with QTYPE A.
func (mn *minimiser) next(qtype uint16) (string, uint16) {
	if mn.off {
		return mn.name, qtype
	}
	have, want := dns.CountLabel(mn.sent), dns.CountLabel(mn.name)
	add := 1
	if left := MaxMinimiseCount - mn.count; mn.count >= MinimiseOneLab && left > 1 {
		add = (want - have + left - 1) / left // the rest over the queries left
	} else if left <= 1 {
		add = want - have
	}
	if have+add >= want {
		return mn.name, qtype
	}
	mn.count++
	i, _ := dns.PrevLabel(mn.name, have+add)
	return mn.name[i:], dns.TypeA
}

// zoneOf returns the deepest forward or stub zone at or above name, or
// nil. The DS records of a zone's apex are its parent's (RFC 4035
// §3.1.4.1): for them the search starts at the parent.
func (r *Resolver) zoneOf(name string, qtype uint16) *configured {
	if len(r.configured) == 0 {
		return nil
	}
	if qtype == dns.TypeDS && name != "." {
		name = parent(name)
	}
	for {
		if c := r.configured[name]; c != nil {
			return c
		}
		if name == "." {
			return nil
		}
		name = parent(name)
	}
}

// delegation is a referral: the child zone and its name servers, those
// with usable glue first.
type delegation struct {
	zone    string
	servers []Server
}

// ask asks the servers of zone in turn until one gives an answer or a
// referral; lame and unreachable servers are passed over, and those that
// did not answer are tried once more at the end. IPv4 addresses are tried
// before IPv6 ones (a host without IPv6 routes loses a timeout on each),
// and servers with addresses before those whose names must be resolved
// first, of which at most Limits.NSNames are; addresses of a family
// turned off (Options.NoIPv4, NoIPv6) are passed over.
//
// note is the minimisation note of the steps (Step.Minimisation).
func (ru *run) ask(ctx context.Context, zone string, servers []Server, name string, qtype uint16, note string, depth int) (*dns.Msg, *delegation, error) {
	q := dns.Question{Name: name, Qtype: qtype, Qclass: dns.ClassINET}
	a := asking{unreached: true}
	// The targets, each address once, on the stack for the usual few
	// (a map of those tried was a third of ask's frame; choose sorts
	// them in place): first those of servers with addresses, then, in
	// turn, each NS name's resolved. Each is asked where it is, not
	// copied: ask's frame is above each query's, on a resolution's
	// deepest call.
	var buf [4]target
	all := buf[:0]
	for i := range servers {
		s := &servers[i]
		for _, addr := range s.Addrs {
			if !ru.r.asks(addr) {
				a.notAsked(s.Name, addr, ru.r.familyOff(addr))
				continue
			}
			if !tried(all, addr, s.Port) {
				all = appendTarget(all, s.Name, s.Why, addr, s.Port, s.Recursive)
			}
		}
	}
	ts := ru.choose(zone, all, a.passOver)
	for i := range ts {
		m, next, err := ru.query(ctx, zone, &ts[i], q, note, depth)
		if a.settle(&ts[i], err) {
			return m, next, err
		}
	}
	resolved := 0
	for i := range servers {
		s := &servers[i]
		if len(s.Addrs) > 0 {
			continue
		}
		switch {
		case subDomain(zone, s.Name):
			// Its address is in the zone it serves and did not come as
			// glue: asking for it would ask the zone itself.
			a.passOver(s.Name+" has no glue", s.Name+" no glue")
			continue
		case resolved >= ru.r.limits.NSNames || depth >= ru.r.limits.Depth:
			ru.notResolved(&a, s.Name, resolved, depth)
			continue
		}
		resolved++
		// Its IPv4 addresses first, its IPv6 ones only when those
		// failed (or it has none): a second sub-resolution only when
		// needed.
		for _, qt := range ru.r.families {
			addrs, err := ru.addresses(ctx, s.Name, qt, depth+1)
			if err != nil {
				if fatal(err) {
					return nil, nil, err
				}
				a.passOver(err.Error(), s.Name+" "+briefNS(err))
				if _, ok := errors.AsType[noData](err); !ok {
					break // the name does not exist, or cannot be resolved
				}
				continue
			}
			from := len(all)
			why := ""
			if ru.r.trace != nil {
				// Only the trace shows it.
				why = "address of " + s.Name + " resolved"
			}
			for _, addr := range addrs {
				if !tried(all, addr, 0) {
					all = appendTarget(all, s.Name, why, addr, 0, false)
				}
			}
			ts := ru.choose(zone, all[from:], a.passOver)
			for i := range ts {
				m, next, err := ru.query(ctx, zone, &ts[i], q, note, depth)
				if a.settle(&ts[i], err) {
					return m, next, err
				}
			}
		}
	}
	// One more try of the servers that did not answer: a lost datagram
	// must not fail the resolution. Those that have now backed off are
	// passed over.
	ts = ru.choose(zone, a.retries, a.passOver)
	for i := range ts {
		m, next, err := ru.query(ctx, zone, &ts[i], q, note, depth)
		if a.settle(&ts[i], err) {
			return m, next, err
		}
	}
	return nil, nil, a.failure(name, zone)
}

// appendTarget appends to ts the target of server name at addr and port.
// Not inlined: the target, built in a temporary, would be in ask's frame
// twice over (104 bytes each), above each query's.
//
//go:noinline
func appendTarget(ts []target, name, why string, addr netip.Addr, port uint16, recursive bool) []target {
	return append(ts, target{name: name, why: why, addr: addr, port: port, recursive: recursive})
}

// asking is what ask learns of the servers it passes over, for its
// error, and those to try again.
type asking struct {
	// why servers were passed over: in full, and in a few words for the
	// error's EDE EXTRA-TEXT (brief).
	why, brief []string
	// unreached is true while every server passed over was reported
	// unreachable by the network (the failure's EDE is Network Error).
	unreached bool
	// answered is set when a server answered, unusably.
	answered bool
	// retries are the targets that did not answer, for one more try.
	retries []target
}

// passOver notes a server passed over without a query.
func (a *asking) passOver(reason, short string) {
	a.unreached = false
	a.why = append(a.why, reason)
	if short != "" {
		a.brief = append(a.brief, short)
	}
}

// settle takes err, what came of asking t: true when it ends ask (an
// answer or referral, or an error that ends the resolution); otherwise t
// is noted as passed over, and kept for one more try when it did not
// answer. Not inlined: ask's frame, above each query's, would hold its
// locals.
//
//go:noinline
func (a *asking) settle(t *target, err error) bool {
	switch {
	case err == nil || fatal(err):
		return true
	case errors.Is(err, errUnreachable) && !t.retry:
		again := *t
		again.retry = true
		a.retries = append(a.retries, again)
	}
	if se, ok := errors.AsType[*serverError](err); ok {
		a.brief = append(a.brief, se.brief())
	} else {
		a.brief = append(a.brief, err.Error())
	}
	a.unreached = a.unreached && networkError(err)
	a.answered = a.answered || errors.Is(err, errLame)
	a.why = append(a.why, err.Error())
	return false
}

// notAsked passes over the address addr of server name, of a family
// turned off (why).
//
//go:noinline
func (a *asking) notAsked(name string, addr netip.Addr, why string) {
	a.passOver(fmt.Sprintf("%s (%s) not asked: %s", name, addr, why), why)
}

// notResolved passes over the NS name name, whose addresses would be
// resolved but for a limit: Limits.NSNames (resolved already), or
// Limits.Depth (depth).
//
//go:noinline
func (ru *run) notResolved(a *asking, name string, resolved, depth int) {
	if resolved >= ru.r.limits.NSNames {
		a.passOver(fmt.Sprintf("%s not resolved: limit of %d NS names per delegation", name, ru.r.limits.NSNames), "")
		ru.hit(fmt.Sprintf("limit of %d NS names per delegation", ru.r.limits.NSNames))
		return
	}
	a.passOver(fmt.Sprintf("%s not resolved: sub-resolutions nested %d deep", name, depth), "")
	ru.hit(fmt.Sprintf("sub-resolutions nested %d deep", depth))
}

// failure is ask's error when no server of zone answered name usefully.
//
//go:noinline
func (a *asking) failure(name, zone string) error {
	reason := NoReachableAuthority
	if a.unreached && len(a.why) > 0 {
		reason = NetworkError
	}
	return &Error{Reason: reason, Name: name, Detail: "no server of " + zone + " answered usefully: " + strings.Join(a.why, "; "),
		Summary: "no server of " + zone + " answered usefully: " + strings.Join(unique(a.brief), ", "), answered: a.answered}
}

// tried reports whether ts hold a target for address a on port.
func tried(ts []target, a netip.Addr, port uint16) bool {
	for i := range ts {
		if ts[i].addr == a && ts[i].port == port {
			return true
		}
	}
	return false
}

// target is a server address to ask and why it was chosen.
type target struct {
	name, why string
	addr      netip.Addr
	port      uint16 // 0: the resolver's port
	recursive bool   // Server.Recursive
	// retry is set on the second try of an address that did not answer.
	retry bool
	// sel and passed are the infrastructure cache's word on the choice
	// (Step.Selection, Step.Passed).
	sel    string
	passed []string
}

// server is the address and port t is asked on, def the resolver's port.
func (t target) server(def uint16) netip.AddrPort {
	return netip.AddrPortFrom(t.addr, cmp.Or(t.port, def))
}

// addresses resolves the addresses of a name server of type qtype (A or
// AAAA); an error wrapped in noData when the name has none of that type.
func (ru *run) addresses(ctx context.Context, ns string, qtype uint16, depth int) ([]netip.Addr, error) {
	res, err := ru.nsResolve(ctx, ns, qtype, depth)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	for _, rr := range res.Answer {
		if a, ok := rrAddr(rr); ok && rr.Header().Rrtype == qtype {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		err := fmt.Errorf("%s has no %s address (%s)", ns, dns.Type(qtype), dns.RcodeToString[res.Rcode])
		if res.Rcode == dns.RcodeSuccess {
			err = noData{err}
		}
		return nil, err
	}
	return addrs, nil
}

// noData is the error of an NS name that exists but has no address of
// the type asked: it may have one of the other.
type noData struct{ error }

func (e noData) Unwrap() error { return e.error }

// asks reports whether the resolver asks servers at a: its family is not
// turned off (Options.NoIPv4, NoIPv6).
func (r *Resolver) asks(a netip.Addr) bool {
	if a.Unmap().Is4() {
		return !r.noIPv4
	}
	return !r.noIPv6
}

// familyOff says why an address of a family turned off is not asked.
func (r *Resolver) familyOff(a netip.Addr) string {
	if a.Unmap().Is4() {
		return "IPv4 off"
	}
	return "IPv6 off"
}

// errUnreachable and errLame are the kinds of a serverError: a server
// that did not answer, and one whose answer is not usable.
var (
	errUnreachable = errors.New("no answer")
	errLame        = errors.New("lame")
)

// serverError is a server passed over, and why.
type serverError struct {
	name string
	addr netip.Addr
	kind error // errUnreachable or errLame
	err  error
}

func (e *serverError) Error() string {
	return fmt.Sprintf("%s (%s): %v: %v", e.name, e.addr, e.kind, e.err)
}

func (e *serverError) Unwrap() []error { return []error{e.kind, e.err} }

// brief is the error in a few words, for an EDE's EXTRA-TEXT.
func (e *serverError) brief() string {
	switch {
	case networkError(e.err):
		return e.addr.String() + " unreachable"
	case e.kind == errUnreachable:
		return e.addr.String() + " no answer"
	}
	return e.addr.String() + " lame (" + e.err.Error() + ")"
}

// briefNS says in a few words why the addresses of an NS name were not
// found.
func briefNS(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return "not resolved (" + e.Reason.String() + ")"
	}
	return "no address"
}

// query asks one server and sorts its answer: a final answer (nil
// delegation), a referral, or an error when the server is lame or does
// not answer.
func (ru *run) query(ctx context.Context, zone string, t *target, q dns.Question, note string, depth int) (*dns.Msg, *delegation, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, ru.timeout(q.Name)
	}
	if !ru.failChecked {
		// RFC 9520 §3.2: a failure remembered fails again without a
		// query. Looked up before the first upstream query only, so
		// that answers from the cache never take its lock.
		ru.failChecked = true
		if e := ru.r.fails.get(ru.name, ru.qtype, ru.r.now()); e != nil {
			return nil, nil, e
		}
	}
	if ru.queries >= ru.r.limits.Queries {
		return nil, nil, ru.queryLimit(q.Name)
	}
	ru.queries++
	// Field by field: a composite literal was built in a temporary of
	// its own, as large again in query's frame.
	var st Step
	st.Depth, st.Question, st.Zone, st.Minimisation = depth, q, zone, note
	st.ServerName, st.Server, st.Why, st.Recursive = t.name, t.server(ru.r.port), t.why, t.recursive
	st.Selection, st.Passed = t.sel, t.passed
	if t.retry && ru.r.trace != nil {
		st.Why += ", asked again"
	}
	if ru.r.caseRandom && !t.retry {
		// 0x20 (draft-vixie-dnsext-dns0x20): the letters of the name
		// in random case, which a forged answer must repeat. The
		// second try of a server goes without: one that does not echo
		// the case dropped the first (its answer did not match).
		st.Question.Name, st.CaseRandom = randomCase(q.Name), true
	}
	m, err := ru.exchange(ctx, st.Server, st.Question, &st)
	if err == nil && st.CaseRandom {
		unrandomise(m, st.Question.Name, q)
	}
	var next *delegation
	var se *serverError
	if err != nil {
		se = &serverError{t.name, t.addr, errUnreachable, err}
	} else if next, err = ru.sort(m, zone, q, &st); err != nil {
		se = &serverError{t.name, t.addr, errLame, err}
		if note != minimised {
			// A minimised question refused says nothing of whether the
			// server serves the zone (servers and middleboxes mishandle
			// them): iterate asks it the full one.
			ru.r.infra.lame(st.Server, zone, q, err)
		}
	}
	if se != nil {
		st.Outcome = se.outcome()
	}
	if ru.r.trace != nil {
		ru.traceStep(&st)
	}
	if se != nil {
		if ctx.Err() != nil {
			return nil, nil, ru.timeout(q.Name)
		}
		return nil, nil, se
	}
	ru.learn(m, zone, q, next)
	return m, next, nil
}

// queryLimit is the error of a query beyond Limits.Queries, for name.
// query's cold paths (queryLimit, outcome, traceStep) are functions of
// their own, not inlined: their locals, in query's frame, would be above
// the exchange's, on a resolution's deepest call.
//
//go:noinline
func (ru *run) queryLimit(name string) error {
	return &Error{Reason: QueryLimit, Name: name, Detail: fmt.Sprintf("more than %d upstream queries", ru.r.limits.Queries)}
}

// outcome is the Step.Outcome of a server passed over.
//
//go:noinline
func (e *serverError) outcome() string {
	return fmt.Sprintf("%v: %v", e.kind, e.err)
}

// traceStep hands st to the trace hook (a copy: the Step passed by value
// was as large again in the caller's frame).
//
//go:noinline
func (ru *run) traceStep(st *Step) {
	ru.r.trace(*st)
}

// randomCase returns name with each letter's case drawn at random
// (escapes, \DDD and \X, left as they are).
func randomCase(name string) string {
	b := []byte(name)
	var bits uint64
	n := 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == '\\' {
			if i+3 < len(b) && b[i+1] >= '0' && b[i+1] <= '9' {
				i += 3
			} else {
				i++
			}
			continue
		}
		if c|0x20 < 'a' || c|0x20 > 'z' {
			continue
		}
		if n == 0 {
			bits, n = rand.Uint64(), 64
		}
		b[i] = c&^0x20 | byte(bits&1)<<5
		bits >>= 1
		n--
	}
	return string(b)
}

// unrandomise gives m, the answer to the question q asked as sent (its
// name in random case), q's spelling back wherever the server copied the
// name sent or a suffix of it (compression points owners and names in
// RDATA at the question): in its question, in the owners, and in the
// names of CNAME, DNAME and NS records. The client then sees the case it
// asked in, not the draw.
func unrandomise(m *dns.Msg, sent string, q dns.Question) {
	if len(m.Question) == 1 {
		m.Question[0].Name = q.Name
	}
	for _, sec := range [][]dns.RR{m.Answer, m.Ns, m.Extra} {
		for _, rr := range sec {
			h := rr.Header()
			h.Name = unsuffix(h.Name, sent, q.Name)
			switch rr := rr.(type) {
			case *dns.CNAME:
				rr.Target = unsuffix(rr.Target, sent, q.Name)
			case *dns.DNAME:
				rr.Target = unsuffix(rr.Target, sent, q.Name)
			case *dns.NS:
				rr.Ns = unsuffix(rr.Ns, sent, q.Name)
			}
		}
	}
}

// unsuffix returns name with its longest suffix spelt as a suffix of sent
// (whole labels, case included) spelt as the same suffix of orig, a name
// of the same length that differs from sent in case only.
func unsuffix(name, sent, orig string) string {
	for i := 0; i < len(sent); i++ {
		if i > 0 && sent[i-1] != '.' {
			continue
		}
		suffix := sent[i:]
		j := len(name) - len(suffix)
		if j >= 0 && name[j:] == suffix && (j == 0 || name[j-1] == '.') {
			return name[:j] + orig[i:]
		}
	}
	return name
}

// timeout is the error of a resolution out of time.
func (ru *run) timeout(name string) error {
	return &Error{Reason: Timeout, Name: name, Detail: fmt.Sprintf("the resolution's time (%v) ran out", ru.r.limits.Timeout)}
}

// sort checks an answer from a server of zone, drops its records that are
// out of the zone's bailiwick (RFC 2181 §5.4.1: never trusted), and says
// whether it is a final answer (nil delegation), a referral, or not
// usable (an error: the server is lame).
func (ru *run) sort(m *dns.Msg, zone string, q dns.Question, st *Step) (*delegation, error) {
	// RFC 6672 §2.2: YXDOMAIN is the answer for a name a DNAME would
	// make too long.
	yx := m.Rcode == dns.RcodeYXDomain && slices.ContainsFunc(m.Answer, func(rr dns.RR) bool { return rr.Header().Rrtype == dns.TypeDNAME })
	if m.Rcode != dns.RcodeSuccess && m.Rcode != dns.RcodeNameError && !yx {
		err := fmt.Errorf("rcode %s", dns.RcodeToString[m.Rcode])
		if m.Rcode == dns.RcodeRefused || m.Rcode == dns.RcodeNotAuth {
			// The classic lame delegation (RFC 8499 §7): the server
			// does not serve the zone.
			err = notServing{err}
		}
		return nil, err
	}
	before, answers := len(m.Answer)+len(m.Ns), len(m.Answer)
	for _, sec := range [][]dns.RR{m.Answer, m.Ns, m.Extra} {
		// A section of no more records than the limit holds no RRset
		// over it: counting them (a map per section) is for the others.
		if len(sec) <= ru.r.limits.RRset {
			continue
		}
		if n, set := largest(sec); n > ru.r.limits.RRset {
			return nil, fmt.Errorf("an RRset of %d records (%s), limit %d", n, set, ru.r.limits.RRset)
		}
	}
	// What the trace shows of the answer is written only for a trace:
	// formatting it cost more than the checks.
	explain := ru.r.trace != nil
	m.Answer = inBailiwick(m.Answer, zone)
	m.Ns = inBailiwick(m.Ns, zone)
	st.Dropped = before - len(m.Answer) - len(m.Ns)
	if answers > 0 && len(m.Answer) == 0 {
		// Not a NODATA: the server answered about names it is not a
		// server of.
		return nil, notServing{fmt.Errorf("all %d answer records out of bailiwick", answers)}
	}
	if len(m.Answer) > 0 || m.Rcode == dns.RcodeNameError {
		// A forwarder's answers are trusted for its zone without AA:
		// they come from its cache or its own resolution.
		if !m.Authoritative && !st.Recursive {
			return nil, notServing{errors.New("answer without AA")}
		}
		if explain {
			st.Outcome = outcome(m)
		}
		return nil, nil
	}
	if st.Recursive {
		// RFC 1034 §4.3.1: asked with RD=1, a recursive server answers;
		// NS records without an SOA are a referral, which only a
		// server that did not recurse sends.
		if !hasSOA(m.Ns) && slices.ContainsFunc(m.Ns, func(rr dns.RR) bool { return rr.Header().Rrtype == dns.TypeNS }) {
			return nil, errors.New("a referral from a forwarder (RD=1 not honoured)")
		}
		if explain {
			st.Outcome = outcome(m)
		}
		return nil, nil
	}
	// A referral: NS records of a cut below the zone, at or above the
	// name asked. A cut at or above the zone (an upward referral) would
	// loop and is lame.
	var cut string
	var nameBuf [8]string // on the stack for a delegation's usual few
	names := nameBuf[:0]
	for _, rr := range m.Ns {
		ns, ok := rr.(*dns.NS)
		if !ok {
			continue
		}
		owner := canonical(ns.Hdr.Name)
		if owner == zone || !subDomain(owner, q.Name) {
			continue
		}
		if cut == "" {
			cut = owner
		}
		if owner == cut {
			names = append(names, canonical(ns.Ns))
		}
	}
	if cut == "" {
		if !m.Authoritative {
			return nil, notServing{errors.New("no answer, no referral and no AA")}
		}
		if explain {
			st.Outcome = outcome(m)
		}
		return nil, nil
	}
	// The delegation in three allocations whatever its size (itself, its
	// servers, their addresses; a fourth for their Why with a trace, the
	// only reader): the servers' slice grown one by one, a Why, an
	// address slice per server and the reordering were 8 for two servers
	// with glue, over 30 for the root's referrals.
	d := &delegation{zone: cut, servers: make([]Server, 0, len(names))}
	why := ""
	if explain {
		why = "glue from " + zone
	}
	for _, n := range names {
		if !slices.ContainsFunc(d.servers, func(s Server) bool { return s.Name == n }) {
			d.servers = append(d.servers, Server{Name: n, Why: why})
		}
	}
	// The glue, in the order it came (the trace's), each address with
	// its server's index; then shared out, each server's part of one
	// slice.
	type glueAddr struct {
		server int
		addr   netip.Addr
	}
	var glueBuf [8]glueAddr
	glue := glueBuf[:0]
	for _, rr := range m.Extra {
		a, isAddr := rrAddr(rr)
		if !isAddr {
			continue
		}
		owner := rr.Header().Name
		i := slices.IndexFunc(d.servers, func(s Server) bool { return equalFold(s.Name, owner) })
		if i < 0 {
			continue
		}
		// RFC 2181 §5.4.1: glue is believed only within the bailiwick
		// of the zone that gave the referral.
		if !subDomain(zone, d.servers[i].Name) {
			if explain {
				st.GlueIgnored = append(st.GlueIgnored, rrString(rr))
			}
			continue
		}
		if explain {
			st.GlueUsed = append(st.GlueUsed, rrString(rr))
		}
		glue = append(glue, glueAddr{i, a})
	}
	if len(glue) > 0 {
		addrs := make([]netip.Addr, 0, len(glue))
		for i := range d.servers {
			from := len(addrs)
			for _, g := range glue {
				if g.server == i {
					addrs = append(addrs, g.addr)
				}
			}
			if len(addrs) > from {
				d.servers[i].Addrs = addrs[from:len(addrs):len(addrs)]
			}
		}
	}
	// Servers with addresses first: asking them costs no sub-resolution.
	toFront(d.servers, func(s *Server) bool { return len(s.Addrs) > 0 })
	if explain {
		st.Outcome = "referral to " + cut + " (NS " + strings.Join(names, " ") + ")"
	}
	return d, nil
}

// toFront moves the elements of s for which front is true before the
// others, in place, each group in its order, and returns how many they
// are.
func toFront[T any](s []T, front func(*T) bool) int {
	n := 0
	for i := range s {
		if front(&s[i]) {
			if i > n {
				e := s[i]
				copy(s[n+1:i+1], s[n:i])
				s[n] = e
			}
			n++
		}
	}
	return n
}

// outcome describes a final answer for the trace, with the DNAME
// redirections it holds.
func outcome(m *dns.Msg) string {
	switch {
	case m.Rcode == dns.RcodeNameError:
		return "NXDOMAIN"
	case len(m.Answer) == 0:
		return "NODATA"
	}
	s := fmt.Sprintf("answer, %d records", len(m.Answer))
	if m.Rcode != dns.RcodeSuccess {
		s = dns.RcodeToString[m.Rcode] + ", " + s
	}
	for _, rr := range m.Answer {
		if dn, ok := rr.(*dns.DNAME); ok {
			s += ", DNAME " + canonical(dn.Hdr.Name) + " -> " + canonical(dn.Target)
		}
	}
	return s
}

// largest returns the size of the largest RRset in rrs and its owner and
// type.
func largest(rrs []dns.RR) (int, string) {
	type set struct {
		name string
		t    uint16
	}
	counts := map[set]int{}
	n, which := 0, ""
	for _, rr := range rrs {
		h := rr.Header()
		k := set{canonical(h.Name), h.Rrtype}
		counts[k]++
		if c := counts[k]; c > n {
			n, which = c, k.name+" "+dns.Type(k.t).String()
		}
	}
	return n, which
}

// inBailiwick returns the records of class IN owned by names in zone.
func inBailiwick(rrs []dns.RR, zone string) []dns.RR {
	out := rrs[:0]
	for _, rr := range rrs {
		h := rr.Header()
		if h.Class == dns.ClassINET && subDomain(zone, canonical(h.Name)) {
			out = append(out, rr)
		}
	}
	return out
}

// owned returns the records of rrs owned by name with type t (any type
// but CNAME for ANY).
func owned(rrs []dns.RR, name string, t uint16) []dns.RR {
	return appendOwned(nil, rrs, name, t)
}

// appendOwned appends owned(rrs, name, t) to dst.
func appendOwned(dst, rrs []dns.RR, name string, t uint16) []dns.RR {
	for _, rr := range rrs {
		if ownedBy(rr, name, t) {
			dst = append(dst, rr)
		}
	}
	return dst
}

// firstOwned returns the first record of owned(rrs, name, t), or nil.
func firstOwned(rrs []dns.RR, name string, t uint16) dns.RR {
	for _, rr := range rrs {
		if ownedBy(rr, name, t) {
			return rr
		}
	}
	return nil
}

// ownedBy reports whether rr is owned by name with type t (any type but
// CNAME for ANY).
func ownedBy(rr dns.RR, name string, t uint16) bool {
	h := rr.Header()
	return (h.Rrtype == t || (t == dns.TypeANY && h.Rrtype != dns.TypeCNAME)) && equalFold(h.Name, name)
}

// unique returns ss without repetitions, in the order of first
// appearance.
func unique(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// rrString is a record in zone-file form on one line, tabs as spaces.
func rrString(rr dns.RR) string {
	return strings.Join(strings.Fields(rr.String()), " ")
}
