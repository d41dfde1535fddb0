package resolve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/upstream"
)

// The infrastructure cache's constants, Unbound's (util/rtt.c,
// iterator/iterator.h, services/cache/infra.c).
const (
	// unknownRTT is the estimate of a server never asked: srtt 0 and
	// rttvar 94 ms give 0 + 4*94 = 376 ms, low enough for an unknown
	// server to be tried among known fast ones (it is within rttBand of
	// them), and so explored.
	unknownRTT = 376 * time.Millisecond
	// minRTO and maxRTO bound the retransmission timeout.
	minRTO = 50 * time.Millisecond
	maxRTO = 120 * time.Second
	// probeRTO: a server whose timeout has backed off this far (five
	// timeouts in a row from unknownRTT) gets one query, a probe, per
	// timeout interval; the others pass it over.
	probeRTO = 12 * time.Second
	// rttBand: the servers whose estimate is within this of the best are
	// chosen among at random (spreading load, and unpredictable to an
	// attacker racing the answer); the others come after, fastest first.
	rttBand = 400 * time.Millisecond
)

// InfraOptions configure an Infra. Zero fields take the defaults.
type InfraOptions struct {
	// HostTTL is how long what is learnt of a server is kept (default
	// 15 minutes, Unbound's infra-host-ttl): lameness, EDNS support and
	// the RTT estimate are then forgotten, but a server that stopped
	// answering keeps its backed-off timeout and is probed.
	HostTTL time.Duration
	// MaxHosts bounds the number of servers remembered (default 10000,
	// Unbound's infra-cache-numhosts).
	MaxHosts int
	// MaxWait bounds the wait for one UDP answer, whatever the timeout
	// backed off to (default upstream.DefaultTimeout): the timeout keeps
	// growing for the server's selection, but a resolution does not wait
	// two minutes for a probe.
	MaxWait time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Rand returns a number in [0, n) for choosing among servers of
	// similar speed (default math/rand/v2's IntN).
	Rand func(n int) int
	// Metrics counts each answer's round-trip time and each timeout;
	// nil: none.
	Metrics *metrics.Set
}

// Infra is the infrastructure cache, as Unbound's: per server address a
// smoothed round-trip time and its variance (RFC 6298), the timeout that
// backs off exponentially when the server does not answer, whether it
// rejects EDNS, and per (address, zone) whether the server is lame for the
// zone. The resolver orders the servers of a zone by it and tells it how
// every query went. It is sharded by address, each shard behind its own
// mutex: resolutions, not cache hits, take them. Safe for concurrent use.
type Infra struct {
	shards  [infraShards]infraShard
	seed    maphash.Seed
	ttl     time.Duration
	perHost int // entries per shard
	maxWait time.Duration
	now     func() time.Time
	rand    func(n int) int
	metrics *metrics.Set
}

const infraShards = 32

type infraShard struct {
	mu    sync.Mutex
	hosts map[netip.AddrPort]*host
	lame  map[lameKey]time.Time // when the lameness is forgotten
}

type lameKey struct {
	server netip.AddrPort
	zone   string
}

// host is what is known of one server address.
type host struct {
	srtt, rttvar time.Duration
	// rto is the timeout: srtt + 4*rttvar within [minRTO, maxRTO], or
	// higher after timeouts (doubled by each).
	rto time.Duration
	// probe is when a server backed off to probeRTO or more may be asked
	// again (one query, then the next probe waits another rto).
	probe time.Time
	// expires is when the entry is reset (HostTTL after it was made).
	expires time.Time
	// noEDNS: the server rejected EDNS (RFC 6891 §7); ednsOK: it answered
	// with EDNS, after which a rejection (perhaps spoofed) is not believed.
	noEDNS, ednsOK bool
}

// NewInfra returns an empty infrastructure cache.
func NewInfra(o InfraOptions) *Infra {
	in := &Infra{seed: maphash.MakeSeed(), ttl: o.HostTTL, maxWait: o.MaxWait, now: o.Now, rand: o.Rand, metrics: o.Metrics}
	if in.ttl <= 0 {
		in.ttl = 15 * time.Minute
	}
	if o.MaxHosts <= 0 {
		o.MaxHosts = 10000
	}
	in.perHost = max(1, o.MaxHosts/infraShards)
	if in.maxWait <= 0 {
		in.maxWait = upstream.DefaultTimeout
	}
	if in.now == nil {
		in.now = time.Now
	}
	if in.rand == nil {
		in.rand = rand.IntN
	}
	for i := range in.shards {
		in.shards[i].hosts = map[netip.AddrPort]*host{}
		in.shards[i].lame = map[lameKey]time.Time{}
	}
	return in
}

func (in *Infra) shard(a netip.AddrPort) *infraShard {
	return &in.shards[maphash.Comparable(in.seed, a)%infraShards]
}

