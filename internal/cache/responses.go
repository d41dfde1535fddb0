package cache

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/tern-dns/tern/internal/wire"
)

// Responses remembers whole responses to recursive queries, for one
// worker: the resolver's hot path. A hit is one hash, one set of four
// slots probed, the stored question compared byte for byte, and one copy
// with the query's ID and question (the client's case) put in and every
// TTL decremented by the time the response spent cached. It is owned by
// one goroutine and takes no lock; a hit allocates nothing
// (TestResponsesZeroAllocs).
//
// The key is the question (its name case-folded, type and class) and the
// query's flags that change the response: RD, CD, AD, DO, whether it has an
// OPT record, NSID, and the class of the size limit the response was
// built for (512, below 1232, below 4096, larger). A response is served
// only to a query whose limit it fits, and a truncated one only to a
// query with no larger limit than it was built for.
//
// As auth.Cache (the authoritative engine's) it is four-way
// set-associative with LRU in the set (Set), and a hash has two sets
// (Choices: its top bits pick one, its low bits the other): a hit looks
// in the first, then the second; a new response goes to the set that has
// its key, else to the one with more empty slots, else to the one whose
// oldest slot is older (PlaceSecond). With one set
// per hash the sets that five or more keys of a working set fell into
// missed on every round of them: 3.5% of 10,000 questions cycled through
// 32768 slots (bench/run.sh's res-hits), each miss a resolution; two
// choices make that none (TestResponsesPlacement). Unlike auth.Cache it
// stores a response when it is Put, not on its key's second miss: a
// response Put here took a resolution, which is evidence enough that its
// question is asked (auth.Cache answers from memory whatever it is asked,
// and keeps one-off questions out so). And its entries age: a response
// expires when its smallest TTL has passed, and the offsets of its TTL
// fields are recorded when it is stored.
//
// The sets hold only bookkeeping; the bytes (question, response, TTL
// offsets) are appended to a ring (a log that wraps), each entry taking
// its own size: a one-record answer about 110 bytes where a fixed slot
// took 1536. A slot whose entry the ring has since written over is a
// miss. A hit on an entry among the oldest quarter of the ring copies it
// to the ring's head, so what is asked keeps its place however many new
// responses pass (TestResponsesRing). Appending fills memory in order, a
// page at a time: fixed slots spread over the whole array faulted a new
// page in on almost every Put of a cold resolution (46% of its page
// faults, 1.2 per answer).
type Responses struct {
	sets2 Choices // where a hash's two sets are
	seed  maphash.Seed
	sets  []respSet
	// ring holds the entries: a slot's key, response and TTL offsets at
	// ring[pos%len(ring):], pos counting every byte ever appended; head is
	// the pos of the next entry. The bytes of pos >= head-len(ring) are
	// intact. It and sets are mapped beside the Go heap (mapped).
	ring []byte
	head uint64
	offs []uint16 // Put's scratch
	// entries counts the slots holding a response; heldEntries and
	// heldBytes publish it and the bytes in use for Held, stored by
	// the owner in Put and Clear only (never on a hit), read by others.
	entries     int
	heldEntries atomic.Int64
	heldBytes   atomic.Int64
}

// respRoom is the ring's room per response: about four one-record
// answers (110 bytes each with their question and TTL offsets), or one
// with DNSSEC signatures. minRing is the smallest ring; an entry larger
// than a quarter of the ring is not cached.
const (
	respRoom = 512
	minRing  = 64 << 10
)

// DefaultResponses is the responses a worker's cache holds unless
// configured: 4 MiB of ring and 0.5 MiB of sets per worker when full;
// their memory becomes resident as they are written.
const DefaultResponses = 8192

// respSet is a set's bookkeeping and what its four slots hold, in four
// cache lines (the sets are mapped page-aligned): a hit reads the first,
// where Set keeps the hashes and the use ticks, and the one of its slot
// (TestResponsesSetLayout). Set's admission memory, which Responses
// does not use, takes the second.
type respSet struct {
	Set
	_    [128 - unsafe.Sizeof(Set{})]byte
	slot [Ways]respSlot
}

type respSlot struct {
	pos    uint64 // where its entry starts in the ring
	stored int64  // when, unix nanoseconds
	// ttl is its smallest TTL: it expires ttl seconds after stored;
	// the prefetch threshold is a tenth of it.
	ttl      uint32
	nameLen  uint16
	respLen  uint16
	nTTL     uint16
	limit    uint16 // the size limit the response was built for
	variant  uint8
	reported bool // a hit reported it for prefetch
}

// expire is when the slot's response expires, unix nanoseconds.
func (sl *respSlot) expire() int64 { return sl.stored + int64(sl.ttl)*int64(time.Second) }

// NewResponses returns an empty cache of about size responses (rounded up
// to a power of two, at least four); size <= 0 means DefaultResponses.
func NewResponses(size int) *Responses {
	if size <= 0 {
		size = DefaultResponses
	}
	return newResponses(size, size*respRoom)
}

