package zonedb

// Changes made while a zone is served (dynamic updates, RFC 2136): each
// is written to the zone's update journal and fsynced before it is
// served (and so before it is acknowledged), the zone file is rewritten
// after the zone's zonefile-sync delay, and every load replays the
// update journal over the file.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/durable"
	"github.com/tern-dns/tern/internal/journal"
	"github.com/tern-dns/tern/internal/zone"
)

// Change computes the next content of a zone from base, the content
// served (for a zone the server signs, the unsigned content, which the
// new version is signed from): the next version and the difference
// between the two, or nil and nil when nothing changes. zc is the zone's
// configuration. An error changes nothing and is returned by Update.
type Change func(base *zone.Zone, zc *config.Zone) (*zone.Zone, *zone.Diff, error)

// ErrSecondary is Update's error for a secondary zone, whose content is
// its primary's (RFC 2136 §3.1.2 would forward the update; Tern does not).
var ErrSecondary = errors.New("a secondary zone changes by transfers only")

// ErrGenerated is Update's error for a zone whose content Tern makes
// (a catalog zone it produces from its members, RFC 9432).
var ErrGenerated = errors.New("a catalog zone produced here changes with its members only")

// ErrNoJournal is Update's error when the server keeps no journals (no
// data directory): a change could not survive a restart.
var ErrNoJournal = errors.New("no journal directory: changes cannot be kept")

// Update applies change to the zone origin as an event of the zone
// (through Apply): the difference is appended to the zone's update
// journal and fsynced, then the new version (signed again, only its
// changed RRsets, when the server signs the zone) is recorded in the
// IXFR journal, served, published and announced (NOTIFY). When Update
// returns nil the change is served and survives a crash. The zone file
// is rewritten with the zone's content zonefile-sync after the change
// (a rewrite already pending is not pushed back).
func (m *Manager) Update(ctx context.Context, origin string, change Change) error {
	e := m.entry(origin)
	if e == nil {
		return fmt.Errorf("zone %s: %w", originKey(origin), ErrNoZone)
	}
	return m.Apply(ctx, origin, func(ctx context.Context, served *zone.Zone) (*zone.Zone, *zone.Diff, error) {
		// An event of e: e.signed is this goroutine's.
		zc := e.conf.Load()
		if zc.Secondary() {
			return nil, nil, fmt.Errorf("zone %s: %w", e.origin, ErrSecondary)
		}
		if zc.Generated() {
			return nil, nil, fmt.Errorf("zone %s: %w", e.origin, ErrGenerated)
		}
		uj, err := m.updateJournal(e.origin)
		if err != nil {
			return nil, nil, err
		}
		sz := e.signed
		base := served
		if sz != nil {
			if base, err = compileRRs(zc.Origin, sz.unsigned); err != nil {
				return nil, nil, fmt.Errorf("zone %s: the unsigned content: %w", e.origin, err)
			}
		}
		next, d, err := change(base, zc)
		if err != nil {
			return nil, nil, err
		}
		if next == nil {
			return served, nil, nil // nothing changes
		}
		z, servedDiff := next, d
		var unsigned []dns.RR
		var when time.Time
		if sz != nil {
			// The signer keeps the signatures of every RRset that
			// did not change and mends the NSEC/NSEC3 chain.
			if unsigned, err = Records(next); err != nil {
				return nil, nil, fmt.Errorf("zone %s: %w", e.origin, err)
			}
			if z, when, err = m.sign(ctx, sz, unsigned); err != nil {
				return nil, nil, fmt.Errorf("zone %s: signing the change: %w", e.origin, err)
			}
			servedDiff = nil // the signed versions' difference: computed
		}
		if err := uj.Append(d, next.Digest()); err != nil {
			return nil, nil, fmt.Errorf("zone %s: the change not journaled, not served: %w", e.origin, err)
		}
		if sz != nil {
			sz.unsigned, sz.next = unsigned, when
		}
		m.scheduleZonefileSync(e, zc.ZonefileSync.Duration)
		return z, servedDiff, nil
	})
}

