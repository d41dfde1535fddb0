package cache

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"time"

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
// set-associative with LRU in the set (Set). Unlike auth.Cache it
// stores a response when it is Put, not on its key's second miss: a
// response Put here took a resolution, which is evidence enough that its
// question is asked (auth.Cache answers from memory whatever it is asked,
// and keeps one-off questions out so). And its entries age: a response
// expires when its smallest TTL has passed, and the offsets of its TTL
// fields are recorded when it is stored.
type Responses struct {
	shift uint // a hash's set is its top bits: h >> shift
	seed  maphash.Seed
	sets  []respSet
	data  []byte   // slot w of set i holds its key, response and TTL offsets at data[(Ways*i+w)*respSlotData:]
	offs  []uint16 // Put's scratch
}

// respSlotData is the room per slot for the question, the response and
// its TTL offsets (two bytes a record): a response of 1232 bytes (the
// default EDNS limit) with 100 records fits beside a name of 100 bytes.
// Larger ones are not cached.
const respSlotData = 1536

// DefaultResponses is the responses a worker's cache holds unless
// configured: 12 MiB per worker when full; memory becomes resident only
// as slots are used.
const DefaultResponses = 8192

// respSet is a set's bookkeeping and what its four slots hold.
type respSet struct {
	slot [Ways]respSlot
	Set
}

type respSlot struct {
	stored   int64  // when, unix nanoseconds
	expire   int64  // when its smallest TTL runs out
	ttl      uint32 // its smallest TTL, for the prefetch threshold
	variant  uint32
	nameLen  uint16
	respLen  uint16
	nTTL     uint16
	limit    uint16 // the size limit the response was built for
	reported bool   // a hit reported it for prefetch
}

// NewResponses returns an empty cache of about size responses (rounded up
// to a power of two, at least four); size <= 0 means DefaultResponses.
func NewResponses(size int) *Responses {
	if size <= 0 {
		size = DefaultResponses
	}
	sets, shift := 1, uint(64)
	for sets*Ways < size {
		sets *= 2
		shift--
	}
	return &Responses{
		shift: shift,
		seed:  maphash.MakeSeed(),
		sets:  make([]respSet, sets),
		data:  make([]byte, Ways*sets*respSlotData),
	}
}

// Clear empties the cache.
func (r *Responses) Clear() { clear(r.sets) }

// Size is how many responses the cache holds at most.
func (r *Responses) Size() int { return Ways * len(r.sets) }

// respVariant packs the parts of the key that are not the question.
func respVariant(q *wire.Query, limit int) uint32 {
	var v uint32
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
func (r *Responses) hash(q *wire.Query, v uint32) uint64 {
	h := maphash.Bytes(r.seed, q.Name()) ^ uint64(q.QType)<<48 ^ uint64(q.QClass)<<32 ^ uint64(v)
	// The multiply spreads the bits over the high ones, which pick the set.
	return h*0x9E3779B97F4A7C15 | 1
}

// Get writes into out the cached response to q (parsed from pkt), with
// q's ID and question and its TTLs aged to now, and returns it; nil on a
// miss. limit is the largest response the client takes (512 without
// EDNS, else its EDNS size within the server's own bound): only the
// resolver's UDP workers keep a Responses (recursor.NewWorker), so the
// TCP limit of 65535 never reaches it.
// refresh reports, once per stored response, a hit within the last tenth
// of its TTL: the caller may resolve the question again in the
// background (prefetch) and Put the fresh response.
func (r *Responses) Get(q *wire.Query, pkt []byte, limit int, now time.Time, out []byte) (resp []byte, refresh bool) {
	v := respVariant(q, limit)
	h := r.hash(q, v)
	i := h >> r.shift
	set := &r.sets[i]
	w := set.Way(h)
	if w < 0 {
		return nil, false
	}
	sl := &set.slot[w]
	t := now.UnixNano()
	name := q.Name()
	n := int(sl.nameLen)
	if sl.variant != v || n != len(name) || sl.expire <= t || int(sl.respLen) > cap(out) || int(sl.respLen) > limit || q.QuestionEnd-wire.HeaderLen != n+4 {
		return nil, false
	}
	d := r.data[(Ways*int(i)+w)*respSlotData:]
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
	if !sl.reported && (sl.expire-t)*10 < int64(sl.ttl)*int64(time.Second) {
		sl.reported = true
		refresh = true
	}
	return resp, refresh
}

// Put stores resp, the response to q (parsed from pkt) built for the
// size limit limit, at now, so that the next query of its key hits.
// Only NOERROR and NXDOMAIN responses with records (a NODATA's SOA counts)
// and a smallest TTL above zero are stored, that fit a slot; their
// question must be q's.
func (r *Responses) Put(q *wire.Query, pkt []byte, limit int, resp []byte, now time.Time) {
	v := respVariant(q, limit)
	h := r.hash(q, v)
	i := h >> r.shift
	set := &r.sets[i]
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
	if len(name)+4+len(resp)+2*len(r.offs) > respSlotData {
		return
	}
	ttl := ^uint32(0)
	for _, o := range r.offs {
		ttl = min(ttl, binary.BigEndian.Uint32(resp[o:]))
	}
	if ttl == 0 {
		return
	}
	w := set.Victim(h)
	d := r.data[(Ways*int(i)+w)*respSlotData:]
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
		stored: t, expire: t + int64(ttl)*int64(time.Second), ttl: ttl, variant: v,
		nameLen: uint16(len(name)), respLen: uint16(len(resp)), nTTL: uint16(len(r.offs)), limit: uint16(min(limit, 0xFFFF)),
	}
	set.Fill(w, h)
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
