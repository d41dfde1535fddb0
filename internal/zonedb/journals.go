package zonedb

import (
	"fmt"
	"os"

	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/journal"
	"github.com/tern-dns/tern/internal/zone"
)

// KeepJournals makes the Manager record every change of a zone that has
// an ACL (a zone someone may transfer) in a journal under dir, bounded by
// max (see package journal): a reload whose serial differs from the
// version served, a transfer in, an applied change, and each re-signing.
// Call it before Load.
func (m *Manager) KeepJournals(dir string, max func(*config.Zone) int64) {
	m.jmu.Lock()
	defer m.jmu.Unlock()
	m.jdir, m.jmax = dir, max
}

// keepsJournal reports whether zc's changes are journaled.
func (m *Manager) keepsJournal(zc *config.Zone) bool {
	return m.jdir != "" && len(zc.ACL) > 0
}

// journalSettings applies zc (a zone's settings being loaded) to its
// open journal: closed when the zone no longer keeps one, its bound
// changed otherwise.
func (m *Manager) journalSettings(origin string, zc *config.Zone) {
	m.jmu.Lock()
	defer m.jmu.Unlock()
	j := m.journals[origin]
	if j == nil {
		return
	}
	if !m.keepsJournal(zc) {
		j.Close()
		delete(m.journals, origin)
		return
	}
	j.SetMax(m.jmax(zc)) // journal-max-size may have changed
}

// closeJournal closes origin's journal (the zone is removed); its file
// stays, for a zone added again.
func (m *Manager) closeJournal(origin string) {
	m.jmu.Lock()
	defer m.jmu.Unlock()
	if j := m.journals[origin]; j != nil {
		j.Close()
		delete(m.journals, origin)
	}
}

// journal returns the journal of the zone origin with settings zc,
// opening it on first use (creating it only when create is set: a change
// to record); nil when the zone keeps none, has none yet, or it cannot
// be opened (logged: transfers are then whole). The Journal is safe for
// concurrent use: the Manager's lock is held only to find it.
func (m *Manager) journal(origin string, zc *config.Zone, create bool) *journal.Journal {
	m.jmu.Lock()
	defer m.jmu.Unlock()
	if j := m.journals[origin]; j != nil {
		return j
	}
	if !m.keepsJournal(zc) {
		return nil
	}
	path := journal.Path(m.jdir, origin)
	if _, err := os.Stat(path); err != nil && !create {
		return nil
	}
	j, dropped, err := journal.Open(path, m.jmax(zc))
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
func (m *Manager) checkJournal(e *entry, z *zone.Zone) {
	j := m.journal(e.origin, e.conf.Load(), false)
	if j == nil {
		return
	}
	serial, digest, ok := j.Last()
	if !ok || serial != z.Serial || digest == z.Digest() {
		return
	}
	m.log.Warn(fmt.Sprintf("journal: serial %d is not the version the journal recorded (the zone changed without a new serial): differences from before it dropped", serial), "zone", e.origin)
	if err := j.Reset(); err != nil {
		m.log.Error("journal: emptying", "zone", e.origin, "err", err)
	}
}

// record appends the change d (nil: computed) from old to new of a zone
// to its journal, if it keeps one, fsynced before it returns. It runs in
// the zone's event: Compare, O(zone), holds no lock other zones need.
func (m *Manager) record(e *entry, old, new *zone.Zone, d *zone.Diff) error {
	if old == nil || old.Unavailable || old.Serial == new.Serial {
		return nil
	}
	// A zone removed while its event made the change is not written to:
	// its journal would hold, for the zone's next addition, a change
	// never served (serve drops it: stageLive; TestNoJournalAfterRemoval).
	// A removal between this check and the write still finds the change
	// recorded: the write's file I/O is not held under the lock close
	// takes.
	if e.removed() {
		return nil
	}
	j := m.journal(e.origin, e.conf.Load(), true)
	if j == nil {
		return nil
	}
	var err error
	if d == nil {
		d, err = zone.Compare(old, new)
	}
	if err == nil {
		err = j.Append(d, new.Digest())
	}
	if err != nil {
		return fmt.Errorf("journal: change from serial %d to %d not recorded: %w", old.Serial, new.Serial, err)
	}
	m.log.Debug("journal: change recorded", "zone", e.origin, "from", old.Serial, "to", new.Serial, "deleted", len(d.Deleted), "added", len(d.Added), "size", j.Size())
	return nil
}

// Since returns the changes of the zone origin (a canonical wire name)
// from serial to the newest version recorded, condensed into one
// difference, or journal.ErrNotFound: no journal, or serial not in it.
// The caller checks that the difference leads to the version it serves.
func (m *Manager) Since(origin []byte, serial uint32) (*zone.Diff, error) {
	e := m.entry(zone.NameString(origin))
	if e == nil {
		return nil, journal.ErrNotFound
	}
	// An IXFR makes no journal: a zone that never changed has none.
	j := m.journal(e.origin, e.conf.Load(), false)
	if j == nil {
		return nil, journal.ErrNotFound
	}
	return j.Since(serial)
}
