// Package cache holds what the resolver learns: an RRset cache and a
// negative cache (RFC 2308) shared by every goroutine, and a response
// cache (Responses) that one worker owns for its cache hits. Each RRset
// and negative entry keeps what the validator found of it (Validated),
// and data found bogus goes after Options.BogusTTL.
//
// The RRset cache is split into shards by a hash of the name, each with
// its own lock and its own byte budget, so that concurrent lookups of
// different names rarely meet. A shard's map is keyed by name alone, and
// the entries of a name's types (at most MaxTypes) are chained from it:
// one lookup (Lookup) finds every type of a name, where a resolution
// asks for several (the type asked, the name's NXDOMAIN, its CNAME; NS,
// A and AAAA of a server's name). A lookup takes its shard's read lock
// (one atomic add on a lock shared with a sixteenth per CPU of the
// names) and writes nothing else shared once an entry is popular: an
// entry's use counter
// stops being written when it saturates. Eviction is CLOCK with a two-bit
// use counter per entry (as S3-FIFO and CLOCK-Pro approximate LFU): the
// hand lowers the counters of the entries it passes and evicts one found
// at zero, so that an entry used since the hand last passed survives a
// sweep and a one-off name does not push out what repeats.
//
// Why not github.com/maypok86/otter/v2 (v2.4.0, W-TinyLFU with striped
// read buffers), which the issue suggests: measured against it holding
// the same entries (the lookup alone, key to *entry, b.RunParallel, four
// interleaved runs on this shared 2-core machine, medians): 5,000 A
// RRsets, otter 775 ns/op (-cpu 1) and 600 (-cpu 2), the shards 300 and
// 185, so 2.5-3x faster; 100,000 RRsets (out of the CPU caches) both
// 1.0-2.5 us/op, too noisy to call. Otter's index cost 71 bytes per
// entry beyond key and value, the shards' map and ring about 48. Otter
// writes its read buffer and frequency sketch on every hit, and it would
// be a dependency outside the project's list for no measured gain.
//
// Records are stored in wire form, not as dns.RR structs: the owner name
// once (in the key), then each record's RDATA with its length, converted
// to dns.RR at the boundary (Get). An A RRset of one record under a
// 23-byte name costs 154 bytes of heap with its share of the map and
// ring (TestBytesPerRRset; Unbound: roughly 150-250).
package cache

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/miekg/dns"
)

// Kind says what an entry records about its name and type.
type Kind uint8

const (
	// Positive: the RRset of the name and type.
	Positive Kind = iota
	// NXDomain: the name does not exist (RFC 2308 §2.1), whatever the
	// type.
	NXDomain
	// NoData: the name exists but has no records of the type (RFC 2308
	// §2.2).
	NoData
)