// get returns the live entry of a (the shard's lock held), nil if none:
// an expired entry is reset, keeping only a backed-off timeout (so that an
// unresponsive server stays passed over but for probes).
func (in *Infra) get(s *infraShard, a netip.AddrPort, now time.Time) *host {
	h := s.hosts[a]
	if h != nil && now.After(h.expires) {
		if h.rto < probeRTO {
			delete(s.hosts, a)
			return nil
		}
		*h = host{rttvar: unknownRTT / 4, rto: h.rto, probe: h.probe, expires: now.Add(in.ttl)}
	}
	return h
}

// make returns the entry of a, made if there is none.
func (in *Infra) make(s *infraShard, a netip.AddrPort, now time.Time) *host {
	if h := in.get(s, a, now); h != nil {
		return h
	}
	if len(s.hosts) >= in.perHost {
		evict(s.hosts, func(h *host) bool { return now.After(h.expires) })
	}
	h := &host{rttvar: unknownRTT / 4, rto: unknownRTT, expires: now.Add(in.ttl)}
	s.hosts[a] = h
	return h
}

// estimate is the selection RTT of h: srtt + 4*rttvar, or the timeout
// once it has backed off past that (Unbound's rtt_unclamped).
func (h *host) estimate() time.Duration {
	e := h.srtt + 4*h.rttvar
	if c := min(max(e, minRTO), maxRTO); c != h.rto {
		return h.rto
	}
	return e
}

// choice is one server address as the infrastructure cache sees it.
type choice struct {
	est    time.Duration // selection estimate; unknownRTT when never asked
	known  bool
	probe  bool   // backed off: this query is its probe
	passed string // why it is passed over; "" if it may be asked
}

// look says what is known of server for a query to zone.
func (in *Infra) look(server netip.AddrPort, zone string, now time.Time) choice {
	s := in.shard(server)
	s.mu.Lock()
	defer s.mu.Unlock()
	if until, ok := s.lame[lameKey{server, zone}]; ok {
		if now.Before(until) {
			return choice{passed: fmt.Sprintf("lame for %s (forgotten in %v)", zone, until.Sub(now).Round(time.Second))}
		}
		delete(s.lame, lameKey{server, zone})
	}
	h := in.get(s, server, now)
	if h == nil {
		return choice{est: unknownRTT}
	}
	c := choice{est: h.estimate(), known: true}
	if h.rto >= probeRTO {
		if now.Before(h.probe) {
			c.passed = fmt.Sprintf("not answering (timeout backed off to %v, next probe in %v)", h.rto, h.probe.Sub(now).Round(time.Second))
		}
		c.probe = true
	}
	return c
}

// order sorts the targets to ask for a query to zone (on port), in place:
// those passed over (lame for the zone, or backed off and not due for a
// probe) go to the end, and are described in passed; of the others, the
// first n, those whose estimate is within rttBand of the best come first
// in random order, then the rest fastest first, probes last. Each
// target's sel says why it is where it is, when explain is set (for a
// trace). In place, with its working space on the stack for a zone's
// usual few addresses: the slices it and ask made were 5 of the 37
// allocations and 900 of the 3400 bytes of a resolution of
// BenchmarkMixResolve.
func (in *Infra) order(zone string, port uint16, ts []target, explain bool) (n int, passed []string) {
	if len(ts) == 0 {
		return 0, nil
	}
	now := in.now()
	if len(ts) == 1 {
		// One server, as a zone whose servers share an address has, or
		// the last address left: nothing to sort.
		t := &ts[0]
		c := in.look(t.server(port), zone, now)
		if c.passed != "" {
			return 0, []string{fmt.Sprintf("%s (%s) %s", t.name, t.addr, c.passed)}
		}
		if explain {
			t.sel = selection(c, false, 1)
		}
		return 1, nil
	}
	// A candidate: a target's index in ts and its choice.
	type cand struct {
		i int
		c choice
	}
	const few = 8
	var csBuf [few]cand
	cs := csBuf[:0]
	best := time.Duration(-1)
	for i := range ts {
		t := &ts[i]
		c := in.look(t.server(port), zone, now)
		if c.passed != "" {
			passed = append(passed, fmt.Sprintf("%s (%s) %s", t.name, t.addr, c.passed))
			continue
		}
		cs = append(cs, cand{i, c})
		if !c.probe && (best < 0 || c.est < best) {
			best = c.est
		}
	}
	inBand := func(c choice) bool { return !c.probe && c.est-best <= rttBand }
	// Indices into cs: the band, the rest; then perm, the index in ts
	// of each target in its new place, those passed over last.
	var ixBuf [3 * few]int
	ix := ixBuf[:]
	if len(cs)+len(ts)+len(ts) > len(ix) {
		ix = make([]int, len(cs)+2*len(ts))
	}
	band, rest, perm := ix[:0:len(cs)], ix[len(cs):len(cs):len(cs)+len(ts)], ix[len(cs)+len(ts):len(cs)+len(ts)]
	for i, c := range cs {
		if inBand(c.c) {
			band = append(band, i)
		} else {
			rest = append(rest, i)
		}
	}
	nBand := len(band)
	// The band drawn at random (a Rand that returns 0 keeps the given
	// order: tests), then the rest.
	for len(band) > 0 {
		j := in.rand(len(band))
		perm = append(perm, band[j])
		band = append(band[:j], band[j+1:]...)
	}
	slices.SortStableFunc(rest, func(a, b int) int {
		if pa, pb := cs[a].c.probe, cs[b].c.probe; pa != pb {
			if pa {
				return 1
			}
			return -1
		}
		return cmp.Compare(cs[a].c.est, cs[b].c.est)
	})
	perm = append(perm, rest...)
	for k, ci := range perm {
		c := cs[ci]
		if explain {
			// Nobody else reads it: formatting it would cost most of
			// what choosing costs.
			ts[c.i].sel = selection(c.c, inBand(c.c), nBand)
		}
		perm[k] = c.i
	}
	// Those passed over: the indices of ts not in cs.
	for i, j := 0, 0; i < len(ts); i++ {
		if j < len(cs) && cs[j].i == i {
			j++
			continue
		}
		perm = append(perm, i)
	}
	// ts[k] = ts[perm[k]] in place: each element's place is found by
	// following perm past the places filled already.
	for k, j := range perm {
		for j < k {
			j = perm[j]
		}
		ts[k], ts[j] = ts[j], ts[k]
	}
	return len(cs), passed
}

