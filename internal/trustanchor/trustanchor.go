// Package trustanchor keeps a resolver's DNSSEC trust anchors up to date
// by RFC 5011's automated updates: the DNSKEY RRset of each trust point
// is probed from time to time, and, once it validates from the anchors
// in force, a new key with the SEP bit is added after a 30-day hold-down
// (AddPend, then Valid), a key that disappears is Missing (still
// trusted), and a key that is shown revoked (REVOKE bit, signing the
// RRset itself) stops being trusted at once (Revoked) and, once gone
// from the RRset, is forgotten 30 days after its revocation (Removed,
// as Unbound counts it).
//
// The state lives in the anchor file itself, rewritten atomically
// (internal/durable) on every change, in the form of Unbound's
// auto-trust-anchor-file: the DNSKEY records in zone-file form, each
// with a comment ";;state=N [ NAME ] ;;count=N ;;lastchange=UNIX"
// (states 0 START, 1 ADDPEND, 2 VALID, 3 MISSING, 4 REVOKED, 5 REMOVED),
// under ";;id: ZONE 1" and probe headers. A file of plain DS or DNSKEY
// records (Debian's /usr/share/dns/root.key) is read as anchors in force
// (DS records are replaced by the keys they match once the DNSKEY RRset
// validates), so either file works as a starting point; Unbound can read
// what Tern writes and the other way round.
package trustanchor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/durable"
	"github.com/tern-dns/tern/internal/validator"
)

// State is a key's RFC 5011 §4 state; the numbers are Unbound's.
type State int

// The states of RFC 5011 §4.
const (
	Start State = iota
	AddPend
	Valid
	Missing
	Revoked
	Removed
)

var stateNames = [...]string{"START", "ADDPEND", "VALID", "MISSING", "REVOKED", "REMOVED"}

// String is s's name in RFC 5011 §4 (START, ADDPEND, ...).
func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "State(" + strconv.Itoa(int(s)) + ")"
	}
	return stateNames[s]
}

// Hold-down times (RFC 5011 §2.4.1, §6.6): a new key is trusted 30 days
// after it was first seen (or the DNSKEY RRset's TTL, when longer); a
// revoked key is forgotten 30 days after it left the RRset.
const (
	AddHoldDown    = 30 * 24 * time.Hour
	RemoveHoldDown = 30 * 24 * time.Hour
)

// Key is one key of a trust point and its state.
type Key struct {
	DNSKEY *dns.DNSKEY
	State  State
	// Changed is when the state last changed (Unbound's lastchange).
	Changed time.Time
}

// point is one trust point: its keys, and the DS records it started
// from, until the keys they match are known.
type point struct {
	zone string
	ds   []*dns.DS
	keys []*Key
	// ttl is the DNSKEY RRset's original TTL, and sigEnd its
	// signatures' earliest expiration, as last validated (probe
	// intervals, §2.3).
	ttl    time.Duration
	sigEnd time.Time
	// next is when to probe it next.
	next time.Time
	// lastSuccess is when its DNSKEY RRset last validated.
	lastSuccess time.Time
	failed      int
}

// Store holds trust points read from a file, keeps them by RFC 5011 when
// Managed, and gives the anchors in force. It is safe for concurrent
// use.
type Store struct {
	path    string
	managed bool
	now     func() time.Time
	v       *validator.Validator
	log     *slog.Logger
	signal  func(ctx context.Context, qname string)

	mu     sync.Mutex
	points []*point
	// anchors is the DS form of the trusted keys, replaced whole on
	// every change (read without the lock by the resolver).
	anchors atomic.Pointer[validator.Anchors]
}

// Options configure a Store.
type Options struct {
	// Now is the clock of states, hold-downs and signatures; nil means
	// time.Now.
	Now func() time.Time
	// Managed turns RFC 5011 updates on: the file is rewritten on every
	// change. Off, the file's anchors (the keys Valid or Missing in it,
	// and its DS records) are used as they are.
	Managed bool
	// Logger gets a line per state change; nil for none.
	Logger *slog.Logger
	// Validator checks the DNSKEY RRsets (its clock should be Now).
	Validator validator.Options
	// Signal, when set, is given RFC 8145 §5's key-tag query name
	// (KeyTagName) after each probe that validated, to be asked (QTYPE
	// NULL) so that the zone's operators learn which keys resolvers
	// trust, as Unbound's trust-anchor-signaling does.
	Signal func(ctx context.Context, qname string)
}

