// Package zonedb keeps the set of zones a server answers from: it loads
// them as the configuration says, signs those that have a signing policy
// and keeps their signatures and keys fresh, reloads on request, and
// publishes every new set whole. A zone that fails to load or reload does
// not hold the others back: it keeps serving the version it had, or is
// answered SERVFAIL when it has none.
package zonedb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/dnssec"
	"github.com/tern-dns/tern/internal/durable"
	"github.com/tern-dns/tern/internal/journal"
	"github.com/tern-dns/tern/internal/zone"
)

// Manager owns the served zones. Publish is called with each new set.
type Manager struct {
	cfg     []config.Zone
	publish func(*zone.Set)
	log     *slog.Logger
	now     func() time.Time

	mu      sync.Mutex
	current map[string]*zone.Zone
	states  map[string]loadState
	signed  map[string]*signedZone
	wake    chan struct{}

	// The journals of differences (see KeepJournals), apart from mu so
	// that an IXFR never waits on a reload or a signing.
	jmu      sync.Mutex
	jdir     string
	jmax     func(*config.Zone) int64
	jzones   map[string]config.Zone // zones that keep one: those with an ACL
	journals map[string]*journal.Journal

	// changed is called with each version of a zone published whose
	// serial differs from the one served before (see OnChange).
	changed func(origin string, z *zone.Zone)
}

// OnChange makes the Manager call fn, after publishing, with each zone
// loaded for the first time or published with a new serial (a reload, a
// re-signing): the NOTIFY of RFC 1996 §3 goes out from there. fn is
// called with the Manager's lock held and must not block. Call it before
// Load.
func (m *Manager) OnChange(fn func(origin string, z *zone.Zone)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.changed = fn
}

// announce calls the OnChange function with each zone of changed.
func (m *Manager) announce(changed []*zone.Zone) {
	if m.changed == nil {
		return
	}
	for _, z := range changed {
		m.changed(zone.NameString(z.Origin), z)
	}
}

// newSerial reports whether z, replacing prev, is announced.
func newSerial(prev, z *zone.Zone) bool {
	return prev == nil || prev.Unavailable || prev.Serial != z.Serial
}

// signedZone is the state of one automatically signed zone.
type signedZone struct {
	cfg      config.Zone
	signer   *dnssec.ZoneSigner
	unsigned []dns.RR  // the zone file's content, re-signed on schedule
	next     time.Time // when signatures or keys next need work
}

// New returns a Manager for the configured zones; now is the clock (nil
// for time.Now), injectable so rollovers can be tested.
func New(zones []config.Zone, publish func(*zone.Set), log *slog.Logger, now func() time.Time) *Manager {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: zones, publish: publish, log: log, now: now,
		current: map[string]*zone.Zone{}, states: map[string]loadState{}, signed: map[string]*signedZone{}, wake: make(chan struct{}, 1),
		journals: map[string]*journal.Journal{}}
}

// KeepJournals makes the Manager record every change of a zone that has
// an ACL (a zone someone may transfer) in a journal under dir, bounded by
// max (see package journal): a reload whose serial differs from the
// version served, and each re-signing. Call it before Load.
func (m *Manager) KeepJournals(dir string, max func(*config.Zone) int64) {
	m.jmu.Lock()
	defer m.jmu.Unlock()
	m.jdir, m.jmax = dir, max
}

// setJournalZones notes which zones keep a journal and their bounds,
// closing the journals of zones that no longer keep one.
func (m *Manager) setJournalZones(zones []config.Zone) {
	m.jmu.Lock()
	defer m.jmu.Unlock()
	if m.jdir == "" {
		return
	}
	m.jzones = make(map[string]config.Zone, len(zones))
	for _, zc := range zones {
		if len(zc.ACL) > 0 {
			m.jzones[originKey(zc.Origin)] = zc
		}
	}
	for origin, j := range m.journals {
		if zc, ok := m.jzones[origin]; ok {
			j.SetMax(m.jmax(&zc)) // journal-max-size may have changed
		} else {
			j.Close()
			delete(m.journals, origin)
		}
	}
}

