// Package update applies dynamic updates (RFC 2136) to a zone: it parses
// an UPDATE message, checks its prerequisites (§3.2) against a version of
// the zone and applies its update section (§3.4), giving the next version
// and the difference between the two in the form of RFC 1995 (what the
// journal keeps and IXFR sends). It opens no socket and keeps no state:
// who may update a zone (RFC 3007: TSIG and ACLs), making the change
// durable and serving it are its caller's.
package update

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnssec"
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// Response codes of an UPDATE (RFC 2136 §2.2) beside RFC 1035's.
const (
	RcodeFormErr  = dns.RcodeFormatError   // 1: the message is malformed
	RcodeServFail = dns.RcodeServerFailure // 2
	RcodeNXDomain = dns.RcodeNameError     // 3: a name that ought to exist does not
	RcodeRefused  = dns.RcodeRefused       // 5
	RcodeYXDomain = dns.RcodeYXDomain      // 6: a name that ought not to exist does
	RcodeYXRRSet  = dns.RcodeYXRrset       // 7: an RRset that ought not to exist does
	RcodeNXRRSet  = dns.RcodeNXRrset       // 8: an RRset that ought to exist does not
	RcodeNotAuth  = dns.RcodeNotAuth       // 9: the zone is not served here
	RcodeNotZone  = dns.RcodeNotZone       // 10: a name outside the zone
)

// Error is an update refused: the RCODE it is answered with and why.
type Error struct {
	Rcode  int
	Reason string
}

// Error tells the response code and why.
func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", dns.RcodeToString[e.Rcode], e.Reason)
}

func errorf(rcode int, format string, args ...any) *Error {
	return &Error{Rcode: rcode, Reason: fmt.Sprintf(format, args...)}
}

// Message is an UPDATE message (RFC 2136 §2), parsed.
type Message struct {
	// Zone is the zone section's ZNAME, lowercase and fully qualified,
	// and Class its ZCLASS.
	Zone  string
	Class uint16
	// Prereqs is the prerequisite section (§2.4), Updates the update
	// section (§2.5), in the message's order.
	Prereqs, Updates []dns.RR
}

// Parse reads an UPDATE message. A message that is not one, or is
// malformed, is an *Error with RCODE FORMERR (§3.1.1: one zone, of type
// SOA). The additional section (OPT, TSIG) is not Parse's.
func Parse(msg []byte) (*Message, error) {
	var m dns.Msg
	if err := m.Unpack(msg); err != nil {
		return nil, errorf(RcodeFormErr, "unreadable message: %v", err)
	}
	if m.Opcode != dns.OpcodeUpdate || m.Response {
		return nil, errorf(RcodeFormErr, "not an UPDATE request")
	}
	if len(m.Question) != 1 || m.Question[0].Qtype != dns.TypeSOA {
		return nil, errorf(RcodeFormErr, "the zone section is not one name of type SOA")
	}
	q := m.Question[0]
	return &Message{Zone: dns.CanonicalName(q.Name), Class: q.Qclass, Prereqs: m.Answer, Updates: m.Ns}, nil
}

// Options are what Apply needs beside the zone and the message.
type Options struct {
	// Serial is how the new version's serial is chosen when the update
	// does not raise the SOA's serial itself.
	Serial dnssec.SerialPolicy
	// Now is the time of the update (for the unixtime and dateserial
	// policies).
	Now time.Time
	// Signed marks a zone the server signs: its DNSSEC records are the
	// signer's, and an update that adds or deletes any is REFUSED.
	Signed bool
}

// Result is an update applied.
type Result struct {
	// Zone is the next version, nil when the update changed nothing
	// (prerequisites met, every change a no-op: still NOERROR, §3.4.2).
	Zone *zone.Zone
	// Diff turns the version updated into Zone.
	Diff *zone.Diff
}

