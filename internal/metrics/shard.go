// Package metrics counts what Tern's servers do and exposes it to
// Prometheus (client_golang), on an HTTP listener of its own; Snapshot
// and the sampled busiest names and clients are there for issue 15's
// status page (Listen serves it at /, Status).
//
// Queries are counted per worker: each server worker (a UDP socket's
// goroutine, a pooled TCP answerer) owns a Shard and is its only writer.
// A Shard counts in plain integers, read by nobody else, and publishes
// the counters a batch of queries changed into atomics at the end of the
// batch (Flush): an atomic store per distinct counter touched, so that a
// batch of 32 similar queries pays for a handful of stores instead of
// four locked increments per query (an uncontended atomic add costs
// 11 ns on this project's VMs, four per query about 45 ns, 1.5-3% of an
// answer's CPU). Nothing is shared between workers on the query path: no
// lock, no shared atomic write, no allocation, no interface call. The
// Collector sums the shards' published atomics when Prometheus scrapes.
//
// What is not per query (zone loads and transfers, resolutions, upstream
// exchanges) is counted in shared atomics (Events, Resolver): each of
// those already costs a lock or a system call.
package metrics

import (
	mbits "math/bits"
	"sync/atomic"
	"time"
	"unsafe"
)

// Server names the listeners a Shard counts for.
type Server uint8

// The servers.
const (
	Auth Server = iota
	Resolver
	numServers
)

// String names s.
func (s Server) String() string {
	if s == Resolver {
		return "resolver"
	}
	return "auth"
}

// qtypes are the query types counted by name; every other counts as
// "other", and a query whose question did not parse as "none".
var qtypes = [...]struct {
	t    uint16
	name string
}{
	{0, "none"}, {1, "A"}, {2, "NS"}, {5, "CNAME"}, {6, "SOA"}, {12, "PTR"},
	{15, "MX"}, {16, "TXT"}, {28, "AAAA"}, {33, "SRV"}, {35, "NAPTR"},
	{39, "DNAME"}, {43, "DS"}, {46, "RRSIG"}, {47, "NSEC"}, {48, "DNSKEY"},
	{50, "NSEC3"}, {51, "NSEC3PARAM"}, {52, "TLSA"}, {59, "CDS"},
	{60, "CDNSKEY"}, {64, "SVCB"}, {65, "HTTPS"}, {99, "SPF"}, {251, "IXFR"},
	{252, "AXFR"}, {255, "ANY"}, {257, "CAA"},
}

const (
	numQtypes  = len(qtypes) + 1 // and "other"
	otherQtype = len(qtypes)
	numRcodes  = 16 // the header's RCODE; extended ones count by their low bits
)

// qtypeIndex maps a QTYPE below 256 to its bucket (0 when not named);
// built once, read only.
var qtypeIndex = func() (t [256]uint8) {
	for i, q := range qtypes {
		if q.t < 256 {
			t[q.t] = uint8(i)
		}
	}
	return t
}()

// qtypeCell maps a transport (0: UDP, 1: TCP) and a QTYPE below 256 to
// the first of its row of query counters (offQueries +
// (transport*numQtypes + bucket)*numRcodes), unnamed ones to "other"'s:
// Answered's one load for the common QTYPEs; built once, read only.
var qtypeCell = func() (t [2][256]uint16) {
	for tr := range t {
		for q := range t[tr] {
			t[tr][q] = uint16(offQueries + (tr*numQtypes+qtypeBucket(uint16(q)))*numRcodes)
		}
	}
	return t
}()

// qtypeBucket is t's bucket.
func qtypeBucket(t uint16) int {
	switch {
	case t == 0:
		return 0
	case t < 256:
		if i := qtypeIndex[t]; i != 0 {
			return int(i)
		}
	case t == 257:
		return len(qtypes) - 1
	}
	return otherQtype
}

// rcodeNames are RFC 6895 §2.3's names of the header RCODEs.
var rcodeNames = [numRcodes]string{
	"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED",
	"YXDOMAIN", "YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE", "DSOTYPENI",
	"RCODE12", "RCODE13", "RCODE14", "RCODE15",
}

