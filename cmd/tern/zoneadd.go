package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/acl"
	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/durable"
	"github.com/tern-dns/tern/internal/notify"
	"github.com/tern-dns/tern/internal/zonedb"
)

// addedFile is where the zones added at run time are kept, under
// server.data-dir, so that a restart serves them again (as Knot keeps
// zones added by knotc in its configuration database).
const addedFile = "zones-added.json"

// readState reads the JSON file name under dir into v; v stays as it
// is when there is no file.
func readState(dir, name string, v any) error {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

// writeState stores v as the JSON file name under dir, atomically.
func writeState(dir, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err == nil {
		err = durable.MkdirAll(dir, 0o755)
	}
	if err == nil {
		err = durable.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644)
	}
	return err
}

// readAdded reads the zones added at run time that dir keeps; none when
// there is no file.
func readAdded(dir string) ([]config.Zone, error) {
	var zs []config.Zone
	err := readState(dir, addedFile, &zs)
	return zs, err
}

// saveAdded stores the zones added at run time, atomically.
func (rl *reloader) saveAdded() {
	if err := writeState(rl.running.Server.DataDir, addedFile, rl.added); err != nil {
		rl.log.Error("zones added at run time not stored: a restart will not serve them", "err", err)
	}
}

// effective is cfg with the zones added at run time that it does not
// name: what the access rules, NOTIFY targets and secondaries follow.
func (rl *reloader) effective(cfg *config.Config) *config.Config {
	eff := *cfg
	eff.Zones = slices.Clone(cfg.Zones)
	named := configured(cfg)
	for _, zc := range rl.added {
		if !named[zc.Origin] {
			eff.Zones = append(eff.Zones, zc)
		}
	}
	return &eff
}

// apply makes the access rules, NOTIFY targets and secondary zones
// those of eff, made from every zone (a reload; applyZone changes one
// zone's).
func (rl *reloader) apply(eff *config.Config) error {
	access, err := newAccess(eff)
	if err != nil {
		return err
	}
	rl.setAccess(access)
	rl.access = access
	rl.notify.setTargets(eff, access.Keys)
	if rl.secondaries != nil {
		rl.secondaries.Set(secondaryZones(eff, access.Keys))
	}
	return nil
}

// applyZone makes the access rules and NOTIFY targets of zc, one zone,
// what its settings give (gone: none, the zone removed), sharing every
// other zone's with the versions published: what apply makes from
// every zone, for one zone's cost (TestZoneAddIncremental compares
// them).
func (rl *reloader) applyZone(zc *config.Zone, gone bool) error {
	origin := dns.CanonicalName(zc.Origin)
	var l acl.List
	if !gone {
		var err error
		if l, err = rl.current.ZoneACL(zc); err != nil {
			return err
		}
	}
	if rl.access == nil {
		a, err := newAccess(rl.effective(rl.current))
		if err != nil {
			return err
		}
		rl.access = a
	}
	rl.access = rl.access.WithACL(origin, l)
	rl.setAccess(rl.access)
	var targets []notify.Target
	if !gone {
		targets = zoneTargets(rl.current, zc, rl.access.Keys)
	}
	rl.notify.setZone(origin, targets)
	return nil
}

// addZone serves zc, a zone the configuration does not name, with the
// running configuration's remotes, ACLs and keys (tern ctl zone-add; a
// catalog zone's members are added the same way): checked as a
// [[zone]] table would be, loaded in an event of its own without
// pausing the other zones, and kept (across reloads and, stored under
// server.data-dir, restarts) until removeZone. A secondary's file
// defaults to data-dir/ORIGINzone. A zone served already, or one that
// does not load, is an error and changes nothing. Its rules and its
// catalog's members are changed for it alone (applyZone, setMember):
// the cost of an add does not grow with the zones served but for the
// shards of the copy-on-write maps (zone.ByOrigin) and its catalog.
func (rl *reloader) addZone(ctx context.Context, zc config.Zone) error {
	zc.Origin = dns.CanonicalName(dns.Fqdn(zc.Origin))
	if zc.Secondary() {
		zc.File = secondaryFile(rl.running.Server.DataDir, zc.Origin, zc.File)
	} else if zc.File == "" {
		return fmt.Errorf("zone %s: no file (--file), and no primary (--primary) to transfer it from", zc.Origin)
	}
	zones := rl.zoneIndex()
	if zones.Has(zc.Origin) {
		return fmt.Errorf("zone %s: served already", zc.Origin)
	}
	if err := rl.current.CheckAdd(&zc, zones); err != nil {
		return fmt.Errorf("zone %s: %w", zc.Origin, err)
	}
	if rl.mgr == nil {
		rl.mgr = rl.newManager(rl.current)
		go rl.mgr.Run(rl.ctx)
	}
	// The zone's ACL and NOTIFY list hold from its first answer.
	if err := rl.applyZone(&zc, false); err != nil {
		return err
	}
	if err := rl.mgr.AddZone(ctx, zc); err != nil {
		_ = rl.applyZone(&zc, true)
		return err
	}
	rl.keepAdded(zc)
	rl.keepMember(zc.Origin)
	delete(rl.removed, zc.Origin)
	if rl.secondaries != nil && zc.Secondary() {
		// Its first refresh, now that it is served (one started before
		// would find no zone to run in).
		rl.secondaries.Remove(zc.Origin)
		rl.secondaries.Add(secondaryZone(rl.current, &zc, rl.access.Keys))
	}
	rl.saveAdded()
	rl.remakeCatalogs(ctx, rl.setMember(&zc, false))
	return nil
}

