package dnssec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
)

// Default signature timing, used when Options leaves them zero.
const (
	// DefaultValidity is how long a new signature is valid.
	DefaultValidity = 30 * 24 * time.Hour
	// DefaultInceptionOffset backdates inception so validators with a
	// slow clock accept fresh signatures (RFC 6781 §4.4.2.2).
	DefaultInceptionOffset = time.Hour
)

// Options control how a zone is signed.
type Options struct {
	// NSEC3 builds an NSEC3 chain (RFC 5155) instead of NSEC (RFC 4034
	// §4). Parameters follow RFC 9276 §3.1 (SHA-1, 0 extra iterations,
	// empty salt) unless NSEC3Iterations or NSEC3Salt say otherwise.
	NSEC3 bool
	// OptOut leaves unsigned delegations out of the NSEC3 chain and sets
	// the Opt-Out flag (RFC 5155 §6). Ignored without NSEC3.
	OptOut bool
	// NSEC3Iterations and NSEC3Salt (hex) replace RFC 9276's 0 and
	// empty salt: only for zones that validators must see with other
	// parameters (their tests: RFC 9276 §3.2's iteration limits).
	NSEC3Iterations uint16
	NSEC3Salt       string
	// Inception and Expiration fix the signature validity window. When
	// zero they are now-InceptionOffset and now+Validity.
	Inception, Expiration time.Time
	// Validity is the signature lifetime (DefaultValidity when zero).
	Validity time.Duration
	// InceptionOffset backdates inception (DefaultInceptionOffset when
	// zero; negative means no backdating).
	InceptionOffset time.Duration
	// Refresh is used by Resign: an existing signature is kept only if it
	// is still valid for at least Refresh after now. Zero means Validity/4.
	Refresh time.Duration
	// Workers is the number of signing goroutines (GOMAXPROCS when zero).
	Workers int
	// Progress, if set, is called from time to time (and once at the end)
	// with the number of signatures made so far and the total to make.
	Progress func(done, total int)
	// ProgressEvery is the Progress call interval (200ms when zero).
	ProgressEvery time.Duration
}

// Stats describes one signing run.
type Stats struct {
	// RRsets is the number of authoritative RRsets signed or kept.
	RRsets int
	// Signed is the number of signatures computed in this run.
	Signed int
	// Reused is the number of existing signatures kept (Resign only).
	Reused int
	// ChainRecords is the number of NSEC or NSEC3 records.
	ChainRecords int
	// Records is the number of records in the output.
	Records int
}

// rrset is one RRset of the zone under construction.
type rrset struct {
	typ  uint16
	rrs  []dns.RR
	sign bool      // authoritative: gets signatures
	sigs []dns.RR  // signatures, in key order
	prev *prevData // the same RRset in the previous signed zone, if any
}

// node is one owner name.
type node struct {
	name string // presentation form as first seen
	key  string // canonical key (canonicalKey)
	sets []*rrset
	// Kind of name, decided once cuts are known.
	deleg    bool // zone cut below the apex: NS here, not the apex
	occluded bool // below a zone cut or DNAME: glue / not authoritative
}

func (n *node) set(t uint16) *rrset {
	for _, s := range n.sets {
		if s.typ == t {
			return s
		}
	}
	return nil
}

func (n *node) add(rr dns.RR) {
	t := rr.Header().Rrtype
	if s := n.set(t); s != nil {
		s.rrs = append(s.rrs, rr)
		return
	}
	n.sets = append(n.sets, &rrset{typ: t, rrs: []dns.RR{rr}})
}

// prevData is an RRset of a previously signed zone with its signatures.
type prevData struct {
	rrs  []dns.RR
	sigs []*dns.RRSIG
}

// SignZone signs a zone: it adds the DNSKEY RRset of keys (and CDS/CDNSKEY
// for keys with CDS set), an NSEC or NSEC3 chain and RRSIGs, and returns the
// signed zone in canonical order (RFC 4034 §6). Existing RRSIG, NSEC, NSEC3
// and NSEC3PARAM records in rrs are dropped and regenerated. Every key in
// keys is published; keys sign according to their SignZone/SignKeys fields.
func SignZone(ctx context.Context, rrs []dns.RR, origin string, keys []*Key, opts Options, now time.Time) ([]dns.RR, error) {
	out, _, err := sign(ctx, rrs, nil, origin, keys, opts, now)
	return out, err
}

