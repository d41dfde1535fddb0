package cache

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/tern-dns/tern/internal/wire"
)

// Responses remembers whole responses to recursive queries, for one
// worker: the resolver's hot path. A hit is one hash, one or two sets of
// four slots probed, the stored question compared byte for byte, and one copy
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
// set-associative with LRU in the set, and a hash has two sets
// (Choices: its top bits pick one, its low bits the other): a hit looks
// in the first, then the second; a new response goes to the set that has
// its key, else to the one with more empty slots, else to the one whose
// oldest slot is older (place, as PlaceSecond). With one set
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
// The sets hold only what finds an entry: per slot a 32-bit tag of the
// key's hash and where its entry is, 8 bytes, a set of four in half a
// cache line (respSet). The entries (when stored, when last used, TTL,
// sizes, the response with its question lowercased, TTL offsets) are
// appended to a ring (a log that wraps), each taking its own size: a
// one-record answer about 109 bytes where a fixed slot took 1536. A slot
// whose entry the ring has since written over is a miss, and the first
// a new response in its set replaces (TestResponsesWrittenOverFirst). A
// hit on an entry among the oldest quarter of the ring copies it to the
// ring's head, so what is asked keeps its place however many new
// responses pass (TestResponsesRing). Appending fills memory in order, a
// page at a time: fixed slots spread over the whole array faulted a new
// page in on almost every Put of a cold resolution (46% of its page
// faults, 1.2 per answer).
type Responses struct {
	sets2 Choices // where a hash's two sets are
	seed  maphash.Seed
	sets  []respSet
	// clock ticks at every hit and Put: the entries' use times (hUsed),
	// on one clock so that two sets' oldest slots compare (place).
	clock uint32
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
// answers (109 bytes each with their header and TTL offsets), or one
// with DNSSEC signatures. minRing is the smallest ring, maxRing the
// largest (sweep; 256 MiB, where server.response-cache's most, 131072,
// takes 64 MiB); an entry larger than a quarter of the ring is not
// cached.
const (
	respRoom = 512
	minRing  = 64 << 10
	maxRing  = 256 << 20
)

// DefaultResponses is the responses a worker's cache holds unless
// configured: 4 MiB of ring and 64 KiB of sets per worker when full;
// their memory becomes resident as they are written.
const DefaultResponses = 8192

// respSet is the bookkeeping of a set's four slots, 32 bytes, two sets
// to a cache line (the sets are mapped page-aligned): all a hit reads
// before the entry (TestResponsesSetLayout). The sets are resident
// however few responses are stored, as two sets per hash spread them
// over every page: 1 MiB per worker of bench/run.sh's 131072 slots,
// where a set of 64 bytes (each slot's use time in it, and all 64 bits
// of its entry's pos) made 2 MiB of the res-mix's 21.9 MB growth. Each
// slot's use time is in its entry's header instead (hUsed), which a hit
// reads and writes anyway (callgrind: 676 instructions per hit in
// BenchmarkResponsesHit, 679 before). Only the choice of a victim
// among full sets reads it there, a line of the ring per slot, on a Put
// that ended a resolution: BenchmarkResponsesPutFull took about 200
// instructions and 4.7 first-level cache misses more per Put (2140-2180
// and 8.6 before). Before, a set took four lines (64 bytes a slot, the
// whole entry header in the slot).
type respSet struct {
	// tag is the tag of the key each slot holds (tagOf); 0: empty.
	tag [Ways]uint32
	// pos is the low 32 bits of the pos of each slot's entry: the ring
	// is far shorter than 1<<32 bytes (maxRing), and no slot that pos
	// could name twice lives long enough to (sweep).
	pos [Ways]uint32
}

// way returns the slot holding tag, or -1.
func (s *respSet) way(tag uint32) int {
	for w, t := range s.tag {
		if t == tag {
			return w
		}
	}
	return -1
}

// empty counts the set's empty slots.
func (s *respSet) empty() int {
	n := 0
	for _, t := range s.tag {
		if t == 0 {
			n++
		}
	}
	return n
}

// entry returns where in the ring the entry of slot w of s starts and
// whether it is intact: the ring has not written over it since. pos
// keeps 32 bits of the entry's pos; its distance behind head is their
// difference, right across the wrap of those bits (sweep).
func (r *Responses) entry(s *respSet, w int) (at uint64, ok bool) {
	behind := uint32(r.head) - s.pos[w]
	return (r.head - uint64(behind)) % uint64(len(r.ring)), uint64(behind) <= uint64(len(r.ring))
}

// age returns how long ago, in ticks of clock, slot w of s (not empty)
// was used: a difference of ticks, right across the clock's wrap. A
// slot whose entry the ring wrote over is the oldest there can be: it
// holds nothing.
func (r *Responses) age(s *respSet, w int) uint32 {
	at, ok := r.entry(s, w)
	if !ok {
		return ^uint32(0)
	}
	return r.clock - binary.LittleEndian.Uint32(r.ring[at+hUsed:])
}

// oldest returns the least recently used slot of s, a full set, and
// how long ago, in ticks of clock, it was used.
func (r *Responses) oldest(s *respSet) (w int, age uint32) {
	for j := range s.tag {
		if a := r.age(s, j); a > age || j == 0 {
			w, age = j, a
		}
	}
	return w, age
}

// sweep empties the slots whose entries are sweepAge or more bytes
// behind head, long written over. reserve calls it each time head
// passes a multiple of sweepEvery, so that no slot lives until head is
// 1<<32 bytes past its entry, where its 32 bits of pos (respSet) would
// name a newer place in the ring: a slot kept at a sweep is less than
// sweepAge behind, and head moves less than sweepEvery+maxRing before
// the next. The slots of entries intact are all far nearer (maxRing).
// Once per 2 GiB of responses it reads every set.
func (r *Responses) sweep() {
	for i := range r.sets {
		s := &r.sets[i]
		for w, t := range s.tag {
			if t != 0 && uint32(r.head)-s.pos[w] >= sweepAge {
				s.tag[w] = 0
				r.entries--
			}
		}
	}
}

// sweepEvery and sweepAge are sweep's period and threshold, in bytes of
// the ring's pos: sweepAge+sweepEvery+maxRing < 1<<32.
const (
	sweepEvery = 1 << 31
	sweepAge   = 1 << 30
)

// An entry in the ring: a header, the response (its question's name
// lowercased: the key's name), and the offsets of its TTL fields, two
// bytes each. The header's fields, little-endian:
const (
	hStored   = 0  // int64: when it was stored, unix nanoseconds
	hTTL      = 8  // uint32: its smallest TTL; it expires ttl seconds after stored, the prefetch threshold a tenth of it
	hUsed     = 12 // uint32: the Responses' clock at its slot's last use
	hRespLen  = 16 // uint16: the response's length
	hNTTL     = 18 // uint16: the TTL offsets
	hLimit    = 20 // uint16: the size limit the response was built for
	hVariant  = 22 // uint8: respVariant
	hReported = 23 // uint8: 1 once a hit reported it for prefetch
	entryHead = 24
)

// NewResponses returns an empty cache of about size responses (rounded up
// to a power of two, at least four); size <= 0 means DefaultResponses.
func NewResponses(size int) *Responses {
	if size <= 0 {
		size = DefaultResponses
	}
	return newResponses(size, size*respRoom)
}

// newResponses is NewResponses with a ring of ring bytes (at least
// minRing, at most maxRing).
func newResponses(size, ring int) *Responses {
	sets2, sets := NewChoices(size)
	r := &Responses{sets2: sets2, seed: maphash.MakeSeed()}
	// The sets and the ring hold no pointers: both are mapped beside
	// the Go heap (mapped), where the collector neither scans them nor
	// lets GOGC's share of garbage grow with them.
	b := mapped(r, sets*int(unsafe.Sizeof(respSet{})))
	r.sets = unsafe.Slice((*respSet)(unsafe.Pointer(unsafe.SliceData(b))), sets)
	r.ring = mapped(r, min(max(ring, minRing), maxRing))
	r.publish()
	return r
}

// Clear empties the cache. An empty cache is left as it is: the sets of
// one never written are not resident, and stay so (the resolver's
// workers clear theirs at their first query).
func (r *Responses) Clear() {
	if r.entries == 0 {
		return
	}
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
// reused or swept) and the bytes it uses (its sets, and its ring as far
// as it was ever written), as of its owner's last Put or Clear. Unlike
// the other methods it is safe to call from any goroutine.
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

// hash is the hash of a key.
func (r *Responses) hash(q *wire.Query, v uint8) uint64 {
	h := maphash.Bytes(r.seed, q.Name()) ^ uint64(q.QType)<<48 ^ uint64(q.QClass)<<32 ^ uint64(v)
	// The multiply spreads the bits over the high ones, which pick the set.
	return h * 0x9E3779B97F4A7C15
}

// tagOf is the tag a slot keeps of a hash: 32 bits of it mixed anew, so
// that keys that share a set (by its top or its low bits) do not share
// their tag's bits too; never 0, which marks an empty slot. Two keys of
// one tag in a set are one key to the set (the newer replaces the older);
// a hit confirms the bytes.
func tagOf(h uint64) uint32 { return uint32((h^h>>29)*0xBF58476D1CE4E5B9>>32) | 1 }

// place returns the set of a hash's two that a new response of it goes
// to, as PlaceSecond picks for Set, and the slot in it, as Victim picks:
// the one that holds its tag already, else the set with more empty
// slots (the first if as many) and an empty slot, else the set whose
// least recently used slot was used longer ago and that slot.
func (r *Responses) place(h uint64, tag uint32) (*respSet, int) {
	a, b := &r.sets[r.sets2.First(h)], &r.sets[r.sets2.Second(h)]
	if w := a.way(tag); w >= 0 {
		return a, w
	}
	if w := b.way(tag); w >= 0 {
		return b, w
	}
	if ea, eb := a.empty(), b.empty(); ea+eb > 0 {
		if eb > ea {
			return b, b.way(0)
		}
		return a, a.way(0)
	}
	wa, ageA := r.oldest(a)
	wb, ageB := r.oldest(b)
	if ageB > ageA {
		return b, wb
	}
	return a, wa
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
	resp, refresh = r.get(q, pkt, limit, now, out)
	// The sets and the ring get reads are unmapped when r is collected
	// (mapped), and get's last use of r comes before some of its reads
	// of them: r stays reachable until get returns, whatever the caller
	// does with r. Get is inlined into its callers; measured at
	// 7088895 (go tool objdump, callgrind): get's machine code is the
	// old Get's, BenchmarkResponsesHit's loop is unchanged, and the
	// recursor's hit path (Worker.cached) gains one store, r kept in
	// its frame across the call.
	runtime.KeepAlive(r)
	return resp, refresh
}

// get is Get, without keeping r reachable.
func (r *Responses) get(q *wire.Query, pkt []byte, limit int, now time.Time, out []byte) (resp []byte, refresh bool) {
	v := respVariant(q, limit)
	h := r.hash(q, v)
	tag := tagOf(h)
	set := &r.sets[r.sets2.First(h)]
	w := set.way(tag)
	if w < 0 {
		set = &r.sets[r.sets2.Second(h)]
		if w = set.way(tag); w < 0 {
			return nil, false
		}
	}
	at, ok := r.entry(set, w)
	if !ok {
		// Written over since.
		return nil, false
	}
	d := r.ring[at:]
	t := now.UnixNano()
	name := q.Name()
	n := len(name)
	stored := int64(binary.LittleEndian.Uint64(d[hStored:]))
	ttl := binary.LittleEndian.Uint32(d[hTTL:])
	respLen := int(binary.LittleEndian.Uint16(d[hRespLen:]))
	expire := stored + int64(ttl)*int64(time.Second)
	if d[hVariant] != v || expire <= t || respLen > cap(out) || respLen > limit || q.QuestionEnd-wire.HeaderLen != n+4 || respLen < q.QuestionEnd {
		return nil, false
	}
	src := d[entryHead : entryHead+respLen]
	qd := src[wire.HeaderLen:q.QuestionEnd]
	if !bytes.Equal(qd[:n], name) || binary.BigEndian.Uint16(qd[n:]) != q.QType || binary.BigEndian.Uint16(qd[n+2:]) != q.QClass {
		return nil, false
	}
	// A truncated response is not for a client that takes more than it
	// was truncated for.
	if src[2]&(wire.FlagTC>>8) != 0 && limit > int(binary.LittleEndian.Uint16(d[hLimit:])) {
		return nil, false
	}
	r.clock++
	binary.LittleEndian.PutUint32(d[hUsed:], r.clock)
	resp = out[:respLen]
	copy(resp, src)
	resp[0], resp[1] = pkt[0], pkt[1]
	// The question as the client wrote it: answers whose owners point
	// at it echo its case too.
	copy(resp[wire.HeaderLen:], pkt[wire.HeaderLen:q.QuestionEnd])
	age := uint32(0)
	if t > stored {
		age = uint32((t - stored) / int64(time.Second))
	}
	nTTL := int(binary.LittleEndian.Uint16(d[hNTTL:]))
	offs := d[entryHead+respLen:]
	for j := 0; j < nTTL; j++ {
		o := binary.BigEndian.Uint16(offs[2*j:])
		ttl := binary.BigEndian.Uint32(src[o:])
		binary.BigEndian.PutUint32(resp[o:], ttl-min(ttl, age))
	}
	if d[hReported] == 0 && (expire-t)*10 < int64(ttl)*int64(time.Second) {
		d[hReported] = 1
		refresh = true
	}
	if uint32(r.head)-set.pos[w] > uint32(len(r.ring))/4*3 {
		// Among the oldest quarter: move it ahead of what the ring
		// writes over next.
		e := d[:entryHead+respLen+2*nTTL]
		pos, to := r.reserve(len(e))
		copy(to, e) // a memmove: e may overlap to
		set.pos[w] = uint32(pos)
	}
	return resp, refresh
}

// reserve takes the next size bytes of the ring for an entry and returns
// its pos and where to write it. An entry does not wrap: one that would
// goes to the ring's start, the end left unused. When head passes a
// multiple of sweepEvery it sweeps the sets; a slot whose entry is
// intact, or was before this reserve, stays.
func (r *Responses) reserve(size int) (uint64, []byte) {
	ring := uint64(len(r.ring))
	from := r.head
	if off := r.head % ring; off+uint64(size) > ring {
		r.head += ring - off
	}
	pos := r.head
	r.head += uint64(size)
	if r.head/sweepEvery != from/sweepEvery {
		r.sweep()
	}
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
	size := entryHead + len(resp) + 2*len(r.offs)
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
	// The entry's place first: a sweep there may empty slots, and the
	// ring's head moved on decides which slots are written over
	// (entry), the first a victim (age).
	pos, d := r.reserve(size)
	tag := tagOf(h)
	set, w := r.place(h, tag)
	if set.tag[w] == 0 {
		r.entries++
	}
	r.clock++
	binary.LittleEndian.PutUint64(d[hStored:], uint64(now.UnixNano()))
	binary.LittleEndian.PutUint32(d[hUsed:], r.clock)
	binary.LittleEndian.PutUint32(d[hTTL:], ttl)
	binary.LittleEndian.PutUint16(d[hRespLen:], uint16(len(resp)))
	binary.LittleEndian.PutUint16(d[hNTTL:], uint16(len(r.offs)))
	binary.LittleEndian.PutUint16(d[hLimit:], uint16(min(limit, 0xFFFF)))
	d[hVariant], d[hReported] = v, 0
	n := entryHead + copy(d[entryHead:], resp)
	// The key's name, lowercased, in place of the question's (equal but
	// for case, checked above): what a hit compares.
	copy(d[entryHead+wire.HeaderLen:], name)
	for _, o := range r.offs {
		binary.BigEndian.PutUint16(d[n:], o)
		n += 2
	}
	set.tag[w], set.pos[w] = tag, uint32(pos)
	r.publish()
	// As in Get: r stays reachable until the sets and the ring are
	// written (publish uses r last already; this keeps it so if that
	// moves). Put's machine code is the same instructions.
	runtime.KeepAlive(r)
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
