package metrics

import (
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tern-dns/tern/internal/cache"
)

// Set is every counter of one server process: the workers' Shards, the
// zone indexes, and the shared counters of what is not per query. Its
// methods are safe for concurrent use, and a nil *Set counts nothing
// (metrics off): its Shards are nil, its zone indexes 0.
type Set struct {
	mu     sync.Mutex
	shards []*Shard
	// free are the Shards of workers that are gone (Attach), reused by
	// the next worker of their server so that their counts go on.
	free [numServers][]*Shard

	zoneIdx   map[string]uint32
	zoneNames []string // by index; [0] is no zone
	// zoneLast is each zone's last event (ZoneEvent), for the status
	// page; zoneEvents counts them.
	zoneLast   map[string]ZoneLast
	zoneEvents [numEvents][2]atomic.Uint64 // ok, failed
	zoneTook   [numEvents]histogram

	// What the resolver counts per resolution and per upstream
	// exchange, and its deferred answers, sent from resolutions'
	// goroutines (shared atomics: each of these costs a lock or a
	// system call already).
	resolutions histogram
	validation  [numSecurity]atomic.Uint64
	deferred    [2 * numQtypes * numRcodes]atomic.Uint64
	upstream    histogram
	timeouts    atomic.Uint64

	// zones reports the zones' states at scrape time (SetZones).
	zones atomic.Pointer[func() []ZoneState]
	// cache reports the resolver's caches' sizes at scrape time
	// (SetResolverCache).
	cache atomic.Pointer[func() CacheSize]
	// sampler keeps the busiest names and clients, history the query
	// rates, for the status page (Tick).
	sampler *sampler
	history history
}

// New returns an empty Set.
func New() *Set {
	return &Set{zoneIdx: map[string]uint32{}, zoneNames: []string{""}, zoneLast: map[string]ZoneLast{}, sampler: &sampler{}}
}

// Shard returns a new Shard for a worker of srv, kept for as long as
// the Set (a worker that never goes away: a UDP socket's); nil on a nil
// Set.
func (s *Set) Shard(srv Server) *Shard {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.free[srv]; len(f) > 0 {
		m := f[len(f)-1]
		s.free[srv] = f[:len(f)-1]
		return m
	}
	m := newShard(srv)
	s.shards = append(s.shards, m)
	return m
}

// Attach returns a Shard for owner, a worker that may be dropped (a TCP
// answerer the server's sync.Pool lets go at a collection): when owner is
// collected its Shard goes back to s, for the next worker of srv, so
// that its counts are neither lost nor does the Set grow with every pool
// refill. nil on a nil Set.
func Attach[T any](s *Set, owner *T, srv Server) *Shard {
	m := s.Shard(srv)
	if m != nil {
		runtime.AddCleanup(owner, s.release, m)
	}
	return m
}

// release takes back the Shard of a worker gone; what it counted was
// published by its last Flush.
func (s *Set) release(m *Shard) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free[m.server] = append(s.free[m.server], m)
}

// Zone returns the index origin's queries are counted under
// (Shard.Answered), the same for as long as the Set lives; 0 (not
// counted by zone) on a nil Set and past MaxZones zones.
func (s *Set) Zone(origin string) uint32 {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.zoneIdx[origin]; ok {
		return i
	}
	if len(s.zoneNames) > MaxZones {
		return 0
	}
	i := uint32(len(s.zoneNames))
	s.zoneIdx[origin] = i
	s.zoneNames = append(s.zoneNames, origin)
	return i
}

// Event is a zone's event counted by ZoneEvent.
type Event uint8

// The zone events.
const (
	// Load: the zone's file read (at start, reload), or its signed
	// version made.
	Load Event = iota
	// Refresh: a secondary's SOA query to its primaries, with the
	// transfer it led to, if any.
	Refresh
	// Transfer: a secondary's transfer in (IXFR or AXFR).
	Transfer
	numEvents
)

var eventNames = [numEvents]string{"load", "refresh", "transfer"}

// String names e in lower case (load, refresh, transfer).
func (e Event) String() string { return eventNames[e] }

// ZoneLast is the last event of a zone, for the status page.
type ZoneLast struct {
	Event Event
	At    time.Time
	Took  time.Duration
	Err   string // "" when it succeeded
}

// ZoneEvent counts an event of the zone origin that ended at the time
// now with err (nil: success) after took.
func (s *Set) ZoneEvent(origin string, ev Event, err error, took time.Duration) {
	if s == nil {
		return
	}
	r := 0
	last := ZoneLast{Event: ev, At: time.Now(), Took: took}
	if err != nil {
		r = 1
		last.Err = err.Error()
	}
	s.zoneEvents[ev][r].Add(1)
	s.zoneTook[ev].observe(took)
	s.mu.Lock()
	s.zoneLast[origin] = last
	s.mu.Unlock()
}