// Apply checks m's prerequisites against z, the zone version served
// (RFC 2136 §3.2), and applies its update section (§3.4) to it, as one
// atomic change (§3.4.2.2: all or nothing). A refusal is an *Error
// holding its RCODE.
func Apply(z *zone.Zone, m *Message, opt Options) (*Result, error) {
	if z == nil || z.Unavailable || z.SOA == nil {
		return nil, errorf(RcodeServFail, "the zone has no data to update")
	}
	origin := zone.NameString(z.Origin)
	// §3.1.2: the zone must be one served here, in its class.
	if m.Zone != dns.CanonicalName(origin) || m.Class != dns.ClassINET {
		return nil, errorf(RcodeNotAuth, "zone %s class %s is not %s IN", m.Zone, dns.Class(m.Class), origin)
	}
	u := &updater{z: z, origin: dns.CanonicalName(origin), opt: opt, sets: map[setKey][]dns.RR{}, loaded: map[string]bool{}}
	if err := u.prerequisites(m.Prereqs); err != nil {
		return nil, err
	}
	if err := u.prescan(m.Updates); err != nil {
		return nil, err
	}
	for _, rr := range m.Updates {
		if err := u.apply(rr); err != nil {
			return nil, err
		}
	}
	return u.result()
}

// ParseApply parses the UPDATE message msg and applies it to z, as Parse
// and Apply do.
func ParseApply(z *zone.Zone, msg []byte, opt Options) (*Result, error) {
	m, err := Parse(msg)
	if err != nil {
		return nil, err
	}
	return Apply(z, m, opt)
}

// Rcode is the RCODE of an update that ended with err: NOERROR for nil,
// the *Error's own, SERVFAIL for any other failure.
func Rcode(err error) int {
	if err == nil {
		return dns.RcodeSuccess
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Rcode
	}
	return RcodeServFail
}

// setKey names an RRset: its owner, lowercase and fully qualified, and
// its type (RRSIG: every signature at the name, whatever it covers).
type setKey struct {
	name string
	typ  uint16
}

// updater is one update being applied: the RRsets it touches, as they
// become, beside the zone version it started from.
type updater struct {
	z      *zone.Zone
	origin string
	opt    Options
	// sets are the RRsets of the names loaded, changed in place; names
	// lists those names in the order met, keys the RRsets of each.
	sets   map[setKey][]dns.RR
	loaded map[string]bool
	names  []string
	// old holds, per RRset loaded, its records' tails as the zone
	// stores them, for the difference.
	old map[setKey][][]byte
}

// node returns the zone's node of name, nil when it has none.
func (u *updater) node(name string) *zone.Node {
	w, err := wire.NameWire(name)
	if err != nil {
		return nil
	}
	return u.z.Lookup(w)
}

// inUse reports whether name owns records (RFC 2136 §2.4.4): an empty
// non-terminal does not.
func (u *updater) inUse(name string) bool {
	n := u.node(name)
	return n != nil && len(n.RRsets) > 0
}

// exists reports whether the RRset of name and typ exists in the zone.
func (u *updater) exists(name string, typ uint16) bool {
	n := u.node(name)
	if n == nil {
		return false
	}
	if typ == dns.TypeRRSIG {
		for i := range n.RRsets {
			if _, ok := n.RRsets[i].Sigs(); ok {
				return true
			}
		}
		return false
	}
	return n.Get(typ) != nil
}

// inZone reports whether name is at or below the zone's apex.
func (u *updater) inZone(name string) bool { return dns.IsSubDomain(u.origin, name) }