// journalLocked returns the journal of origin, opening it on first use
// (creating it only when create is set: a change to record); nil when
// the zone keeps none, has none yet, or it cannot be opened (logged:
// transfers are then whole).
func (m *Manager) journalLocked(origin string, create bool) *journal.Journal {
	if j := m.journals[origin]; j != nil {
		return j
	}
	zc, ok := m.jzones[origin]
	if !ok {
		return nil
	}
	path := journal.Path(m.jdir, origin)
	if _, err := os.Stat(path); err != nil && !create {
		return nil
	}
	j, dropped, err := journal.Open(path, m.jmax(&zc))
	if err != nil {
		m.log.Error("no journal: IXFR answered with whole zones", "zone", origin, "err", err)
		return nil
	}
	if dropped > 0 {
		m.log.Warn("journal: dropped a torn or corrupt tail", "zone", origin, "file", path, "octets", dropped)
	}
	m.journals[origin] = j
	return j
}

// checkJournal, at a zone's first load, empties its journal when it leads
// to the serial being served but not to its content (the zone file edited
// while the server was down, its serial kept, which CompareVersions cannot
// see across a restart): its differences would bring secondaries to
// records the zone no longer has. A journal that leads to another serial
// is harmless: IXFR finds it does not lead to the zone served.
func (m *Manager) checkJournal(origin string, z *zone.Zone) {
	m.jmu.Lock()
	defer m.jmu.Unlock()
	if _, ok := m.jzones[origin]; !ok {
		return
	}
	j := m.journalLocked(origin, false)
	if j == nil {
		return
	}
	serial, digest, ok := j.Last()
	if !ok || serial != z.Serial || digest == z.Digest() {
		return
	}
	m.log.Warn(fmt.Sprintf("journal: serial %d is not the version the journal recorded (the zone changed without a new serial): differences from before it dropped", serial), "zone", origin)
	if err := j.Reset(); err != nil {
		m.log.Error("journal: emptying", "zone", origin, "err", err)
	}
}

// record appends the change from old to new of a zone to its journal, if
// it keeps one. A failure is logged: the zone is served all the same,
// and IXFR from before the change is answered with the whole zone.
func (m *Manager) record(origin string, old, new *zone.Zone) {
	if old == nil || old.Unavailable || old.Serial == new.Serial {
		return
	}
	m.jmu.Lock()
	defer m.jmu.Unlock()
	j := m.journalLocked(origin, true)
	if j == nil {
		return
	}
	d, err := zone.Compare(old, new)
	if err == nil {
		err = j.Append(d, new.Digest())
	}
	if err != nil {
		m.log.Error("journal: change not recorded", "zone", origin, "from", old.Serial, "to", new.Serial, "err", err)
		return
	}
	m.log.Debug("journal: change recorded", "zone", origin, "from", old.Serial, "to", new.Serial, "deleted", len(d.Deleted), "added", len(d.Added), "size", j.Size())
}

// Since returns the changes of the zone origin (a canonical wire name)
// from serial to the newest version recorded, condensed into one
// difference, or journal.ErrNotFound: no journal, or serial not in it.
// The caller checks that the difference leads to the version it serves.
func (m *Manager) Since(origin []byte, serial uint32) (*zone.Diff, error) {
	m.jmu.Lock()
	// An IXFR makes no journal: a zone that never changed has none.
	j := m.journalLocked(zone.NameString(origin), false)
	m.jmu.Unlock()
	if j == nil {
		return nil, journal.ErrNotFound
	}
	return j.Since(serial)
}

// Load loads every configured zone (signing those with a policy) and
// publishes the set. One zone's failure does not stop the others: a zone
// that fails keeps the version it served before, or, when it has none,
// is published as a placeholder that answers SERVFAIL (as Knot does).
// Each zone's outcome is logged: "loaded serial N", "kept serial N: …"
// or "not loaded: …". Load returns how many zones serve data (loaded or
// kept) and the failed zones' errors, joined.
func (m *Manager) Load(ctx context.Context) (serving int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.loadLocked(ctx, m.cfg)
}