// String names k: positive, NXDOMAIN or NODATA.
func (k Kind) String() string {
	switch k {
	case Positive:
		return "positive"
	case NXDomain:
		return "NXDOMAIN"
	case NoData:
		return "NODATA"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Rank is how credible data is, by where it came from (RFC 2181 §5.4.1).
// A lower rank never replaces a higher one that is still live.
type Rank uint8

const (
	// RankAdditional: the additional section (glue, addresses of NS
	// names), and the authority section of a non-authoritative answer
	// (the NS records of a referral).
	RankAdditional Rank = iota + 1
	// RankAnswer: the answer section of a non-authoritative answer (a
	// forwarder's), or non-authoritative data in an authoritative
	// answer's answer section.
	RankAnswer
	// RankAuthority: the authority section of an authoritative answer
	// (the SOA of a negative answer, the zone's own NS records).
	RankAuthority
	// RankAuthAnswer: authoritative data in the answer section of an
	// authoritative answer: the best a resolver gets.
	RankAuthAnswer
)

// Security is the DNSSEC validation state of an entry (RFC 4035 §4.3).
type Security uint8

const (
	// Unchecked: not validated (no validator, or not yet).
	Unchecked Security = iota
	// Secure: validated by a chain of trust from a trust anchor.
	Secure
	// Insecure: proved to be under an unsigned delegation.
	Insecure
	// Bogus: should have validated and did not.
	Bogus
)

// StaleTTL is the TTL of a stale answer (RFC 8767 §4: 30 seconds).
const StaleTTL = 30

// StaleClientTimeout is RFC 8767 §5's suggested client response timer:
// how long a client waits on a resolution before it gets stale data
// (Unbound: serve-expired-client-timeout 1800).
const StaleClientTimeout = 1800 * time.Millisecond

// Options configure a Cache; zero fields take the defaults.
type Options struct {
	// Size bounds the bytes the cache holds, entries and their share of
	// the index (default DefaultSize).
	Size int64
	// MinTTL and MaxTTL clamp the TTL of positive entries (default 0 and
	// one day, Unbound's cache-min-ttl and cache-max-ttl).
	MinTTL, MaxTTL uint32
	// MaxNegativeTTL bounds the TTL of negative entries (default one
	// hour, Unbound's cache-max-negative-ttl; RFC 2308 §5 suggests one
	// to three hours). MinTTL applies to them too.
	MaxNegativeTTL uint32
	// Stale is how long an expired entry is kept for serve-stale (RFC
	// 8767 §4: max-stale-ttl, suggested 1 to 3 days); 0 turns
	// serve-stale off and an expired entry is gone.
	Stale time.Duration
	// Now is the clock (default time.Now); tests advance their own.
	Now func() time.Time
	// BogusTTL is how long an entry found Bogus (SetValidated) stays:
	// it is then gone, and the data is asked again (default
	// DefaultBogusTTL, Unbound's val-bogus-ttl).
	BogusTTL time.Duration
}

// DefaultBogusTTL is how long bogus data is kept unless configured:
// Unbound's val-bogus-ttl, 60 seconds. Within it, every question of the
// data is answered from the finding (SERVFAIL, or the data for CD),
// without asking or checking again.
const DefaultBogusTTL = 60 * time.Second

// DefaultSize is the cache's size in bytes unless configured.
const DefaultSize = 256 << 20

// Default TTL bounds.
const (
	DefaultMaxTTL         = 86400
	DefaultMaxNegativeTTL = 3600
)

// Entry is what the cache holds for a name and type: an RRset, or a
// negative answer with the authority records that prove it.
type Entry struct {
	Kind Kind
	// Records is the RRset (Positive), or the authority section of a
	// negative answer: its SOA (RFC 2308 §5: a negative answer without
	// one is not cached) and any NSEC, NSEC3 and RRSIG records.
	Records []dns.RR
	// Sigs are the RRSIGs covering a positive RRset.
	Sigs []dns.RR
	// Rank is where the data came from.
	Rank Rank
	// Validated is what the validator found of the data (SetValidated),
	// nil until then. Get returns it; Put ignores it.
	Validated *Validated
	// TTL, from Get, is the seconds left (StaleTTL for a stale entry);
	// every record's TTL is set to it. Put ignores it and takes the
	// records' TTLs.
	TTL uint32
	// Stale is set on an entry past its TTL, returned by GetStale.
	Stale bool
}

// Validated is what a validator found of an entry's data (RFC 4035
// §4.3): kept with the entry, so that the data taken from the cache is
// not checked again while the finding holds.
type Validated struct {
	Security Security
	// EDE and Why say why the data is Bogus or Insecure (RFC 8914
	// INFO-CODE and EXTRA-TEXT).
	EDE uint16
	Why string
	// Until is when the finding stops holding, on the validator's clock
	// (which may not be the cache's): the earliest expiration of the
	// RRSIGs and of the chain of trust it follows from (RFC 4035 §5.3.3).
	// The user of the finding checks it.
	Until time.Time
}

// validation is a Validated as stored, with dead: for Bogus, when the
// entry goes, on the cache's clock (Options.BogusTTL).
type validation struct {
	v    Validated
	dead int64
}

// Cache is the RRset and negative cache. It is safe for concurrent use.
type Cache struct {
	shards []shard
	mask   uint64
	seed   maphash.Seed
	opt    Options
	stale  int64 // nanoseconds an expired entry is kept
	// dnames counts the DNAME RRsets the shards hold, live or not
	// (HasDNAME). It is written only when one is stored or removed.
	dnames atomic.Int64
}

// shard is a part of the cache with its own lock and budget.
type shard struct {
	mu sync.RWMutex
	// m holds the newest entry of each name, keyed by its name (its
	// key without the type), the name's other entries chained from it
	// (entry.next).
	m     map[string]*entry
	ring  []*entry // CLOCK order; nil slots are free
	free  []int32  // free slots of ring
	hand  int
	bytes int64
	limit int64
	// rrsets and negative count the entries of m by kind (Positive;
	// NXDomain and NoData), for Stats.
	rrsets, negative int
	// dnames is the cache's count of DNAME RRsets (Cache.dnames).
	dnames *atomic.Int64
	_      [64]byte // keeps the next shard's lock off this one's cache line
}

// entry is one stored RRset or negative answer. Its fields are never
// written after it is stored but use, val and next (and slot, under the
// shard's write lock): a replacement is a new entry.
type entry struct {
	// data is the key (the canonical name then the type, two bytes)
	// followed by the records: Positive, each RRset record's RDATA
	// preceded by its length; then (sigs, Positive) or all (negative)
	// whole uncompressed records, TTLs ignored. A string, not a slice:
	// the header's eight bytes less bring the struct from Go's 80-byte
	// size class to its 64 (TestEntrySize); raw gives its bytes to read.
	data   string
	expire int64 // unix nanoseconds
	// val is what the validator found of data, set once it has
	// (SetValidated), nil before.
	val atomic.Pointer[validation]
	// next is the next entry of the same name in its shard's chain
	// (shard.m), written under the shard's write lock; read without
	// it by a Name, which may so see an entry just replaced or evicted,
	// as a Get that found it a moment earlier would have.
	next     atomic.Pointer[entry]
	slot     int32
	use      atomic.Uint32 // 0-3: CLOCK's use counter
	wholeOff uint32        // offset in data of the whole records
	keyLen   uint16
	qtype    uint16 // the key's type (0: an NXDOMAIN)
	n        uint16 // RDATA records (Positive)
	whole    uint16 // whole records after them
	kind     Kind
	rank     Rank
}

// end is when e stops being live: its TTL's end, or sooner for data found
// Bogus (Options.BogusTTL).
func (e *entry) end() int64 {
	if v := e.val.Load(); v != nil && v.dead != 0 {
		return min(e.expire, v.dead)
	}
	return e.expire
}

// overhead is the bytes an entry costs beyond its data: the struct, its
// map slot (a string header and a pointer, with the Swiss table's control
// byte and load factor) and its ring slot.
const overhead = int64(unsafe.Sizeof(entry{})) + 40 + 8

// New returns an empty cache.
func New(opt Options) *Cache {
	if opt.Size <= 0 {
		opt.Size = DefaultSize
	}
	if opt.MaxTTL == 0 {
		opt.MaxTTL = DefaultMaxTTL
	}
	if opt.MaxNegativeTTL == 0 {
		opt.MaxNegativeTTL = DefaultMaxNegativeTTL
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.BogusTTL <= 0 {
		opt.BogusTTL = DefaultBogusTTL
	}
	// Shards: enough that goroutines rarely share one (16 per CPU, at
	// least 16), few enough that each holds many entries.
	n := 16 * runtime.GOMAXPROCS(0)
	n = max(16, 1<<bits.Len(uint(n-1)))
	for n > 1 && opt.Size/int64(n) < 64<<10 {
		n /= 2
	}
	c := &Cache{shards: make([]shard, n), mask: uint64(n - 1), seed: maphash.MakeSeed(), opt: opt, stale: int64(opt.Stale)}
	for i := range c.shards {
		c.shards[i].m = map[string]*entry{}
		c.shards[i].limit = opt.Size / int64(n)
		c.shards[i].dnames = &c.dnames
	}
	return c
}

// Now returns the cache's clock.
func (c *Cache) Now() time.Time { return c.opt.Now() }

// appendKey appends the key of name (in any case) and type to k; name
// must be fully qualified.
func appendKey(k []byte, name string, qtype uint16) []byte {
	return binary.BigEndian.AppendUint16(appendName(k, name), qtype)
}

// appendName appends name, lower-cased, to k: a key without its type.
func appendName(k []byte, name string) []byte {
	for i := 0; i < len(name); i++ {
		b := name[i]
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		k = append(k, b)
	}
	return k
}

// shardOf returns the shard of a lower-cased name.
func (c *Cache) shardOf(name []byte) *shard {
	return &c.shards[maphash.Bytes(c.seed, name)&c.mask]
}

// name is e's owner name as stored: its key without the type.
func (e *entry) name() string { return e.data[:e.keyLen-2] }

// find returns the entry of type qtype chained from head, or nil.
func find(head *entry, qtype uint16) *entry {
	for e := head; e != nil; e = e.next.Load() {
		if e.qtype == qtype {
			return e
		}
	}
	return nil
}

// Put stores e for name and type, unless a live entry of a higher rank is
// there (RFC 2181 §5.4.1). A negative entry of Kind NXDomain is stored
// for the name, whatever qtype. The TTL is the smallest of the records'
// (for a negative answer the SOA's TTL and MINIMUM, RFC 2308 §5), clamped
// by the Options. A negative answer without its SOA is not stored.
func (c *Cache) Put(name string, qtype uint16, e Entry) {
	if !dns.IsFqdn(name) {
		return
	}
	if e.Kind == NXDomain {
		qtype = 0
	}
	ttl, ok := entryTTL(&e)
	if !ok {
		return
	}
	ttl = c.Clamp(e.Kind, ttl)
	var kb [256 + 2]byte // on the stack but for names with escapes (Lookup)
	k := appendKey(kb[:0], name, qtype)
	ne, err := encode(k, &e)
	if err != nil {
		return
	}
	now := c.opt.Now().UnixNano()
	ne.expire = now + int64(ttl)*int64(time.Second)
	s := c.shardOf(k[:len(k)-2])
	s.mu.Lock()
	defer s.mu.Unlock()
	head := s.m[ne.name()]
	if old := find(head, qtype); old != nil {
		if old.end() > now && old.rank > ne.rank {
			return
		}
		s.remove(old)
		head = s.m[ne.name()]
	}
	// The newest first: a Name that finds the new head finds ne before
	// any entry of its type it replaced.
	ne.next.Store(head)
	s.m[ne.name()] = ne
	if n := len(s.free); n > 0 {
		ne.slot = s.free[n-1]
		s.free = s.free[:n-1]
		s.ring[ne.slot] = ne
	} else {
		ne.slot = int32(len(s.ring))
		s.ring = append(s.ring, ne)
	}
	s.bytes += ne.cost()
	s.count(ne, 1)
	// A name's chain is bounded: the entry beyond MaxTypes, the least
	// recently stored, goes.
	i := 0
	for e := ne; e != nil; e = e.next.Load() {
		if i++; i > MaxTypes {
			s.remove(e)
			break
		}
	}
	s.evict(ne, now-c.stale)
}

// MaxTypes bounds the entries the cache holds for one name (its types'
// RRsets and NODATAs, and its NXDOMAIN): a lookup walks them (Name), and
// a client asking every type of a name would otherwise make the walk as
// long as it likes. Storing one more drops the least recently stored.
// Real names have a few types; a zone's apex, signed, about ten.
const MaxTypes = 32

// Clamp returns ttl within the bounds of the Options for an entry of
// kind k: [MinTTL, MaxTTL] for an RRset, [MinTTL, MaxNegativeTTL] for a
// negative answer. The resolver gives its clients the TTLs it caches by.
func (c *Cache) Clamp(k Kind, ttl uint32) uint32 {
	hi := c.opt.MaxTTL
	if k != Positive {
		hi = c.opt.MaxNegativeTTL
	}
	return min(max(ttl, c.opt.MinTTL), hi)
}

// entryTTL is the TTL of e before clamping, and whether e may be stored.
func entryTTL(e *Entry) (uint32, bool) {
	if len(e.Records) == 0 {
		return 0, false
	}
	ttl := ^uint32(0)
	soa := false
	for _, rr := range e.Records {
		ttl = min(ttl, rr.Header().Ttl)
		if s, ok := rr.(*dns.SOA); ok && e.Kind != Positive {
			// RFC 2308 §5: the TTL of a negative answer is the
			// smaller of the SOA's TTL and its MINIMUM.
			ttl = min(ttl, s.Minttl)
			soa = true
		}
	}
	for _, rr := range e.Sigs {
		ttl = min(ttl, rr.Header().Ttl)
	}
	if e.Kind != Positive && !soa {
		return 0, false
	}
	return ttl, true
}

// encode packs e's records after the key k into a new entry.
func encode(k []byte, e *Entry) (*entry, error) {
	qtype := binary.BigEndian.Uint16(k[len(k)-2:])
	ne := &entry{keyLen: uint16(len(k)), qtype: qtype, kind: e.Kind, rank: e.Rank}
	if data, n, ok := encodeRData(k, e); ok {
		ne.data, ne.n = data, n
		ne.wholeOff = uint32(len(data))
		return ne, nil
	}
	return encodePacked(ne, k, e)
}

// encodePacked is encode for any entry: each record packed by
// dns.PackRR, and its RDATA kept (Positive) or the whole record. The
// buffer is made for dns.Len's sizes of the whole records: a negative
// entry, all whole records, fills it and is stored as it is, where a copy
// into its string was a second allocation of its size; an entry of
// RDATA, shorter, is copied (the stored copy exactly as long as it
// needs). Should dns.Len fall short of a record's packing, the buffer has
// room to spare at a second try.
func encodePacked(ne *entry, k []byte, e *Entry) (*entry, error) {
	size := len(k)
	for _, rr := range e.Records {
		size += dns.Len(rr)
	}
	for _, rr := range e.Sigs {
		size += dns.Len(rr)
	}
	buf := make([]byte, size)
	n, err := packInto(ne, buf, k, e)
	if err != nil {
		buf = make([]byte, 2*size+16)
		if n, err = packInto(ne, buf, k, e); err != nil {
			return nil, err
		}
	}
	if n == len(buf) {
		// Nothing else holds buf: it is the string's, immutable.
		ne.data = unsafe.String(&buf[0], n)
	} else {
		ne.data = string(buf[:n])
	}
	return ne, nil
}

// packInto writes encodePacked's data into buf and returns its length,
// with ne's counts and offset set.
func packInto(ne *entry, buf, k []byte, e *Entry) (int, error) {
	qtype := ne.qtype
	ne.n, ne.whole = 0, 0
	n := copy(buf, k)
	whole := e.Sigs
	if e.Kind == Positive {
		for _, rr := range e.Records {
			if rr.Header().Rrtype != qtype {
				return 0, fmt.Errorf("a %s record in the %s RRset", dns.Type(rr.Header().Rrtype), dns.Type(qtype))
			}
			end, err := dns.PackRR(rr, buf, n, nil, false)
			if err != nil {
				return 0, err
			}
			// Keep the RDATA: it follows the owner and ten bytes of
			// type, class, TTL and length.
			rdStart := n + nameLen(buf[n:]) + 10
			rdlen := end - rdStart
			binary.BigEndian.PutUint16(buf[n:], uint16(rdlen))
			copy(buf[n+2:], buf[rdStart:end])
			n += 2 + rdlen
			ne.n++
		}
	} else {
		whole = e.Records
	}
	ne.wholeOff = uint32(n)
	for _, rr := range whole {
		end, err := dns.PackRR(rr, buf, n, nil, false)
		if err != nil {
			return 0, err
		}
		n = end
		ne.whole++
	}
	return n, nil
}

// encodeRData is encode's data for the usual RRset, positive and
// without RRSIGs, of address records or of one name (NS, CNAME, DNAME),
// written on the stack, RDATA by RDATA, and copied once into the string
// it is stored as: dns.PackRR packed the whole record into a buffer of
// the heap first (owner, header and all, a third of a cold resolution's
// Put). ok is false for others, which encode packs.
func encodeRData(k []byte, e *Entry) (string, uint16, bool) {
	if e.Kind != Positive || len(e.Sigs) > 0 || len(e.Records) > 0xFFFF {
		return "", 0, false
	}
	qtype := binary.BigEndian.Uint16(k[len(k)-2:])
	var buf [512]byte
	n := copy(buf[:], k)
	for _, rr := range e.Records {
		if rr.Header().Rrtype != qtype {
			return "", 0, false
		}
		var rdata []byte
		var name string
		switch rr := rr.(type) {
		case *dns.A:
			if rdata = rr.A.To4(); rdata == nil {
				return "", 0, false
			}
		case *dns.AAAA:
			// dns.PackRR writes a 16-octet address as it is (an IPv4
			// one as ::ffff:a.b.c.d), and refuses other lengths.
			if len(rr.AAAA) != 16 {
				return "", 0, false
			}
			rdata = rr.AAAA
		case *dns.NS:
			name = rr.Ns
		case *dns.CNAME:
			name = rr.Target
		case *dns.DNAME:
			name = rr.Target
		default:
			return "", 0, false
		}
		if rdata != nil {
			if n+2+len(rdata) > len(buf) {
				return "", 0, false
			}
			binary.BigEndian.PutUint16(buf[n:], uint16(len(rdata)))
			n += 2 + copy(buf[n+2:], rdata)
			continue
		}
		// A name's wire form is at most one octet longer than its
		// presentation form (escapes only make the presentation
		// longer): "a." is three octets, the root "." one.
		if n+2+len(name)+1 > len(buf) {
			return "", 0, false
		}
		end, err := dns.PackDomainName(name, buf[:n+2+len(name)+1], n+2, nil, false)
		if err != nil {
			return "", 0, false
		}
		binary.BigEndian.PutUint16(buf[n:], uint16(end-n-2))
		n = end
	}
	return string(buf[:n]), uint16(len(e.Records)), true
}

// nameLen is the length of the uncompressed name at the start of b.
func nameLen(b []byte) int {
	i := 0
	for i < len(b) && b[i] != 0 {
		i += int(b[i]) + 1
	}
	return i + 1
}

func (e *entry) cost() int64 { return int64(len(e.data)) + overhead }

// raw returns e's data as bytes, to read only (binary.BigEndian and
// dns.UnpackRR take slices; neither writes).
func (e *entry) raw() []byte { return unsafe.Slice(unsafe.StringData(e.data), len(e.data)) }

// remove takes e out of s: out of its name's chain (e.next is left as
// it is, for a Name reading the chain from e), and out of the ring.
func (s *shard) remove(e *entry) {
	switch head := s.m[e.name()]; {
	case head == e:
		if next := e.next.Load(); next != nil {
			// Assigning to a present key stores the key given: the
			// map keeps no part of e.
			s.m[next.name()] = next
		} else {
			delete(s.m, e.name())
		}
	default:
		for p := head; p != nil; p = p.next.Load() {
			if p.next.Load() == e {
				p.next.Store(e.next.Load())
				break
			}
		}
	}
	s.ring[e.slot] = nil
	s.free = append(s.free, e.slot)
	s.bytes -= e.cost()
	s.count(e, -1)
}

// count adds d to the count of e's kind.
func (s *shard) count(e *entry, d int) {
	if e.kind == Positive {
		s.rrsets += d
		if e.qtype == dns.TypeDNAME {
			s.dnames.Add(int64(d))
		}
	} else {
		s.negative += d
	}
}

// evict sweeps the CLOCK hand until s is within its budget: an entry
// past dead (expired beyond the stale window) or whose use counter is
// zero goes; others have their counter lowered. keep (the entry just
// stored) is passed over. The sweep ends after two turns of the ring
// (every counter is at most 3, so in practice within four).
func (s *shard) evict(keep *entry, dead int64) {
	for steps := 0; s.bytes > s.limit && steps < 8*len(s.ring); steps++ {
		if s.hand >= len(s.ring) {
			s.hand = 0
		}
		e := s.ring[s.hand]
		s.hand++
		if e == nil || e == keep {
			continue
		}
		if u := e.use.Load(); u > 0 && e.end() > dead {
			e.use.Store(u - 1)
			continue
		}
		s.remove(e)
	}
}

// SetValidated keeps v with the live entry of name and type (an
// NXDomain's for the name) when it holds exactly e's records (Kind,
// records and signatures, TTLs aside, in any order): the data the
// validator checked, not data stored since. It reports whether it did.
// Data found Bogus goes after Options.BogusTTL, sooner than its TTL.
func (c *Cache) SetValidated(name string, qtype uint16, e Entry, v Validated) bool {
	if !dns.IsFqdn(name) {
		return false
	}
	if e.Kind == NXDomain {
		qtype = 0
	}
	var kb [256 + 2]byte // on the stack but for names with escapes (Lookup)
	k := appendKey(kb[:0], name, qtype)
	want, err := encode(k, &e)
	if err != nil {
		return false
	}
	now := c.opt.Now().UnixNano()
	s := c.shardOf(k[:len(k)-2])
	s.mu.RLock()
	got := find(s.m[string(k[:len(k)-2])], qtype)
	s.mu.RUnlock()
	if got == nil || got.end() <= now || got.kind != e.Kind || !sameData(got, want) {
		return false
	}
	val := &validation{v: v}
	if v.Security == Bogus {
		val.dead = now + int64(c.opt.BogusTTL)
	}
	got.val.Store(val)
	return true
}

// sameData reports whether a and b hold the same records, TTLs aside,
// in any order.
func sameData(a, b *entry) bool {
	if a.n != b.n || a.whole != b.whole {
		return false
	}
	ua, ub := a.units(), b.units()
	if len(ua) != len(ub) {
		return false
	}
	slices.Sort(ua)
	slices.Sort(ub)
	return slices.Equal(ua, ub)
}

// units are e's records as comparable strings: each RDATA (with its
// length) of a positive RRset, then each whole record without its TTL.
func (e *entry) units() []string {
	d := e.raw()
	out := make([]string, 0, int(e.n)+int(e.whole))
	off := int(e.keyLen)
	for range e.n {
		end := off + 2 + int(binary.BigEndian.Uint16(d[off:]))
		if end > len(e.data) {
			return nil
		}
		out = append(out, "r"+string(e.data[off:end]))
		off = end
	}
	off = int(e.wholeOff)
	for range e.whole {
		// owner, type, class, TTL (4 bytes), RDLENGTH, RDATA
		ttl := off + nameLen(d[off:]) + 4
		if ttl+6 > len(e.data) {
			return nil
		}
		end := ttl + 6 + int(binary.BigEndian.Uint16(d[ttl+4:]))
		if end > len(e.data) {
			return nil
		}
		out = append(out, "w"+string(e.data[off:ttl])+string(e.data[ttl+4:end]))
		off = end
	}
	return out
}

// Get returns the live entry for name and type: the RRset, a NODATA for
// the type, or an NXDOMAIN for the name.
func (c *Cache) Get(name string, qtype uint16) (Entry, bool) {
	return c.Lookup(name).Get(qtype)
}

// GetExact is Get without the NXDOMAIN of the name: the entry stored for
// this type alone (an RRset, or a NODATA). It is for callers that use
// RRsets only (the resolver's probes for a CNAME, a DNAME or a zone's NS
// records).
func (c *Cache) GetExact(name string, qtype uint16) (Entry, bool) {
	return c.Lookup(name).GetExact(qtype)
}

// RData calls fn with the RDATA of each record of the live RRset of name
// and type, in wire form (names uncompressed), and reports whether there
// is one: GetExact's RRset (not a NODATA, not the name's NXDOMAIN),
// without making dns.RR of its records. fn must not keep rdata. The
// resolver reads a cached delegation so, its NS names and their
// addresses: through Get, five allocations and an unpacking of each
// record per cold resolution.
func (c *Cache) RData(name string, qtype uint16, fn func(rdata []byte)) bool {
	return c.Lookup(name).RData(qtype, fn)
}

// HasDNAME reports whether the cache may hold a DNAME RRset: when it
// does not, GetExact and RData of type DNAME miss, for any name. The
// resolver looks for a DNAME at every ancestor of a name it is asked
// (RFC 6672 §2.3) that the cache does not answer (three of the ten
// lookups of a cold resolution of a name two labels below a TLD), and
// DNAMEs are rare: it asks this first. It writes nothing shared.
func (c *Cache) HasDNAME() bool { return c.dnames.Load() > 0 }

// GetStale is Get that also returns an entry past its TTL but within the
// stale window (Options.Stale), with Stale set and TTL StaleTTL (RFC
// 8767 §4): for answering when every authority failed. Without a stale
// window it is Get.
func (c *Cache) GetStale(name string, qtype uint16) (Entry, bool) {
	return c.Lookup(name).GetStale(qtype)
}

// Name is what the cache holds for one name, found with one lookup
// (Lookup): its Get, GetExact, GetStale and RData are the Cache's for
// the name and a type, without a lookup (a key, a hash, a lock and the
// clock) each. It sees the entries the cache held, and the clock's time,
// when Lookup made it: it is for one step of a resolution, not to keep.
// The zero Name holds nothing.
type Name struct {
	c    *Cache
	name string
	head *entry
	now  int64
}

// Lookup returns what the cache holds for name (in any case; a name not
// fully qualified has nothing).
func (c *Cache) Lookup(name string) Name {
	n := Name{c: c, name: name}
	if !dns.IsFqdn(name) {
		return n
	}
	if lower(name) {
		// The resolver's names are: the name is its key.
		s := &c.shards[maphash.String(c.seed, name)&c.mask]
		s.mu.RLock()
		n.head = s.m[name]
		s.mu.RUnlock()
	} else {
		n.head = c.headFolded(name)
	}
	if n.head != nil {
		// The clock is read when there is something to find live.
		n.now = c.opt.Now().UnixNano()
	}
	return n
}

// headFolded returns the head of the chain of name, which has upper-case
// letters.
func (c *Cache) headFolded(name string) *entry {
	// The key is built on the stack: names are at most 255 octets in
	// wire form, and presented without escapes as long. One with escapes
	// may be up to four times longer, and its key goes to the heap (the
	// stack's buffer was once 1026 bytes, for those: zeroed on every
	// lookup, it was a fifth of the instructions of Get).
	var buf [256]byte
	k := appendName(buf[:0], name)
	s := c.shardOf(k)
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.m[string(k)]
}

// lower reports whether name has no upper-case ASCII letter: whether it
// is its own key (appendName).
func lower(name string) bool {
	for i := 0; i < len(name); i++ {
		if 'A' <= name[i] && name[i] <= 'Z' {
			return false
		}
	}
	return true
}

// LookupWire is Lookup of the name at the start of wire, uncompressed
// wire form (a name's RDATA, from RData), without making a string of it:
// its presentation form, lower-cased, is written on the stack. plain is
// false, and the Name zero, for a name with octets other than letters,
// digits, '-' and '_' (those a presentation form escapes) or not well
// formed: the caller looks it up by its presentation form. When the
// cache holds the name, Owner is the name as it holds it; else "". The
// resolver reads a delegation's NS names so: the names of servers whose
// addresses the cache holds cost no allocation.
func (c *Cache) LookupWire(wire []byte) (n Name, plain bool) {
	var buf [256]byte
	k := buf[:0]
	for i := 0; ; {
		if i >= len(wire) {
			return Name{}, false
		}
		l := int(wire[i])
		i++
		if l == 0 {
			break
		}
		if l > 63 || i+l > len(wire) || len(k)+l+1 > 255 {
			return Name{}, false
		}
		for _, b := range wire[i : i+l] {
			switch {
			case 'A' <= b && b <= 'Z':
				b += 'a' - 'A'
			case 'a' <= b && b <= 'z', '0' <= b && b <= '9', b == '-', b == '_':
			default:
				return Name{}, false
			}
			k = append(k, b)
		}
		k = append(k, '.')
		i += l
	}
	if len(k) == 0 {
		k = append(k, '.')
	}
	s := c.shardOf(k)
	s.mu.RLock()
	head := s.m[string(k)]
	s.mu.RUnlock()
	if head == nil {
		return Name{}, true
	}
	return Name{c: c, name: head.name(), head: head, now: c.opt.Now().UnixNano()}, true
}

// Owner is the name looked up: as given to Lookup, or for LookupWire as
// the cache holds it ("" when it holds nothing of it).
func (n Name) Owner() string { return n.name }

// Get is Cache.Get of the name.
func (n Name) Get(qtype uint16) (Entry, bool) { return n.get(qtype, false, false) }

// GetExact is Cache.GetExact of the name.
func (n Name) GetExact(qtype uint16) (Entry, bool) { return n.get(qtype, false, true) }

// GetStale is Cache.GetStale of the name.
func (n Name) GetStale(qtype uint16) (Entry, bool) {
	if n.head == nil {
		return Entry{}, false
	}
	return n.get(qtype, n.c.stale > 0, false)
}

// RData is Cache.RData of the name.
func (n Name) RData(qtype uint16, fn func(rdata []byte)) bool {
	e := n.live(qtype, false)
	if e == nil || e.kind != Positive {
		return false
	}
	d := e.raw()
	off := int(e.keyLen)
	for range e.n {
		end := off + 2 + int(binary.BigEndian.Uint16(d[off:]))
		fn(d[off+2 : end])
		off = end
	}
	return true
}

// get is Get (GetStale with stale, GetExact with exact).
func (n Name) get(qtype uint16, stale, exact bool) (Entry, bool) {
	e := n.live(qtype, stale)
	if e == nil && qtype != 0 && !exact {
		// RFC 2308 §5: an NXDOMAIN is about the name, whatever the
		// type asked.
		e = n.live(0, stale)
	}
	if e == nil {
		return Entry{}, false
	}
	now := n.now
	out := Entry{Kind: e.kind, Rank: e.rank}
	if v := e.val.Load(); v != nil {
		out.Validated = &v.v
	}
	if end := e.end(); end > now {
		out.TTL = uint32((end - now) / int64(time.Second))
	} else {
		out.TTL, out.Stale = StaleTTL, true
	}
	if err := e.decode(n.name, out.TTL, &out); err != nil {
		return Entry{}, false
	}
	return out, true
}

// live returns the name's entry of type qtype live at n.now (or stale,
// if allowed), and counts its use.
func (n Name) live(qtype uint16, stale bool) *entry {
	e := find(n.head, qtype)
	now := n.now
	if e == nil || (e.expire <= now && (!stale || e.expire <= now-n.c.stale)) {
		return nil
	}
	if v := e.val.Load(); v != nil && v.dead != 0 && v.dead <= now {
		// Bogus data past Options.BogusTTL is gone, stale or not: it
		// is asked again.
		return nil
	}
	// Write the counter only until it saturates: a popular entry's hits
	// write nothing shared.
	if u := e.use.Load(); u < 3 {
		e.use.CompareAndSwap(u, u+1)
	}
	return e
}

// decode converts e's records to dns.RR with the given owner and TTL.
func (e *entry) decode(owner string, ttl uint32, out *Entry) error {
	d := e.raw()
	qtype := e.qtype
	off := int(e.keyLen)
	if e.n > 0 {
		out.Records = make([]dns.RR, 0, e.n)
	}
	for i := 0; i < int(e.n); i++ {
		rdlen := int(binary.BigEndian.Uint16(d[off:]))
		off += 2
		h := dns.RR_Header{Name: owner, Rrtype: qtype, Class: dns.ClassINET, Ttl: ttl, Rdlength: uint16(rdlen)}
		rr, _, err := dns.UnpackRRWithHeader(h, d[:off+rdlen], off)
		if err != nil {
			return err
		}
		out.Records = append(out.Records, rr)
		off += rdlen
	}
	off = int(e.wholeOff)
	var whole []dns.RR
	for i := 0; i < int(e.whole); i++ {
		rr, end, err := dns.UnpackRR(d, off)
		if err != nil {
			return err
		}
		rr.Header().Ttl = ttl
		whole = append(whole, rr)
		off = end
	}
	if e.kind == Positive {
		out.Sigs = whole
	} else {
		out.Records = whole
	}
	return nil
}

// Stats is what a Cache holds: its entries, live or expired but not yet
// evicted, and the bytes they cost by the measure Options.Size bounds
// (each entry's data and struct with its share of the shard's map and
// ring, estimated; not the maps' and rings' spare room).
type Stats struct {
	// RRsets are the positive entries (each an RRset with its RRSIGs,
	// as Unbound's rrset.cache.count counts them), Negative the
	// NXDOMAIN and NODATA entries (RFC 2308).
	RRsets, Negative int
	Bytes            int64
}

// Stats sums the shards' counts now (each read under its shard's read
// lock: a look over all of them, for monitoring, not the query path).
func (c *Cache) Stats() Stats {
	var st Stats
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		st.RRsets += s.rrsets
		st.Negative += s.negative
		st.Bytes += s.bytes
		s.mu.RUnlock()
	}
	return st
}

// Len returns the number of entries, live or not yet evicted.
func (c *Cache) Len() int {
	st := c.Stats()
	return st.RRsets + st.Negative
}

// Bytes returns the bytes the entries cost, by the measure Size bounds.
func (c *Cache) Bytes() int64 { return c.Stats().Bytes }