// prerequisites checks the prerequisite section (RFC 2136 §3.2.5).
func (u *updater) prerequisites(prereqs []dns.RR) error {
	var temp []dns.RR
	for _, rr := range prereqs {
		h := rr.Header()
		name := dns.CanonicalName(h.Name)
		if h.Ttl != 0 {
			return errorf(RcodeFormErr, "prerequisite %s %s: TTL %d, not 0", name, dns.Type(h.Rrtype), h.Ttl)
		}
		if !u.inZone(name) {
			return errorf(RcodeNotZone, "prerequisite %s is outside the zone %s", name, u.origin)
		}
		switch h.Class {
		case dns.ClassANY:
			if h.Rdlength != 0 {
				return errorf(RcodeFormErr, "prerequisite %s %s: class ANY with RDATA", name, dns.Type(h.Rrtype))
			}
			if h.Rrtype == dns.TypeANY {
				// §2.4.4: name is in use.
				if !u.inUse(name) {
					return errorf(RcodeNXDomain, "prerequisite: %s is not in use", name)
				}
			} else if !u.exists(name, h.Rrtype) {
				// §2.4.1: RRset exists (value independent).
				return errorf(RcodeNXRRSet, "prerequisite: no %s RRset at %s", dns.Type(h.Rrtype), name)
			}
		case dns.ClassNONE:
			if h.Rdlength != 0 {
				return errorf(RcodeFormErr, "prerequisite %s %s: class NONE with RDATA", name, dns.Type(h.Rrtype))
			}
			if h.Rrtype == dns.TypeANY {
				// §2.4.5: name is not in use.
				if u.inUse(name) {
					return errorf(RcodeYXDomain, "prerequisite: %s is in use", name)
				}
			} else if u.exists(name, h.Rrtype) {
				// §2.4.3: RRset does not exist.
				return errorf(RcodeYXRRSet, "prerequisite: a %s RRset exists at %s", dns.Type(h.Rrtype), name)
			}
		case dns.ClassINET:
			// §2.4.2: RRset exists (value dependent), compared once
			// the section is read, RRset by RRset.
			if h.Rrtype == dns.TypeANY || h.Rdlength == 0 {
				return errorf(RcodeFormErr, "prerequisite %s %s: class IN without RDATA", name, dns.Type(h.Rrtype))
			}
			temp = append(temp, rr)
		default:
			return errorf(RcodeFormErr, "prerequisite %s %s: class %s", name, dns.Type(h.Rrtype), dns.Class(h.Class))
		}
	}
	// The value-dependent prerequisites: each RRset named must be in
	// the zone exactly as given, TTLs aside (§3.2.3).
	done := map[setKey]bool{}
	for _, rr := range temp {
		k := keyOf(rr)
		if done[k] {
			continue
		}
		done[k] = true
		var want []dns.RR
		for _, t := range temp {
			if keyOf(t) == k {
				want = append(want, t)
			}
		}
		have, err := u.zoneSet(k)
		if err != nil {
			return err
		}
		if !sameSet(have, want) {
			return errorf(RcodeNXRRSet, "prerequisite: the %s RRset at %s is not the one given", dns.Type(k.typ), k.name)
		}
	}
	return nil
}

// sameSet reports whether a and b hold the same records, TTLs aside and
// duplicates counted once (RFC 2136 §3.2.3).
func sameSet(a, b []dns.RR) bool {
	return subset(a, b) && subset(b, a)
}

func subset(a, b []dns.RR) bool {
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y dns.RR) bool { return dns.IsDuplicate(x, y) }) {
			return false
		}
	}
	return true
}

// keyOf is the RRset rr belongs to.
func keyOf(rr dns.RR) setKey {
	h := rr.Header()
	return setKey{dns.CanonicalName(h.Name), h.Rrtype}
}

// zoneSet returns the records of the RRset k as the zone holds them
// (class IN), before any change.
func (u *updater) zoneSet(k setKey) ([]dns.RR, error) {
	n := u.node(k.name)
	if n == nil {
		return nil, nil
	}
	var out []dns.RR
	var err error
	each := func(t []byte) {
		if err != nil {
			return
		}
		var rr dns.RR
		if rr, err = (zone.RR{Owner: n.Name, Tail: t}).Unpack(); err == nil {
			out = append(out, rr)
		}
	}
	for i := range n.RRsets {
		s := &n.RRsets[i]
		if k.typ == dns.TypeRRSIG {
			if sigs, ok := s.Sigs(); ok {
				sigs.Each(each)
			}
		} else if s.Type == k.typ {
			s.Each(each)
		}
	}
	if err != nil {
		return nil, errorf(RcodeServFail, "reading %s %s: %v", k.name, dns.Type(k.typ), err)
	}
	return out, nil
}