// Writable reports whether path can be managed: the file and its
// directory (the atomic rewrite creates a file beside it) are writable.
func Writable(path string) bool {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return false
	}
	f.Close()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tern-writable-*")
	if err != nil {
		return false
	}
	tmp.Close()
	os.Remove(tmp.Name())
	return true
}

// Load reads the trust anchor file at path.
func Load(path string, opt Options) (*Store, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("trust anchors: %w", err)
	}
	s := &Store{path: path, managed: opt.Managed, now: opt.Now, log: opt.Logger, signal: opt.Signal}
	if s.now == nil {
		s.now = time.Now
	}
	if opt.Validator.Now == nil {
		opt.Validator.Now = s.now
	}
	s.v = validator.New(opt.Validator)
	if s.points, err = parse(bytes.NewReader(data), path); err != nil {
		return nil, err
	}
	s.publish()
	return s, nil
}

// Read reads an anchor file's anchors in force (as an unmanaged Store
// gives them): its DS records, its DNSKEY records without a state, and
// those Valid or Missing.
func Read(r io.Reader, file string) (validator.Anchors, error) {
	points, err := parse(r, file)
	if err != nil {
		return nil, err
	}
	s := &Store{points: points}
	s.publish()
	return s.Anchors(), nil
}

// Anchors returns the trust anchors in force: the DS records of the
// keys Valid or Missing, and the DS records a point started from.
func (s *Store) Anchors() validator.Anchors { return *s.anchors.Load() }

// Keys returns the keys of zone's trust point and their states.
func (s *Store) Keys(zone string) []Key {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Key
	if p := s.point(zone); p != nil {
		for _, k := range p.keys {
			out = append(out, *k)
		}
	}
	return out
}

// Zones returns the trust points' zones.
func (s *Store) Zones() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, p := range s.points {
		out = append(out, p.zone)
	}
	return out
}

func (s *Store) point(zone string) *point {
	zone = dns.CanonicalName(zone)
	for _, p := range s.points {
		if p.zone == zone {
			return p
		}
	}
	return nil
}

// publish replaces the anchors in force. Called with s.mu held (or
// before the Store is shared).
func (s *Store) publish() {
	a := validator.Anchors{}
	for _, p := range s.points {
		ds := slices.Clone(p.ds)
		for _, k := range p.keys {
			if k.State == Valid || k.State == Missing {
				ds = append(ds, k.DNSKEY.ToDS(dns.SHA256))
			}
		}
		// RFC 5011 §2.4.1: a trust point whose keys are all revoked
		// has no anchor left; it stays, empty, so that its zone is
		// not trusted (the validator finds no usable DS: Insecure, as
		// Unbound treats a trust point it has deleted).
		a[p.zone] = ds
	}
	s.anchors.Store(&a)
}

// Fetch returns the DNSKEY RRset of a zone and its RRSIGs as the zone's
// servers answer it now (unvalidated: Observe validates it).
type Fetch func(ctx context.Context, zone string) ([]*dns.DNSKEY, []*dns.RRSIG, error)

