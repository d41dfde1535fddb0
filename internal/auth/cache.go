package auth

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"unsafe"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/prefetch"

	"github.com/tern-dns/tern/internal/wire"
)

// Cache remembers whole UDP responses by question, for one worker (a
// Scratch): under load most queries repeat, and a hit replaces the zone
// lookup and the answer's construction with one hash, one probe and one
// copy. It is owned by its worker, so it takes no lock.
//
// A response is a function of the question as the client wrote it (its
// bytes, so the echoed case is the client's), of the query's EDNS state
// (OPT present, DO, NSID, the size limit) and of the zones; the header's
// ID, RD and CD are copied from each query (RFC 1035 §4.1.1, RFC 4035
// §3.2.2). Those are the key, the zones by the Responder's publication
// count: publishing new zones empties every cache at its next query. (A
// count rather than the zone.Set itself, so that an idle worker's cache
// does not keep replaced zones alive.) Only plain QUERY-opcode questions
// over UDP that parsed cleanly are cached, and never an answer from a
// zone with a query ACL (a hit is not checked against the client;
// answerIN sets Scratch.private). A TSIG-signed query goes through the
// cache too (answerSigned signs what it gives): an answer does not
// depend on the key.
//
// The cache is four-way set-associative with two sets per question
// (cache.Set and cache.Choices, the bookkeeping and placement the
// resolver's response cache shares): a hit looks in the question's first
// set, then in its second; a store goes to the set that holds the key,
// else the one with more empty slots, else the one whose least recently
// used slot is older (cache.PlaceSecond), and there replaces the slot
// used least recently. With one set per question, the sets that five or
// more questions of a working set fall into missed on every round of it
// (4.6% of 2730 questions cycled through 8192 slots; TestCachePlacement).
// A response is stored the second time its key misses (cache.Admit, which
// remembers recent misses in the key's two sets), so that a stream of
// one-off names (a random-subdomain flood, NXDOMAIN benchmarks) costs a
// hash and some compares rather than a copy per query, and cannot push
// out what repeats.
type Cache struct {
	gen uint64 // the Responder's publication count the entries are from
	// gets and misses count lookups in the current window of
	// coldWindow; cold says whether the last full window missed often.
	gets, misses uint32
	cold         bool
	tick         uint32        // counts puts (misses): the clock of cache.Admit
	bytes        int           // of the questions and responses stored
	sets2        cache.Choices // where a hash's two sets are
	seed         maphash.Seed
	sets         []cacheSet
	data         []byte // slot w of set i holds its key and response at data[(ways*i+w)*slotData:]

	// hitZone is the zone index (metrics.Set.Zone) stored with the
	// response the last hit returned: a cached answer counts under its
	// zone as a built one does.
	hitZone uint32
}

// ways is the slots per set; slotData the room per slot for question,
// response and the response's zone index (4 bytes, for the metrics):
// every answer within the default 1232-byte UDP limit fits (a root
// NXDOMAIN with DO is about 1030 bytes). Larger ones are not cached.
const (
	ways     = cache.Ways
	slotData = 1536
)

// DefaultCacheSize is the responses a worker's cache holds unless
// configured: 12 MiB per worker when full; memory becomes resident only
// as slots are used.
const DefaultCacheSize = 8192

// cacheSet is a set's bookkeeping and what its four slots hold.
type cacheSet struct {
	// The slots first: with the hashes that follow they fill the
	// set's first cache line, which a hit reads.
	slot [ways]cacheSlot
	cache.Set
}

type cacheSlot struct {
	variant uint32
	keyLen  uint16
	respLen uint16
}

// NewCache returns an empty cache of about size responses (rounded up to
// a power of two, at least ways), for Scratch.UseCache.
func NewCache(size int) *Cache {
	sets2, sets := cache.NewChoices(size)
	return &Cache{
		sets2: sets2,
		seed:  maphash.MakeSeed(),
		sets:  make([]cacheSet, sets),
		data:  make([]byte, ways*sets*slotData),
	}
}

// coldWindow and coldMisses define a cold cache: more than an eighth
// of a window's lookups missed.
const (
	coldWindow = 256
	coldMisses = coldWindow / 8
)

// count records one lookup and whether it hit.
func (c *Cache) count(hit bool) {
	if !hit {
		c.misses++
	}
	if c.gets++; c.gets == coldWindow {
		c.cold = c.misses > coldMisses
		c.gets, c.misses = 0, 0
	}
}

// aheadBytes is the size of stored responses past which a cache's hits
// miss the CPU's fast caches: about a quarter of a server core's L2.
const aheadBytes = 256 << 10

// AheadPays reports whether a batch of queries answered with s is better
// started ahead (see Ahead) than answered one by one: when answers need
// the zones (s has no cache, or its cache missed more than an eighth of
// the queries of its last 256), or when the cache holds more than fits
// the CPU's fast caches, so that hits too wait on memory. A small cache
// that answers nearly everything is in cache already, and the steps
// would only cost (2% on the small-zone workload, one A/B pair).
func (s *Scratch) AheadPays() bool {
	c := s.cache
	return c == nil || c.cold || c.bytes > aheadBytes
}

// CacheSize is how many responses s's cache holds at most; 0 without one.
func (s *Scratch) CacheSize() int {
	if s.cache == nil {
		return 0
	}
	return s.cache.size()
}

// size is how many responses c holds at most.
func (c *Cache) size() int { return ways * len(c.sets) }