// Types that are never data (RFC 2136 §3.4.1.3 names AXFR, MAILA, MAILB
// and ANY; RFC 6891 and RFC 8945 add OPT, TKEY and TSIG).
func metaType(t uint16) bool {
	switch t {
	case dns.TypeANY, dns.TypeAXFR, dns.TypeIXFR, dns.TypeMAILA, dns.TypeMAILB, dns.TypeOPT, dns.TypeTSIG, dns.TypeTKEY, dns.TypeNone:
		return true
	}
	return false
}

// signerType reports whether records of type t belong to the signer of
// an automatically signed zone (as zonedb leaves them out of its file).
func signerType(t uint16) bool {
	switch t {
	case dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNSEC3, dns.TypeNSEC3PARAM, dns.TypeDNSKEY, dns.TypeCDS, dns.TypeCDNSKEY:
		return true
	}
	return false
}

// prescan checks the update section before anything is changed (RFC 2136
// §3.4.1), so that a bad record leaves the zone as it was.
func (u *updater) prescan(updates []dns.RR) error {
	for _, rr := range updates {
		h := rr.Header()
		name := dns.CanonicalName(h.Name)
		what := fmt.Sprintf("update %s %s %s", name, dns.Class(h.Class), dns.Type(h.Rrtype))
		if !u.inZone(name) {
			return errorf(RcodeNotZone, "%s: outside the zone %s", what, u.origin)
		}
		switch h.Class {
		case dns.ClassINET:
			if metaType(h.Rrtype) {
				return errorf(RcodeFormErr, "%s: not a type of data", what)
			}
			if h.Rdlength == 0 {
				return errorf(RcodeFormErr, "%s: no RDATA", what)
			}
		case dns.ClassANY:
			if h.Ttl != 0 || h.Rdlength != 0 || (metaType(h.Rrtype) && h.Rrtype != dns.TypeANY) {
				return errorf(RcodeFormErr, "%s: a deletion of RRsets has TTL 0, no RDATA and a type of data or ANY", what)
			}
		case dns.ClassNONE:
			if h.Ttl != 0 || metaType(h.Rrtype) {
				return errorf(RcodeFormErr, "%s: a deletion of a record has TTL 0 and a type of data", what)
			}
		default:
			return errorf(RcodeFormErr, "%s: class is not IN, ANY or NONE", what)
		}
		if u.opt.Signed && signerType(h.Rrtype) {
			return errorf(RcodeRefused, "%s: the zone is signed by this server, which keeps its DNSSEC records", what)
		}
	}
	return nil
}

// load brings name's RRsets into u.sets, once.
func (u *updater) load(name string) error {
	if u.loaded[name] {
		return nil
	}
	u.loaded[name] = true
	u.names = append(u.names, name)
	if u.old == nil {
		u.old = map[setKey][][]byte{}
	}
	n := u.node(name)
	if n == nil {
		return nil
	}
	for i := range n.RRsets {
		s := &n.RRsets[i]
		if err := u.loadSet(n, setKey{name, s.Type}, s); err != nil {
			return err
		}
		if sigs, ok := s.Sigs(); ok {
			if err := u.loadSet(n, setKey{name, dns.TypeRRSIG}, &sigs); err != nil {
				return err
			}
		}
	}
	return nil
}

func (u *updater) loadSet(n *zone.Node, k setKey, s *zone.RRset) error {
	var err error
	s.Each(func(t []byte) {
		if err != nil {
			return
		}
		var rr dns.RR
		if rr, err = (zone.RR{Owner: n.Name, Tail: t}).Unpack(); err == nil {
			u.sets[k] = append(u.sets[k], rr)
			u.old[k] = append(u.old[k], t)
		}
	})
	if err != nil {
		return errorf(RcodeServFail, "reading %s %s: %v", k.name, dns.Type(k.typ), err)
	}
	return nil
}

// typesAt returns the types of the RRsets name owns now, in order.
func (u *updater) typesAt(name string) []uint16 {
	var ts []uint16
	for k, rrs := range u.sets {
		if k.name == name && len(rrs) > 0 {
			ts = append(ts, k.typ)
		}
	}
	slices.Sort(ts)
	return ts
}

