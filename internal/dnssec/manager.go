package dnssec

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/durable"
)

// Policy is the key and signature policy of one automatically signed zone.
// The interval names follow RFC 7583 §3.
type Policy struct {
	// Algorithm of the keys (dns.ECDSAP256SHA256 or dns.ED25519).
	Algorithm uint8
	// ZSKLifetime and KSKLifetime are how long a key signs before its
	// successor takes over (Lzsk, Lksk). Zero means never roll.
	ZSKLifetime, KSKLifetime time.Duration
	// SignatureValidity is the lifetime of new RRSIGs; SignatureRefresh is
	// how long before expiry an RRSIG is replaced.
	SignatureValidity, SignatureRefresh time.Duration
	// DNSKEYTTL is the TTL of DNSKEY, CDS and CDNSKEY records (TTLkey).
	DNSKEYTTL time.Duration
	// MaxZoneTTL is the largest TTL of signed data in the zone (TTLsig):
	// how long caches may keep a signature of a retired ZSK.
	MaxZoneTTL time.Duration
	// PropagationDelay is the time for a zone change to reach every
	// secondary (Dprp).
	PropagationDelay time.Duration
	// ParentDelay is the time from publishing CDS until the parent serves
	// the matching DS at all its servers (registration delay Dreg plus
	// the parent's propagation delay, RFC 7583 §3.3.2).
	ParentDelay time.Duration
	// DSTTL is the TTL of the parent's DS RRset (TTLds).
	DSTTL time.Duration
	// Serial is how each new version of the zone gets its SOA serial.
	Serial SerialPolicy
}

// DefaultPolicy returns a conservative policy: ECDSA P-256, ZSK rolled
// every 90 days, KSK every year, 14-day signatures refreshed 5 days before
// expiry, one-hour TTLs and delays, one day for the parent.
func DefaultPolicy() Policy {
	return Policy{
		Algorithm:         dns.ECDSAP256SHA256,
		ZSKLifetime:       90 * 24 * time.Hour,
		KSKLifetime:       365 * 24 * time.Hour,
		SignatureValidity: 14 * 24 * time.Hour,
		SignatureRefresh:  5 * 24 * time.Hour,
		DNSKEYTTL:         time.Hour,
		MaxZoneTTL:        24 * time.Hour,
		PropagationDelay:  time.Hour,
		ParentDelay:       24 * time.Hour,
		DSTTL:             24 * time.Hour,
	}
}

// Validate reports policy settings that cannot work.
func (p Policy) Validate() error {
	switch {
	case p.Algorithm == 0:
		return errors.New("policy: no algorithm")
	case p.SignatureValidity <= 0:
		return errors.New("policy: signature validity must be positive")
	case p.SignatureRefresh <= 0 || p.SignatureRefresh >= p.SignatureValidity:
		return errors.New("policy: signature refresh must be positive and below the validity")
	case p.ZSKLifetime < 0 || p.KSKLifetime < 0:
		return errors.New("policy: negative key lifetime")
	case p.ZSKLifetime > 0 && p.ZSKLifetime <= p.zskPublishInterval():
		return errors.New("policy: ZSK lifetime shorter than its publication interval")
	case p.KSKLifetime > 0 && p.KSKLifetime <= p.kskPublishInterval():
		return errors.New("policy: KSK lifetime shorter than its publication interval")
	case p.Serial > SerialUnixtime:
		return fmt.Errorf("policy: unknown serial policy %d", p.Serial)
	}
	return nil
}

// zskPublishInterval is Ipub for a ZSK (RFC 7583 §3.2.1): a new DNSKEY
// must reach all caches before the key signs.
func (p Policy) zskPublishInterval() time.Duration { return p.PropagationDelay + p.DNSKEYTTL }

// zskRetireInterval is Iret for a ZSK (RFC 7583 §3.2.1): signatures of the
// retired key stay in caches for up to the largest TTL of signed data.
func (p Policy) zskRetireInterval() time.Duration { return p.PropagationDelay + p.MaxZoneTTL }

// kskPublishInterval is the first phase of a double-DS KSK rollover
// (RFC 7583 §3.3.2): from publishing the new key's CDS/CDNSKEY, its DNSKEY
// not yet in the zone, until the parent serves the new DS and DS RRsets
// without it have expired from caches (Dreg + DprpP + TTLds). Then the
// DNSKEY RRset swaps the old KSK for the new one in one step.
func (p Policy) kskPublishInterval() time.Duration { return p.ParentDelay + p.DSTTL }

