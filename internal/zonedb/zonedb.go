// Package zonedb keeps the set of zones a server answers from: it loads
// them as the configuration says (and as zones are added and removed at
// run time), signs those that have a signing policy and keeps their
// signatures and keys fresh, installs the versions transferred or
// changed elsewhere, and publishes every new set whole.
//
// The work on each zone (load, reload, install of a transfer, expire,
// re-sign, an applied change) runs as events of that zone, one at a time
// per zone and concurrently across zones, as Knot organises it: a slow
// transfer of one zone never delays another zone's reload, and queries
// never wait for any of it (they read the published set, an
// atomic.Pointer swapped whole). A zone that fails to load or reload
// does not hold the others back: it keeps serving the version it had,
// or is answered SERVFAIL when it has none.
package zonedb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/journal"
	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/zone"
)

// Manager owns the served zones. Publish is called with each new set.
type Manager struct {
	publish func(*zone.Set)
	log     *slog.Logger
	now     func() time.Time
	// ctx is the timed events' context; stop ends it (Close).
	ctx  context.Context
	stop context.CancelFunc
	// events counts the zones' events queued or running (Close waits).
	events sync.WaitGroup

	// mu guards the registry of zones; it is held only to find, add or
	// remove an entry, never while a zone's event runs.
	mu    sync.Mutex
	zones map[string]*entry
	order []*entry // configuration order, then zones added at run time

	// Publication (publish.go): pending are the changes staged by
	// events (by origin), published (the set last published) is
	// publishing's.
	pmu        sync.Mutex
	pending    map[string]*zone.Zone
	publishing sync.Mutex
	published  *zone.Set

	// The journals of differences (journals.go), apart from mu so that
	// an IXFR never waits on a registry change.
	jmu      sync.Mutex
	jdir     string
	jmax     func(*config.Zone) int64
	journals map[string]*journal.Journal

	// The zones' update journals and the zone file rewrites pending
	// (update.go).
	umu       sync.Mutex
	ujournals map[string]*journal.Journal
	syncDue   map[string]bool

	// changed is called with each version of a zone published whose
	// serial differs from the one served before (see OnChange).
	changed atomic.Pointer[func(origin string, z *zone.Zone)]
	// hooks are told of zones added and removed (see OnZones).
	hooks atomic.Pointer[Hooks]
	// metrics counts the loads (CountIn, before Load); nil: not
	// counted.
	metrics *metrics.Set
	// members lists a produced catalog zone's members (catalog.go).
	members atomic.Pointer[func(origin string) []string]
}

// CountIn makes m count its zones' loads in set; call it before Load.
func (m *Manager) CountIn(set *metrics.Set) { m.metrics = set }

// New returns a Manager for the configured zones; now is the clock (nil
// for time.Now), injectable so rollovers can be tested. The Manager
// keeps pointers to the elements of zones (a copy of each would cost a
// hundred thousand zones 224 bytes apiece beside the configuration
// that holds them): the caller must not change them after.
func New(zones []config.Zone, publish func(*zone.Set), log *slog.Logger, now func() time.Time) *Manager {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{publish: publish, log: log, now: now,
		zones: map[string]*entry{}, pending: map[string]*zone.Zone{}, journals: map[string]*journal.Journal{}}
	m.ctx, m.stop = context.WithCancel(context.Background())
	m.setConfig(pointers(zones))
	return m
}

// OnChange makes the Manager call fn, after publishing, with each zone
// loaded for the first time or published with a new serial (a reload, a
// transfer, a re-signing, an applied change): the NOTIFY of RFC 1996 §3
// goes out from there. fn is called from the zone's event and must not
// block. Call it before Load.
func (m *Manager) OnChange(fn func(origin string, z *zone.Zone)) { m.changed.Store(&fn) }