// UseCache makes Answer use c for UDP queries answered with s. A cache
// belongs to one Scratch.
func (s *Scratch) UseCache(c *Cache) { s.cache = c }

// variant packs the parts of the key that are not the question.
func variant(q *wire.Query, limit int) uint32 {
	v := uint32(limit) // at most 65535
	if q.EDNS {
		v |= 1 << 16
	}
	if q.DO {
		v |= 1 << 17
	}
	if q.NSID {
		v |= 1 << 18
	}
	return v
}

// headerKeep are the flag bits a cached response keeps; the query's RD
// and CD are put in their place (opcode is always QUERY here).
const headerKeep = ^uint16(wire.FlagRD | wire.FlagCD)

// hash is the hash of a key; never 0, which marks an empty slot.
func (c *Cache) hash(question []byte, v uint32) uint64 {
	// The multiply spreads v over the high bits, which pick the set.
	return (maphash.Bytes(c.seed, question)^uint64(v))*0x9E3779B97F4A7C15 | 1
}

// get copies the cached response for question into out and fixes its
// header for q, or returns nil. It also returns the key's hash, for put.
func (c *Cache) get(gen uint64, q *wire.Query, question []byte, v uint32, out []byte) ([]byte, uint64) {
	h := c.hash(question, v)
	return c.getHashed(gen, q, question, v, h, out), h
}

// prefetchSet starts loading the two sets of hash h (two or three lines
// each): a miss reads both, and so does a hit in the second.
func (c *Cache) prefetchSet(h uint64) {
	prefetch.Range(uintptr(unsafe.Pointer(&c.sets[c.sets2.First(h)])), unsafe.Sizeof(cacheSet{}))
	prefetch.Range(uintptr(unsafe.Pointer(&c.sets[c.sets2.Second(h)])), unsafe.Sizeof(cacheSet{}))
}

// prefetchData starts loading the response stored for hash h, if there
// is one, and reports whether there is.
func (c *Cache) prefetchData(gen uint64, h uint64) bool {
	if c.gen != gen {
		return false
	}
	i, w := c.find(h)
	if w < 0 {
		return false
	}
	// The question and the response's start; the copy's sequential
	// reads bring in the rest.
	prefetch.Range(uintptr(unsafe.Pointer(&c.data[(ways*int(i)+w)*slotData])), 128)
	return true
}

// find returns the set and slot holding hash h, looking in its first
// set, then in its second; w is -1 if neither does.
func (c *Cache) find(h uint64) (i uint64, w int) {
	i = c.sets2.First(h)
	if w = c.sets[i].Way(h); w < 0 {
		i = c.sets2.Second(h)
		w = c.sets[i].Way(h)
	}
	return i, w
}

// getHashed is get for a key whose hash h is known.
func (c *Cache) getHashed(gen uint64, q *wire.Query, question []byte, v uint32, h uint64, out []byte) []byte {
	if c.gen != gen {
		clear(c.sets)
		c.gen = gen
		c.bytes = 0
	}
	// find, written out: a call here costs the hit 17 instructions.
	i := c.sets2.First(h)
	set := &c.sets[i]
	w := set.Way(h)
	if w < 0 {
		i = c.sets2.Second(h)
		set = &c.sets[i]
		if w = set.Way(h); w < 0 {
			return nil
		}
	}
	sl := &set.slot[w]
	if sl.variant != v || int(sl.keyLen) != len(question) || int(sl.respLen) > cap(out) {
		return nil
	}
	d := c.data[(ways*int(i)+w)*slotData:]
	if !bytes.Equal(d[:sl.keyLen], question) {
		return nil
	}
	set.Touch(w)
	resp := out[:sl.respLen]
	end := int(sl.keyLen) + int(sl.respLen)
	copy(resp, d[sl.keyLen:end])
	c.hitZone = binary.LittleEndian.Uint32(d[end:])
	resp[0], resp[1] = byte(q.ID>>8), byte(q.ID)
	f := (uint16(resp[2])<<8|uint16(resp[3]))&headerKeep | q.Flags&(wire.FlagRD|wire.FlagCD)
	resp[2], resp[3] = byte(f>>8), byte(f)
	return resp
}

// put stores resp, the answer to question from the zone of metrics index
// zone, when the same key missed before (cache.Admit remembers) and it
// fits: in the set of its two that cache.PlaceSecond picks, in the slot
// Victim picks there.
func (c *Cache) put(h uint64, question []byte, v uint32, resp []byte, zone uint32) {
	i, j := c.sets2.First(h), c.sets2.Second(h)
	c.tick++
	if !cache.Admit(&c.sets[i].Set, &c.sets[j].Set, h, c.tick) {
		return
	}
	if len(question)+len(resp)+4 > slotData {
		return
	}
	if cache.PlaceSecond(&c.sets[i].Set, &c.sets[j].Set, h) {
		i = j
	}
	set := &c.sets[i]
	// The victim: a slot of this key (a stale or mismatched entry), else
	// an empty one, else the one unused longest.
	w := set.Victim(h)
	d := c.data[(ways*int(i)+w)*slotData:]
	copy(d, question)
	copy(d[len(question):], resp)
	binary.LittleEndian.PutUint32(d[len(question)+len(resp):], zone)
	if set.Hash[w] != 0 {
		old := &set.slot[w]
		c.bytes -= int(old.keyLen) + int(old.respLen)
	}
	c.bytes += len(question) + len(resp)
	set.slot[w] = cacheSlot{variant: v, keyLen: uint16(len(question)), respLen: uint16(len(resp))}
	set.Fill(w, h)
}