// kskRetireInterval is how long after the swap the old KSK's CDS stays:
// until DNSKEY RRsets that hold it, signed by it, have expired from caches
// (Dprp + TTLkey). Withdrawing its CDS then lets the parent drop its DS.
func (p Policy) kskRetireInterval() time.Duration { return p.PropagationDelay + p.DNSKEYTTL }

// KeyState is the persistent record of one managed key. The times are
// those of RFC 7583 §3.1: Publish (DNSKEY appears), Ready (safe to sign),
// Activate (signs), Retire (stops signing), Remove (DNSKEY disappears). A
// KSK's CDS/CDNSKEY are published from DSPublish (or Publish when zero)
// until DSRemove (or Remove when zero): in a double-DS rollover the new
// key's CDS comes before its DNSKEY, and the old key's CDS stays after
// its DNSKEY has gone. A zero Retire or Remove means not yet scheduled.
type KeyState struct {
	Tag       uint16    `json:"tag"`
	KSK       bool      `json:"ksk"`
	Algorithm uint8     `json:"algorithm"`
	File      string    `json:"file"`
	Created   time.Time `json:"created"`
	Publish   time.Time `json:"publish"`
	Ready     time.Time `json:"ready"`
	Activate  time.Time `json:"activate"`
	Retire    time.Time `json:"retire,omitzero"`
	Remove    time.Time `json:"remove,omitzero"`
	DSPublish time.Time `json:"ds_publish,omitzero"`
	DSRemove  time.Time `json:"ds_remove,omitzero"`
	// Successor is the tag of the key that replaces this one.
	Successor uint16 `json:"successor,omitempty"`
}

// Phase names the key's state at now.
func (k *KeyState) Phase(now time.Time) string {
	switch {
	case now.Before(k.Publish) && k.cdsPublished(now):
		return "DS pending"
	case now.Before(k.Publish):
		return "generated"
	case !k.Remove.IsZero() && !now.Before(k.Remove):
		return "removed"
	case !k.Retire.IsZero() && !now.Before(k.Retire):
		return "retired"
	case !now.Before(k.Activate):
		return "active"
	case !now.Before(k.Ready):
		return "ready"
	}
	return "published"
}

// published reports whether the DNSKEY is in the zone.
func (k *KeyState) published(now time.Time) bool {
	return !now.Before(k.Publish) && (k.Remove.IsZero() || now.Before(k.Remove))
}

// cdsPublished reports whether a KSK's CDS and CDNSKEY are in the zone.
func (k *KeyState) cdsPublished(now time.Time) bool {
	if !k.KSK {
		return false
	}
	from, to := k.Publish, k.Remove
	if !k.DSPublish.IsZero() {
		from = k.DSPublish
	}
	if !k.DSRemove.IsZero() {
		to = k.DSRemove
	}
	return !now.Before(from) && (to.IsZero() || now.Before(to))
}

// gone reports whether nothing of the key is in the zone any more.
func (k *KeyState) gone(now time.Time) bool {
	end := k.Remove
	if k.DSRemove.After(end) {
		end = k.DSRemove
	}
	return !end.IsZero() && !now.Before(end)
}

// active reports whether the key signs at now.
func (k *KeyState) active(now time.Time) bool {
	return !now.Before(k.Activate) && (k.Retire.IsZero() || now.Before(k.Retire))
}

// State is the key manager's persistent state for one zone.
type State struct {
	Zone string      `json:"zone"`
	Keys []*KeyState `json:"keys"`
	// Serial is the SOA serial of the last version of the zone the
	// server published (nil before the first): a restart serves no
	// lower one (see ZoneSigner.Sign).
	Serial *uint32 `json:"served_serial,omitempty"`
}

// Describe returns human-readable lines about rollovers in progress and
// the next scheduled event.
func (s *State) Describe(now time.Time) []string {
	var lines []string
	for _, k := range s.Keys {
		if k.Successor == 0 || k.gone(now) {
			continue
		}
		kind := "ZSK rollover (pre-publication)"
		if k.KSK {
			kind = "KSK rollover (double-DS, CDS/CDNSKEY)"
		}
		lines = append(lines, fmt.Sprintf("%s %d -> %d: new key signs at %s, old key removed at %s",
			kind, k.Tag, k.Successor, k.Retire.UTC().Format(time.RFC3339), k.Remove.UTC().Format(time.RFC3339)))
	}
	return lines
}