// newResponses is NewResponses with a ring of ring bytes (at least
// minRing).
func newResponses(size, ring int) *Responses {
	sets2, sets := NewChoices(size)
	r := &Responses{sets2: sets2, seed: maphash.MakeSeed()}
	// The sets and the ring hold no pointers: both are mapped beside
	// the Go heap (mapped), where the collector neither scans them nor
	// lets GOGC's share of garbage grow with them.
	b := mapped(r, sets*int(unsafe.Sizeof(respSet{})))
	r.sets = unsafe.Slice((*respSet)(unsafe.Pointer(unsafe.SliceData(b))), sets)
	r.ring = mapped(r, max(ring, minRing))
	r.publish()
	return r
}

// Clear empties the cache.
func (r *Responses) Clear() {
	clear(r.sets)
	r.entries = 0
	r.publish()
}

// publish stores what Held reports: the entries, and the bytes of the
// sets and of the ring written so far (the ring's memory becomes
// resident as it is written, and stays).
func (r *Responses) publish() {
	r.heldEntries.Store(int64(r.entries))
	r.heldBytes.Store(int64(len(r.sets))*int64(unsafe.Sizeof(respSet{})) + int64(min(r.head, uint64(len(r.ring)))))
}

// Held returns the responses the cache holds (slots filled; one whose
// bytes the ring has since written over still counts until its slot is
// reused) and the bytes it uses (its sets, and its ring as far as it was
// ever written), as of its owner's last Put or Clear. Unlike the other
// methods it is safe to call from any goroutine.
func (r *Responses) Held() (entries int, bytes int64) {
	return int(r.heldEntries.Load()), r.heldBytes.Load()
}

// Size is how many responses the cache holds at most.
func (r *Responses) Size() int { return Ways * len(r.sets) }

// respVariant packs the parts of the key that are not the question.
func respVariant(q *wire.Query, limit int) uint8 {
	var v uint8
	if q.Flags&wire.FlagRD != 0 {
		v |= 1
	}
	if q.Flags&wire.FlagCD != 0 {
		v |= 2
	}
	if q.DO {
		v |= 4
	}
	if q.EDNS {
		v |= 8
	}
	if q.NSID {
		v |= 16
	}
	if q.Flags&wire.FlagAD != 0 {
		// RFC 6840 §5.7: AD in the query asks for AD in the response.
		v |= 1 << 7
	}
	switch {
	case limit <= 512:
	case limit < 1232:
		v |= 1 << 5
	case limit < 4096:
		v |= 2 << 5
	default:
		v |= 3 << 5
	}
	return v
}

// hash is the hash of a key; never 0, which marks an empty slot.
func (r *Responses) hash(q *wire.Query, v uint8) uint64 {
	h := maphash.Bytes(r.seed, q.Name()) ^ uint64(q.QType)<<48 ^ uint64(q.QClass)<<32 ^ uint64(v)
	// The multiply spreads the bits over the high ones, which pick the set.
	return h*0x9E3779B97F4A7C15 | 1
}

// place returns the set of a hash's two that a new response of it goes
// to (PlaceSecond).
func (r *Responses) place(h uint64) *respSet {
	a, b := &r.sets[r.sets2.First(h)], &r.sets[r.sets2.Second(h)]
	if PlaceSecond(&a.Set, &b.Set, h) {
		return b
	}
	return a
}

