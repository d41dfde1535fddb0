package main

import (
	"context"
	"maps"
	"slices"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/config"
)

// catalogMembers lists the members of each catalog zone produced here
// (RFC 9432), by catalog origin, from eff: the zones whose catalog key
// names it, configured or added at run time.
func catalogMembers(eff *config.Config) map[string][]string {
	out := map[string][]string{}
	for _, zc := range eff.Zones {
		if zc.Generated() {
			if _, ok := out[zc.Origin]; !ok {
				out[zc.Origin] = nil
			}
		}
		if zc.Catalog != "" {
			out[zc.Catalog] = append(out[zc.Catalog], dns.CanonicalName(zc.Origin))
		}
	}
	for c, ms := range out {
		slices.Sort(ms)
		out[c] = slices.Compact(ms)
	}
	return out
}

// setCatalogs takes the catalogs' members from the effective
// configuration (the running one and the zones added at run time); it
// returns the catalogs whose members changed.
func (rl *reloader) setCatalogs() (changed []string) {
	next := rl.allMembers()
	prev := rl.catalogs.Load()
	for origin, ms := range next {
		if prev == nil || !slices.Equal((*prev)[origin], ms) {
			changed = append(changed, origin)
		}
	}
	rl.catalogs.Store(&next)
	rl.setInterpret()
	slices.Sort(changed)
	return changed
}

// allMembers returns the catalogs' members made from every zone: the
// effective configuration's, those being restored, less those removed
// until the next reload.
func (rl *reloader) allMembers() map[string][]string {
	eff := rl.effective(rl.current)
	eff.Zones = append(eff.Zones, rl.restoring...)
	eff.Zones = slices.DeleteFunc(eff.Zones, func(zc config.Zone) bool { return rl.removed[dns.CanonicalName(zc.Origin)] })
	return catalogMembers(eff)
}

// setMember makes the place of zc, one zone, in the catalogs produced
// here what its settings give (gone: what its removal leaves), as
// setCatalogs would from every zone but copying one catalog's members
// (and the map of catalogs), not making them all again: a zone added
// beside 100,000 costs its catalog's members. It returns the catalog
// whose members changed, none when none did.
func (rl *reloader) setMember(zc *config.Zone, gone bool) (changed []string) {
	var next map[string][]string
	if prev := rl.catalogs.Load(); prev != nil {
		next = maps.Clone(*prev)
	} else {
		next = map[string][]string{}
	}
	origin := dns.CanonicalName(zc.Origin)
	if c := zc.Catalog; c != "" {
		ms := next[c]
		i, found := slices.BinarySearch(ms, origin)
		switch {
		case !gone && !found:
			next[c] = slices.Insert(slices.Clip(ms), i, origin)
			changed = []string{c}
		case gone && found:
			ms = slices.Delete(slices.Clone(ms), i, i+1)
			next[c] = ms
			if len(ms) == 0 {
				next[c] = nil
				if !rl.generates(c) {
					delete(next, c)
				}
			}
			changed = []string{c}
		}
	}
	if zc.Generated() {
		if _, ok := next[origin]; !ok && !gone {
			next[origin] = nil
		} else if gone && len(next[origin]) == 0 {
			delete(next, origin)
		}
	}
	rl.catalogs.Store(&next)
	return changed
}

// generates reports whether a zone served (not removed) is the catalog
// origin, produced here.
func (rl *reloader) generates(origin string) bool {
	zc := rl.zoneIndex().Zone(origin)
	return zc != nil && zc.Generated() && !rl.removed[origin]
}

// members is the zone manager's view of the catalogs produced here.
func (rl *reloader) members(origin string) []string {
	if m := rl.catalogs.Load(); m != nil {
		return (*m)[dns.CanonicalName(origin)]
	}
	return nil
}

// reloadCatalogs makes the catalogs whose members changed at run time
// (tern ctl zone-add, zone-remove) again: a new serial, journaled,
// announced to their notify lists.
func (rl *reloader) reloadCatalogs(ctx context.Context) {
	rl.remakeCatalogs(ctx, rl.setCatalogs())
}

// remakeCatalogs makes the catalogs origins, whose members changed,
// again.
func (rl *reloader) remakeCatalogs(ctx context.Context, origins []string) {
	for _, origin := range origins {
		if rl.mgr == nil || rl.mgr.Served(origin) == nil {
			continue // not served (yet): its load makes it
		}
		if _, err := rl.mgr.ReloadZone(ctx, origin); err != nil {
			rl.log.Error("catalog: not made again", "zone", origin, "err", err)
		}
	}
}