// Hooks are told of zones as they come and go (config reloads, AddZone,
// RemoveZone): a secondary zone's refresh starts and stops there.
type Hooks struct {
	// Added is called with each zone added (at Load too) and with a
	// zone whose settings changed; Removed with each zone removed.
	Added   func(zc config.Zone)
	Removed func(origin string)
}

// OnZones sets the hooks. Call it before Load.
func (m *Manager) OnZones(h Hooks) { m.hooks.Store(&h) }

// announce calls the OnChange function with each zone of changed.
func (m *Manager) announce(changed ...*zone.Zone) {
	fn := m.changed.Load()
	if fn == nil {
		return
	}
	for _, z := range changed {
		if z != nil {
			(*fn)(zone.NameString(z.Origin), z)
		}
	}
}

// newSerial reports whether z, replacing prev, is announced.
func newSerial(prev, z *zone.Zone) bool {
	return prev == nil || prev.Unavailable || prev.Serial != z.Serial
}

// entry returns the zone origin (any spelling), nil when not served.
func (m *Manager) entry(origin string) *entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.zones[originKey(origin)]
}

// setConfig makes zones the configured ones: entries are made for the
// new, the removed ones (configured before, not added at run time) are
// returned, closed and out of the registry, and the zones to load are
// returned with their entries, in configuration order. A zone added at
// run time that the configuration now names becomes configured.
func (m *Manager) setConfig(zones []*config.Zone) (load []*entry, removed []*entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	configured := make(map[string]bool, len(zones))
	order := make([]*entry, 0, len(zones))
	for _, zc := range zones {
		key := originKey(zc.Origin)
		if configured[key] {
			continue // config.Validate refuses duplicates; flags may repeat
		}
		configured[key] = true
		e := m.zones[key]
		if e == nil || e.dynamic {
			if e != nil {
				removed = append(removed, e)
			}
			e = newEntry(m.ctx, &m.events, zc, false)
			m.zones[key] = e
		}
		order = append(order, e)
	}
	for _, e := range m.order {
		switch {
		case e.dynamic && !configured[e.origin]:
			order = append(order, e)
		case !e.dynamic && !configured[e.origin]:
			delete(m.zones, e.origin)
			removed = append(removed, e)
		}
	}
	m.order = order
	return order[:len(configured)], removed
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
	zones := make([]*config.Zone, 0, len(m.order))
	for _, e := range m.order {
		if !e.dynamic {
			zones = append(zones, e.conf.Load())
		}
	}
	m.mu.Unlock()
	return m.reload(ctx, zones)
}

// Reload re-reads the zones of a (possibly changed) configuration, as
// Load does: zones added are loaded, zones removed stop being served
// (queries for them are then REFUSED), and zones whose settings changed
// (file, signing policy) are loaded with the new ones. Signed zones are
// re-signed incrementally (unchanged RRsets keep their signatures).
// Zones added at run time (AddZone) are left as they are.
//
// Each zone loads in an event of its own, as many at once as there are
// CPUs, and the set is published once they have loaded. A zone busy
// with another event (a transfer) loads when that ends, in its own
// event, published, announced and logged then: Reload does not wait for
// it, so that a slow transfer of one zone never delays the reload of
// the others (issue 13), nor what waits behind Reload (the next reload,
// a zone added). Until its load has run, its State says Loading.
// Reload returns how many zones serve data (the late ones: if they serve
// a version already) and the errors of the zones it loaded, joined.
// As New, it keeps pointers to the elements of zones.
func (m *Manager) Reload(ctx context.Context, zones []config.Zone) (serving int, err error) {
	return m.reload(ctx, pointers(zones))
}

// pointers returns pointers to the elements of zones.
func pointers(zones []config.Zone) []*config.Zone {
	ptrs := make([]*config.Zone, len(zones))
	for i := range zones {
		ptrs[i] = &zones[i]
	}
	return ptrs
}