// Probe fetches the DNSKEY RRset of every trust point whose probe is due
// (all on the first call) and observes it; it returns when the next
// probe is due. A managed Store writes its file after a change.
func (s *Store) Probe(ctx context.Context, fetch Fetch) (time.Time, error) {
	now := s.now()
	var errs []error
	for _, zone := range s.Zones() {
		s.mu.Lock()
		p := s.point(zone)
		due := p != nil && !now.Before(p.next)
		s.mu.Unlock()
		if !due {
			continue
		}
		keys, sigs, err := fetch(ctx, zone)
		if err == nil {
			err = s.Observe(zone, keys, sigs)
		}
		if err == nil && s.signal != nil {
			s.signal(ctx, KeyTagName(zone, s.Anchors()[dns.CanonicalName(zone)]))
		}
		if err != nil {
			s.mu.Lock()
			p.failed++
			p.next = now.Add(p.retryInterval(now))
			s.mu.Unlock()
			errs = append(errs, fmt.Errorf("trust point %s: %w", zone, err))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := time.Time{}
	for _, p := range s.points {
		if next.IsZero() || p.next.Before(next) {
			next = p.next
		}
	}
	if len(errs) > 0 {
		return next, fmt.Errorf("%v", errs)
	}
	return next, nil
}

// Run probes the trust points when due (RFC 5011 §2.3's active refresh)
// until ctx ends, logging failures.
func (s *Store) Run(ctx context.Context, fetch Fetch) {
	for {
		next, err := s.Probe(ctx, fetch)
		if err != nil && s.log != nil {
			s.log.Warn("trust anchor probe failed", "err", err, "next", next)
		}
		wait := time.Until(next)
		if wait < time.Minute {
			wait = time.Minute
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// KeyTagName is RFC 8145 §5.1's key-tag query name of the trust
// anchors ds of zone: "_ta-" and their key tags, four lowercase hex
// digits each, ascending, joined by "-", below the zone.
func KeyTagName(zone string, ds []*dns.DS) string {
	var tags []uint16
	for _, d := range ds {
		if !slices.Contains(tags, d.KeyTag) {
			tags = append(tags, d.KeyTag)
		}
	}
	slices.Sort(tags)
	var b strings.Builder
	b.WriteString("_ta")
	for _, t := range tags {
		fmt.Fprintf(&b, "-%04x", t)
	}
	b.WriteString(".")
	if zone = dns.CanonicalName(zone); zone != "." {
		b.WriteString(zone)
	}
	return b.String()
}

// queryInterval is RFC 5011 §2.3's: MAX(1 hr, MIN(15 days, 1/2*OrigTTL,
// 1/2*RRSigExpirationInterval)).
func (p *point) queryInterval(now time.Time) time.Duration {
	d := min(15*24*time.Hour, p.ttl/2, p.sigEnd.Sub(now)/2)
	return max(time.Hour, d)
}

// retryInterval is §2.3's retry time after a failed query: MAX(1 hour,
// MIN(1 day, .1 * OrigTTL, .1 * RRSigExpirationInterval)); an hour
// while no RRset has validated yet (nothing known of its TTL), so that
// a server started before its network tries again soon.
func (p *point) retryInterval(now time.Time) time.Duration {
	if p.ttl == 0 || p.sigEnd.IsZero() {
		return time.Hour
	}
	return max(time.Hour, min(24*time.Hour, p.ttl/10, p.sigEnd.Sub(now)/10))
}

// sameKey reports whether a and b are one key, its REVOKE bit aside
// (RFC 5011 §3: the bit changes the key tag, not the key).
func sameKey(a, b *dns.DNSKEY) bool {
	return a.Algorithm == b.Algorithm && a.Protocol == b.Protocol &&
		a.Flags&^dns.REVOKE == b.Flags&^dns.REVOKE && a.PublicKey == b.PublicKey
}

// Observe applies RFC 5011 §4 to zone's DNSKEY RRset keys, signed by
// sigs: nothing changes unless the RRset validates from the anchors in
// force (§2.2: updates come only from a validated RRset). It returns an
// error when the RRset does not validate or the file cannot be written.
func (s *Store) Observe(zone string, keys []*dns.DNSKEY, sigs []*dns.RRSIG) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.point(zone)
	if p == nil {
		return fmt.Errorf("%s is not a trust point", zone)
	}
	now := s.now()
	changed := false
	set := func(k *Key, st State) {
		if s.log != nil {
			s.log.Info("trust anchor key state", "zone", p.zone, "key", k.DNSKEY.KeyTag(), "from", k.State.String(), "to", st.String())
		}
		k.State, k.Changed, changed = st, now, true
	}
	// RFC 5011 §2.1: a known key shown with the REVOKE bit, signing the
	// RRset itself, is revoked whether or not the RRset validates from
	// another anchor (a zone revoking its only key; Unbound checks
	// revocations first too).
	for _, k := range keys {
		if k.Flags&dns.REVOKE == 0 || k.Flags&dns.SEP == 0 {
			continue
		}
		if known := p.find(k); known != nil && known.State != Revoked && selfSigned(k, keys, sigs, now) {
			known.DNSKEY = k
			set(known, Revoked)
		}
	}
	if changed {
		s.publish()
	}
	res, _ := s.v.VerifyKeys(p.zone, keys, sigs, (*s.anchors.Load())[p.zone], &validator.Work{})
	if !res.Secure() {
		err := fmt.Errorf("DNSKEY RRset of %s does not validate from the trust anchors: %v", p.zone, res)
		if changed && s.managed {
			if werr := durable.WriteFile(s.path, s.format(), 0o644); werr != nil {
				return fmt.Errorf("%w; %w", err, werr)
			}
		}
		return err
	}
	p.ttl = time.Duration(keys[0].Hdr.Ttl) * time.Second
	p.sigEnd = time.Time{}
	for _, sig := range sigs {
		if e := time.Unix(int64(sig.Expiration), 0); p.sigEnd.IsZero() || e.Before(p.sigEnd) {
			p.sigEnd = e
		}
	}
	p.lastSuccess, p.failed = now, 0
	p.next = now.Add(p.queryInterval(now))
	// The DS records a point started from give way to the keys they
	// match: those are Valid from now on.
	if len(p.ds) > 0 {
		for _, k := range keys {
			if k.Flags&dns.SEP == 0 || k.Flags&dns.REVOKE != 0 {
				continue
			}
			for _, d := range p.ds {
				if kd := k.ToDS(d.DigestType); kd != nil && kd.KeyTag == d.KeyTag && strings.EqualFold(kd.Digest, d.Digest) {
					nk := &Key{DNSKEY: k, State: Start}
					p.keys = append(p.keys, nk)
					set(nk, Valid)
					break
				}
			}
		}
		p.ds, changed = nil, true
	}
	holdDown := max(AddHoldDown, p.ttl)
	seen := map[*Key]bool{}
	for _, k := range keys {
		if k.Flags&dns.SEP == 0 {
			continue // RFC 5011 §2: only SEP keys become trust anchors
		}
		known := p.find(k)
		if k.Flags&dns.REVOKE != 0 {
			// Revoked above when it signs the RRset itself; a
			// revoked key never seen before is ignored (§2.4.1's
			// Revbit applies to known keys; a new one would never be
			// an anchor).
			if known != nil {
				seen[known] = true
			}
			continue
		}
		if known == nil {
			known = &Key{DNSKEY: k, State: Start}
			p.keys = append(p.keys, known)
			set(known, AddPend) // NewKey
		}
		seen[known] = true
		switch {
		case known.State == AddPend && now.Sub(known.Changed) >= holdDown:
			set(known, Valid) // AddTime
		case known.State == Missing:
			set(known, Valid) // KeyPres
		}
	}
	kept := p.keys[:0]
	for _, k := range p.keys {
		if !seen[k] {
			switch {
			case k.State == AddPend:
				set(k, Start) // KeyRem during the hold-down: forgotten
			case k.State == Valid:
				set(k, Missing) // KeyRem
			case k.State == Revoked && now.Sub(k.Changed) >= RemoveHoldDown:
				set(k, Removed) // RemTime
			}
		}
		if k.State != Start && k.State != Removed {
			kept = append(kept, k)
		}
	}
	p.keys = kept
	if !changed {
		return nil
	}
	s.publish()
	if !s.managed {
		return nil
	}
	return durable.WriteFile(s.path, s.format(), 0o644)
}

// find returns the point's key that is k, its REVOKE bit aside.
func (p *point) find(k *dns.DNSKEY) *Key {
	for _, kk := range p.keys {
		if sameKey(kk.DNSKEY, k) {
			return kk
		}
	}
	return nil
}

// selfSigned reports whether key k (revoked) signs the RRset keys with a
// signature valid at now (RFC 5011 §2.1: a revoked key signs the RRset
// that revokes it).
func selfSigned(k *dns.DNSKEY, keys []*dns.DNSKEY, sigs []*dns.RRSIG, now time.Time) bool {
	rrset := make([]dns.RR, len(keys))
	for i, kk := range keys {
		rrset[i] = kk
	}
	for _, sig := range sigs {
		if sig.KeyTag == k.KeyTag() && sig.Algorithm == k.Algorithm && sig.ValidityPeriod(now) && sig.Verify(k, rrset) == nil {
			return true
		}
	}
	return false
}

// stateComment matches the state a key's comment records.
var (
	// miekg/dns's parser hands the comment back with a space
	// after each ';' it met inside it (";;state" as "; ;state").
	stateRE      = regexp.MustCompile(`;\s*;\s*state=(\d+)`)
	lastChangeRE = regexp.MustCompile(`;\s*;\s*lastchange=(\d+)`)
	idRE         = regexp.MustCompile(`(?m)^;;id: (\S+) `)
)

// parse reads an anchor file: DS records, and DNSKEY records with or
// without their state comment (none: Valid).
func parse(r io.Reader, file string) ([]*point, error) {
	var points []*point
	get := func(zone string) *point {
		for _, p := range points {
			if p.zone == zone {
				return p
			}
		}
		p := &point{zone: zone}
		points = append(points, p)
		return p
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	// A point's ";;id:" header keeps it when none of its keys is left
	// (all revoked and removed): its zone then has no anchor, rather
	// than the file none (which would stop the server starting).
	for _, m := range idRE.FindAllStringSubmatch(string(data), -1) {
		if _, ok := dns.IsDomainName(m[1]); ok {
			get(dns.CanonicalName(m[1]))
		}
	}
	zp := dns.NewZoneParser(bytes.NewReader(data), ".", file)
	zp.SetIncludeAllowed(false)
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		p := get(dns.CanonicalName(rr.Header().Name))
		switch rr := rr.(type) {
		case *dns.DS:
			if rr.Digest == "" {
				return nil, fmt.Errorf("%s: DS %d of %s: no digest", file, rr.KeyTag, p.zone)
			}
			p.ds = append(p.ds, rr)
		case *dns.DNSKEY:
			if rr.Flags&dns.ZONE == 0 {
				return nil, fmt.Errorf("%s: DNSKEY %d of %s: not a zone key (flags %d)", file, rr.KeyTag(), p.zone, rr.Flags)
			}
			k := &Key{DNSKEY: rr, State: Valid}
			c := zp.Comment()
			if m := stateRE.FindStringSubmatch(c); m != nil {
				n, _ := strconv.Atoi(m[1])
				if n < int(Start) || n > int(Removed) {
					return nil, fmt.Errorf("%s: DNSKEY %d of %s: unknown state %d", file, rr.KeyTag(), p.zone, n)
				}
				k.State = State(n)
			}
			if m := lastChangeRE.FindStringSubmatch(c); m != nil {
				if n, _ := strconv.ParseInt(m[1], 10, 64); n > 0 {
					k.Changed = time.Unix(n, 0)
				}
			}
			if k.State != Start && k.State != Removed {
				p.keys = append(p.keys, k)
			}
		default:
			return nil, fmt.Errorf("%s: %s %s: a trust anchor is a DS or DNSKEY record", file, p.zone, dns.TypeToString[rr.Header().Rrtype])
		}
	}
	if err := zp.Err(); err != nil {
		return nil, fmt.Errorf("trust anchors: %w", err)
	}
	if len(points) == 0 {
		return nil, fmt.Errorf("%s: no trust anchor in it", file)
	}
	return points, nil
}

// format writes the trust points in the form of Unbound's
// auto-trust-anchor-file (autr_write_contents): headers, then each key
// with its state.
func (s *Store) format() []byte {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	unix := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.Unix()
	}
	date := func(t time.Time) string { return time.Unix(unix(t), 0).UTC().Format("Mon Jan _2 15:04:05 2006") }
	fmt.Fprintf(w, "; autotrust trust anchor file, written by Tern (RFC 5011); Unbound's auto-trust-anchor-file form\n")
	now := s.now()
	for _, p := range s.points {
		fmt.Fprintf(w, ";;id: %s 1\n", p.zone)
		fmt.Fprintf(w, ";;last_queried: %d ;;%s\n", unix(now), date(now))
		fmt.Fprintf(w, ";;last_success: %d ;;%s\n", unix(p.lastSuccess), date(p.lastSuccess))
		fmt.Fprintf(w, ";;next_probe_time: %d ;;%s\n", unix(p.next), date(p.next))
		fmt.Fprintf(w, ";;query_failed: %d\n", p.failed)
		fmt.Fprintf(w, ";;query_interval: %d\n", int64(p.queryInterval(now)/time.Second))
		fmt.Fprintf(w, ";;retry_time: %d\n", int64(p.retryInterval(now)/time.Second))
		for _, d := range p.ds {
			fmt.Fprintln(w, d.String())
		}
		for _, k := range p.keys {
			role := "zsk"
			if k.DNSKEY.Flags&dns.SEP != 0 {
				role = "ksk"
			}
			fmt.Fprintf(w, "%s ;{id = %d (%s), size = %db} ;;state=%d [ %s ] ;;count=0 ;;lastchange=%d ;;%s\n",
				k.DNSKEY.String(), k.DNSKEY.KeyTag(), role, keySize(k.DNSKEY), k.State, k.State, unix(k.Changed), date(k.Changed))
		}
	}
	w.Flush()
	return b.Bytes()
}

// keySize is the key's size in bits as Unbound's comment gives it: the
// public key's, less an RSA key's exponent (RFC 3110 §2: its length in
// one byte, or in three when the first is zero, then the exponent).
func keySize(k *dns.DNSKEY) int {
	raw, err := base64.StdEncoding.DecodeString(k.PublicKey)
	if err != nil || len(raw) == 0 {
		return 0
	}
	switch k.Algorithm {
	case dns.RSASHA1, dns.RSASHA1NSEC3SHA1, dns.RSASHA256, dns.RSASHA512:
		e := 1 + int(raw[0])
		if raw[0] == 0 && len(raw) > 3 {
			e = 3 + (int(raw[1])<<8 | int(raw[2]))
		}
		if e < len(raw) {
			return (len(raw) - e) * 8
		}
	}
	return len(raw) * 8
}
