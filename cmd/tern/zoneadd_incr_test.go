package main

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"testing"

	"github.com/tern-dns/tern/internal/config"
)

// TestZoneAddIncremental: after each of a run of adds and removals,
// what addZone and removeZone changed for their zone alone (applyZone,
// setMember) is what the rebuilds from every zone (newAccess,
// setTargets, allMembers: apply and setCatalogs at a reload) make of
// the same zones: each zone's ACL, NOTIFY targets, and the catalogs'
// members, a catalog left without members included.
func TestZoneAddIncremental(t *testing.T) {
	dir := t.TempDir()
	file := anyZone(t, dir)
	text := incrConfig(file)
	rl := testReloader(t, dir, text)
	ctx := context.Background()
	check := func(step string) {
		t.Helper()
		checkIncremental(t, rl, step)
	}
	check("start")
	steps := []struct {
		name   string
		add    *config.Zone
		remove string
	}{
		{name: "add a member", add: &config.Zone{Origin: "a1.test.", File: file, ACL: []string{"xfr"}, Notify: []string{"sec"}, Catalog: "catalog.test."}},
		{name: "add a second member", add: &config.Zone{Origin: "a2.test.", File: file, ACL: []string{"clients"}, Notify: []string{"sec2", "sec"}, Catalog: "cat2.test."}},
		{name: "add a plain zone", add: &config.Zone{Origin: "A3.test", File: file}},
		{name: "remove a member", remove: "a1.test."},
		{name: "remove a configured member", remove: "z0.test."},
		{name: "remove an added member", remove: "a2.test."},
		{name: "remove the last member, configured", remove: "z2.test."},
		{name: "remove a configured catalog", remove: "cat2.test."},
		{name: "add to a removed catalog", add: &config.Zone{Origin: "a4.test.", File: file, ACL: []string{"clients"}, Catalog: "cat2.test."}},
		{name: "remove a plain zone", remove: "a3.test."},
		{name: "add one removed again", add: &config.Zone{Origin: "a1.test.", File: file, Notify: []string{"sec2"}, Catalog: "catalog.test."}},
		{name: "remove a removed catalog's last member", remove: "a4.test."},
	}
	for _, s := range steps {
		var err error
		if s.add != nil {
			err = rl.addZone(ctx, *s.add)
		} else {
			err = rl.removeZone(s.remove)
		}
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		check(s.name)
	}
	// The run went through what it is meant to: zones with ACLs,
	// targets and catalogs (a check of nothing would pass).
	if l, _ := rl.access.ACLs.Get("a4.test."); len(l) != 0 {
		t.Errorf("a4.test.'s ACL after its removal: %v", l)
	}
	if ts, _ := rl.notify.targets.Load().Get("a1.test."); len(ts) != 2 {
		t.Errorf("a1.test.'s NOTIFY targets: %v, want sec2's two", ts)
	}
	if ms := (*rl.catalogs.Load())["catalog.test."]; !reflect.DeepEqual(ms, []string{"a1.test.", "z1.test."}) {
		t.Errorf("catalog.test.'s members: %q", ms)
	}
}

// incrConfig is the configuration of TestZoneAddIncremental, its
// zones' file file: two catalogs produced here, zones with ACLs and
// NOTIFY lists, members of them.
func incrConfig(file string) string {
	return xfrACL + fmt.Sprintf(`[[acl]]
name = "clients"
address = ["192.0.2.0/24"]
action = ["query"]
[[remote]]
name = "sec"
address = ["127.0.0.1:5399"]
[[remote]]
name = "sec2"
address = ["127.0.0.1:5398", "[::1]:5398"]
[[zone]]
origin = "catalog.test."
[[zone]]
origin = "cat2.test."
[[zone]]
origin = "z0.test."
file = %[1]q
acl = ["xfr"]
notify = ["sec"]
catalog = "catalog.test."
[[zone]]
origin = "z1.test."
file = %[1]q
acl = ["clients", "xfr"]
catalog = "catalog.test."
[[zone]]
origin = "z2.test."
file = %[1]q
notify = ["sec2"]
catalog = "cat2.test."
`, file)
}