// reload is Reload of the zones configured thus (kept, not copied).
func (m *Manager) reload(ctx context.Context, zones []*config.Zone) (serving int, err error) {
	load, removed := m.setConfig(zones)
	for _, e := range removed {
		m.remove(e)
	}
	byOrigin := make(map[string]*config.Zone, len(zones))
	for _, zc := range zones {
		byOrigin[originKey(zc.Origin)] = zc
	}
	// A zone busy with another event (a transfer) loads when that ends:
	// its outcome is then "late", published and announced by its own
	// event, so that the others are published without waiting for it.
	const (
		pending = iota
		done    // published by Reload
		late    // published by its event
	)
	type outcome struct {
		serving bool
		changed *zone.Zone
		err     error
		phase   atomic.Int32
	}
	// A late load runs after Reload has returned: it ends with the zone
	// (or the Manager), not with the caller's ctx.
	lctx := context.WithoutCancel(ctx)
	results := make([]outcome, len(load))
	var workers sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), len(load)) {
		workers.Go(func() {
			for i := range next {
				e, r := load[i], &results[i]
				zc := byOrigin[e.origin]
				e.loading.Add(1)
				ok := e.start(func() {
					defer e.loading.Add(-1)
					_ = e.run(lctx, func(ctx context.Context) error {
						r.serving, r.changed, r.err = m.loadZone(ctx, e, zc)
						return nil
					})
					if !r.phase.CompareAndSwap(pending, done) {
						m.flush()
						m.announce(r.changed)
						m.log.Info("reload: loaded once the zone's other event ended", "zone", e.origin, "serving", r.serving, "err", r.err)
					}
				})
				if !ok {
					e.loading.Add(-1) // removed meanwhile
				}
				// Loaded on this goroutine (done), or queued (late).
				r.phase.CompareAndSwap(pending, late)
			}
		})
	}
	for i := range load {
		next <- i
	}
	close(next)
	workers.Wait()
	m.flush()
	var errs []error
	for i := range results {
		r := &results[i]
		if r.phase.Load() != done {
			// Late: its outcome is its event's; it serves what it had.
			if z := load[i].served.Load(); z != nil && !z.Unavailable {
				serving++
			}
			continue
		}
		m.announce(r.changed)
		if r.serving {
			serving++
		}
		if r.err != nil {
			errs = append(errs, r.err)
		}
	}
	return serving, errors.Join(errs...)
}

// remove stops serving e (closed, out of the registry already).
func (m *Manager) remove(e *entry) {
	e.close()
	m.closeJournal(e.origin)
	m.stage(e.origin, nil)
	m.flush()
	if h := m.hooks.Load(); h != nil && h.Removed != nil {
		h.Removed(e.origin)
	}
	m.log.Info("removed", "zone", e.origin)
}

// loadZone loads zc into e, in an event of e (not yet published: it is
// staged): serving reports whether the zone serves data after it
// (loaded, or its previous version kept), changed is the zone loaded
// when its serial is new, err the failure, naming the zone.
func (m *Manager) loadZone(ctx context.Context, e *entry, zc *config.Zone) (serving bool, changed *zone.Zone, err error) {
	origin := e.origin
	start := time.Now()
	prev := e.served.Load()
	old := e.conf.Load()
	sameFile := prev != nil && old.File == zc.File
	settings := prev == nil || !sameSettings(old, zc)
	e.conf.Store(zc)
	m.journalSettings(origin, zc)
	if h := m.hooks.Load(); settings && h != nil && h.Added != nil {
		defer h.Added(*zc)
	}
	if zc.Secondary() && prev != nil && (!prev.Unavailable || e.state.Load().expired) && sameFile {
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
					e.served.Store(p)
					m.stageLive(e, p)
				}
				m.log.Info("secondary: no stored copy yet, answered SERVFAIL until transferred", "zone", origin, "file", zc.File)
			}
			return prev != nil && !prev.Unavailable, nil, nil
		}
	}
	z, err := m.load(ctx, e, *zc)
	m.metrics.ZoneEvent(origin, metrics.Load, err, time.Since(start))
	took := time.Since(start).Round(time.Millisecond)
	zone.LogWarnings(m.log, origin, zone.Warnings(z, err))
	switch {
	case err == nil:
		changed = m.install(e, z, nil)
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
			e.served.Store(p)
			m.stageLive(e, p)
		}
		m.log.Error("not loaded: "+oneLine(err), "zone", origin)
	}
	err = inZone(origin, err)
	st := *e.state.Load()
	st.err = err
	e.state.Store(&st)
	return serving, nil, err
}

