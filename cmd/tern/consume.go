package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/catalog"
	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/journal"
	"github.com/tern-dns/tern/internal/secondary"
	"github.com/tern-dns/tern/internal/zonedb"
)

// consumedFile is where the state of the catalogs consumed is kept,
// under server.data-dir: each catalog's members as last interpreted, so
// that a restart compares the next version with them. The member zones
// themselves are kept with the zones added at run time (addedFile) and
// served again at once on a restart.
const consumedFile = "catalogs-consumed.json"

// readConsumed reads the catalogs consumed that dir keeps.
func readConsumed(dir string) (map[string]*catalog.Catalog, error) {
	out := map[string]*catalog.Catalog{}
	if err := readState(dir, consumedFile, &out); err != nil {
		return map[string]*catalog.Catalog{}, err
	}
	return out, nil
}

// saveConsumed stores the catalogs consumed, atomically.
func (rl *reloader) saveConsumed() {
	if err := writeState(rl.running.Server.DataDir, consumedFile, rl.consumed); err != nil {
		rl.log.Error("catalogs consumed not stored: a restart compares the next version with an older one", "err", err)
	}
}

// memberOps are what a consumer does to its member zones: the
// reloader's, or a test's.
type memberOps interface {
	// add serves zc, a member, as a secondary.
	add(zc config.Zone) error
	// remove stops serving the zone; purge deletes its stored copy now,
	// else after the catalog's grace period.
	remove(origin string, purge bool) error
	// owner tells which catalog consumed here lists a zone served,
	// ("", true) for one served but not a member of any.
	owner(origin string) (cat string, served bool)
}

// consumeVersion applies next, a version of the catalog cat consumed
// (its [[zone]]), after prev (nil: none), through ops (RFC 9432 §5,
// catalog.Changes): members added are served as secondaries of the
// catalog's primaries with its ACLs; members gone are removed (their
// data deleted after the grace period); a reset member (§5.5) loses
// its data and is transferred afresh; a member released to its coo
// target (§5.4) stops being served here, its data kept for the
// catalog taking it over; one adopted from another catalog consumed
// here is served again under this one, its data kept. It returns the
// changes made, the members now meant to be served that are not (an
// add that failed), and the failures, joined.
func consumeVersion(cat config.Zone, prev, next *catalog.Catalog, ops memberOps, consumed map[string]*catalog.Catalog) (changes []catalog.Change, failed []string, err error) {
	owner := func(z string) (string, catalog.Member, bool) {
		c, served := ops.owner(z)
		if !served {
			return "", catalog.Member{}, false
		}
		if p := consumed[c]; p != nil {
			return c, p.Members[z], true
		}
		return c, catalog.Member{}, true
	}
	member := func(z string) config.Zone {
		return config.Zone{Origin: z, Primary: cat.Primary, ACL: cat.ACL, MemberOf: cat.Origin}
	}
	changes = catalog.Changes(prev, next, owner)
	var errs []error
	for _, c := range changes {
		switch c.Kind {
		case catalog.Add:
			err = ops.add(member(c.Zone))
		case catalog.Remove:
			err = ops.remove(c.Zone, false)
		case catalog.Release:
			err = ops.remove(c.Zone, false)
		case catalog.Reset:
			if err = ops.remove(c.Zone, true); err == nil {
				err = ops.add(member(c.Zone))
			}
		case catalog.Adopt:
			if err = ops.remove(c.Zone, false); err == nil {
				err = ops.add(member(c.Zone))
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("catalog %s: %s %s: %w", cat.Origin, c.Kind, c.Zone, err))
			if c.Kind == catalog.Add || c.Kind == catalog.Reset || c.Kind == catalog.Adopt {
				failed = append(failed, c.Zone)
			}
		}
	}
	return changes, failed, errors.Join(errs...)
}

// consumerOps are the reloader's memberOps for the catalog cat.
type consumerOps struct {
	rl  *reloader
	cat config.Zone
	ctx context.Context
}

func (o consumerOps) add(zc config.Zone) error { return o.rl.addZone(o.ctx, zc) }

func (o consumerOps) remove(origin string, purge bool) error {
	i := slices.IndexFunc(o.rl.added, func(zc config.Zone) bool { return zc.Origin == origin })
	if i < 0 {
		return fmt.Errorf("zone %s: not a member served", origin)
	}
	file := o.rl.added[i].File
	if err := o.rl.removeZone(origin); err != nil {
		return err
	}
	if purge {
		o.rl.purgeMember(origin, file)
		return nil
	}
	o.rl.schedulePurge(origin, pendingPurge{File: file, At: o.rl.clock()().Add(o.cat.Grace())})
	return nil
}