// Reload re-reads the zones of a (possibly changed) configuration, as
// Load does: zones added are loaded, zones removed stop being served
// (queries for them are then REFUSED), and zones whose settings changed
// (file, signing policy) are loaded with the new ones. Signed zones are
// re-signed incrementally (unchanged RRsets keep their signatures).
func (m *Manager) Reload(ctx context.Context, zones []config.Zone) (serving int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.loadLocked(ctx, zones)
}

func (m *Manager) loadLocked(ctx context.Context, zones []config.Zone) (int, error) {
	m.setJournalZones(zones)
	configured := make(map[string]bool, len(zones))
	for _, zc := range zones {
		configured[originKey(zc.Origin)] = true
	}
	for origin := range m.current {
		if !configured[origin] {
			delete(m.current, origin)
			delete(m.signed, origin)
			delete(m.states, origin)
			m.log.Info("removed", "zone", origin)
		}
	}
	serving := 0
	var errs []error
	var changed []*zone.Zone
	for _, zc := range zones {
		ok, ch, err := m.loadZoneLocked(ctx, zc)
		if ok {
			serving++
		}
		if ch != nil {
			changed = append(changed, ch)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	m.cfg = zones
	m.publishLocked()
	m.announce(changed)
	m.poke()
	return serving, errors.Join(errs...)
}

// loadZoneLocked loads one configured zone into m.current (not yet
// published): serving reports whether the zone serves data after it
// (loaded, or its previous version kept), changed is the zone loaded when
// its serial is new, err the failure, naming the zone.
func (m *Manager) loadZoneLocked(ctx context.Context, zc config.Zone) (serving bool, changed *zone.Zone, err error) {
	origin := originKey(zc.Origin)
	start := time.Now()
	prev := m.current[origin]
	if zc.Secondary() && prev != nil && (!prev.Unavailable || m.states[origin].expired) && m.sameFileLocked(zc) {
		// A secondary's data changes by transfers (Install) alone: a
		// reload keeps the version served, and an expired zone stays
		// unserved (RFC 1035 §3.3.13) until a transfer succeeds.
		return !prev.Unavailable, nil, nil
	}
	if zc.Secondary() {
		if _, serr := os.Stat(zc.File); errors.Is(serr, os.ErrNotExist) {
			// No stored copy yet: SERVFAIL until the first transfer (or
			// the version transferred, kept across a reload).
			if prev == nil {
				if p, perr := zone.Placeholder(origin); perr == nil {
					m.current[origin] = p
				}
				m.log.Info("secondary: no stored copy yet, answered SERVFAIL until transferred", "zone", origin, "file", zc.File)
			}
			return prev != nil && !prev.Unavailable, nil, nil
		}
	}
	z, err := m.load(ctx, zc)
	took := time.Since(start).Round(time.Millisecond)
	zone.LogWarnings(m.log, origin, zone.Warnings(z, err))
	switch {
	case err == nil:
		changed = m.installLocked(origin, z)
		m.log.Info(fmt.Sprintf("loaded serial %d", z.Serial), "zone", origin, "file", zc.File, "took", took)
		return true, changed, nil
	case prev != nil && !prev.Unavailable:
		serving = true
		m.log.Error(fmt.Sprintf("kept serial %d: %s", prev.Serial, oneLine(err)), "zone", origin)
	default:
		p, perr := zone.Placeholder(origin)
		if perr != nil {
			err = errors.Join(err, perr)
		} else {
			m.current[origin] = p
		}
		m.log.Error("not loaded: "+oneLine(err), "zone", origin)
	}
	err = inZone(origin, err)
	st := m.states[origin]
	st.err = err
	m.states[origin] = st
	return serving, nil, err
}

// installLocked makes z the version of origin served (once published),
// recording the difference in the journal; it returns z when its serial
// is new (to announce), else nil.
func (m *Manager) installLocked(origin string, z *zone.Zone) (changed *zone.Zone) {
	prev := m.current[origin]
	if prev != nil && !prev.Unavailable {
		zone.LogWarnings(m.log, origin, zone.CompareVersions(prev, z))
	}
	if prev == nil || prev.Unavailable {
		m.checkJournal(origin, z)
	}
	m.record(origin, prev, z)
	if newSerial(prev, z) {
		changed = z
	}
	m.current[origin] = z
	m.states[origin] = loadState{loaded: m.now()}
	return changed
}

// Install serves z, a new version of the configured zone origin that
// was obtained elsewhere (a secondary's transfer, already stored), as a
// reload would: recorded in the journal, published, announced.
func (m *Manager) Install(origin string, z *zone.Zone) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := originKey(origin)
	if !m.configuredLocked(key) {
		return fmt.Errorf("zone %s: %w", key, ErrNoZone)
	}
	changed := m.installLocked(key, z)
	m.publishLocked()
	if changed != nil {
		m.announce([]*zone.Zone{changed})
	}
	return nil
}

// Expire stops serving the data of zone origin (a secondary not
// refreshed within its SOA expire time, RFC 1035 §3.3.13): it is
// answered SERVFAIL until a version is installed again. why is kept as
// the zone's state.
func (m *Manager) Expire(origin string, why error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := originKey(origin)
	if !m.configuredLocked(key) {
		return fmt.Errorf("zone %s: %w", key, ErrNoZone)
	}
	p, err := zone.Placeholder(key)
	if err != nil {
		return err
	}
	m.current[key] = p
	m.states[key] = loadState{err: inZone(key, why), expired: true}
	m.publishLocked()
	return nil
}

// Served returns the version of origin served: nil when there is none,
// or a placeholder (Unavailable).
func (m *Manager) Served(origin string) *zone.Zone {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.current[originKey(origin)]
}

// sameFileLocked reports whether zc's origin was configured with zc's
// file before (m.cfg is the configuration last loaded).
func (m *Manager) sameFileLocked(zc config.Zone) bool {
	key := originKey(zc.Origin)
	for _, old := range m.cfg {
		if originKey(old.Origin) == key {
			return old.File == zc.File
		}
	}
	return false
}

func (m *Manager) configuredLocked(key string) bool {
	for _, zc := range m.cfg {
		if originKey(zc.Origin) == key {
			return true
		}
	}
	return false
}

// loadState is what the Manager remembers of a zone's loads for State.
type loadState struct {
	loaded time.Time // when the version served was loaded or signed
	err    error     // the last load's failure; nil when it succeeded
	// expired: a secondary past its SOA expire (Expire), until Install.
	expired bool
}

// State is one configured zone as the Manager serves it.
type State struct {
	Origin, File string
	// Zone is the version served; nil or Unavailable (a placeholder
	// answering SERVFAIL) when the zone has no data.
	Zone *zone.Zone
	// Loaded is when Zone was loaded (or last signed).
	Loaded time.Time
	// Err is the last load's failure, naming the zone and file:line;
	// nil when it succeeded.
	Err error
}

// States returns every configured zone's state, in configuration order.
func (m *Manager) States() []State {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]State, 0, len(m.cfg))
	for _, zc := range m.cfg {
		out = append(out, m.stateLocked(zc))
	}
	return out
}