// sameSettings reports whether a and b configure a zone alike.
func sameSettings(a, b *config.Zone) bool {
	return fmt.Sprint(*a) == fmt.Sprint(*b)
}

// install makes z the version of e served (staged, in an event of e),
// recording the difference d from the version served (nil: computed) in
// the journal first; it returns z when its serial is new (to announce),
// else nil (nil too when e was removed meanwhile: nothing to announce).
// A journal that cannot be written is logged: the zone is served all
// the same, and IXFR from before the change is answered with the whole
// zone.
func (m *Manager) install(e *entry, z *zone.Zone, d *zone.Diff) (changed *zone.Zone) {
	prev := e.served.Load()
	if prev != nil && !prev.Unavailable {
		zone.LogWarnings(m.log, e.origin, zone.CompareVersions(prev, z))
	}
	if prev == nil || prev.Unavailable {
		m.checkJournal(e, z)
	}
	if err := m.record(e, prev, z, d); err != nil {
		m.log.Error(err.Error(), "zone", e.origin)
	}
	if m.serve(e, z, loadState{loaded: m.now()}) && newSerial(prev, z) {
		changed = z
	}
	return changed
}

// serve makes z e's version, staged, with st; in an event of e. It
// reports false, staging nothing, when e was removed (or the Manager
// closed) while the event ran (stageLive).
func (m *Manager) serve(e *entry, z *zone.Zone, st loadState) bool {
	e.served.Store(z)
	e.state.Store(&st)
	if !m.stageLive(e, z) {
		return false
	}
	m.scheduleResign(e)
	return true
}

// stageLive stages z as e's version unless e is gone: RemoveZone (and a
// reload that drops the zone) does not wait for the zone's event
// running, nor for those queued behind it, which still run; what they
// stage after its stage of nil would be published by the next flush,
// the zone served again though no longer in the registry, for good
// when it was added at run time (TestRemovedStaysRemoved). Under e's
// lock, as close marks e gone: a version staged before is staged over
// by remove's nil, which follows close.
func (m *Manager) stageLive(e *entry, z *zone.Zone) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gone {
		return false
	}
	m.stage(e.origin, z)
	return true
}

// Install serves z, a new version of the zone origin obtained elsewhere
// (a secondary's transfer, already stored), as a reload would: an event
// of the zone, recorded in the journal, published, announced. Called
// from an event of the zone (ctx is the event's), it runs within it.
func (m *Manager) Install(ctx context.Context, origin string, z *zone.Zone) error {
	e := m.entry(origin)
	if e == nil {
		return fmt.Errorf("zone %s: %w", originKey(origin), ErrNoZone)
	}
	return e.do(ctx, func(context.Context) error {
		changed := m.install(e, z, nil)
		m.flush()
		m.announce(changed)
		return nil
	})
}