// apply makes one change of the update section (RFC 2136 §3.4.2).
func (u *updater) apply(rr dns.RR) error {
	h := rr.Header()
	name := dns.CanonicalName(h.Name)
	if err := u.load(name); err != nil {
		return err
	}
	k := setKey{name, h.Rrtype}
	apex := name == u.origin
	switch h.Class {
	case dns.ClassINET:
		return u.add(k, rr)
	case dns.ClassANY:
		switch {
		case h.Rrtype == dns.TypeANY:
			// §3.4.2.3: every RRset of the name; at the apex the SOA
			// and NS RRsets stay.
			for _, t := range u.typesAt(name) {
				if apex && (t == dns.TypeSOA || t == dns.TypeNS) {
					continue
				}
				u.sets[setKey{name, t}] = nil
			}
		case apex && (h.Rrtype == dns.TypeSOA || h.Rrtype == dns.TypeNS):
			// §3.4.2.3: the apex SOA and NS RRsets are not deleted.
		default:
			u.sets[k] = nil
		}
	case dns.ClassNONE:
		if h.Rrtype == dns.TypeSOA {
			// §3.4.2.4: the SOA is never deleted.
			return nil
		}
		del := dns.Copy(rr)
		del.Header().Class = dns.ClassINET
		set := u.sets[k]
		if apex && h.Rrtype == dns.TypeNS && len(set) == 1 && dns.IsDuplicate(set[0], del) {
			// §3.4.2.4: the last NS record of the apex stays.
			return nil
		}
		u.sets[k] = slices.DeleteFunc(set, func(z dns.RR) bool { return dns.IsDuplicate(z, del) })
	}
	return nil
}

// add adds rr to its RRset (RFC 2136 §3.4.2.2).
func (u *updater) add(k setKey, rr dns.RR) error {
	h := rr.Header()
	rr = dns.Copy(rr)
	rr.Header().Name = k.name
	// RFC 2181 §10.1 and RFC 4035 §2.5: a CNAME shares its name with
	// nothing but DNSSEC's RRSIG and NSEC; an addition that would break
	// that is ignored (§3.4.2.2).
	dnssecMeta := k.typ == dns.TypeRRSIG || k.typ == dns.TypeNSEC
	if k.typ == dns.TypeCNAME {
		for _, t := range u.typesAt(k.name) {
			if t != dns.TypeCNAME && t != dns.TypeRRSIG && t != dns.TypeNSEC {
				return nil
			}
		}
	} else if !dnssecMeta && len(u.sets[setKey{k.name, dns.TypeCNAME}]) > 0 {
		return nil
	}
	switch k.typ {
	case dns.TypeSOA:
		// Only the apex has a SOA, and a serial that goes back is
		// ignored (RFC 1982 order).
		cur := u.sets[k]
		if k.name != u.origin || len(cur) != 1 {
			return nil
		}
		if wire.SerialCompare(rr.(*dns.SOA).Serial, cur[0].(*dns.SOA).Serial) < 0 {
			return nil
		}
		u.sets[k] = []dns.RR{rr}
		return nil
	case dns.TypeCNAME:
		// One CNAME per name: a new one replaces it.
		u.sets[k] = []dns.RR{rr}
		return nil
	}
	set := u.sets[k]
	i := slices.IndexFunc(set, func(z dns.RR) bool { return dns.IsDuplicate(z, rr) })
	if i >= 0 {
		set[i] = rr // the same record: its TTL may change
	} else {
		set = append(set, rr)
	}
	if k.typ != dns.TypeRRSIG {
		// RFC 2181 §5.2: one TTL per RRset; the record added sets it
		// (as BIND does).
		for _, z := range set {
			z.Header().Ttl = h.Ttl
		}
	}
	u.sets[k] = set
	return nil
}

// keyedRR is a record of the difference with its owner's canonical key.
type keyedRR struct {
	key []byte
	rr  zone.RR
}