func dsState(k *KeyState, now time.Time) string {
	if !k.KSK {
		return "-"
	}
	if k.cdsPublished(now) {
		if now.Before(k.Ready) {
			return "CDS published, waiting for parent"
		}
		if !k.Retire.IsZero() && !now.Before(k.Retire) {
			return "CDS kept until old DNSKEY RRsets expire"
		}
		return "CDS published, DS assumed at parent"
	}
	return "-"
}

// stateSuffix names state files: <zone>.dnssec-state.json in the key dir.
const stateSuffix = ".dnssec-state.json"

// StatePath returns the state file path of zone in dir.
func StatePath(dir, zone string) string {
	name := strings.TrimSuffix(dns.CanonicalName(dns.Fqdn(zone)), ".")
	if name == "" {
		name = "."
	}
	return filepath.Join(dir, name+stateSuffix)
}

// LoadState reads the state file of zone from dir; it returns nil, nil when
// there is none.
func LoadState(dir, zone string) (*State, error) {
	b, err := os.ReadFile(StatePath(dir, zone))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load key state: %w", err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("load key state %s: %w", StatePath(dir, zone), err)
	}
	return &s, nil
}

// saveState writes the state file atomically (temp file, fsync, rename,
// directory fsync) so a crash never leaves a half-written state.
func saveState(dir string, s *State) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("save key state: %w", err)
	}
	return durable.WriteFile(StatePath(dir, s.Zone), append(b, '\n'), 0o600)
}

// Manager runs the key rollovers of one zone: it generates keys, keeps
// their timings in a state file in the key directory and tells the signer
// which keys to publish and sign with. It holds no clock: every call takes
// the current time.
type Manager struct {
	dir    string
	zone   string
	policy Policy
	state  *State
	keys   map[uint16]*Key // loaded private keys, by tag
	// pending lists the base names of keys written as pending files and
	// not yet renamed to their final names (see storeChanges).
	pending []string
	// unsaved is set while the state in memory differs from the file.
	unsaved bool
	// interrupt, when set (by tests), is called at each step of storing
	// a change; an error stops Step there, leaving the key directory as
	// a crash at that point would.
	interrupt func(step string) error
}

// NewManager opens (or starts) key management for zone with keys in dir.
// The manager owns dir: it first finishes or undoes what a crash
// interrupted there (recoverKeyDir), then reads the state file and key
// files; nothing else is written until Step. Tools that only read a key
// directory a server may be managing use PublishedKeys instead.
func NewManager(dir, zone string, p Policy) (*Manager, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	zone = dns.CanonicalName(dns.Fqdn(zone))
	if err := durable.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("key manager %s: %w", zone, err)
	}
	st, err := loadZoneState(dir, zone)
	if err != nil {
		return nil, err
	}
	if st == nil {
		st = &State{Zone: zone}
	}
	if err := recoverKeyDir(dir, st); err != nil {
		return nil, fmt.Errorf("key manager %s: %w", zone, err)
	}
	return readManager(dir, p, st)
}

// PublishedKeys returns the keys a managed key directory publishes for
// zone at now, with their roles, as Manager.Keys does, without changing
// anything in dir. It returns nil, nil when dir has no state for zone.
func PublishedKeys(dir, zone string, now time.Time) ([]*Key, error) {
	st, err := loadZoneState(dir, dns.CanonicalName(dns.Fqdn(zone)))
	if err != nil || st == nil {
		return nil, err
	}
	m, err := readManager(dir, DefaultPolicy(), st)
	if err != nil {
		return nil, err
	}
	return m.Keys(now)
}

// loadZoneState is LoadState for zone (canonical), checking that the
// file is that zone's.
func loadZoneState(dir, zone string) (*State, error) {
	st, err := LoadState(dir, zone)
	if err != nil || st == nil {
		return nil, err
	}
	if st.Zone != zone {
		return nil, fmt.Errorf("key manager: state file is for %s, not %s", st.Zone, zone)
	}
	return st, nil
}

