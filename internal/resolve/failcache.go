package resolve

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// The bounds of how long a failure is remembered: RFC 9520 §3.2, at
// least 1 second and at most 5 minutes; its example of a first hold of 5
// seconds doubled by each failure in a row is the default.
const (
	minFailureTTL     = time.Second
	maxFailureTTL     = 5 * time.Minute
	defaultFailureTTL = 5 * time.Second
	// maxFailures bounds the questions whose failures are remembered.
	maxFailures = 10000
)

// failures remembers failed resolutions (RFC 9520): the question (name,
// type) fails again from memory, without an upstream query, until its
// hold ends; a failure in a row after that doubles the hold, up to
// maxFailureTTL, and a success forgets it. Sharded by question, each shard
// behind its own mutex (a resolution, not a cache hit, takes it).
type failures struct {
	shards [failShards]failShard
	seed   maphash.Seed
	first  time.Duration // the first hold
}

const failShards = 16

type failShard struct {
	mu sync.Mutex
	m  map[failKey]*failure
}

type failKey struct {
	name  string
	qtype uint16
}

// failure is a remembered failure.
type failure struct {
	err   Error
	until time.Time     // failing from memory until then
	hold  time.Duration // how long it was held for
}

// newFailures returns an empty failure cache whose first hold is first
// (clamped to RFC 9520's bounds), or nil (no failure caching) when first
// is negative.
func newFailures(first time.Duration) *failures {
	if first < 0 {
		return nil
	}
	if first == 0 {
		first = defaultFailureTTL
	}
	f := &failures{seed: maphash.MakeSeed(), first: min(max(first, minFailureTTL), maxFailureTTL)}
	for i := range f.shards {
		f.shards[i].m = map[failKey]*failure{}
	}
	return f
}

func (f *failures) shard(k failKey) *failShard {
	return &f.shards[maphash.Comparable(f.seed, k)%failShards]
}

// get returns the failure remembered for (name, qtype) at now, nil if
// there is none or its hold is over.
func (f *failures) get(name string, qtype uint16, now time.Time) *Error {
	if f == nil {
		return nil
	}
	k := failKey{name, qtype}
	s := f.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	fl := s.m[k]
	if fl == nil || !now.Before(fl.until) {
		return nil
	}
	e := fl.err
	e.Cached = true
	return &e
}

// put remembers the failure err of (name, qtype) at now: for the first
// hold, or twice the last one if that ended less than its own length ago
// (a failure in a row).
func (f *failures) put(name string, qtype uint16, err error, now time.Time) {
	e, ok := errors.AsType[*Error](err)
	if f == nil || !ok {
		return
	}
	k := failKey{name, qtype}
	s := f.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	hold := f.first
	if fl := s.m[k]; fl != nil && now.Before(fl.until.Add(fl.hold)) {
		hold = min(2*fl.hold, maxFailureTTL)
	}
	if _, ok := s.m[k]; !ok && len(s.m) >= maxFailures/failShards {
		evict(s.m, func(fl *failure) bool { return !now.Before(fl.until.Add(fl.hold)) })
	}
	s.m[k] = &failure{err: *e, until: now.Add(hold), hold: hold}
}

// forget drops what is remembered of (name, qtype): it resolved.
func (f *failures) forget(name string, qtype uint16) {
	if f == nil {
		return
	}
	k := failKey{name, qtype}
	s := f.shard(k)
	s.mu.Lock()
	delete(s.m, k)
	s.mu.Unlock()
}

// evict makes room in a full map: the entries expired go, and if none
// was, an eighth of them at random (Go's map order), so that filling a map
// costs a scan per eighth of it, not per entry.
func evict[K comparable, V any](m map[K]V, expired func(V) bool) {
	n := len(m)
	maps.DeleteFunc(m, func(_ K, v V) bool { return expired(v) })
	for k := range m {
		if len(m) < n-n/8 {
			return
		}
		delete(m, k)
	}
}

// nsResolve resolves the name server name ns (type qtype) for the run,
// through the failure cache: a name that did not resolve is not resolved
// again while its failure is remembered. This is the defence against the
// non-responsive delegation attacks (NRDelegationAttack, CVE-2022-2795
// and kin): a delegation to names that never resolve would otherwise cost
// their resolutions on every client query under it. A failure of the run
// itself (its time or query budget spent) is not the name's and is not
// remembered.
func (ru *run) nsResolve(ctx context.Context, ns string, qtype uint16, depth int) (*Result, error) {
	if e := ru.r.fails.get(ns, qtype, ru.r.now()); e != nil {
		return nil, fmt.Errorf("%s %s: its failure is remembered (RFC 9520): %s", ns, dns.Type(qtype), e.Reason)
	}
	before := ru.queries
	res, err := ru.resolve(ctx, ns, qtype, depth)
	switch {
	case err == nil && ru.queries > before:
		ru.r.fails.forget(ns, qtype)
	case err != nil && !fatal(err):
		ru.r.fails.put(ns, qtype, err, ru.r.now())
	}
	return res, err
}