// Apply runs change as an event of the zone origin (after the zone's
// events posted before it, before those posted after): change gets the
// version served and returns the next one and the difference from the
// one to the other (nil: Apply computes it, O(zone)). The difference is
// written to the zone's journal and fsynced before the new version is
// published and announced (NOTIFY), so that when Apply returns nil the
// change is served and survives a crash (a dynamic update may then be
// acknowledged, RFC 2136 §3.8). A change that cannot be journaled is
// not served: Apply returns why. A zone that keeps no journal (no ACL,
// or no data directory) is served without one. change returning an
// error changes nothing.
func (m *Manager) Apply(ctx context.Context, origin string, change func(ctx context.Context, served *zone.Zone) (*zone.Zone, *zone.Diff, error)) error {
	e := m.entry(origin)
	if e == nil {
		return fmt.Errorf("zone %s: %w", originKey(origin), ErrNoZone)
	}
	return e.do(ctx, func(ctx context.Context) error {
		prev := e.served.Load()
		if prev == nil || prev.Unavailable {
			return fmt.Errorf("zone %s: no data served to change", e.origin)
		}
		z, d, err := change(ctx, prev)
		if err != nil {
			return err
		}
		if err := m.record(e, prev, z, d); err != nil {
			return inZone(e.origin, err)
		}
		if !m.serve(e, z, loadState{loaded: m.now()}) {
			return inZone(e.origin, errGone)
		}
		m.flush()
		if newSerial(prev, z) {
			m.announce(z)
		}
		return nil
	})
}

// Expire stops serving the data of zone origin (a secondary not
// refreshed within its SOA expire time, RFC 1035 §3.3.13): it is
// answered SERVFAIL until a version is installed again. why is kept as
// the zone's state. Like Install, an event of the zone.
func (m *Manager) Expire(ctx context.Context, origin string, why error) error {
	e := m.entry(origin)
	if e == nil {
		return fmt.Errorf("zone %s: %w", originKey(origin), ErrNoZone)
	}
	p, err := zone.Placeholder(e.origin)
	if err != nil {
		return err
	}
	return e.do(ctx, func(context.Context) error {
		m.serve(e, p, loadState{err: inZone(e.origin, why), expired: true})
		m.flush()
		return nil
	})
}

// At makes fn an event of the zone origin d from now (at once when d <=
// 0), replacing the pending event of that kind: each kind of timed event
// is pending at most once per zone, as Knot's zone events are. It
// reports false when origin is not served. fn's context ends when the
// zone is removed or the Manager closed.
func (m *Manager) At(origin, kind string, d time.Duration, fn func(ctx context.Context)) bool {
	e := m.entry(origin)
	if e == nil {
		return false
	}
	e.at(kind, d, fn)
	return true
}

// ErrExists is AddZone's error for a zone served already.
var ErrExists = errors.New("zone served already")

// AddZone serves a zone that the configuration does not name (tern ctl
// zone-add, a catalog zone's member): loaded (or, a secondary without a
// stored copy, a placeholder until transferred) in an event of its own
// and published, without pausing the other zones. A zone that fails to
// load is not added. A reload of the configuration leaves it, unless
// the configuration names the same origin (the configuration's settings
// then win); RemoveZone removes it.
func (m *Manager) AddZone(ctx context.Context, zc config.Zone) error {
	zc.Origin = originKey(zc.Origin)
	m.mu.Lock()
	if m.zones[zc.Origin] != nil {
		m.mu.Unlock()
		return fmt.Errorf("zone %s: %w", zc.Origin, ErrExists)
	}
	e := newEntry(m.ctx, &m.events, &zc, true)
	m.zones[zc.Origin] = e
	m.order = append(m.order, e)
	m.mu.Unlock()
	var changed *zone.Zone
	err := e.do(ctx, func(ctx context.Context) error {
		var err error
		_, changed, err = m.loadZone(ctx, e, &zc)
		return err
	})
	if err != nil {
		m.unregister(e)
		m.remove(e)
		return err
	}
	m.flush()
	m.announce(changed)
	m.log.Info("added", "zone", zc.Origin)
	return nil
}

// RemoveZone stops serving the zone origin (queries for it are then
// REFUSED), whether configured or added at run time; a reload of the
// configuration brings back a configured one. Its events in progress
// see their context end; its files (zone file, journal, keys) stay.
func (m *Manager) RemoveZone(origin string) error {
	m.mu.Lock()
	e := m.zones[originKey(origin)]
	m.mu.Unlock()
	if e == nil {
		return fmt.Errorf("zone %s: %w", originKey(origin), ErrNoZone)
	}
	m.unregister(e)
	m.remove(e)
	return nil
}

