package main

import (
	"context"
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
	eff := rl.effective(rl.current)
	eff.Zones = append(eff.Zones, rl.restoring...)
	eff.Zones = slices.DeleteFunc(eff.Zones, func(zc config.Zone) bool { return rl.removed[dns.CanonicalName(zc.Origin)] })
	next := catalogMembers(eff)
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
	for _, origin := range rl.setCatalogs() {
		if rl.mgr == nil || rl.mgr.Served(origin) == nil {
			continue // not served (yet): its load makes it
		}
		if _, err := rl.mgr.ReloadZone(ctx, origin); err != nil {
			rl.log.Error("catalog: not made again", "zone", origin, "err", err)
		}
	}
}
