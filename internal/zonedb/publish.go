package zonedb

import (
	"maps"

	"github.com/tern-dns/tern/internal/zone"
)

// stage notes z as the version of origin to publish next (nil: origin
// is no longer served). Nothing is published until flush.
func (m *Manager) stage(origin string, z *zone.Zone) {
	m.pmu.Lock()
	defer m.pmu.Unlock()
	m.pending[origin] = z
}

// flush publishes every staged change, the set whole (copy on write:
// the query path holds the set it started with). Changes staged while
// one flush runs are published by the next; a caller that finds nothing
// staged returns at once, as the flush it waited for published its
// changes. Concurrent events so coalesce into few publications, each of
// which copies the set once, whatever the number of zones changed.
func (m *Manager) flush() {
	m.publishing.Lock()
	defer m.publishing.Unlock()
	m.pmu.Lock()
	changes := m.pending
	m.pending = make(map[string]*zone.Zone)
	m.pmu.Unlock()
	if len(changes) == 0 {
		return
	}
	next := maps.Clone(m.published)
	if next == nil {
		next = make(map[string]*zone.Zone, len(changes))
	}
	for origin, z := range changes {
		if z == nil {
			delete(next, origin)
		} else {
			next[origin] = z
		}
	}
	m.published = next
	zs := make([]*zone.Zone, 0, len(next))
	for _, z := range next {
		zs = append(zs, z)
	}
	m.publish(zone.NewSet(zs...))
}