func (m *Manager) stateLocked(zc config.Zone) State {
	origin := originKey(zc.Origin)
	st := m.states[origin]
	return State{Origin: origin, File: zc.File, Zone: m.current[origin], Loaded: st.loaded, Err: st.err}
}

// ErrNoZone is ReloadZone's error for a zone not in the configuration.
var ErrNoZone = errors.New("no such zone configured")

// ReloadZone re-reads one zone's file (the configuration as last loaded;
// a changed configuration takes Reload) and publishes the result, as
// Reload does for every zone: a failure keeps the version served. It
// returns the zone's state after it and the failure, if any.
func (m *Manager) ReloadZone(ctx context.Context, origin string) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := originKey(origin)
	for _, zc := range m.cfg {
		if originKey(zc.Origin) != key {
			continue
		}
		_, changed, err := m.loadZoneLocked(ctx, zc)
		m.publishLocked()
		if changed != nil {
			m.announce([]*zone.Zone{changed})
		}
		m.poke()
		return m.stateLocked(zc), err
	}
	return State{Origin: key}, fmt.Errorf("zone %s: %w", key, ErrNoZone)
}

// inZone prefixes err with its zone, unless it names the zone already.
func inZone(origin string, err error) error {
	if strings.HasPrefix(err.Error(), "zone "+origin) {
		return err
	}
	return fmt.Errorf("zone %s: %w", origin, err)
}