// unregister takes e out of the registry.
func (m *Manager) unregister(e *entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.zones[e.origin] == e {
		delete(m.zones, e.origin)
	}
	for i, x := range m.order {
		if x == e {
			m.order = append(m.order[:i:i], m.order[i+1:]...)
			break
		}
	}
}

// Served returns the version of origin served: nil when there is none,
// or a placeholder (Unavailable).
func (m *Manager) Served(origin string) *zone.Zone {
	if e := m.entry(origin); e != nil {
		return e.served.Load()
	}
	return nil
}

// State is one zone as the Manager serves it.
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
	// Dynamic: added at run time (AddZone), not by the configuration.
	Dynamic bool
	// Loading: a reload of the zone waits for another event of it (a
	// transfer) to end; Zone is the version served meanwhile.
	Loading bool
}

// States returns every zone's state, in configuration order, then the
// zones added at run time. It reads what the zones' events published:
// it never waits for one.
func (m *Manager) States() []State {
	m.mu.Lock()
	order := m.order
	m.mu.Unlock()
	out := make([]State, 0, len(order))
	for _, e := range order {
		out = append(out, e.stateNow())
	}
	return out
}

// State returns the state of the zone origin (any spelling), false
// when it is not served: one zone's, without making every zone's.
func (m *Manager) State(origin string) (State, bool) {
	if e := m.entry(origin); e != nil {
		return e.stateNow(), true
	}
	return State{}, false
}

// stateNow is e's State.
func (e *entry) stateNow() State {
	st := e.state.Load()
	return State{Origin: e.origin, File: e.conf.Load().File, Zone: e.served.Load(), Loaded: st.loaded, Err: st.err, Dynamic: e.dynamic, Loading: e.loading.Load() > 0}
}

// ErrNoZone is the error for a zone not served.
var ErrNoZone = errors.New("no such zone configured")

// errGone is an event's error for a zone removed before it ran.
var errGone = fmt.Errorf("removed: %w", ErrNoZone)

// ReloadZone re-reads one zone's file (its settings as last loaded; a
// changed configuration takes Reload) in an event of the zone and
// publishes the result: a failure keeps the version served. It returns
// the zone's state after it and the failure, if any.
func (m *Manager) ReloadZone(ctx context.Context, origin string) (State, error) {
	e := m.entry(origin)
	if e == nil {
		return State{Origin: originKey(origin)}, fmt.Errorf("zone %s: %w", originKey(origin), ErrNoZone)
	}
	var lerr error
	err := e.do(ctx, func(ctx context.Context) error {
		var changed *zone.Zone
		_, changed, lerr = m.loadZone(ctx, e, e.conf.Load())
		m.flush()
		m.announce(changed)
		return nil
	})
	if err != nil {
		return e.stateNow(), inZone(e.origin, err)
	}
	return e.stateNow(), lerr
}

// Close stops every zone's timed events (re-signing, refreshes), ends
// the context of the events in progress and waits for them to return
// (a transfer stops at its next read). Call it from outside the zones'
// events.
func (m *Manager) Close() {
	m.stop()
	m.mu.Lock()
	order := m.order
	m.mu.Unlock()
	for _, e := range order {
		e.close()
	}
	m.events.Wait()
}

// Run returns when ctx ends, after Close: the zones' events are timed
// by the zones themselves.
func (m *Manager) Run(ctx context.Context) {
	<-ctx.Done()
	m.Close()
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

// Check compiles every configured zone file without serving or signing
// it, reporting all errors, and each zone's warnings to warn.
func Check(zs []config.Zone, warn func(origin string, ws []zone.Warning)) error {
	var errs []error
	for _, zc := range zs {
		if zc.Generated() {
			continue // a catalog zone produced here: no file
		}
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