// readManager makes the Manager of state st, reading its keys from dir.
func readManager(dir string, p Policy, st *State) (*Manager, error) {
	m := &Manager{dir: dir, zone: st.Zone, policy: p, state: st, keys: map[uint16]*Key{}}
	for _, ks := range st.Keys {
		k, err := ReadKey(filepath.Join(dir, ks.File))
		if err != nil {
			if !ks.Remove.IsZero() && errors.Is(err, os.ErrNotExist) {
				continue // removed key whose files were cleaned up
			}
			return nil, fmt.Errorf("key manager %s: key %d: %w", st.Zone, ks.Tag, err)
		}
		m.keys[ks.Tag] = k
	}
	return m, nil
}

// State returns a copy of the current key state.
func (m *Manager) State() State {
	s := State{Zone: m.state.Zone}
	if m.state.Serial != nil {
		serial := *m.state.Serial
		s.Serial = &serial
	}
	for _, k := range m.state.Keys {
		c := *k
		s.Keys = append(s.Keys, &c)
	}
	return s
}

// ServedSerial returns the SOA serial last recorded by SetServedSerial,
// and false when none was.
func (m *Manager) ServedSerial() (uint32, bool) {
	if m.state.Serial == nil {
		return 0, false
	}
	return *m.state.Serial, true
}

// SetServedSerial records serial as that of the version of the zone about
// to be published, durably (the state file is written atomically) before
// it returns, so that after a crash the zone is never served with a lower
// serial.
func (m *Manager) SetServedSerial(serial uint32) error {
	if cur, ok := m.ServedSerial(); ok && cur == serial {
		return nil
	}
	m.state.Serial = &serial
	m.unsaved = true
	return m.storeChanges()
}

// Plan is what the signer needs after a Step.
type Plan struct {
	// Keys are the keys to publish, with SignZone/SignKeys/CDS set for
	// this moment; pass them to SignZone or Resign.
	Keys []*Key
	// Next is when the key set changes next (zero: nothing scheduled).
	// Call Step again then.
	Next time.Time
	// Events describes what this Step changed, for logging.
	Events []string
}

// Step advances the rollover state machine to now: it creates the first
// KSK and ZSK, starts a rollover when a key's lifetime is nearly over
// (early enough that the successor is ready when the lifetime ends),
// schedules the retirement and removal of old keys and persists any change
// before returning. It is idempotent for a given now.
func (m *Manager) Step(now time.Time) (Plan, error) {
	var plan Plan
	changed := false
	for _, ksk := range []bool{true, false} {
		ev, err := m.stepRole(ksk, now)
		if err != nil {
			return plan, err
		}
		if len(ev) > 0 {
			changed = true
			plan.Events = append(plan.Events, ev...)
		}
	}
	if changed {
		m.unsaved = true
	}
	if err := m.storeChanges(); err != nil {
		return plan, err
	}
	keys, err := m.Keys(now)
	if err != nil {
		return plan, err
	}
	plan.Keys = keys
	plan.Next = m.nextEvent(now)
	return plan, nil
}

// Keys returns the keys to publish at now with their signing roles, from
// the current state and without advancing it (Step does that). Offline
// signing of a managed key directory uses it.
func (m *Manager) Keys(now time.Time) ([]*Key, error) {
	var keys []*Key
	for _, ks := range m.state.Keys {
		if !ks.published(now) && !ks.cdsPublished(now) {
			continue
		}
		k := m.keys[ks.Tag]
		if k == nil {
			return nil, fmt.Errorf("key manager %s: key %d has no key files", m.zone, ks.Tag)
		}
		c := *k
		act := ks.active(now)
		c.SignZone = !ks.KSK && act
		c.SignKeys = ks.KSK && act
		// RFC 7344 §4: the CDS/CDNSKEY RRset is the DS RRset the parent
		// should serve: both keys' during a double-DS rollover (RFC 7583
		// §3.3.2), the new key's before its DNSKEY is published and the
		// old key's until DNSKEY RRsets holding it have expired.
		c.CDS = ks.cdsPublished(now)
		c.CDSOnly = !ks.published(now)
		keys = append(keys, &c)
	}
	return keys, nil
}