// originKey is a configured origin as the Manager's maps key it: a
// lowercase FQDN, whether it came from the config file (normalized by
// config.Parse) or from a flag (not).
func originKey(origin string) string { return dns.CanonicalName(dns.Fqdn(origin)) }

// oneLine puts an error that may hold several (one per line, as
// errors.Join writes them) on one log line.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

func (m *Manager) publishLocked() {
	zs := make([]*zone.Zone, 0, len(m.current))
	for _, z := range m.current {
		zs = append(zs, z)
	}
	m.publish(zone.NewSet(zs...))
}

func (m *Manager) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// load reads, checks and (with a signing policy) signs one zone. It
// changes the Manager's signing state only when it succeeds, so that a
// zone that fails keeps being maintained as the version it still serves.
func (m *Manager) load(ctx context.Context, zc config.Zone) (*zone.Zone, error) {
	origin := originKey(zc.Origin)
	if zc.Signing == nil {
		z, err := zone.Load(zc.File, zc.Origin)
		if err == nil {
			delete(m.signed, origin) // signing turned off
		}
		return z, err
	}
	// The unsigned zone is checked first so that problems are reported
	// with the zone file's lines.
	recs, warnings, err := zone.LoadRecords(zc.File, zc.Origin)
	if err != nil {
		return nil, err
	}
	rrs := make([]dns.RR, 0, len(recs))
	for _, r := range recs {
		switch r.RR.Header().Rrtype {
		case dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNSEC3, dns.TypeNSEC3PARAM, dns.TypeDNSKEY, dns.TypeCDS, dns.TypeCDNSKEY:
			// The signer owns these; a zone file for automatic signing
			// holds only the data.
			continue
		}
		rrs = append(rrs, r.RR)
	}
	sz := m.signed[origin]
	if sz == nil || *sz.cfg.Signing != *zc.Signing {
		// New, or its policy, keys or chain changed: a new signer.
		if sz, err = m.newSigned(zc); err != nil {
			return nil, err
		}
	}
	z, next, err := m.sign(ctx, sz, rrs)
	if err != nil {
		return nil, err
	}
	sz.cfg, sz.unsigned, sz.next = zc, rrs, next
	m.signed[origin] = sz
	// The zone file's warnings, with its lines, rather than the signed
	// copy's.
	z.Warnings = warnings
	return z, nil
}

func (m *Manager) newSigned(zc config.Zone) (*signedZone, error) {
	sg := zc.Signing
	// The key directory is made by dnssec.NewManager, durably (its parent
	// fsynced); making it here first would skip that.
	p := dnssec.DefaultPolicy()
	if sg.Algorithm != "" {
		alg, err := dnssec.ParseAlgorithm(sg.Algorithm)
		if err != nil {
			return nil, err
		}
		p.Algorithm = alg
	}
	set := func(dst *time.Duration, d config.Duration) {
		if d.Duration > 0 {
			*dst = d.Duration
		}
	}
	set(&p.ZSKLifetime, sg.ZSKLifetime)
	set(&p.KSKLifetime, sg.KSKLifetime)
	set(&p.SignatureValidity, sg.SignatureValidity)
	set(&p.SignatureRefresh, sg.SignatureRefresh)
	set(&p.PropagationDelay, sg.PropagationDelay)
	set(&p.ParentDelay, sg.ParentDelay)
	serial, err := dnssec.ParseSerialPolicy(sg.SerialPolicy)
	if err != nil {
		return nil, err
	}
	p.Serial = serial
	if err := p.Validate(); err != nil {
		return nil, err
	}
	signer, err := dnssec.NewZoneSigner(sg.KeyDir, zc.Origin, p, dnssec.Options{NSEC3: sg.NSEC3, OptOut: sg.OptOut})
	if err != nil {
		return nil, err
	}
	// The last signed copy lets a restart keep every signature that is
	// still fresh instead of signing the whole zone again.
	if prev, err := zone.ParseFile(signedPath(zc), zc.Origin); err == nil {
		signer.SetPrevious(zone.RRs(prev))
	} else if !errors.Is(err, os.ErrNotExist) {
		m.log.Warn("ignoring the last signed copy", "zone", zc.Origin, "err", err)
	}
	return &signedZone{cfg: zc, signer: signer}, nil
}