// configured returns the canonical origins of cfg's zones.
func configured(cfg *config.Config) map[string]bool {
	named := make(map[string]bool, len(cfg.Zones))
	for _, zc := range cfg.Zones {
		named[dns.CanonicalName(zc.Origin)] = true
	}
	return named
}

// restoreAdded serves again, at start, the zones added at run time
// before the restart (added, as zones-added.json keeps them). Those the
// configuration now names (moved into it while the server was stopped)
// are its own, as a reload makes them (forgetConfigured): dropped from
// the list, not added again. Kept in it, one would be removed by tern
// ctl zone-remove as an added zone, its configured rules dropped, in
// its catalog still (TestRestoreConfigured). A zone the list names twice
// is restored once, its later entries dropped (TestRestoreTwice).
func (rl *reloader) restoreAdded(ctx context.Context, added []config.Zone) {
	named := configured(rl.current)
	for _, zc := range added {
		origin := dns.CanonicalName(zc.Origin)
		if named[origin] {
			continue
		}
		named[origin] = true
		if err := rl.addZone(ctx, zc); err != nil {
			// Kept in the list (tern ctl zone-remove drops it): a
			// file missing for a while does not lose the zone.
			rl.log.Error("zone added at run time not served", "zone", zc.Origin, "err", err)
			rl.keepAdded(zc)
		}
	}
	if len(rl.added) != len(added) {
		rl.saveAdded()
	}
}

// removeZone stops serving the zone origin: one added at run time for
// good, a configured one until the next reload (its rules stay, as
// the effective configuration still names it; it leaves its catalog).
func (rl *reloader) removeZone(origin string) error {
	origin = dns.CanonicalName(dns.Fqdn(origin))
	if rl.mgr == nil {
		return fmt.Errorf("zone %s: not served", origin)
	}
	i := slices.IndexFunc(rl.added, func(zc config.Zone) bool { return zc.Origin == origin })
	// One added but not served (its file failed at start) is dropped
	// from the list all the same.
	if err := rl.mgr.RemoveZone(origin); err != nil && (i < 0 || !errors.Is(err, zonedb.ErrNoZone)) {
		return err
	}
	var zc *config.Zone
	var err error
	if i >= 0 {
		added := rl.added[i]
		zc = &added
		if rl.zones != nil {
			rl.zones.Remove(&rl.added[i])
		}
		rl.added = slices.Delete(rl.added, i, i+1)
		rl.saveAdded()
		err = rl.applyZone(zc, true)
		if rl.secondaries != nil {
			rl.secondaries.Remove(origin)
		}
	} else {
		// Configured: out of its catalog until the next reload.
		rl.removed[origin] = true
		zc = rl.zoneIndex().Zone(origin)
	}
	if zc != nil {
		rl.remakeCatalogs(context.Background(), rl.setMember(zc, true))
	}
	return err
}

// forgetConfigured drops the zones added at run time that cfg now
// names: the configuration's settings win.
func (rl *reloader) forgetConfigured(cfg *config.Config) {
	named := configured(cfg)
	n := len(rl.added)
	rl.added = slices.DeleteFunc(rl.added, func(zc config.Zone) bool { return named[zc.Origin] })
	if len(rl.added) != n {
		rl.saveAdded()
	}
	rl.zones = nil
}

// zoneIndex returns the index of the zones served, configured and
// added at run time, that an added zone is checked against: made once
// per configuration (forgetConfigured drops it at a reload), then kept
// up to date by each add and removal, so that an add beside 100,000
// zones looks at its own settings, not at theirs.
func (rl *reloader) zoneIndex() *config.ZoneIndex {
	if rl.zones == nil {
		// The added zones the configuration does not name, as in
		// effective, without its copy of every zone's settings (a
		// first add beside 100,000 zones: 116 -> 22 ms).
		rl.zones = rl.current.IndexZones(rl.addedZone)
		for i := range rl.added {
			if !rl.zones.Has(rl.added[i].Origin) {
				rl.zones.Add(&rl.added[i])
			}
		}
	}
	return rl.zones
}

// addedZone returns the zone of origin added at run time, nil for none.
func (rl *reloader) addedZone(origin string) *config.Zone {
	if i := slices.IndexFunc(rl.added, func(zc config.Zone) bool { return zc.Origin == origin }); i >= 0 {
		return &rl.added[i]
	}
	return nil
}

// keepAdded adds zc to the zones added at run time, and to the index.
func (rl *reloader) keepAdded(zc config.Zone) {
	rl.added = append(rl.added, zc)
	switch {
	case rl.zones == nil:
	case rl.zones.Has(dns.CanonicalName(zc.Origin)):
		rl.zones = nil // indexed already (a restart's list naming it twice): made again
	default:
		rl.zones.Add(&zc)
	}
}

// secondaryFile is where a zone added at run time as a secondary of
// origin keeps its copy: file (--file) when given, under dir unless
// absolute; else dir/ORIGINzone, origin made one safe file name
// (durable.FileName): a catalog's member names come from its producer,
// and "/etc/x." must not put the copy in, nor a later purge delete
// /etc/x.zone.
func secondaryFile(dir, origin, file string) string {
	if file == "" {
		return filepath.Join(dir, durable.FileName(origin)+"zone")
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(dir, file)
	}
	return file
}