// stepRole advances the keys of one role (KSK or ZSK).
func (m *Manager) stepRole(ksk bool, now time.Time) ([]string, error) {
	var events []string
	life, ipub, iret := m.policy.ZSKLifetime, m.policy.zskPublishInterval(), m.policy.zskRetireInterval()
	if ksk {
		life, ipub, iret = m.policy.KSKLifetime, m.policy.kskPublishInterval(), m.policy.kskRetireInterval()
	}
	var current *KeyState
	for _, k := range m.state.Keys {
		if k.KSK == ksk && k.Algorithm == m.policy.Algorithm && k.active(now) {
			current = k
			break
		}
	}
	if current == nil {
		// Is a successor already scheduled to take over (between keys)?
		for _, k := range m.state.Keys {
			if k.KSK == ksk && (k.published(now) || k.cdsPublished(now)) && k.Retire.IsZero() {
				return nil, nil
			}
		}
		// No key: the zone is being signed for the first time, so the key
		// signs at once; the parent DS comes later (RFC 7583 §3.3 covers
		// rollovers, not the initial setup).
		ks, err := m.newKey(ksk, now, now, now)
		if err != nil {
			return nil, err
		}
		return []string{fmt.Sprintf("created %s %d, active now", role(ksk), ks.Tag)}, nil
	}
	if life > 0 && current.Successor == 0 {
		// RFC 7583 §3.2.1: publish the successor Ipub before the current
		// key's lifetime ends so it is ready to sign exactly then.
		end := current.Activate.Add(life)
		if pubAt := end.Add(-ipub); !now.Before(pubAt) {
			ready := now.Add(ipub)
			act := end
			if act.Before(ready) {
				act = ready
			}
			var ks *KeyState
			var err error
			if ksk {
				// Double-DS (RFC 7583 §3.3.2): CDS now, the DNSKEY swap
				// at act, the old key's CDS withdrawn Iret later.
				ks, err = m.newKey(ksk, act, act, act)
				if err == nil {
					ks.Created, ks.DSPublish = now, now
					current.Retire, current.Remove, current.DSRemove = act, act, act.Add(iret)
				}
			} else {
				ks, err = m.newKey(ksk, now, ready, act)
				current.Retire, current.Remove = act, act.Add(iret)
			}
			if err != nil {
				return nil, err
			}
			current.Successor = ks.Tag
			events = append(events, fmt.Sprintf("%s rollover %d -> %d started: new key signs at %s", role(ksk),
				current.Tag, ks.Tag, act.UTC().Format(time.RFC3339)))
		}
	}
	for _, k := range m.state.Keys {
		if k.KSK == ksk && k.gone(now) {
			if _, loaded := m.keys[k.Tag]; loaded {
				delete(m.keys, k.Tag)
				events = append(events, fmt.Sprintf("%s %d removed from the zone", role(ksk), k.Tag))
			}
		}
	}
	return events, nil
}

// newKey generates, stores and records a key with the given timings.
func (m *Manager) newKey(ksk bool, publish, ready, activate time.Time) (*KeyState, error) {
	used := map[uint16]bool{}
	for _, k := range m.state.Keys {
		used[k.Tag] = true
	}
	flags := uint16(FlagsZSK)
	if ksk {
		flags = FlagsKSK
	}
	k, err := GenerateKey(m.zone, flags, m.policy.Algorithm, uint32(m.policy.DNSKEYTTL/time.Second), used)
	if err != nil {
		return nil, err
	}
	if err := writeKeyFiles(m.dir, k, publish, pendingSuffix); err != nil {
		return nil, err
	}
	m.pending = append(m.pending, k.Base)
	ks := &KeyState{Tag: k.Tag(), KSK: ksk, Algorithm: m.policy.Algorithm, File: k.Base,
		Created: publish, Publish: publish, Ready: ready, Activate: activate}
	m.state.Keys = append(m.state.Keys, ks)
	sort.SliceStable(m.state.Keys, func(i, j int) bool {
		a, b := m.state.Keys[i], m.state.Keys[j]
		if a.KSK != b.KSK {
			return a.KSK
		}
		return a.Created.Before(b.Created)
	})
	m.keys[ks.Tag] = k
	return ks, nil
}

// pendingSuffix marks the files of a key written before the state that
// lists it: key readers look only at <base>.key and <base>.private.
const pendingSuffix = ".pending"

