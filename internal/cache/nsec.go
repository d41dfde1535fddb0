package cache

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
)

// Denials is the index behind the aggressive use of DNSSEC-validated
// cache (RFC 8198): per signed zone, the NSEC records it holds in
// canonical name order (wire.CanonicalNameKey, RFC 4034 §6.1), or its
// NSEC3 records in the order of their hashes, and the zone's SOA, so
// that the resolver finds the record that matches or covers any name
// (the greatest at or before it) with one binary search. Only records
// that validated Secure may be added (RFC 8198 §5.1); Denials itself
// knows nothing of DNSSEC beyond the order of names and hashes: the
// resolver proves the denial with the validator.
//
// A zone holds one kind of record, the last added: a zone that moved
// from NSEC to NSEC3, or to other NSEC3 parameters, starts again (as
// PowerDNS Recursor keeps the latest NSEC3 parameters of a zone). The
// records are kept as dns.RR, shared: callers must not modify them.
//
// It is bounded in bytes (the records' wire length and a fixed overhead
// each); when full, the expired records go, then the zone holding the
// most bytes. It is safe for concurrent use: lookups take a read lock.
type Denials struct {
	mu    sync.RWMutex
	zones map[string]*denialZone
	bytes int64
	limit int64
	now   func() time.Time
}

// DefaultDenialsSize bounds a Denials unless configured: 4 MiB, of the
// order of Unbound's neg-cache-size (1 MiB, denser records).
const DefaultDenialsSize = 4 << 20

// denialOverhead is what a record costs beyond its wire length: its
// dns.RR structs, slice and key.
const denialOverhead = 256

// denialZone is the index of one zone.
type denialZone struct {
	soa       []dns.RR // the SOA and its RRSIGs
	soaExpire int64
	// nsec3 says which kind recs are; iterations and salt are the
	// NSEC3 parameters of every record in recs.
	nsec3      bool
	iterations uint16
	salt       string
	recs       []denial // sorted by key
	bytes      int64
}

// denial is one NSEC or NSEC3 record.
type denial struct {
	// key is the owner's canonical key (NSEC) or its hash label in upper
	// case (NSEC3: base32hex keeps the order of the hashes).
	key    string
	rrs    []dns.RR // the record, then its RRSIGs
	expire int64
	cost   int64
}

// NewDenials returns an empty index bounded to size bytes (default
// DefaultDenialsSize) on the clock now (default time.Now).
func NewDenials(size int64, now func() time.Time) *Denials {
	if size <= 0 {
		size = DefaultDenialsSize
	}
	if now == nil {
		now = time.Now
	}
	return &Denials{zones: map[string]*denialZone{}, limit: size, now: now}
}

// Denial is a record found in the index: the NSEC or NSEC3 record then its
// RRSIGs (shared: not to be modified), and the seconds it has left.
type Denial struct {
	Records []dns.RR
	TTL     uint32
}

// AddSOA records the SOA RRset of zone (the SOA then its RRSIGs), which
// a synthesised negative answer carries (RFC 8198 §5.4: its TTL bounds
// the answer's).
func (d *Denials) AddSOA(zone string, rrs []dns.RR) {
	ttl, ok := rrsTTL(rrs)
	if !ok {
		return
	}
	zone = dns.CanonicalName(zone)
	now := d.now().UnixNano()
	d.mu.Lock()
	defer d.mu.Unlock()
	z := d.zone(zone)
	z.bytes -= int64(rrsLen(z.soa))
	d.bytes -= int64(rrsLen(z.soa))
	z.soa, z.soaExpire = rrs, now+int64(ttl)*int64(time.Second)
	z.bytes += int64(rrsLen(rrs))
	d.bytes += int64(rrsLen(rrs))
	d.trim(zone)
}

// Add records one NSEC or NSEC3 record of zone and its RRSIGs (rrs: the
// record first), for at most maxTTL seconds and its records' TTLs. An
// NSEC3 record must be owned by a hash label directly below zone; other
// parameters than the zone's replace what the zone held.
func (d *Denials) Add(zone string, rrs []dns.RR, maxTTL uint32) {
	ttl, ok := rrsTTL(rrs)
	if !ok {
		return
	}
	ttl = min(ttl, maxTTL)
	zone = dns.CanonicalName(zone)
	e := denial{rrs: rrs, cost: int64(rrsLen(rrs)) + denialOverhead}
	var n3 *dns.NSEC3
	switch r := rrs[0].(type) {
	case *dns.NSEC:
		k, err := wire.CanonicalNameKey(r.Hdr.Name)
		if err != nil || !dns.IsSubDomain(zone, r.Hdr.Name) {
			return
		}
		e.key = k
	case *dns.NSEC3:
		i, _ := dns.NextLabel(r.Hdr.Name, 0)
		if i == 0 || dns.CanonicalName(r.Hdr.Name[i:]) != zone {
			return
		}
		e.key, n3 = strings.ToUpper(r.Hdr.Name[:i-1]), r
	default:
		return
	}
	now := d.now().UnixNano()
	e.expire = now + int64(ttl)*int64(time.Second)
	d.mu.Lock()
	defer d.mu.Unlock()
	z := d.zone(zone)
	if z.nsec3 != (n3 != nil) || n3 != nil && (z.iterations != n3.Iterations || !strings.EqualFold(z.salt, n3.Salt)) {
		// Another kind or other parameters: the zone starts again.
		d.bytes -= z.bytes - int64(rrsLen(z.soa))
		z.bytes = int64(rrsLen(z.soa))
		z.recs = nil
		z.nsec3 = n3 != nil
		if n3 != nil {
			z.iterations, z.salt = n3.Iterations, n3.Salt
		}
	}
	i := sort.Search(len(z.recs), func(i int) bool { return z.recs[i].key >= e.key })
	if i < len(z.recs) && z.recs[i].key == e.key {
		z.bytes -= z.recs[i].cost
		d.bytes -= z.recs[i].cost
		z.recs[i] = e
	} else {
		z.recs = append(z.recs, denial{})
		copy(z.recs[i+1:], z.recs[i:])
		z.recs[i] = e
	}
	z.bytes += e.cost
	d.bytes += e.cost
	d.trim(zone)
}