// graceFile is where the deletions of member zones' copies pending
// (catalog-grace) are kept, under server.data-dir, so that a restart
// neither forgets them (the copies left for good) nor does them early.
const graceFile = "catalog-grace.json"

// pendingPurge is a member zone's copy to delete at At, unless the
// member is served again before.
type pendingPurge struct {
	File string    `json:"file"`
	At   time.Time `json:"at"`
}

// clock is the reloader's clock: now, else time.Now.
func (rl *reloader) clock() func() time.Time {
	if rl.now != nil {
		return rl.now
	}
	return time.Now
}

// schedulePurge records that origin's copy is deleted at p.At (a later
// removal's replaces an earlier one), stores the list atomically and
// times the deletion, run on the main loop.
func (rl *reloader) schedulePurge(origin string, p pendingPurge) {
	if rl.purges == nil {
		rl.purges = map[string]pendingPurge{}
	}
	rl.purges[origin] = p
	rl.savePurges()
	rl.timePurge(origin, p.At)
}

// timePurge posts origin's pending deletion to the main loop at at.
func (rl *reloader) timePurge(origin string, at time.Time) {
	time.AfterFunc(at.Sub(rl.clock()()), func() {
		select {
		case rl.loop <- func() { rl.expirePurge(origin) }:
		case <-rl.ctx.Done():
		}
	})
}

// expirePurge deletes origin's copy if its deletion is due: not when
// the member is served again (its deletion was dropped), nor when a
// later removal put it off.
func (rl *reloader) expirePurge(origin string) {
	p, ok := rl.purges[origin]
	if !ok || rl.clock()().Before(p.At) {
		return
	}
	delete(rl.purges, origin)
	rl.savePurges()
	if !slices.ContainsFunc(rl.added, func(zc config.Zone) bool { return zc.Origin == origin }) {
		rl.purgeMember(origin, p.File)
	}
}

// keepMember drops origin's pending deletion: the member is served
// again (its copy in use); a later removal starts a full grace again.
func (rl *reloader) keepMember(origin string) {
	if _, ok := rl.purges[origin]; ok {
		delete(rl.purges, origin)
		rl.savePurges()
	}
}

// savePurges stores the pending deletions, atomically.
func (rl *reloader) savePurges() {
	if err := writeState(rl.running.Server.DataDir, graceFile, rl.purges); err != nil {
		rl.log.Error("catalog: pending deletions of members' copies not stored: a restart forgets them", "err", err)
	}
}

// restorePurges reads the deletions pending at the last stop (at start,
// on the main loop, after the zones added at run time are served
// again): one whose member is served again is dropped, one due is done
// now, the others timed for what is left of their grace.
func (rl *reloader) restorePurges() {
	purges := map[string]pendingPurge{}
	if err := readState(rl.running.Server.DataDir, graceFile, &purges); err != nil {
		rl.log.Error("catalog: pending deletions of members' copies lost", "err", err)
	}
	rl.purges = purges
	for origin, p := range purges {
		switch {
		case slices.ContainsFunc(rl.added, func(zc config.Zone) bool { return zc.Origin == origin }):
			rl.keepMember(origin)
		case !rl.clock()().Before(p.At):
			rl.expirePurge(origin)
		default:
			rl.timePurge(origin, p.At)
		}
	}
}

// owner reports the catalog zone origin is a member of ("" for none)
// and whether origin is served, configured or added at run time: looked
// up in the reloader's zone index, kept up to date by each add and
// removal, rather than in a copy of every zone's settings made for each
// member a catalog version adds or removes.
func (o consumerOps) owner(origin string) (string, bool) {
	if zc := o.rl.zoneIndex().Zone(dns.CanonicalName(origin)); zc != nil {
		return zc.MemberOf, true
	}
	return "", false
}

// purgeMember deletes the stored copy of a member zone that left its
// catalog: the file, its timers and its journal.
func (rl *reloader) purgeMember(origin, file string) {
	for _, f := range []string{file, secondary.TimersPath(file), journal.Path(rl.running.Server.DataDir, origin)} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			rl.log.Warn("catalog: member's data not deleted", "zone", origin, "file", f, "err", err)
		}
	}
	rl.log.Info("catalog: member's data deleted", "zone", origin)
}