// SignZoneStats is SignZone that also reports what it did.
func SignZoneStats(ctx context.Context, rrs []dns.RR, origin string, keys []*Key, opts Options, now time.Time) ([]dns.RR, Stats, error) {
	return sign(ctx, rrs, nil, origin, keys, opts, now)
}

// Resign signs the zone content rrs like SignZone, but keeps signatures from
// prev (the previous output of SignZone or Resign) for every RRset whose
// content, TTL and signing key are unchanged and whose signature stays
// valid beyond now+Refresh. Only changed RRsets (including the NSEC/NSEC3
// records around changed names) and aging signatures are signed again.
func Resign(ctx context.Context, prev, rrs []dns.RR, origin string, keys []*Key, opts Options, now time.Time) ([]dns.RR, Stats, error) {
	if prev == nil {
		prev = []dns.RR{}
	}
	return sign(ctx, rrs, prev, origin, keys, opts, now)
}

// sign is the common implementation of SignZone and Resign; prev is nil
// for a full signing.
func sign(ctx context.Context, rrs, prev []dns.RR, origin string, keys []*Key, opts Options, now time.Time) ([]dns.RR, Stats, error) {
	var st Stats
	origin = dns.CanonicalName(origin)
	apexKey, err := wire.CanonicalNameKey(origin)
	if err != nil {
		return nil, st, fmt.Errorf("sign %s: %w", origin, err)
	}
	incep, expir := opts.window(now)
	if !expir.After(incep) {
		return nil, st, fmt.Errorf("sign %s: expiration %s is not after inception %s", origin, expir.UTC(), incep.UTC())
	}
	if len(keys) == 0 {
		return nil, st, fmt.Errorf("sign %s: no keys", origin)
	}
	var zoneSigners, keySigners []*Key
	for _, k := range keys {
		if k.DNSKEY == nil {
			return nil, st, fmt.Errorf("sign %s: key without DNSKEY", origin)
		}
		if dns.CanonicalName(k.DNSKEY.Hdr.Name) != origin {
			return nil, st, fmt.Errorf("sign %s: key %d belongs to %s", origin, k.Tag(), k.DNSKEY.Hdr.Name)
		}
		if (k.SignZone || k.SignKeys) && k.Signer == nil {
			return nil, st, fmt.Errorf("sign %s: key %d is to sign but has no private key", origin, k.Tag())
		}
		if k.CDSOnly && (k.SignZone || k.SignKeys) {
			return nil, st, fmt.Errorf("sign %s: key %d signs but is not in the DNSKEY RRset", origin, k.Tag())
		}
		if k.SignZone {
			zoneSigners = append(zoneSigners, k)
		}
		if k.SignKeys {
			keySigners = append(keySigners, k)
		}
	}
	if len(zoneSigners) == 0 || len(keySigners) == 0 {
		return nil, st, fmt.Errorf("sign %s: need at least one zone-signing and one key-signing key", origin)
	}

	// Group the input into names and RRsets.
	nodes := make(map[string]*node, len(rrs)/2+1)
	wantCDS := false
	for _, k := range keys {
		wantCDS = wantCDS || k.CDS
	}
	for _, rr := range rrs {
		h := rr.Header()
		switch h.Rrtype {
		case dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNSEC3, dns.TypeNSEC3PARAM:
			continue // regenerated below
		}
		k, err := wire.CanonicalNameKey(h.Name)
		if err != nil {
			return nil, st, fmt.Errorf("sign %s: %w", origin, err)
		}
		if k != apexKey && !wire.KeyBelow(k, apexKey) {
			return nil, st, fmt.Errorf("sign %s: record %s is outside the zone", origin, h.Name)
		}
		if k == apexKey && wantCDS && (h.Rrtype == dns.TypeCDS || h.Rrtype == dns.TypeCDNSKEY) {
			continue // replaced by the keys' CDS/CDNSKEY
		}
		n := nodes[k]
		if n == nil {
			n = &node{name: h.Name, key: k}
			nodes[k] = n
		}
		n.add(rr)
	}
	apex := nodes[apexKey]
	if apex == nil || apex.set(dns.TypeSOA) == nil {
		return nil, st, fmt.Errorf("sign %s: no SOA record at the apex", origin)
	}
	if len(apex.set(dns.TypeSOA).rrs) != 1 {
		return nil, st, fmt.Errorf("sign %s: more than one SOA record", origin)
	}
	soa := apex.set(dns.TypeSOA).rrs[0].(*dns.SOA)
	apex.name = origin

	// Apex DNSSEC records: DNSKEY RRset (RFC 4034 §2), CDS/CDNSKEY
	// (RFC 7344 §3) and NSEC3PARAM (RFC 5155 §4).
	dnskeyTTL := keys[0].DNSKEY.Hdr.Ttl
	for _, k := range keys {
		dnskeyTTL = min(dnskeyTTL, k.DNSKEY.Hdr.Ttl)
	}
	for _, k := range keys {
		if !k.CDSOnly {
			pub := dns.Copy(k.DNSKEY).(*dns.DNSKEY)
			pub.Hdr.Name = origin
			apex.add(pub)
		}
		if k.CDS {
			ds := k.DNSKEY.ToDS(dns.SHA256)
			if ds == nil {
				return nil, st, fmt.Errorf("sign %s: cannot make DS for key %d", origin, k.Tag())
			}
			cds := ds.ToCDS()
			cds.Hdr.Name, cds.Hdr.Ttl = origin, dnskeyTTL
			cdnskey := k.DNSKEY.ToCDNSKEY()
			cdnskey.Hdr.Name, cdnskey.Hdr.Ttl = origin, dnskeyTTL
			apex.add(cds)
			apex.add(cdnskey)
		}
	}
	// RFC 9077 §3.2: NSEC/NSEC3 TTL is min(SOA MINIMUM, SOA TTL).
	chainTTL := min(soa.Minttl, soa.Hdr.Ttl)
	if opts.NSEC3 {
		apex.add(&dns.NSEC3PARAM{
			Hdr:  dns.RR_Header{Name: origin, Rrtype: dns.TypeNSEC3PARAM, Class: dns.ClassINET, Ttl: 0},
			Hash: dns.SHA1, Flags: 0, Iterations: opts.NSEC3Iterations, SaltLength: uint8(len(opts.NSEC3Salt) / 2), Salt: opts.NSEC3Salt,
		})
	}

	// Normalise every RRset: one TTL (RFC 2181 §5.2 forbids mixed TTLs),
	// no duplicates, canonical RDATA order (RFC 4034 §6.3).
	for _, n := range nodes {
		for _, s := range n.sets {
			if err := normalise(s); err != nil {
				return nil, st, fmt.Errorf("sign %s: %s: %w", origin, n.name, err)
			}
		}
	}

	sorted := make([]*node, 0, len(nodes))
	for _, n := range nodes {
		sorted = append(sorted, n)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].key < sorted[j].key })

	// Find zone cuts. In canonical order all names below a name follow it
	// contiguously, so one pass with the innermost cut suffices.
	// RFC 4035 §2.2: at a delegation only NSEC and DS are authoritative;
	// everything below a cut (glue) is not signed and not in the chain.
	// RFC 6672 §2.3: names below a DNAME are occluded too.
	var auth []*node
	cut := ""
	for _, n := range sorted {
		if cut != "" && wire.KeyBelow(n.key, cut) {
			n.occluded = true
			continue
		}
		cut = ""
		if n.key != apexKey && n.set(dns.TypeNS) != nil {
			n.deleg = true
			cut = n.key
		} else if n.set(dns.TypeDNAME) != nil {
			cut = n.key
		}
		if n.key != apexKey && n.set(dns.TypeSOA) != nil {
			return nil, st, fmt.Errorf("sign %s: SOA at %s below the apex", origin, n.name)
		}
		auth = append(auth, n)
		for _, s := range n.sets {
			s.sign = !n.deleg || s.typ == dns.TypeDS
		}
		if n.deleg && n.set(dns.TypeCNAME) != nil {
			return nil, st, fmt.Errorf("sign %s: CNAME at delegation %s", origin, n.name)
		}
	}

	// Build the chain.
	var chain []*node
	if opts.NSEC3 {
		chain, err = buildNSEC3(nodes, auth, apexKey, origin, opts, chainTTL)
		if err != nil {
			return nil, st, fmt.Errorf("sign %s: %w", origin, err)
		}
	} else {
		buildNSEC(auth, chainTTL)
	}
	st.ChainRecords = len(auth)
	if opts.NSEC3 {
		st.ChainRecords = len(chain)
	}

	// Link RRsets to their previous versions for Resign.
	if prev != nil {
		idx, err := indexPrev(prev)
		if err != nil {
			return nil, st, fmt.Errorf("sign %s: previous zone: %w", origin, err)
		}
		link := func(ns []*node) {
			for _, n := range ns {
				for _, s := range n.sets {
					if s.sign {
						s.prev = idx[prevKey{n.key, s.typ}]
					}
				}
			}
		}
		link(auth)
		link(chain)
	}

	// Collect signing work.
	var tasks []task
	addTasks := func(ns []*node) {
		for _, n := range ns {
			for _, s := range n.sets {
				if !s.sign {
					continue
				}
				st.RRsets++
				signers := zoneSigners
				if n.key == apexKey && (s.typ == dns.TypeDNSKEY || s.typ == dns.TypeCDS || s.typ == dns.TypeCDNSKEY) {
					signers = keySigners
				}
				for _, k := range signers {
					tasks = append(tasks, task{set: s, key: k})
				}
			}
		}
	}
	addTasks(auth)
	addTasks(chain)

	refresh := opts.Refresh
	if refresh == 0 {
		refresh = opts.validity() / 4
	}
	signed, reused, err := runTasks(ctx, tasks, origin, incep, expir, now.Add(refresh), now, opts)
	if err != nil {
		return nil, st, fmt.Errorf("sign %s: %w", origin, err)
	}
	st.Signed, st.Reused = signed, reused

	// Output in canonical order: merge the zone's names with the NSEC3
	// names (already sorted by hash, which is their canonical order).
	out := make([]dns.RR, 0, len(rrs)*2+len(chain)*2)
	emit := func(n *node) {
		sort.Slice(n.sets, func(i, j int) bool { return n.sets[i].typ < n.sets[j].typ })
		for _, s := range n.sets {
			out = append(out, s.rrs...)
			out = append(out, s.sigs...)
		}
	}
	i, j := 0, 0
	for i < len(sorted) || j < len(chain) {
		if j >= len(chain) || (i < len(sorted) && sorted[i].key < chain[j].key) {
			emit(sorted[i])
			i++
		} else {
			emit(chain[j])
			j++
		}
	}
	st.Records = len(out)
	return out, st, nil
}