// sizeBounds are the upper bounds of the response-size histogram's
// buckets, in bytes: the classic 512 limit, the default EDNS payload
// (1232), Ethernet's MTU, and TCP's sizes.
var sizeBounds = [...]int{64, 128, 256, 512, 768, 1024, 1232, 1500, 4096, 16384, 65535}

// sizeSmall is the largest size sizeQuad buckets: up to Ethernet's MTU,
// nearly every response.
const sizeSmall = 1500

// sizeQuad is the counter of a response of n bytes (n <= sizeSmall)
// over a transport (0: UDP, 1: TCP), at [transport][(n+3)/4]: every
// bound up to sizeSmall is a multiple of 4, so n and its quarter
// rounded up fall on the same side of each. One load instead of a loop
// over the bounds; built once, read only. A row has 512 entries, a
// power of two, so that the row's offset is a shift.
var sizeQuad = func() (t [2][512]uint8) {
	for tr := range t {
		for q := range (sizeSmall+3)/4 + 1 {
			t[tr][q] = uint8(offSizes + tr*numSizes + sizeBucket(4*q))
		}
	}
	return t
}()

// sizeBucket is the bucket of a response of n bytes, by the bounds.
func sizeBucket(n int) int {
	b := 0
	for b < len(sizeBounds) && n > sizeBounds[b] {
		b++
	}
	return b
}