// updateJournalPath is where the update journal of the zone origin
// lives: beside its IXFR journal.
func updateJournalPath(dir, origin string) string {
	return strings.TrimSuffix(journal.Path(dir, origin), ".jnl") + ".update.jnl"
}

// noBound is the update journals' bound: never reached, so that no
// change is condensed or dropped before the zone file holds it (the
// rewrite, zonefile-sync after a change, empties the journal).
const noBound = 1 << 62

// updateJournal returns the update journal of origin, opened once.
func (m *Manager) updateJournal(origin string) (*journal.Journal, error) {
	m.jmu.Lock()
	dir := m.jdir
	m.jmu.Unlock()
	if dir == "" {
		return nil, fmt.Errorf("zone %s: %w", origin, ErrNoJournal)
	}
	m.umu.Lock()
	defer m.umu.Unlock()
	if j := m.ujournals[origin]; j != nil {
		return j, nil
	}
	j, dropped, err := journal.Open(updateJournalPath(dir, origin), noBound)
	if err != nil {
		return nil, fmt.Errorf("zone %s: %w", origin, err)
	}
	if dropped > 0 {
		m.log.Warn("update journal: dropped a torn or corrupt tail", "zone", origin, "octets", dropped)
	}
	if m.ujournals == nil {
		m.ujournals = map[string]*journal.Journal{}
	}
	m.ujournals[origin] = j
	return j, nil
}

// replayUpdates returns z, a zone's content as its file holds it, with
// the changes of its update journal since the file's serial applied: the
// changes acknowledged but not yet written to the file. z itself when
// there are none; an error when the journal does not apply to the file
// (then the file wins, with a warning, and the journal is emptied: the
// file was edited).
func (m *Manager) replayUpdates(e *entry, zc config.Zone, z *zone.Zone) *zone.Zone {
	origin := originKey(zc.Origin)
	if !m.pendingUpdates(zc) {
		return z
	}
	uj, err := m.updateJournal(origin)
	if err != nil {
		m.log.Error("update journal: not replayed", "zone", origin, "err", err)
		return z
	}
	d, err := uj.Since(z.Serial)
	if errors.Is(err, journal.ErrNotFound) {
		return z
	}
	var next *zone.Zone
	if err == nil {
		var recs []zone.RR
		if recs, err = d.Apply(z.SortedRecords()); err == nil {
			next, err = zone.CompileRecords(origin, "update journal", recs)
		}
	}
	if err != nil {
		m.log.Warn("update journal: does not apply to the zone file (edited?): the file is served, the journal emptied", "zone", origin, "err", err)
		if err := uj.Reset(); err != nil {
			m.log.Error("update journal: emptying", "zone", origin, "err", err)
		}
		return z
	}
	m.log.Info(fmt.Sprintf("update journal: serial %d replayed over the file's %d", next.Serial, z.Serial), "zone", origin, "deleted", len(d.Deleted), "added", len(d.Added))
	// The file is rewritten as after the update (zonefile-sync).
	m.scheduleZonefileSync(e, zc.ZonefileSync.Duration)
	return next
}

// pendingUpdates reports whether the zone of zc has an update journal,
// which may hold changes its file lacks.
func (m *Manager) pendingUpdates(zc config.Zone) bool {
	m.jmu.Lock()
	dir := m.jdir
	m.jmu.Unlock()
	if dir == "" || zc.Secondary() {
		return false
	}
	_, err := os.Stat(updateJournalPath(dir, originKey(zc.Origin)))
	return err == nil
}

// eventZonefileSync is the timed event rewriting a zone file after
// dynamic updates.
const eventZonefileSync = "zonefile-sync"