// window returns the signature inception and expiration for now.
func (o Options) window(now time.Time) (time.Time, time.Time) {
	incep, expir := o.Inception, o.Expiration
	if incep.IsZero() {
		off := o.InceptionOffset
		if off == 0 {
			off = DefaultInceptionOffset
		}
		if off < 0 {
			off = 0
		}
		incep = now.Add(-off)
	}
	if expir.IsZero() {
		expir = now.Add(o.validity())
	}
	return incep, expir
}

func (o Options) validity() time.Duration {
	if o.Validity > 0 {
		return o.Validity
	}
	if !o.Expiration.IsZero() && !o.Inception.IsZero() {
		return o.Expiration.Sub(o.Inception)
	}
	return DefaultValidity
}

// rdataWire returns the uncompressed wire form of rr's RDATA, used to
// compare and order records (RFC 4034 §6.3). Embedded names keep their
// case; zone files rarely differ only in case inside RDATA.
func rdataWire(rr dns.RR) ([]byte, error) {
	buf := make([]byte, dns.Len(rr)+1)
	off, err := dns.PackRR(rr, buf, 0, nil, false)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", rr.Header().Name, err)
	}
	_, hoff, err := dns.UnpackDomainName(buf, 0)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", rr.Header().Name, err)
	}
	return buf[hoff+10 : off], nil
}