// selection says why order put a server where it did (Step.Selection):
// its choice c, whether it was in the band of the n drawn at random.
func selection(c choice, inBand bool, n int) string {
	var sel string
	switch {
	case c.probe:
		sel = fmt.Sprintf("probe of a server not answering (timeout %v)", c.est)
	case !c.known:
		sel = fmt.Sprintf("never asked (estimate %v)", unknownRTT)
	default:
		sel = fmt.Sprintf("estimate %v", c.est.Round(10*time.Microsecond))
	}
	if inBand && n > 1 {
		sel += fmt.Sprintf(", drawn among %d within %v of the best", n, rttBand)
	}
	return sel
}

// attempt returns how to ask server now: the time to wait for its answer
// (its timeout, at most MaxWait), the timeout itself (for timedOut), and
// whether to ask without EDNS. A server due for a probe has its next
// probe put off by its timeout, so that concurrent queries pass it over.
func (in *Infra) attempt(server netip.AddrPort) (wait, rto time.Duration, noEDNS bool) {
	now := in.now()
	s := in.shard(server)
	s.mu.Lock()
	defer s.mu.Unlock()
	h := in.get(s, server, now)
	if h == nil {
		return min(unknownRTT, in.maxWait), unknownRTT, false
	}
	if h.rto >= probeRTO {
		// Unbound's probedelay: the timeout rounded up to seconds, and
		// one more, so that this probe has timed out before the next.
		h.probe = now.Add(h.rto.Round(time.Second) + time.Second)
	}
	return min(h.rto, in.maxWait), h.rto, h.noEDNS
}

// answered records an answer from server after rtt, and what the answer
// said of its EDNS support.
func (in *Infra) answered(server netip.AddrPort, rtt time.Duration, rep upstream.Report) {
	in.metrics.Upstream(rtt, false)
	now := in.now()
	s := in.shard(server)
	s.mu.Lock()
	defer s.mu.Unlock()
	h := in.make(s, server, now)
	if h.estimate() >= maxRTO {
		// Back from the dead: start afresh.
		h.srtt, h.rttvar = 0, unknownRTT/4
	}
	// RFC 6298 §2.3 (Unbound's rtt_update): g = 1/8, h = 1/4.
	delta := rtt - h.srtt
	h.srtt += delta / 8
	h.rttvar += (max(delta, -delta) - h.rttvar) / 4
	h.rto = min(max(h.srtt+4*h.rttvar, minRTO), maxRTO)
	h.probe = time.Time{}
	switch {
	case rep.EDNSAnswered:
		h.ednsOK, h.noEDNS = true, false
	case rep.EDNSRejected && !h.ednsOK:
		h.noEDNS = true
	}
}

// timedOut records that server did not answer within the timeout rto it
// was asked with: the timeout doubles (RFC 6298 §5.5), unless an answer
// meanwhile lowered it, and doubling the timeout the query was sent with,
// not the current one, keeps concurrent timeouts from compounding
// (Unbound's rtt_lost).
func (in *Infra) timedOut(server netip.AddrPort, rto time.Duration) {
	in.metrics.Upstream(0, true)
	now := in.now()
	s := in.shard(server)
	s.mu.Lock()
	defer s.mu.Unlock()
	h := in.make(s, server, now)
	if h.rto < rto {
		return
	}
	h.rto = min(max(h.rto, 2*rto), maxRTO)
}

