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
// The cache is direct-mapped. A response is stored the second time its
// key lands on a slot in a row, so that a stream of one-off names (a
// random-subdomain flood, NXDOMAIN benchmarks) costs a hash and a compare
// rather than a copy per query, and cannot push out what repeats.
type Cache struct {
	gen   uint64 // the Responder's publication count the entries are from
	seed  maphash.Seed
	slots []cacheSlot
	data  []byte // slot i's key and response: data[i*slotData:]
}

// cacheSlots and slotData size a cache: 4096 responses of up to about a
// kilobyte (a root referral with DS and RRSIG is 600-900 bytes), 4 MiB
// per worker, of which only the slots in use become resident.
const (
	cacheBits  = 12
	cacheSlots = 1 << cacheBits
	slotData   = 1024
)

// slotOf is the slot of hash h: its top bits.
func slotOf(h uint64) uint64 { return h >> (64 - cacheBits) }

type cacheSlot struct {
	hash    uint64 // of the stored key; 0: empty
	seen    uint64 // of the last key that missed here
	variant uint32
	keyLen  uint16
	respLen uint16
}

// NewCache returns an empty cache, for Scratch.UseCache.
func NewCache() *Cache {
	return &Cache{
		seed:  maphash.MakeSeed(),
		slots: make([]cacheSlot, cacheSlots),
		data:  make([]byte, cacheSlots*slotData),
	}
}

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

// get copies the cached response for question into out and fixes its
// header for q, or returns nil. It also returns the key's hash, for put.
func (c *Cache) get(gen uint64, q *wire.Query, question []byte, v uint32, out []byte) ([]byte, uint64) {
	if c.gen != gen {
		clear(c.slots)
		c.gen = gen
	}
	// The multiply spreads v over the high bits, which pick the slot.
	h := (maphash.Bytes(c.seed, question) ^ uint64(v)) * 0x9E3779B97F4A7C15
	h |= 1 // 0 marks an empty slot
	i := slotOf(h)
	sl := &c.slots[i]
	if sl.hash != h || sl.variant != v || int(sl.keyLen) != len(question) || int(sl.respLen) > cap(out) {
		return nil, h
	}
	d := c.data[i*slotData:]
	if !bytes.Equal(d[:sl.keyLen], question) {
		return nil, h
	}
	resp := out[:sl.respLen]
	copy(resp, d[sl.keyLen:int(sl.keyLen)+int(sl.respLen)])
	resp[0], resp[1] = byte(q.ID>>8), byte(q.ID)
	f := (uint16(resp[2])<<8|uint16(resp[3]))&headerKeep | q.Flags&(wire.FlagRD|wire.FlagCD)
	resp[2], resp[3] = byte(f>>8), byte(f)
	return resp, h
}

// put stores resp, the answer to question, when its slot saw the same
// key miss last time and it fits.
func (c *Cache) put(h uint64, question []byte, v uint32, resp []byte) {
	i := slotOf(h)
	sl := &c.slots[i]
	if sl.seen != h {
		sl.seen = h
		return
	}
	if len(question)+len(resp) > slotData {
		return
	}
	d := c.data[i*slotData:]
	copy(d, question)
	copy(d[len(question):], resp)
	sl.hash, sl.variant = h, v
	sl.keyLen, sl.respLen = uint16(len(question)), uint16(len(resp))
}