// normalise gives an RRset one TTL (the smallest), drops duplicate records
// and sorts the records in canonical RDATA order.
func normalise(s *rrset) error {
	if len(s.rrs) == 1 {
		return nil
	}
	ttl := s.rrs[0].Header().Ttl
	for _, rr := range s.rrs {
		ttl = min(ttl, rr.Header().Ttl)
	}
	type w struct {
		rr   dns.RR
		wire []byte
	}
	ws := make([]w, len(s.rrs))
	for i, rr := range s.rrs {
		rr.Header().Ttl = ttl
		b, err := rdataWire(rr)
		if err != nil {
			return err
		}
		ws[i] = w{rr, b}
	}
	sort.SliceStable(ws, func(i, j int) bool { return bytes.Compare(ws[i].wire, ws[j].wire) < 0 })
	s.rrs = s.rrs[:0]
	for i, x := range ws {
		if i > 0 && bytes.Equal(x.wire, ws[i-1].wire) {
			continue
		}
		s.rrs = append(s.rrs, x.rr)
	}
	return nil
}

// typesOf returns the types bitmap for an authoritative node (RFC 4034
// §4.1.2): all types present, except non-authoritative ones at a
// delegation (only NS and DS count there).
func typesOf(n *node) []uint16 {
	ts := make([]uint16, 0, len(n.sets)+2)
	for _, s := range n.sets {
		if n.deleg && s.typ != dns.TypeNS && s.typ != dns.TypeDS {
			continue
		}
		ts = append(ts, s.typ)
	}
	return ts
}