// catalogChanged is the zone manager's word that zone origin has a new
// version: for a catalog consumed here, its interpretation is posted
// to the main loop (never waited for: the loop may be waiting for this
// zone's event).
func (rl *reloader) catalogChanged(origin string) {
	if !rl.consumes(origin) {
		return
	}
	go func() {
		select {
		case rl.loop <- func() { rl.consume(rl.ctx, origin) }:
		case <-rl.ctx.Done():
		}
	}()
}

// consumes reports whether origin is a catalog consumed (read on the
// zones' events).
func (rl *reloader) consumes(origin string) bool {
	m := rl.interpret.Load()
	return m != nil && (*m)[dns.CanonicalName(origin)]
}

// setInterpret takes the catalogs consumed from the running config.
func (rl *reloader) setInterpret() {
	m := map[string]bool{}
	for _, zc := range rl.current.Zones {
		if zc.CatalogRole == config.CatalogInterpret {
			m[zc.Origin] = true
		}
	}
	rl.interpret.Store(&m)
}

// memberLimit refuses next, a version of the catalog cat consumed,
// when it lists more members than catalog-max-members: a producer
// cannot make the consumer serve any number of zones.
func memberLimit(cat config.Zone, next *catalog.Catalog) error {
	if n, most := len(next.Members), cat.MaxMembers(); n > most {
		return fmt.Errorf("catalog %s: %d members, more than catalog-max-members = %d", cat.Origin, n, most)
	}
	return nil
}

// consume interprets the version of the catalog origin served (on the
// main loop): its changes against the last version interpreted are
// made and the new state stored. A version catalog.Parse refuses, or
// one over catalog-max-members, changes nothing (logged).
func (rl *reloader) consume(ctx context.Context, origin string) {
	i := slices.IndexFunc(rl.current.Zones, func(zc config.Zone) bool {
		return zc.Origin == origin && zc.CatalogRole == config.CatalogInterpret
	})
	if i < 0 || rl.mgr == nil {
		return
	}
	cat := rl.current.Zones[i]
	z := rl.mgr.Served(origin)
	if z == nil || z.Unavailable {
		return
	}
	rrs, err := zonedb.Records(z)
	var next *catalog.Catalog
	if err == nil {
		next, err = catalog.Parse(origin, rrs)
	}
	if err == nil {
		err = memberLimit(cat, next)
	}
	if err != nil {
		rl.log.Error("catalog: version not interpreted, the members stay as they were", "zone", origin, "serial", z.Serial, "err", err)
		return
	}
	for _, why := range next.Ignored {
		rl.log.Warn("catalog: member entry ignored", "zone", origin, "serial", z.Serial, "why", why)
	}
	changes, failed, err := consumeVersion(cat, rl.consumed[origin], next, consumerOps{rl: rl, cat: cat, ctx: ctx}, rl.consumed)
	for _, c := range changes {
		rl.log.Info("catalog: member "+c.Kind.String(), "zone", origin, "serial", z.Serial, "member", c.Zone)
	}
	if err != nil {
		rl.log.Error("catalog: changes failed", "zone", origin, "serial", z.Serial, "err", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	for _, m := range failed {
		// Not served: the next version tries again.
		delete(next.Members, m)
	}
	rl.consumed[origin] = next
	rl.saveConsumed()
}

// dropConsumed stops serving the members of the catalogs consumed
// that the running config no longer interprets (the catalog zone
// removed, or its catalog-role changed), on the main loop after a
// reload: each removed, its stored copy deleted after the grace period
// the catalog had (the default when it is gone), and its state
// forgotten.
func (rl *reloader) dropConsumed(ctx context.Context) {
	for origin, c := range rl.consumed {
		if rl.consumes(origin) {
			continue
		}
		cat := config.Zone{Origin: origin}
		for _, zc := range rl.current.Zones {
			if zc.Origin == origin {
				cat = zc
			}
		}
		ops := consumerOps{rl: rl, cat: cat, ctx: ctx}
		for m := range c.Members {
			if owner, served := ops.owner(m); !served || owner != origin {
				continue
			}
			if err := ops.remove(m, false); err != nil {
				rl.log.Error("catalog: member not removed", "zone", origin, "member", m, "err", err)
				continue
			}
			rl.log.Info("catalog: member remove (the catalog is no longer consumed)", "zone", origin, "member", m)
		}
		delete(rl.consumed, origin)
		rl.saveConsumed()
	}
}