// Get writes into out the cached response to q (parsed from pkt), with
// q's ID and question and its TTLs aged to now, and returns it; nil on a
// miss. limit is the largest response the client takes (512 without
// EDNS, else its EDNS size within the server's own bound; over TCP
// 65535: the resolver's TCP workers keep a Responses too, apart from the
// UDP workers', recursor.NewWorker).
// refresh reports, once per stored response, a hit within the last tenth
// of its TTL: the caller may resolve the question again in the
// background (prefetch) and Put the fresh response.
func (r *Responses) Get(q *wire.Query, pkt []byte, limit int, now time.Time, out []byte) (resp []byte, refresh bool) {
	v := respVariant(q, limit)
	h := r.hash(q, v)
	set := &r.sets[r.sets2.First(h)]
	w := set.Way(h)
	if w < 0 {
		set = &r.sets[r.sets2.Second(h)]
		if w = set.Way(h); w < 0 {
			return nil, false
		}
	}
	sl := &set.slot[w]
	t := now.UnixNano()
	name := q.Name()
	n := int(sl.nameLen)
	expire := sl.expire()
	if sl.variant != v || n != len(name) || expire <= t || int(sl.respLen) > cap(out) || int(sl.respLen) > limit || q.QuestionEnd-wire.HeaderLen != n+4 ||
		r.head-sl.pos > uint64(len(r.ring)) {
		return nil, false
	}
	d := r.ring[sl.pos%uint64(len(r.ring)):]
	if !bytes.Equal(d[:n], name) || binary.BigEndian.Uint16(d[n:]) != q.QType || binary.BigEndian.Uint16(d[n+2:]) != q.QClass {
		return nil, false
	}
	src := d[n+4 : n+4+int(sl.respLen)]
	// A truncated response is not for a client that takes more than it
	// was truncated for.
	if src[2]&(wire.FlagTC>>8) != 0 && limit > int(sl.limit) {
		return nil, false
	}
	set.Touch(w)
	resp = out[:sl.respLen]
	copy(resp, src)
	resp[0], resp[1] = pkt[0], pkt[1]
	// The question as the client wrote it: answers whose owners point
	// at it echo its case too.
	copy(resp[wire.HeaderLen:], pkt[wire.HeaderLen:q.QuestionEnd])
	age := uint32(0)
	if t > sl.stored {
		age = uint32((t - sl.stored) / int64(time.Second))
	}
	offs := d[n+4+int(sl.respLen):]
	for j := 0; j < int(sl.nTTL); j++ {
		o := binary.BigEndian.Uint16(offs[2*j:])
		ttl := binary.BigEndian.Uint32(src[o:])
		binary.BigEndian.PutUint32(resp[o:], ttl-min(ttl, age))
	}
	if !sl.reported && (expire-t)*10 < int64(sl.ttl)*int64(time.Second) {
		sl.reported = true
		refresh = true
	}
	if r.head-sl.pos > uint64(len(r.ring))/4*3 {
		// Among the oldest quarter: move it ahead of what the ring
		// writes over next.
		e := d[:n+4+int(sl.respLen)+2*int(sl.nTTL)]
		var to []byte
		sl.pos, to = r.reserve(len(e))
		copy(to, e) // a memmove: e may overlap to
	}
	return resp, refresh
}

// reserve takes the next size bytes of the ring for an entry and returns
// its pos and where to write it. An entry does not wrap: one that would
// goes to the ring's start, the end left unused.
func (r *Responses) reserve(size int) (uint64, []byte) {
	ring := uint64(len(r.ring))
	if off := r.head % ring; off+uint64(size) > ring {
		r.head += ring - off
	}
	pos := r.head
	r.head += uint64(size)
	return pos, r.ring[pos%ring : pos%ring+uint64(size)]
}

// Put stores resp, the response to q (parsed from pkt) built for the
// size limit limit, at now, so that the next query of its key hits.
// Only NOERROR and NXDOMAIN responses with records (a NODATA's SOA counts)
// and a smallest TTL above zero are stored, that fit a slot; their
// question must be q's.
func (r *Responses) Put(q *wire.Query, pkt []byte, limit int, resp []byte, now time.Time) {
	v := respVariant(q, limit)
	h := r.hash(q, v)
	name := q.Name()
	qlen := q.QuestionEnd - wire.HeaderLen
	if qlen != len(name)+4 || len(resp) < q.QuestionEnd || binary.BigEndian.Uint16(resp[4:]) != 1 ||
		!foldEqual(resp[wire.HeaderLen:q.QuestionEnd], pkt[wire.HeaderLen:q.QuestionEnd]) {
		return
	}
	if rc := resp[3] & 0xF; rc != wire.RcodeSuccess && rc != wire.RcodeNXDomain {
		return
	}
	var ok bool
	if r.offs, ok = wire.TTLOffsets(resp, r.offs[:0]); !ok || len(r.offs) == 0 {
		return
	}
	size := len(name) + 4 + len(resp) + 2*len(r.offs)
	if size > len(r.ring)/4 || len(resp) > 0xFFFF {
		return
	}
	ttl := ^uint32(0)
	for _, o := range r.offs {
		ttl = min(ttl, binary.BigEndian.Uint32(resp[o:]))
	}
	if ttl == 0 {
		return
	}
	set := r.place(h)
	w := set.Victim(h)
	if set.Hash[w] == 0 {
		r.entries++
	}
	pos, d := r.reserve(size)
	n := copy(d, name)
	binary.BigEndian.PutUint16(d[n:], q.QType)
	binary.BigEndian.PutUint16(d[n+2:], q.QClass)
	n += 4
	n += copy(d[n:], resp)
	for _, o := range r.offs {
		binary.BigEndian.PutUint16(d[n:], o)
		n += 2
	}
	t := now.UnixNano()
	set.slot[w] = respSlot{
		pos: pos, stored: t, ttl: ttl, variant: v,
		nameLen: uint16(len(name)), respLen: uint16(len(resp)), nTTL: uint16(len(r.offs)), limit: uint16(min(limit, 0xFFFF)),
	}
	set.Fill(w, h)
	r.publish()
}

// foldEqual reports whether a and b are equal but for ASCII case.
func foldEqual(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