func sortTypes(ts []uint16) []uint16 {
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	out := ts[:0]
	for i, t := range ts {
		if i == 0 || t != ts[i-1] {
			out = append(out, t)
		}
	}
	return out
}

// buildNSEC adds an NSEC record to every authoritative name, linking the
// names in canonical order and wrapping to the apex (RFC 4034 §4.1.1).
func buildNSEC(auth []*node, ttl uint32) {
	for i, n := range auth {
		next := auth[(i+1)%len(auth)]
		ts := append(typesOf(n), dns.TypeNSEC, dns.TypeRRSIG)
		n.sets = append(n.sets, &rrset{typ: dns.TypeNSEC, sign: true, rrs: []dns.RR{&dns.NSEC{
			Hdr:        dns.RR_Header{Name: n.name, Rrtype: dns.TypeNSEC, Class: dns.ClassINET, Ttl: ttl},
			NextDomain: next.name,
			TypeBitMap: sortTypes(ts),
		}}})
	}
}

// buildNSEC3 returns the NSEC3 names of the zone in hash order (RFC 5155
// §7.1): one per authoritative name and per empty non-terminal, leaving out
// unsigned delegations (and the empty non-terminals only they create) when
// optOut is set.
func buildNSEC3(nodes map[string]*node, auth []*node, apexKey, origin string, opts Options, ttl uint32) ([]*node, error) {
	optOut := opts.OptOut
	type entry struct {
		name  string
		types []uint16
		hash  string
	}
	entries := make([]entry, 0, len(auth)+len(auth)/8)
	ents := map[string]bool{}
	for _, n := range auth {
		signedDeleg := n.deleg && n.set(dns.TypeDS) != nil
		if optOut && n.deleg && !signedDeleg {
			continue // RFC 5155 §7.1: unsigned delegations MAY be skipped
		}
		ts := typesOf(n)
		// RRSIG is in the bitmap when the name has signed RRsets: all
		// but unsigned delegations (RFC 5155 §7.1 step 4).
		if !n.deleg || signedDeleg {
			ts = append(ts, dns.TypeRRSIG)
		}
		entries = append(entries, entry{name: n.name, types: sortTypes(ts)})
		// Empty non-terminals between this name and the apex.
		name, k := n.name, n.key
		for k != apexKey {
			pk, ok := wire.KeyParent(k)
			if !ok || pk == apexKey {
				break
			}
			name = parentName(name)
			k = pk
			if nodes[k] != nil || ents[k] {
				break
			}
			ents[k] = true
			entries = append(entries, entry{name: name})
		}
	}
	for i := range entries {
		entries[i].hash = dns.HashName(entries[i].name, dns.SHA1, opts.NSEC3Iterations, opts.NSEC3Salt)
		if entries[i].hash == "" {
			return nil, fmt.Errorf("cannot hash %s", entries[i].name)
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].hash < entries[j].hash })
	flags := uint8(0)
	if optOut {
		flags = 1
	}
	chain := make([]*node, len(entries))
	for i, e := range entries {
		if i > 0 && e.hash == entries[i-1].hash {
			return nil, fmt.Errorf("NSEC3 hash collision between %s and %s", e.name, entries[i-1].name)
		}
		owner := lowerASCII(e.hash) + "." + origin
		k, err := wire.CanonicalNameKey(owner)
		if err != nil {
			return nil, err
		}
		if nodes[k] != nil {
			return nil, fmt.Errorf("NSEC3 owner %s clashes with a zone name", owner)
		}
		next := entries[(i+1)%len(entries)].hash
		chain[i] = &node{name: owner, key: k, sets: []*rrset{{typ: dns.TypeNSEC3, sign: true, rrs: []dns.RR{&dns.NSEC3{
			Hdr:        dns.RR_Header{Name: owner, Rrtype: dns.TypeNSEC3, Class: dns.ClassINET, Ttl: ttl},
			Hash:       dns.SHA1,
			Flags:      flags,
			Iterations: opts.NSEC3Iterations,
			SaltLength: uint8(len(opts.NSEC3Salt) / 2),
			Salt:       opts.NSEC3Salt,
			HashLength: 20,
			NextDomain: next,
			TypeBitMap: e.types,
		}}}}}
	}
	return chain, nil
}

