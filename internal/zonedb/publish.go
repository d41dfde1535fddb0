package zonedb

import (
	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/zone"
)

// stage notes z as the version of origin to publish next (nil: origin
// is no longer served). Nothing is published until flush.
func (m *Manager) stage(origin string, z *zone.Zone) {
	m.pmu.Lock()
	defer m.pmu.Unlock()
	m.pending[origin] = z
}

// flush publishes every staged change (copy on write: the query path
// holds the set it started with; zone.Set.With copies only the shards
// the changes fall in, so a zone added beside 100,000 copies a few
// hundred entries). Changes staged while one flush runs are published by
// the next; a caller that finds nothing staged returns at once, as the
// flush it waited for published its changes. Concurrent events so
// coalesce into few publications.
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
	// The Set is keyed by origins' wire forms.
	byWire := make(map[string]*zone.Zone, len(changes))
	for origin, z := range changes {
		if z != nil {
			byWire[string(z.Origin)] = z
			continue
		}
		var buf [256]byte
		n, err := dns.PackDomainName(originKey(origin), buf[:], 0, nil, false)
		if err != nil {
			continue // never staged: the origin was checked at load
		}
		byWire[string(buf[:n])] = nil
	}
	m.published = m.published.With(byWire)
	m.publish(m.published)
}