// storeChanges makes the state in memory durable, in an order a crash at
// any point leaves recoverable (recoverKeyDir): the new keys' files are
// already written under pending names; then the state is saved, listing
// them; then the pending files are renamed to their final names. A crash
// before the state is saved leaves pending files no state lists, which
// the next start removes (the keys were never published: Step returns
// them only after storing); a crash after it leaves pending files the
// state lists, which the next start renames. A failure here is retried
// by the next Step.
func (m *Manager) storeChanges() error {
	if m.unsaved {
		if err := m.step("before saving state"); err != nil {
			return err
		}
		if err := saveState(m.dir, m.state); err != nil {
			return err
		}
		m.unsaved = false
	}
	if len(m.pending) == 0 {
		return nil
	}
	if err := m.step("after saving state"); err != nil {
		return err
	}
	for _, base := range m.pending {
		if err := commitKeyFiles(m.dir, base); err != nil {
			return err
		}
	}
	m.pending = nil
	return durable.SyncDir(m.dir)
}

// commitKeyFiles renames a key's pending files to their final names,
// the private key first (a .key alone is skipped by LoadKeys, but a
// .private alone is never mistaken for a key). A file already renamed is
// left as it is.
func commitKeyFiles(dir, base string) error {
	for _, ext := range []string{".private", ".key"} {
		final := filepath.Join(dir, base+ext)
		err := os.Rename(final+pendingSuffix, final)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("store key %s: %w", base, err)
		}
	}
	return nil
}

// recoverKeyDir finishes or undoes what a crash interrupted in dir for the
// zone of st: the pending files of keys st lists are renamed to their
// final names, those of keys it does not list (never published) are
// removed, and so are the temporary files of interrupted atomic writes of
// the zone's keys and state (durable.WriteFile removes those of any other
// file, such as the signed copy, when it next writes it). Files of other zones, and key
// files under final names that st does not list (made by 'tern zone
// sign', say), are left alone.
func recoverKeyDir(dir string, st *State) error {
	stem := strings.TrimSuffix(st.Zone, ".")
	if stem == "" {
		stem = "."
	}
	listed := make(map[string]bool, len(st.Keys))
	for _, k := range st.Keys {
		listed[k.File] = true
	}
	keyGlob := "K" + durable.GlobEscape(stem) + "+*"
	pending, err := durable.MatchDir(dir, keyGlob+pendingSuffix)
	if err != nil {
		return err
	}
	var committed []string
	for _, p := range pending {
		name := strings.TrimSuffix(p, pendingSuffix)
		base := strings.TrimSuffix(strings.TrimSuffix(name, ".key"), ".private")
		if !listed[base] {
			if err := os.Remove(filepath.Join(dir, p)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			continue
		}
		if !slices.Contains(committed, base) {
			committed = append(committed, base)
		}
	}
	for _, base := range committed {
		if err := commitKeyFiles(dir, base); err != nil {
			return err
		}
	}
	stale, err := durable.RemoveTemps(dir, keyGlob)
	if err != nil {
		return err
	}
	n, err := durable.RemoveTemps(dir, durable.GlobEscape(filepath.Base(StatePath(dir, st.Zone))))
	if err != nil {
		return err
	}
	if len(pending)+stale+n == 0 {
		return nil
	}
	return durable.SyncDir(dir)
}

// step calls the interrupt hook, if any, at a named step.
func (m *Manager) step(name string) error {
	if m.interrupt == nil {
		return nil
	}
	return m.interrupt(name)
}

// nextEvent returns the earliest scheduled key event after now.
func (m *Manager) nextEvent(now time.Time) time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, k := range m.state.Keys {
		consider(k.Publish)
		consider(k.Ready)
		consider(k.Activate)
		consider(k.Retire)
		consider(k.Remove)
		consider(k.DSPublish)
		consider(k.DSRemove)
		if k.active(now) && k.Successor == 0 {
			life, ipub := m.policy.ZSKLifetime, m.policy.zskPublishInterval()
			if k.KSK {
				life, ipub = m.policy.KSKLifetime, m.policy.kskPublishInterval()
			}
			if life > 0 {
				t := k.Activate.Add(life - ipub)
				if !t.After(now) {
					t = now.Add(time.Second)
				}
				consider(t)
			}
		}
	}
	return next
}