// parentName removes the first label of a presentation-form name.
func parentName(name string) string {
	idx := dns.Split(name)
	if len(idx) < 2 {
		return "."
	}
	return name[idx[1]:]
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// prevKey identifies an RRset of the previous zone.
type prevKey struct {
	name string
	typ  uint16
}

// indexPrev groups a previously signed zone into RRsets with signatures.
func indexPrev(prev []dns.RR) (map[prevKey]*prevData, error) {
	idx := make(map[prevKey]*prevData, len(prev)/2)
	get := func(name string, t uint16) (*prevData, error) {
		k, err := wire.CanonicalNameKey(name)
		if err != nil {
			return nil, err
		}
		pk := prevKey{k, t}
		d := idx[pk]
		if d == nil {
			d = &prevData{}
			idx[pk] = d
		}
		return d, nil
	}
	for _, rr := range prev {
		h := rr.Header()
		if sig, ok := rr.(*dns.RRSIG); ok {
			d, err := get(h.Name, sig.TypeCovered)
			if err != nil {
				return nil, err
			}
			d.sigs = append(d.sigs, sig)
			continue
		}
		d, err := get(h.Name, h.Rrtype)
		if err != nil {
			return nil, err
		}
		d.rrs = append(d.rrs, rr)
	}
	return idx, nil
}

// sameRRset reports whether two RRsets have the same TTL and records.
func sameRRset(a, b []dns.RR) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for i := range a {
		if a[i].Header().Ttl != b[i].Header().Ttl {
			return false
		}
	}
	if len(a) == 1 {
		return sameRR(a[0], b[0])
	}
	wa := make([][]byte, len(a))
	wb := make([][]byte, len(b))
	for i := range a {
		x, err1 := rdataWire(a[i])
		y, err2 := rdataWire(b[i])
		if err1 != nil || err2 != nil {
			return false
		}
		wa[i], wb[i] = x, y
	}
	less := func(w [][]byte) func(i, j int) bool {
		return func(i, j int) bool { return bytes.Compare(w[i], w[j]) < 0 }
	}
	sort.Slice(wa, less(wa))
	sort.Slice(wb, less(wb))
	for i := range wa {
		if !bytes.Equal(wa[i], wb[i]) {
			return false
		}
	}
	return true
}

// sameRR reports whether two records have the same owner (without regard
// to case), class, type and RDATA, their TTLs aside. RDATA IsDuplicate
// finds different is compared in wire form, as text read back can differ
// in form only: a CDS digest's hex is upper case when read from the
// signed copy, lower case when made from a key.
func sameRR(a, b dns.RR) bool {
	if dns.IsDuplicate(a, b) {
		return true
	}
	ha, hb := a.Header(), b.Header()
	if ha.Rrtype != hb.Rrtype || ha.Class != hb.Class || dns.CanonicalName(ha.Name) != dns.CanonicalName(hb.Name) {
		return false
	}
	wa, err1 := rdataWire(a)
	wb, err2 := rdataWire(b)
	return err1 == nil && err2 == nil && bytes.Equal(wa, wb)
}

// task is one signature to make (or reuse): an RRset with one key.
type task struct {
	set *rrset
	key *Key
	sig dns.RR
}