// signedPath is where the last signed copy of a zone is kept.
func signedPath(zc config.Zone) string {
	return filepath.Join(zc.Signing.KeyDir, strings.TrimSuffix(zc.Origin, ".")+".signed")
}

// sign signs unsigned, the content of sz's zone file, now, saves the
// signed copy and compiles it; next is when it must be signed again.
func (m *Manager) sign(ctx context.Context, sz *signedZone, unsigned []dns.RR) (z *zone.Zone, next time.Time, err error) {
	out, next, st, err := sz.signer.Sign(ctx, unsigned, m.now())
	if err != nil {
		return nil, next, err
	}
	var b strings.Builder
	for _, rr := range out {
		b.WriteString(rr.String())
		b.WriteByte('\n')
	}
	if err := durable.WriteFile(signedPath(sz.cfg), []byte(b.String()), 0o600); err != nil {
		return nil, next, fmt.Errorf("saving the signed copy: %w", err)
	}
	recs := make([]zone.Record, len(out))
	for i, rr := range out {
		recs[i] = zone.Record{RR: rr, File: signedPath(sz.cfg), Line: i + 1}
	}
	z, err = zone.Compile(sz.cfg.Origin, recs)
	if err != nil {
		return nil, next, fmt.Errorf("compiling the signed zone: %w", err)
	}
	m.log.Info("signed", "zone", sz.cfg.Origin, "serial", z.Serial, "signatures", st.Signed, "kept", st.Reused, "next", next.Format(time.RFC3339))
	return z, next, nil
}

// Next returns the earliest time a signed zone needs work, zero if none.
func (m *Manager) Next() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	var t time.Time
	for _, sz := range m.signed {
		if !sz.next.IsZero() && (t.IsZero() || sz.next.Before(t)) {
			t = sz.next
		}
	}
	return t
}

// Maintain re-signs every signed zone whose time has come (signature
// refresh, or a key event of a rollover) and publishes the result. A
// failure keeps the zone's previous version and is retried a minute on.
func (m *Manager) Maintain(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	resigned := false
	var changed []*zone.Zone
	var errs []error
	for origin, sz := range m.signed {
		if sz.next.IsZero() || sz.next.After(now) {
			continue
		}
		z, next, err := m.sign(ctx, sz, sz.unsigned)
		if err != nil {
			sz.next = now.Add(time.Minute)
			errs = append(errs, inZone(origin, err))
			continue
		}
		sz.next = next
		m.record(origin, m.current[origin], z)
		if newSerial(m.current[origin], z) {
			changed = append(changed, z)
		}
		m.current[origin] = z
		m.states[origin] = loadState{loaded: m.now(), err: m.states[origin].err}
		resigned = true
	}
	if resigned {
		m.publishLocked()
		m.announce(changed)
	}
	return errors.Join(errs...)
}

// Run calls Maintain when signed zones need it, until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	for {
		wait := time.Hour
		if t := m.Next(); !t.IsZero() {
			wait = max(time.Until(t), 0)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-m.wake:
			timer.Stop()
		case <-timer.C:
			if err := m.Maintain(ctx); err != nil {
				m.log.Error("re-signing failed, the previous signatures stay served", "err", err)
			}
		}
	}
}

// Check compiles every configured zone file without serving or signing
// it, reporting all errors, and each zone's warnings to warn.
func Check(zs []config.Zone, warn func(origin string, ws []zone.Warning)) error {
	var errs []error
	for _, zc := range zs {
		if _, err := os.Stat(zc.File); zc.Secondary() && errors.Is(err, os.ErrNotExist) {
			continue // not transferred yet
		}
		z, err := zone.Load(zc.File, zc.Origin)
		warn(zc.Origin, zone.Warnings(z, err))
		if err != nil {
			errs = append(errs, inZone(originKey(zc.Origin), err))
		}
	}
	return errors.Join(errs...)
}