// lame records server as lame for zone when err, why its answer to q was
// not usable, says that it does not serve the zone. The answer to a
// priming query is left out: the hints are the operator's, and priming
// tries them again on its own timer (RFC 8109 §3).
func (in *Infra) lame(server netip.AddrPort, zone string, q dns.Question, err error) {
	if _, ok := errors.AsType[notServing](err); ok && !(zone == "." && q.Name == "." && q.Qtype == dns.TypeNS) {
		in.setLame(server, zone)
	}
}

// setLame records that server does not serve zone (it refused, answered
// without authority, or referred upwards) until HostTTL has passed.
func (in *Infra) setLame(server netip.AddrPort, zone string) {
	now := in.now()
	s := in.shard(server)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.lame) >= in.perHost {
		evict(s.lame, func(until time.Time) bool { return now.After(until) })
	}
	s.lame[lameKey{server, zone}] = now.Add(in.ttl)
}

// notServing marks an error of sort that says the server does not serve
// the zone (it refused, answered without authority, or about names out of
// the zone): the server is remembered as lame for the zone. Other unusable
// answers (SERVFAIL, an oversized RRset) are about one question, and only
// pass the server over for it.
type notServing struct{ error }

func (e notServing) Unwrap() error { return e.error }

// choose orders the addresses ts of servers of zone for asking, in place,
// and returns those to ask, the first of ts: IPv4 before IPv6 (a host
// without IPv6 routes loses a try on each), each family as the
// infrastructure cache orders it. The servers it passes over go to pass,
// and are listed in the first chosen target's trace step; they stay in
// ts, behind those returned, where iterate looks for the addresses it
// has already (tried, since 0a59572): one written over there (an IPv4
// address passed over, where IPv6 ones were chosen) would be added again
// when another NS name resolves to it, and passed over, or asked, a
// second time (TestPassedOverOnce).
func (ru *run) choose(zone string, ts []target, pass func(reason, short string)) []target {
	// The IPv4 addresses moved to the front, each family in its order.
	n4 := toFront(ts, func(t *target) bool { return t.addr.Is4() })
	explain := ru.r.trace != nil
	m4, passed := ru.r.infra.order(zone, ru.r.port, ts[:n4], explain)
	m6, p6 := ru.r.infra.order(zone, ru.r.port, ts[n4:], explain)
	passed = append(passed, p6...)
	// The IPv6 addresses chosen moved ahead of the IPv4 ones passed
	// over (a rotation of the two runs: three reversals in place).
	mid := ts[m4 : n4+m6]
	slices.Reverse(mid[:n4-m4])
	slices.Reverse(mid[n4-m4:])
	slices.Reverse(mid)
	out := ts[:m4+m6]
	for _, p := range passed {
		pass(p, p)
	}
	if len(out) > 0 {
		out[0].passed = passed
	}
	return out
}

// exchange asks server as the infrastructure cache says (the time to wait,
// with or without EDNS) and tells it how that went: the round trip of an
// answer, or a timeout. The wait goes to the Exchanger as
// upstream.Options when it takes them (a TCP retry then gets its own
// time), else as the context's deadline. A resolution out of time is not
// the server's fault and is not counted against it.
func (ru *run) exchange(ctx context.Context, server netip.AddrPort, q dns.Question, st *Step) (*dns.Msg, error) {
	in := ru.r.infra
	wait, rto, noEDNS := in.attempt(server)
	st.Timeout = wait
	start := in.now()
	var m *dns.Msg
	var rep upstream.Report
	var err error
	if ox, ok := ru.r.ex.(upstream.OptionsExchanger); ok {
		m, rep, err = ox.ExchangeOptions(ctx, server, q, upstream.Options{UDPTimeout: wait, NoEDNS: noEDNS, Recursive: st.Recursive, ExactCase: st.CaseRandom, DNSSEC: !ru.r.noDNSSEC})
	} else if st.Recursive {
		// A plain Exchanger cannot set RD: a forwarder would answer
		// as if asked by an authority's peer.
		err = errors.New("the Exchanger cannot ask with RD=1 (not an upstream.OptionsExchanger)")
	} else {
		actx, cancel := context.WithTimeout(ctx, wait)
		m, err = ru.r.ex.Exchange(actx, server, q)
		cancel()
	}
	st.Took = in.now().Sub(start)
	switch {
	case err == nil:
		if rep.RTT <= 0 {
			rep.RTT = st.Took
		}
		in.answered(server, rep.RTT, rep)
	case ctx.Err() == nil:
		in.timedOut(server, rto)
	}
	return m, err
}