// checkIncremental: what addZone and removeZone changed for their zone
// alone is what the rebuilds from every zone make (TestZoneAddIncremental).
func checkIncremental(t *testing.T, rl *reloader, step string) {
	t.Helper()
	eff := rl.effective(rl.current)
	want, err := newAccess(eff)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := maps.Collect(rl.access.ACLs.All()), maps.Collect(want.ACLs.All()); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: ACLs\n got %v\nwant %v", step, got, want)
	}
	full := &notifying{}
	full.setTargets(eff, want.Keys)
	if got, want := maps.Collect(rl.notify.targets.Load().All()), maps.Collect(full.targets.Load().All()); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: NOTIFY targets\n got %v\nwant %v", step, got, want)
	}
	if got, want := *rl.catalogs.Load(), rl.allMembers(); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: catalogs' members\n got %q\nwant %q", step, got, want)
	}
}

// TestRestoreConfigured: a zone added at run time that the
// configuration names by the next start (the operator moved it into
// the file while the server was stopped) is the configuration's from
// the start, as after a reload (forgetConfigured): not tried as an add,
// gone from zones-added.json, and a zone-remove of it is a configured
// zone's (its rules stay until the next reload, it leaves its catalog),
// not an added one's. Before, it stayed in the added list until a
// reload: zone-remove dropped its ACL and NOTIFY list (applyZone), left
// it in the catalog produced here, and zones-added.json kept it.
func TestRestoreConfigured(t *testing.T) {
	rl, file := startedReloader(t)
	ctx := context.Background()
	rl.restoreAdded(ctx, []config.Zone{
		{Origin: "z0.test.", File: file},
		{Origin: "added.test.", File: file, Catalog: "catalog.test."},
	})
	rl.reloadCatalogs(ctx)
	checkIncremental(t, rl, "restored")
	stored, err := readAdded(rl.running.Server.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	var origins []string
	for _, zc := range stored {
		origins = append(origins, zc.Origin)
	}
	if !reflect.DeepEqual(origins, []string{"added.test."}) {
		t.Errorf("zones-added.json after the start: %q, want added.test. alone", origins)
	}
	if err := rl.removeZone("z0.test."); err != nil {
		t.Fatal(err)
	}
	checkIncremental(t, rl, "configured zone removed")
	if l, _ := rl.access.ACLs.Get("z0.test."); len(l) == 0 {
		t.Error("z0.test.'s ACL dropped by its removal: a configured zone's rules stay until the next reload")
	}
	if !rl.removed["z0.test."] {
		t.Error("z0.test. not removed as a configured zone (out of its catalog until the next reload)")
	}
	if ms := (*rl.catalogs.Load())["catalog.test."]; !reflect.DeepEqual(ms, []string{"added.test.", "z1.test."}) {
		t.Errorf("catalog.test.'s members after z0.test.'s removal: %q", ms)
	}
}

// TestRestoreTwice: a zones-added.json that names a zone twice (written
// by hand, or by an older version) restores it once: the second entry is
// dropped from the list, not kept beside the first as a failed add
// (which a zone-remove would then leave behind).
func TestRestoreTwice(t *testing.T) {
	rl, file := startedReloader(t)
	ctx := context.Background()
	rl.restoreAdded(ctx, []config.Zone{
		{Origin: "added.test.", File: file},
		{Origin: "added.test.", File: file},
	})
	checkIncremental(t, rl, "restored")
	stored, err := readAdded(rl.running.Server.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 1 || len(rl.added) != 1 {
		t.Fatalf("a zone named twice: %d in zones-added.json, %d added, want 1 and 1", len(stored), len(rl.added))
	}
	if err := rl.removeZone("added.test."); err != nil {
		t.Fatal(err)
	}
	if len(rl.added) != 0 {
		t.Errorf("after zone-remove %d added zones left, want none", len(rl.added))
	}
}

// startedReloader is a reloader over incrConfig with its zones loaded,
// as at a start before the zones added at run time are restored; file
// is a zone file any origin can be served from.
func startedReloader(t *testing.T) (*reloader, string) {
	t.Helper()
	dir := t.TempDir()
	file := anyZone(t, dir)
	rl := testReloader(t, dir, incrConfig(file))
	if _, err := rl.mgr.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rl, file
}