// scheduleZonefileSync has e's zone file rewritten after d, unless a
// rewrite is pending already; in an event of e.
func (m *Manager) scheduleZonefileSync(e *entry, d time.Duration) {
	m.umu.Lock()
	defer m.umu.Unlock()
	if m.syncDue == nil {
		m.syncDue = map[string]bool{}
	}
	if m.syncDue[e.origin] {
		return
	}
	m.syncDue[e.origin] = true
	e.at(eventZonefileSync, d, func(context.Context) {
		if err := m.syncZonefile(e); err != nil {
			m.log.Error("zone file not rewritten: the changes stay in the update journal", "zone", e.origin, "err", err)
		}
	})
}

// SyncZonefile rewrites the zone file of origin now, if changes are
// pending, as an event of the zone.
func (m *Manager) SyncZonefile(ctx context.Context, origin string) error {
	e := m.entry(origin)
	if e == nil {
		return fmt.Errorf("zone %s: %w", originKey(origin), ErrNoZone)
	}
	return e.do(ctx, func(context.Context) error {
		e.cancelTimer(eventZonefileSync)
		return m.syncZonefile(e)
	})
}

// SyncZonefiles rewrites now the zone files whose rewrite after dynamic
// updates is pending (zonefile-sync not yet run), as a server does when
// it stops: the changes are safe in the update journals already, but an
// operator expects the file to hold them. It returns the zones' errors,
// joined; a zone whose event does not run before ctx ends is one.
func (m *Manager) SyncZonefiles(ctx context.Context) error {
	m.umu.Lock()
	due := make([]string, 0, len(m.syncDue))
	for origin := range m.syncDue {
		due = append(due, origin)
	}
	m.umu.Unlock()
	slices.Sort(due)
	var errs []error
	for _, origin := range due {
		if err := m.SyncZonefile(ctx, origin); err != nil && !errors.Is(err, ErrNoZone) {
			errs = append(errs, inZone(origin, err))
		}
	}
	return errors.Join(errs...)
}

// syncZonefile writes the content of e (unsigned, for a zone the server
// signs) to its zone file, atomically, and empties its update journal,
// which the file now holds; in an event of e.
func (m *Manager) syncZonefile(e *entry) error {
	m.umu.Lock()
	delete(m.syncDue, e.origin)
	uj := m.ujournals[e.origin]
	m.umu.Unlock()
	if uj == nil {
		return nil
	}
	if _, _, ok := uj.Last(); !ok {
		return nil // nothing pending
	}
	zc := e.conf.Load()
	z := e.served.Load()
	if z == nil || z.Unavailable || zc.Secondary() {
		return nil
	}
	var rrs []dns.RR
	if sz := e.signed; sz != nil {
		rrs = sz.unsigned
	} else {
		var err error
		if rrs, err = Records(z); err != nil {
			return err
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "; %s written by tern after dynamic updates\n", e.origin)
	for _, rr := range rrs {
		b.WriteString(rr.String())
		b.WriteByte('\n')
	}
	if err := durable.WriteFile(zc.File, []byte(b.String()), 0o644); err != nil {
		return err
	}
	if err := uj.Reset(); err != nil {
		return err
	}
	m.log.Info("zone file written", "zone", e.origin, "file", zc.File, "records", len(rrs))
	return nil
}

// Records returns the records of z, the SOA first, as miekg/dns's type.
func Records(z *zone.Zone) ([]dns.RR, error) {
	recs := z.SortedRecords()
	out := make([]dns.RR, 0, len(recs))
	for _, r := range recs {
		rr, err := r.Unpack()
		if err != nil {
			return nil, err
		}
		out = append(out, rr)
	}
	return out, nil
}

// compileRRs compiles records held as miekg/dns's type.
func compileRRs(origin string, rrs []dns.RR) (*zone.Zone, error) {
	recs := make([]zone.Record, len(rrs))
	for i, rr := range rrs {
		recs[i] = zone.Record{RR: rr, File: "unsigned content", Line: i + 1}
	}
	return zone.Compile(origin, recs)
}