// result computes the difference the update makes and the next version.
func (u *updater) result() (*Result, error) {
	oldSOA := u.z.SOARecord()
	var del, add []keyedRR
	var buf [65535 + 512]byte
	soaKey := setKey{u.origin, dns.TypeSOA}
	for _, name := range u.names {
		owner, err := wire.NameWire(name)
		if err != nil {
			return nil, errorf(RcodeFormErr, "name %s: %v", name, err)
		}
		key := wire.CanonicalKey(nil, owner)
		var keys []setKey
		for k := range u.sets {
			if k.name == name && k != soaKey {
				keys = append(keys, k)
			}
		}
		for k := range u.old {
			if k.name == name && k != soaKey && u.sets[k] == nil && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			var tails [][]byte
			for _, rr := range u.sets[k] {
				t, err := tail(rr, buf[:])
				if err != nil {
					return nil, errorf(RcodeFormErr, "update %s %s: %v", name, dns.Type(k.typ), err)
				}
				if !slices.ContainsFunc(tails, func(x []byte) bool { return string(x) == string(t) }) {
					tails = append(tails, t)
				}
			}
			old := u.old[k]
			for _, t := range old {
				if !slices.ContainsFunc(tails, func(x []byte) bool { return string(x) == string(t) }) {
					del = append(del, keyedRR{key, zone.RR{Owner: owner, Tail: t}})
				}
			}
			for _, t := range tails {
				if !slices.ContainsFunc(old, func(x []byte) bool { return string(x) == string(t) }) {
					add = append(add, keyedRR{key, zone.RR{Owner: owner, Tail: t}})
				}
			}
		}
	}
	// The SOA: as the update left it (§3.4.2.2), with a serial past the
	// old one unless the update gave it one already.
	soa, err := u.z.SOARecord().Unpack()
	if err != nil {
		return nil, errorf(RcodeServFail, "reading the SOA: %v", err)
	}
	if s := u.sets[soaKey]; len(s) == 1 {
		soa = s[0]
	}
	newSOA, err := tail(soa, buf[:])
	if err != nil {
		return nil, errorf(RcodeServFail, "the SOA: %v", err)
	}
	if len(del) == 0 && len(add) == 0 && string(newSOA) == string(oldSOA.Tail) {
		return &Result{}, nil
	}
	serial := soa.(*dns.SOA).Serial
	if wire.SerialCompare(serial, u.z.Serial) <= 0 {
		serial = u.opt.Serial.Next(u.z.Serial, u.opt.Now)
		binary.BigEndian.PutUint32(newSOA[len(newSOA)-20:], serial)
	}
	order := func(a, b keyedRR) int { return zone.CompareRR(a.key, a.rr, b.key, b.rr) }
	slices.SortFunc(del, order)
	slices.SortFunc(add, order)
	d := &zone.Diff{From: u.z.Serial, To: serial, OldSOA: oldSOA, NewSOA: zone.RR{Owner: u.z.Origin, Tail: newSOA},
		Deleted: unkey(del), Added: unkey(add)}
	recs, err := d.ApplyZone(u.z)
	if err != nil {
		return nil, errorf(RcodeServFail, "%v", err)
	}
	next, err := zone.CompileRecords(u.origin, "dynamic update", recs)
	if err != nil {
		// The changes make a zone that does not load (a record where
		// a DNAME forbids one, say): refused, nothing changed.
		return nil, errorf(RcodeRefused, "the zone would not load: %v", err)
	}
	return &Result{Zone: next, Diff: d}, nil
}

func unkey(ks []keyedRR) []zone.RR {
	out := make([]zone.RR, len(ks))
	for i, k := range ks {
		out[i] = k.rr
	}
	return out
}

// tail encodes rr as the zone stores a record: TYPE, CLASS, TTL,
// RDLENGTH and RDATA, names uncompressed; the result is a copy.
func tail(rr dns.RR, buf []byte) ([]byte, error) {
	n, err := dns.PackRR(rr, buf, 0, nil, false)
	if err != nil {
		return nil, err
	}
	at := wire.NameLen(buf[:n])
	if at+10 > n {
		return nil, fmt.Errorf("short record")
	}
	return append([]byte(nil), buf[at:n]...), nil
}