// zone returns the index of zone, made if needed; d.mu is held.
func (d *Denials) zone(name string) *denialZone {
	z := d.zones[name]
	if z == nil {
		z = &denialZone{}
		d.zones[name] = z
	}
	return z
}

// trim brings d within its bound after an addition to zone: the expired
// records go, then, while it is still over, the zone with the most bytes
// (an attacker walking a zone of its own costs that zone first). d.mu is
// held.
func (d *Denials) trim(zone string) {
	if d.bytes <= d.limit {
		return
	}
	now := d.now().UnixNano()
	for name, z := range d.zones {
		live := z.recs[:0]
		for _, e := range z.recs {
			if e.expire > now {
				live = append(live, e)
			} else {
				z.bytes -= e.cost
				d.bytes -= e.cost
			}
		}
		clear(z.recs[len(live):])
		z.recs = live
		if z.soaExpire <= now {
			z.bytes -= int64(rrsLen(z.soa))
			d.bytes -= int64(rrsLen(z.soa))
			z.soa = nil
		}
		if len(z.recs) == 0 && z.soa == nil {
			delete(d.zones, name)
		}
	}
	for d.bytes > d.limit && len(d.zones) > 0 {
		largest, most := "", int64(-1)
		for name, z := range d.zones {
			if z.bytes > most {
				largest, most = name, z.bytes
			}
		}
		d.bytes -= most
		delete(d.zones, largest)
	}
}

// Closest returns the deepest zone at or above name that holds records,
// and whether there is one.
func (d *Denials) Closest(name string) (string, bool) {
	name = dns.CanonicalName(name)
	d.mu.RLock()
	defer d.mu.RUnlock()
	for {
		if z := d.zones[name]; z != nil && len(z.recs) > 0 {
			return name, true
		}
		if name == "." {
			return "", false
		}
		i, _ := dns.NextLabel(name, 0)
		name = name[i:]
		if name == "" {
			name = "."
		}
	}
}

// SOA returns the live SOA RRset of zone, copied with the seconds it has
// left as TTL.
func (d *Denials) SOA(zone string) (Denial, bool) {
	now := d.now().UnixNano()
	d.mu.RLock()
	defer d.mu.RUnlock()
	z := d.zones[zone]
	if z == nil || z.soa == nil || z.soaExpire <= now {
		return Denial{}, false
	}
	return Denial{Records: z.soa, TTL: uint32((z.soaExpire - now) / int64(time.Second))}, true
}

// NSEC3Params returns the NSEC3 parameters of zone's records, and false
// when it holds NSEC records or none.
func (d *Denials) NSEC3Params(zone string) (iterations uint16, salt string, ok bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	z := d.zones[zone]
	if z == nil || !z.nsec3 || len(z.recs) == 0 {
		return 0, "", false
	}
	return z.iterations, z.salt, true
}

// NSEC returns the NSEC record of zone whose owner is name or the last
// before it in canonical order (the last of the zone for a name before
// them all: the chain wraps around), if it is live.
func (d *Denials) NSEC(zone, name string) (Denial, bool) {
	var buf [wire.MaxKey]byte
	k, err := wire.AppendCanonicalNameKey(buf[:0], name)
	if err != nil {
		return Denial{}, false
	}
	return d.find(zone, k, false)
}

// NSEC3 returns the NSEC3 record of zone whose owner's hash is hash (in
// base32hex, either case) or the last before it (wrapping around), if it
// is live.
func (d *Denials) NSEC3(zone, hash string) (Denial, bool) {
	var buf [64]byte
	k := buf[:0]
	for i := 0; i < len(hash); i++ {
		c := hash[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		k = append(k, c)
	}
	return d.find(zone, k, true)
}

// find returns the live record of zone at or before key (wrapping
// around) among records of the kind nsec3.
func (d *Denials) find(zone string, key []byte, nsec3 bool) (Denial, bool) {
	now := d.now().UnixNano()
	d.mu.RLock()
	defer d.mu.RUnlock()
	z := d.zones[zone]
	if z == nil || z.nsec3 != nsec3 || len(z.recs) == 0 {
		return Denial{}, false
	}
	i := sort.Search(len(z.recs), func(i int) bool { return z.recs[i].key > string(key) }) - 1
	if i < 0 {
		i = len(z.recs) - 1
	}
	e := &z.recs[i]
	if e.expire <= now {
		return Denial{}, false
	}
	return Denial{Records: e.rrs, TTL: uint32((e.expire - now) / int64(time.Second))}, true
}

// Bytes returns the bytes the index holds, by the measure its size
// bounds.
func (d *Denials) Bytes() int64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.bytes
}

// rrsTTL is the smallest TTL of rrs, and false for none.
func rrsTTL(rrs []dns.RR) (uint32, bool) {
	if len(rrs) == 0 {
		return 0, false
	}
	ttl := ^uint32(0)
	for _, rr := range rrs {
		ttl = min(ttl, rr.Header().Ttl)
	}
	return ttl, true
}

// rrsLen is the wire length of rrs, uncompressed.
func rrsLen(rrs []dns.RR) int {
	n := 0
	for _, rr := range rrs {
		n += dns.Len(rr)
	}
	return n
}