// ZoneState is a zone as the metrics and the status page show it.
type ZoneState struct {
	Origin string `json:"origin"`
	// Role is "primary" (served from a file) or "secondary".
	Role   string `json:"role"`
	Serial uint32 `json:"serial"`
	// Serving: the zone has data (not failed, not expired).
	Serving bool `json:"serving"`
	// Expires is when a secondary stops serving without a refresh;
	// zero when not known.
	Expires time.Time `json:"expires,omitzero"`
}

// SetZones makes fn report the zones' states at each scrape.
func (s *Set) SetZones(fn func() []ZoneState) {
	if s != nil {
		s.zones.Store(&fn)
	}
}

// CacheSize is what the resolver's caches hold at one moment.
type CacheSize struct {
	// RRsets and Negative are the RRset cache's positive entries (each
	// an RRset with its RRSIGs) and its NXDOMAIN and NODATA entries,
	// live or expired but not yet evicted; Bytes what they cost by the
	// measure its cache-size bounds (cache.Stats).
	RRsets   int64 `json:"rrsets"`
	Negative int64 `json:"negative"`
	Bytes    int64 `json:"bytes"`
	// Responses and ResponseBytes are the workers' response caches'
	// responses and bytes, all workers together (cache.Responses.Held).
	Responses     int64 `json:"responses"`
	ResponseBytes int64 `json:"response_bytes"`
}

// SetResolverCache makes fn report the resolver's caches' sizes at each
// scrape and snapshot; fn reads what the caches publish, never the query
// path's state.
func (s *Set) SetResolverCache(fn func() CacheSize) {
	if s != nil {
		s.cache.Store(&fn)
	}
}

// resolverCache is the resolver's caches' sizes now, nil without a
// resolver.
func (s *Set) resolverCache() *CacheSize {
	fn := s.cache.Load()
	if fn == nil {
		return nil
	}
	c := (*fn)()
	return &c
}

// zoneStates are the zones' states, sorted by origin, with their last
// events.
func (s *Set) zoneStates() ([]ZoneState, map[string]ZoneLast) {
	var zs []ZoneState
	if fn := s.zones.Load(); fn != nil {
		zs = (*fn)()
	}
	sort.Slice(zs, func(i, j int) bool { return zs[i].Origin < zs[j].Origin })
	s.mu.Lock()
	last := make(map[string]ZoneLast, len(s.zoneLast))
	for k, v := range s.zoneLast {
		last[k] = v
	}
	s.mu.Unlock()
	return zs, last
}

// securityNames are cache.Security's outcomes, in its order
// (unchecked: validation off).
var securityNames = [...]string{cache.Unchecked: "unchecked", cache.Secure: "secure", cache.Insecure: "insecure", cache.Bogus: "bogus"}

const numSecurity = len(securityNames)

// Resolved counts a resolution that took d and ended with sec.
func (s *Set) Resolved(d time.Duration, sec cache.Security) {
	if s == nil {
		return
	}
	s.resolutions.observe(d)
	if int(sec) < numSecurity {
		s.validation[sec].Add(1)
	}
}

// DeferredAnswer counts a resolver's answer resp (nil: none sent) to a
// query of qtype that waited on a resolution, sent from the
// resolution's goroutine.
func (s *Set) DeferredAnswer(tcp bool, qtype uint16, resp []byte) {
	if s == nil || len(resp) < 4 {
		return
	}
	t := 0
	if tcp {
		t = 1
	}
	s.deferred[(t*numQtypes+qtypeBucket(qtype))*numRcodes+int(resp[3]&0xF)].Add(1)
}

// Upstream counts an exchange with an authority that took rtt, or that
// timed out.
func (s *Set) Upstream(rtt time.Duration, timedOut bool) {
	if s == nil {
		return
	}
	if timedOut {
		s.timeouts.Add(1)
		return
	}
	s.upstream.observe(rtt)
}

// histogram is a latency histogram of shared atomics.
type histogram struct {
	b   [numLatency]atomic.Uint64
	sum atomic.Uint64 // nanoseconds
}

func (h *histogram) observe(d time.Duration) {
	b := 0
	for b < len(latencyNanos) && int64(d) > latencyNanos[b] {
		b++
	}
	h.b[b].Add(1)
	h.sum.Add(uint64(max(d, 0)))
}
