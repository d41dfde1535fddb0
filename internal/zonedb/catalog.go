package zonedb

import (
	"fmt"

	"github.com/tern-dns/tern/internal/catalog"
	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/zone"
)

// ProduceCatalogs makes the Manager generate the content of each zone
// with no file and no primary (config.Zone.Generated: a catalog zone
// this server produces, RFC 9432) from members, which returns the
// member zones of the catalog origin at the time of the call. The
// generated version goes where a zone file's would: journal, served,
// published and announced (NOTIFY). It is made again at every load of
// the zone (Reload, ReloadZone). Call it before Load.
func (m *Manager) ProduceCatalogs(members func(origin string) []string) {
	m.members.Store(&members)
}

// generate makes the catalog zone zc's next version from its members,
// in an event of e. The serial (RFC 9432 §5.1: it increases with each
// change) follows the unixtime policy: unchanged members keep the serial
// served, or, at the first load, the one the zone's journal last
// recorded when the content is the same; otherwise the Unix time, or one
// more than the last serial when that is not greater (RFC 1982), so
// that a restart never takes the serial backwards while the journal
// (kept when the catalog has an ACL) or the clock remembers it.
func (m *Manager) generate(e *entry, zc config.Zone) (*zone.Zone, error) {
	fn := m.members.Load()
	if fn == nil {
		return nil, fmt.Errorf("no file, and no catalog zone is produced here")
	}
	members := (*fn)(e.origin)
	var last uint32
	var digest uint64
	have := false
	if prev := e.served.Load(); prev != nil && !prev.Unavailable {
		last, digest, have = prev.Serial, prev.Digest(), true
	} else if j := m.journal(e.origin, &zc, false); j != nil {
		last, digest, have = j.Last()
	}
	if have {
		if z, err := compileRRs(zc.Origin, catalog.Build(zc.Origin, last, members)); err == nil && z.Digest() == digest {
			return z, nil
		}
	}
	serial := uint32(m.now().Unix())
	if have && int32(serial-last) <= 0 {
		serial = last + 1
	}
	return compileRRs(zc.Origin, catalog.Build(zc.Origin, serial, members))
}
