package auth

import (
	"bytes"
	"hash/maphash"

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
// over UDP that parsed cleanly are cached.
//
// The cache is two-way set-associative: a question hashes to a set of
// two slots, and a store replaces the one used less recently, so two
// repeating questions that share a set both stay (direct-mapped, 2000
// repeating names in 4096 slots lost a third of them to collisions). A
// response is stored the second time its key misses in its set (each set
// remembers its last two misses), so that a stream of one-off names (a
// random-subdomain flood, NXDOMAIN benchmarks) costs a hash and two
// compares rather than a copy per query, and cannot push out what repeats.
type Cache struct {
	gen uint64 // the Responder's publication count the entries are from
	// gets and misses count lookups in the current window of
	// coldWindow; cold says whether the last full window missed often.
	gets, misses uint32
	cold         bool
	seed         maphash.Seed
	sets         []cacheSet
	data         []byte // slot w of set i holds its key and response at data[(2*i+w)*slotData:]
}

// cacheSets and slotData size a cache: 4096 responses in 2048 sets, each
// up to 1536 bytes of question and response, which holds every answer
// within the default 1232-byte UDP limit (a root NXDOMAIN with DO is
// about 1030 bytes). 6 MiB per worker, of which only the slots in use
// become resident.
const (
	cacheBits = 11
	cacheSets = 1 << cacheBits
	slotData  = 1536
)

// setOf is the set of hash h: its top bits.
func setOf(h uint64) uint64 { return h >> (64 - cacheBits) }

// cacheSet is two slots, which was used last, and the last two keys that
// missed in it.
type cacheSet struct {
	slot     [2]cacheSlot
	seen     [2]uint64
	mru      uint8 // the slot hit or stored last
	seenNext uint8 // the seen entry the next miss overwrites
}

type cacheSlot struct {
	hash    uint64 // of the stored key; 0: empty
	variant uint32
	keyLen  uint16
	respLen uint16
}

// NewCache returns an empty cache, for Scratch.UseCache.
func NewCache() *Cache {
	return &Cache{
		seed: maphash.MakeSeed(),
		sets: make([]cacheSet, cacheSets),
		data: make([]byte, 2*cacheSets*slotData),
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

// Cold reports whether answers need the zones: s has no cache, or its
// cache missed more than an eighth of the queries of its last 256. A
// worker then starts its batches' lookups ahead (see Ahead), which a
// cache that answers nearly everything would only pay for.
func (s *Scratch) Cold() bool { return s.cache == nil || s.cache.cold }

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
	if c.gen != gen {
		clear(c.sets)
		c.gen = gen
	}
	h := c.hash(question, v)
	i := setOf(h)
	set := &c.sets[i]
	w := 0
	if set.slot[0].hash != h {
		w = 1
	}
	sl := &set.slot[w]
	if sl.hash != h || sl.variant != v || int(sl.keyLen) != len(question) || int(sl.respLen) > cap(out) {
		return nil, h
	}
	d := c.data[(2*int(i)+w)*slotData:]
	if !bytes.Equal(d[:sl.keyLen], question) {
		return nil, h
	}
	set.mru = uint8(w)
	resp := out[:sl.respLen]
	copy(resp, d[sl.keyLen:int(sl.keyLen)+int(sl.respLen)])
	resp[0], resp[1] = byte(q.ID>>8), byte(q.ID)
	f := (uint16(resp[2])<<8|uint16(resp[3]))&headerKeep | q.Flags&(wire.FlagRD|wire.FlagCD)
	resp[2], resp[3] = byte(f>>8), byte(f)
	return resp, h
}

// put stores resp, the answer to question, in the less recently used slot
// of its set when the same key missed there before and it fits.
func (c *Cache) put(h uint64, question []byte, v uint32, resp []byte) {
	i := setOf(h)
	set := &c.sets[i]
	if set.seen[0] != h && set.seen[1] != h {
		set.seen[set.seenNext] = h
		set.seenNext ^= 1
		return
	}
	if len(question)+len(resp) > slotData {
		return
	}
	w := set.mru ^ 1
	if set.slot[0].hash == h { // a stale or mismatched entry of this key
		w = 0
	} else if set.slot[1].hash == h {
		w = 1
	}
	d := c.data[(2*int(i)+int(w))*slotData:]
	copy(d, question)
	copy(d[len(question):], resp)
	set.slot[w] = cacheSlot{hash: h, variant: v, keyLen: uint16(len(question)), respLen: uint16(len(resp))}
	set.mru = w
}