// latencyBounds are the upper bounds of the latency histograms'
// buckets, in seconds: from an authoritative answer's microseconds to a
// resolution's seconds.
var latencyBounds = [...]float64{1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4,
	1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// latencyNanos are latencyBounds in nanoseconds, for Observe.
var latencyNanos = func() (n [len(latencyBounds)]int64) {
	for i, b := range latencyBounds {
		n[i] = int64(b*1e9 + 0.5)
	}
	return n
}()

// Drop says why a query got no answer.
type Drop uint8

// The reasons a query is dropped.
const (
	// DropMalformed: not a query at all (shorter than a header, a
	// response), or too long to read.
	DropMalformed Drop = iota
	// DropLimit: over the resolver's limits (max-per-client,
	// max-waiting).
	DropLimit
	// DropRRL: response rate limiting (a drop or a slip).
	DropRRL
	// DropDnstap: answered, but its dnstap record dropped (the
	// worker's queue full, or the record larger than a slot).
	DropDnstap
	numDrops
)

var dropNames = [numDrops]string{"malformed", "limit", "rrl", "dnstap"}

// Cookie is what the DNS cookie layer (internal/cookie) found in a
// query and did with it (RFC 7873, RFC 9018).
type Cookie uint8

// The cookie outcomes.
const (
	// CookieNone: no COOKIE option.
	CookieNone Cookie = iota
	// CookieClientOnly: a client cookie alone (RFC 7873 §5.2.3).
	CookieClientOnly
	// CookieValid: a valid server cookie of ours.
	CookieValid
	// CookieRefreshed: a valid server cookie older than the refresh
	// age, answered with a fresh one (RFC 9018 §4.3).
	CookieRefreshed
	// CookieBad: a server cookie not ours (or expired) over TCP,
	// answered with a fresh one (RFC 7873 §5.2.3).
	CookieBad
	// CookieMalformed: a malformed COOKIE option, answered FORMERR
	// (RFC 7873 §5.2.2).
	CookieMalformed
	// CookieBadCookie: a server cookie not ours over UDP, answered
	// BADCOOKIE (RFC 7873 §5.2.4).
	CookieBadCookie
	numCookies
)

var cookieNames = [numCookies]string{"none", "client-only", "valid", "refreshed", "bad", "malformed", "badcookie"}

// The layout of a Shard's counters: one flat array, so that a batch's
// changed counters are bits of one bitmap (Shard.dirty). Every counter
// but the queries' fits in its first word, so that an answer's size,
// and its bytes, mark one word; the queries start at the second.
const (
	offSizes    = 0
	numSizes    = len(sizeBounds) + 1 // and +Inf
	offSizeSum  = offSizes + 2*numSizes
	offLatency  = offSizeSum + 2
	numLatency  = len(latencyBounds) + 1
	offLatSum   = offLatency + numLatency
	offDrops    = offLatSum + 1
	offCache    = offDrops + int(numDrops) // resolver response cache: hit, miss
	offCookies  = offCache + 2
	offQueries  = 64
	numCounters = offQueries + 2*numQtypes*numRcodes
	// localLen is numCounters rounded up to a power of two: an index
	// masked with localLen-1 needs no bounds check.
	localLen = 1024
)

// sizeBits are the size buckets' bits in the first word of the dirty
// bitmap, sumBits the size sums'.
const (
	sizeBits = 1<<(offSizes+2*numSizes) - 1<<offSizes
	sumBits  = 3 << offSizeSum
)

// The layout's rules, checked by the compiler: the counters other than
// the queries' in the first 64, all of them in localLen.
var (
	_ [offQueries - (offCookies + int(numCookies))]struct{}
	_ [localLen - numCounters]struct{}
)

// MaxZones bounds the zones counted by name (tern_zone_queries_total):
// the first MaxZones origins seen get a series each, later ones none.
const MaxZones = 10000

// Shard is one worker's counters. Only its owner writes it (the
// counting methods and Flush), from one goroutine at a time; the
// Collector reads what Flush published.
type Shard struct {
	// dirty has a bit for each counter changed since the last Flush
	// (counter i: bit i%64 of word i/64); the size sums' bits are set
	// by Flush when a size bucket's is. First in the struct: the
	// counting's first access, near enough to m's address that the
	// compiler needs no nil check.
	dirty [localLen / 64]uint64
	local [localLen]uint64
	// zoneCur is the zone of the last answers (FromZone), zoneRun how
	// many answers of it are not yet in zones: a worker's answers come
	// in runs of one zone (a single zone's server: one run), so an
	// answer costs a compare and an increment, and the run is added to
	// zones when another zone's answer comes, or at the Flush.
	zoneCur uint32
	zoneRun uint64
	// zones are the queries per zone index (see Set.Zone), grown as
	// indexes appear; zoneDirty lists those changed since Flush.
	zones     []uint64
	zoneDirty []uint32
	zoneMark  []bool

	pub    [numCounters]atomic.Uint64
	pubZon atomic.Pointer[[]atomic.Uint64]

	server Server
	// sampleIn counts down the queries to the next sampled one,
	// samples keeps them for the Set's sampler.
	sampleIn int
	samples  workerSamples
	// pad keeps the next allocation's counters off pub's last line.
	_ [64]byte
}

// shardSize is what one Shard costs, for the docs: about 35 KB (18 KB
// of them the status page's sample buffers).
const shardSize = unsafe.Sizeof(Shard{})

func newShard(s Server) *Shard {
	return &Shard{server: s, sampleIn: 1, zoneDirty: make([]uint32, 0, 8)}
}

// add adds n to counter i.
func (m *Shard) add(i int, n uint64) {
	i &= localLen - 1
	m.local[i] += n
	m.dirty[i/64] |= 1 << (i % 64)
}

// Answered counts one query answered with resp (at least a header): its
// transport, QTYPE (0: the question did not parse), and the response's
// RCODE and size; an authoritative answer's zone is counted by FromZone.
//
// It runs once per answer: a table load for the transport's and QTYPE's
// row of counters and one for the size's counter, three counters added,
// two words of the dirty bitmap marked, and no call, so that it needs
// no stack frame (about 40 instructions; auth's BenchmarkWorkerBatch
// under callgrind measures the whole of the counting).
func (m *Shard) Answered(tcp bool, qtype uint16, resp []byte) {
	n := uint(len(resp))
	var t uint
	if tcp {
		t = 1
	}
	c := uint(qtypeCell[t][qtype%256])
	if qtype >= 256 {
		c = uint(offQueries + (int(t)*numQtypes+qtypeBucket(qtype))*numRcodes)
	}
	if n > 3 {
		c += uint(resp[3] & 0xF)
	}
	c %= localLen
	m.dirty[c/64] |= 1 << (c % 64)
	m.local[c]++
	var b uint
	if n <= sizeSmall {
		b = uint(sizeQuad[t][(n+3)/4])
	} else {
		b = offSizes + t*uint(numSizes) + uint(sizeBucket(int(n)))
	}
	b %= 64
	m.dirty[0] |= 1 << b
	m.local[b]++
	m.local[(uint(offSizeSum)+t)%64] += uint64(n) // marked by Flush
}

// FromZone counts an answer from the zone of index z (Set.Zone; 0: none),
// as a run: a worker's answers come in runs of one zone (a server of a
// single zone: one run), so that an answer costs a compare and an
// increment here, and the run is added to the zone's counter when an
// answer from another zone comes, or at the Flush.
func (m *Shard) FromZone(z uint32) {
	if z != m.zoneCur {
		m.zoneSwitch(z)
	}
	m.zoneRun++
}

// zoneSwitch adds the current zone's run to its counter and starts
// zone z's.
func (m *Shard) zoneSwitch(z uint32) {
	m.zoneFold()
	m.zoneCur = z
}

// zoneFold adds the run of answers of the current zone to its counter.
func (m *Shard) zoneFold() {
	z, n := m.zoneCur, m.zoneRun
	m.zoneRun = 0
	if z == 0 || n == 0 {
		return
	}
	if int(z) >= len(m.zones) {
		size := max(int(z)+1, 2*len(m.zones), 8)
		m.zones = append(m.zones, make([]uint64, size-len(m.zones))...)
		m.zoneMark = append(m.zoneMark, make([]bool, size-len(m.zoneMark))...)
	}
	m.zones[z] += n
	if !m.zoneMark[z] {
		m.zoneMark[z] = true
		m.zoneDirty = append(m.zoneDirty, z)
	}
}

// Dropped counts a query that got no answer, and why.
func (m *Shard) Dropped(why Drop) { m.add(offDrops+int(why), 1) }

// Cookies counts n queries whose DNS cookie had outcome c.
func (m *Shard) Cookies(c Cookie, n int) { m.add(offCookies+int(c), uint64(n)) }

// CacheLookup counts a look in the resolver's response cache.
func (m *Shard) CacheLookup(hit bool) {
	if hit {
		m.add(offCache, 1)
	} else {
		m.add(offCache+1, 1)
	}
}

// Observe counts n answers that took d altogether (a batch's answers
// share its time), in the answer-latency histogram.
func (m *Shard) Observe(d time.Duration, n int) {
	if n <= 0 {
		return
	}
	each := int64(d) / int64(n)
	b := 0
	for b < len(latencyNanos) && each > latencyNanos[b] {
		b++
	}
	m.add(offLatency+b, uint64(n))
	m.add(offLatSum, uint64(d))
}

// Flush publishes the counters changed since the last Flush, for the
// Collector, and hands its sampled queries to the sampler: called by
// the owner at the end of each batch.
func (m *Shard) Flush() {
	m.handOver()
	if m.dirty[0]&sizeBits != 0 {
		// Answered marks the size bucket, not the sum beside it.
		m.dirty[0] |= sumBits
	}
	for w, bits := range m.dirty {
		if bits == 0 {
			continue
		}
		m.dirty[w] = 0
		for ; bits != 0; bits &= bits - 1 {
			i := w*64 + mbits.TrailingZeros64(bits)
			m.pub[i].Store(m.local[i])
		}
	}
	m.zoneFold()
	if len(m.zoneDirty) == 0 {
		return
	}
	pz := m.pubZon.Load()
	if pz == nil || len(*pz) < len(m.zones) {
		// Grown: a new published array, the old values carried over
		// (only this goroutine writes them).
		grown := make([]atomic.Uint64, len(m.zones))
		if pz != nil {
			for i := range *pz {
				grown[i].Store((*pz)[i].Load())
			}
		}
		pz = &grown
		m.pubZon.Store(pz)
	}
	for _, z := range m.zoneDirty {
		(*pz)[z].Store(m.zones[z])
		m.zoneMark[z] = false
	}
	m.zoneDirty = m.zoneDirty[:0]
}