// runTasks signs all tasks on opts.Workers goroutines and attaches the
// signatures to their RRsets in task order. Signatures of unchanged RRsets
// that stay valid until keepUntil are reused.
func runTasks(ctx context.Context, tasks []task, origin string, incep, expir, keepUntil, now time.Time, opts Options) (signed, reused int, err error) {
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var next, done, nReused atomic.Int64
	const chunk = 64
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	fail := func(e error) { errOnce.Do(func() { firstErr = e }) }
	var stop atomic.Bool
	inc, exp := uint32(incep.Unix()), uint32(expir.Unix())
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if ctx.Err() != nil {
					fail(ctx.Err())
					stop.Store(true)
					return
				}
				lo := int(next.Add(chunk)) - chunk
				if lo >= len(tasks) {
					return
				}
				hi := min(lo+chunk, len(tasks))
				for i := lo; i < hi; i++ {
					t := &tasks[i]
					if old := reusable(t, origin, keepUntil, now); old != nil {
						t.sig = old
						nReused.Add(1)
						continue
					}
					sig, err := signRRset(t.set.rrs, t.key, origin, inc, exp)
					if err != nil {
						fail(err)
						stop.Store(true)
						return
					}
					t.sig = sig
				}
				done.Add(int64(hi - lo))
			}
		}()
	}
	progressDone := make(chan struct{})
	var pwg sync.WaitGroup
	if opts.Progress != nil {
		every := opts.ProgressEvery
		if every <= 0 {
			every = 200 * time.Millisecond
		}
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				select {
				case <-progressDone:
					return
				case <-tick.C:
					opts.Progress(int(min(done.Load(), int64(len(tasks)))), len(tasks))
				}
			}
		}()
	}
	wg.Wait()
	close(progressDone)
	pwg.Wait()
	if firstErr != nil {
		return 0, 0, firstErr
	}
	if opts.Progress != nil {
		opts.Progress(len(tasks), len(tasks))
	}
	for i := range tasks {
		if tasks[i].sig == nil {
			return 0, 0, errors.New("internal error: unsigned task")
		}
		tasks[i].set.sigs = append(tasks[i].set.sigs, tasks[i].sig)
	}
	r := int(nReused.Load())
	return len(tasks) - r, r, nil
}

// signRRset signs the RRset rrs (one owner, type and TTL) with key,
// valid from inc to exp (RFC 4034 §3.1.5 times).
func signRRset(rrs []dns.RR, key *Key, origin string, inc, exp uint32) (*dns.RRSIG, error) {
	h := rrs[0].Header()
	sig := &dns.RRSIG{
		Hdr:        dns.RR_Header{Rrtype: dns.TypeRRSIG, Class: dns.ClassINET, Ttl: h.Ttl},
		OrigTtl:    h.Ttl,
		Algorithm:  key.DNSKEY.Algorithm,
		KeyTag:     key.Tag(),
		SignerName: origin,
		Inception:  inc,
		Expiration: exp,
	}
	if err := sig.Sign(key.Signer, rrs); err != nil {
		return nil, fmt.Errorf("sign %s/%s with key %d: %w", h.Name, dns.TypeToString[h.Rrtype], key.Tag(), err)
	}
	return sig, nil
}

// reusable returns an existing signature of an unchanged RRset by the same
// key that is already valid and stays valid beyond keepUntil, or nil.
func reusable(t *task, origin string, keepUntil, now time.Time) dns.RR {
	p := t.set.prev
	if p == nil || len(p.sigs) == 0 || !sameRRset(p.rrs, t.set.rrs) {
		return nil
	}
	ttl := t.set.rrs[0].Header().Ttl
	for _, s := range p.sigs {
		if s.KeyTag != t.key.Tag() || s.Algorithm != t.key.DNSKEY.Algorithm ||
			s.OrigTtl != ttl || s.Hdr.Ttl != ttl || dns.CanonicalName(s.SignerName) != origin {
			continue
		}
		// RFC 4034 §3.1.5: serial-number arithmetic on the 32-bit times;
		// converting through int64 is right until 2106.
		if int64(s.Inception) > now.Unix() || int64(s.Expiration) <= keepUntil.Unix() {
			continue
		}
		return s
	}
	return nil
}
