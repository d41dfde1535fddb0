package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/catalog"
	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/notify"
	"github.com/tern-dns/tern/internal/zone"
)

// anyZone writes into dir a zone file without $ORIGIN, that any
// origin can be added with, and returns its path.
func anyZone(tb testing.TB, dir string) string {
	tb.Helper()
	file := filepath.Join(dir, "any.zone")
	if err := os.WriteFile(file, []byte("$TTL 300\n@ SOA ns1 host 1 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	return file
}

// testReloader returns the reloader of the configuration text (the
// file dir/tern.toml, data-dir dir/data), its zone manager running but
// its zones not loaded: what zone-add checks and changes, without
// listeners.
func testReloader(tb testing.TB, dir, text string) *reloader {
	tb.Helper()
	text = fmt.Sprintf("[server]\ndata-dir = %q\ncontrol = \"\"\n", filepath.Join(dir, "data")) + text
	cfg, err := config.Parse(filepath.Join(dir, "tern.toml"), []byte(text))
	if err != nil {
		tb.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	rl := &reloader{ctx: ctx, current: cfg, running: cfg, log: log,
		publish: func(*zone.Set) {}, setAccess: func(*auth.Access) {}, setJournals: func(auth.Journals) {},
		onNotify: func(func(string)) {}, onUpdate: func(func(*auth.UpdateRequest) int) {},
		notify: &notifying{n: notify.New(log, notify.Options{})},
		loop:   make(chan func()), consumed: map[string]*catalog.Catalog{}, removed: map[string]bool{}}
	tb.Cleanup(rl.notify.n.Close)
	tb.Cleanup(rl.closeSecondaries)
	access, err := newAccess(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	rl.access = access
	rl.notify.setTargets(cfg, access.Keys)
	rl.mgr = rl.newManager(cfg)
	go rl.mgr.Run(ctx)
	tb.Cleanup(rl.mgr.Close)
	return rl
}

// xfrACL is the configuration text of an ACL named xfr: transfers from
// loopback.
const xfrACL = `[[acl]]
name = "xfr"
address = ["127.0.0.0/8"]
action = ["transfer"]
`

// benchReloader returns a reloader of a configuration of n [[zone]]
// tables, each with an ACL and a notify list, half of them members of
// a catalog produced here, and a zone file any origin can be added
// with.
func benchReloader(tb testing.TB, n int) (*reloader, string) {
	tb.Helper()
	dir := tb.TempDir()
	file := anyZone(tb, dir)
	var text strings.Builder
	text.WriteString(xfrACL + "[[remote]]\nname = \"sec\"\naddress = [\"127.0.0.1:5399\"]\n")
	text.WriteString("[[zone]]\norigin = \"catalog.test.\"\n")
	for i := range n {
		fmt.Fprintf(&text, "[[zone]]\norigin = \"z%d.test.\"\nfile = %q\nacl = [\"xfr\"]\nnotify = [\"sec\"]\n", i, file)
		if i%2 == 0 {
			text.WriteString("catalog = \"catalog.test.\"\n")
		}
	}
	return testReloader(tb, dir, text.String()), file
}

// cpuTime is the process's CPU time so far (user and system, all its
// threads: the garbage collector's work too).
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkZoneAdd: tern ctl zone-add's work in the reloader (checks,
// access rules, NOTIFY targets, catalogs, the zone's load and the list
// kept in data-dir) beside 1,000, 10,000 and 100,000 configured zones
// (the cost of an add should not grow with them), each
// with an ACL and a notify list, half of them members of a catalog
// produced here; every add names the ACL, the remote and the catalog.
// ms/add (wall time) and cpu-ms/add (the process's CPU time, the
// collector's included) are reported: on a shared machine, compare runs
// made side by side.
func BenchmarkZoneAdd(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("zones=%d", n), func(b *testing.B) {
			rl, file := benchReloader(b, n)
			i := 0
			start, cpu := time.Now(), cpuTime(b)
			for b.Loop() {
				zc := config.Zone{Origin: fmt.Sprintf("added%d.test.", i), File: file, ACL: []string{"xfr"}, Notify: []string{"sec"}, Catalog: "catalog.test."}
				if err := rl.addZone(context.Background(), zc); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(i), "ms/add")
			b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/1000/float64(i), "cpu-ms/add")
		})
	}
}

// TestZoneAddChecks: each invalid zone-add is refused with the messages
// (file:line, key) that config.Validate gives for the configuration
// with the zone added, which is the oracle here, and changes nothing
// served; the checks look at the zone added and at what it can conflict
// with only. A configured zone left naming a catalog that a reload
// dropped (an added one: a reload checks the configuration, not the
// zones added) does not make every later add fail, as the whole
// configuration's validation did.
func TestZoneAddChecks(t *testing.T) {
	dir := t.TempDir()
	file := anyZone(t, dir)
	text := xfrACL + fmt.Sprintf(`[[remote]]
name = "pri"
address = ["127.0.0.1:5399"]
[[zone]]
origin = "catalog.test."
[[zone]]
origin = "member.test."
file = %[1]q
catalog = "catalog.test."
[[zone]]
origin = "plain.test."
file = %[1]q
[[zone]]
origin = "consumed.test."
primary = ["pri"]
catalog-role = "interpret"
`, file)
	rl := testReloader(t, dir, text)
	ctx := context.Background()
	if err := rl.addZone(ctx, config.Zone{Origin: "added.test.", File: file, ACL: []string{"xfr"}}); err != nil {
		t.Fatal(err)
	}
	served := func() []string {
		var out []string
		for _, s := range rl.mgr.States() {
			out = append(out, s.Origin)
		}
		return append(out, fmt.Sprint(len(rl.added), *rl.catalogs.Load()))
	}
	before := served()
	for _, tc := range []struct {
		name string
		zc   config.Zone
		want string // in the message
	}{
		{"acl", config.Zone{Origin: "a.test.", File: file, ACL: []string{"xfr", "nope"}}, `acl "nope" is not defined`},
		{"notify", config.Zone{Origin: "a.test.", File: file, Notify: []string{"nope"}}, `remote "nope" is not defined`},
		{"primary", config.Zone{Origin: "a.test.", Primary: []string{"pri", "nope"}}, `remote "nope" is not defined`},
		{"catalog missing", config.Zone{Origin: "a.test.", File: file, Catalog: "nowhere.test."}, `catalog "nowhere.test." is not a [[zone]]`},
		{"catalog a member", config.Zone{Origin: "a.test.", File: file, Catalog: "member.test."}, `is itself a member of catalog "catalog.test."`},
		{"catalog consumed", config.Zone{Origin: "a.test.", File: file, Catalog: "consumed.test."}, `zone "consumed.test.": a catalog consumed`},
		{"catalog with a file", config.Zone{Origin: "a.test.", File: file, Catalog: "plain.test."}, `zone "plain.test.": a catalog zone Tern produces has no file`},
		{"catalog added", config.Zone{Origin: "a.test.", File: file, Catalog: "added.test."}, `zone "added.test.": a catalog zone Tern produces has no file`},
		{"catalog itself", config.Zone{Origin: "a.test.", File: file, Catalog: "a.test."}, `catalog "a.test." is the zone itself`},
		{"origin", config.Zone{Origin: "a..test.", File: file}, "invalid origin name"},
		{"several", config.Zone{Origin: "a.test.", File: file, ACL: []string{"nope"}, Notify: []string{"nope"}, JournalMaxSize: "1KiB", SerialPolicy: "odd"}, `journal-max-size: "1KiB" is less than 4KiB`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zc := tc.zc
			zc.Origin = dns.CanonicalName(zc.Origin)
			if zc.Secondary() {
				zc.File = secondaryFile(rl.running.Server.DataDir, zc.Origin, "")
			}
			eff := rl.effective(rl.current)
			eff.Zones = append(eff.Zones, zc)
			oracle := eff.Validate()
			if oracle == nil || !strings.Contains(oracle.Error(), tc.want) {
				t.Fatalf("the configuration with the zone: %v, want %q", oracle, tc.want)
			}
			err := rl.addZone(ctx, tc.zc)
			if want := "zone " + zc.Origin + ": " + oracle.Error(); err == nil || err.Error() != want {
				t.Errorf("zone-add:\n%v\nwant\n%s", err, want)
			}
			if got := served(); !slices.Equal(got, before) {
				t.Errorf("served after a refused add: %q, want %q", got, before)
			}
		})
	}
	for _, origin := range []string{"added.test.", "plain.test."} {
		if err := rl.addZone(ctx, config.Zone{Origin: origin, File: file}); err == nil || err.Error() != "zone "+origin+": served already" {
			t.Errorf("zone-add %s: %v, want served already", origin, err)
		}
	}

	// catalog.test. dropped by a reload, member.test. added still names
	// it; an add beside it is not refused for it.
	if err := rl.removeZone("member.test."); err != nil {
		t.Fatal(err)
	}
	if err := rl.addZone(ctx, config.Zone{Origin: "member2.test.", File: file, Catalog: "catalog.test."}); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(rl.current.Path, []byte(fmt.Sprintf("[server]\ndata-dir = %q\ncontrol = \"\"\n[[acl]]\nname = \"xfr\"\naddress = [\"127.0.0.0/8\"]\naction = [\"transfer\"]\n[[zone]]\norigin = \"plain.test.\"\nfile = %q\n", rl.running.Server.DataDir, file)))
	if err != nil {
		t.Fatal(err)
	}
	rl.current = cfg
	rl.forgetConfigured(cfg)
	if err := rl.addZone(ctx, config.Zone{Origin: "later.test.", File: file}); err != nil {
		t.Errorf("zone-add beside an added zone whose catalog a reload dropped: %v", err)
	}
}

// TestCatalogGraceRestart: a consumed catalog's member removed keeps its
// stored copy for catalog-grace across restarts: the pending deletion is
// kept in data-dir (catalog-grace.json) and reloaded at start; a restart
// before it is due keeps the copy, one after deletes it at once. A
// member served again before its grace ends drops the deletion.
func TestCatalogGraceRestart(t *testing.T) {
	dir := t.TempDir()
	text := "[[remote]]\nname = \"pri\"\naddress = [\"127.0.1.104:5399\"]\n[[zone]]\norigin = \"cat.test.\"\nprimary = [\"pri\"]\ncatalog-role = \"interpret\"\ncatalog-grace = \"1h\"\n"
	removedAt := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	start := func(now time.Time) *reloader {
		rl := testReloader(t, dir, text)
		rl.now = func() time.Time { return now }
		rl.added, _ = readAdded(rl.running.Server.DataDir)
		rl.restorePurges()
		return rl
	}
	member := func(rl *reloader, origin string) string {
		file := filepath.Join(dir, origin+"zone")
		if err := os.WriteFile(file, []byte("$TTL 300\n@ SOA ns1 host 1 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := rl.addZone(context.Background(), config.Zone{Origin: origin, File: file, MemberOf: "cat.test."}); err != nil {
			t.Fatal(err)
		}
		return file
	}
	rl := start(removedAt)
	cat := rl.current.Zones[0]
	gone, back := member(rl, "gone.test."), member(rl, "back.test.")
	for _, origin := range []string{"gone.test.", "back.test."} {
		if err := (consumerOps{rl: rl, cat: cat, ctx: context.Background()}).remove(origin, false); err != nil {
			t.Fatal(err)
		}
	}
	// back.test. comes back into its catalog before its grace ends.
	member(rl, "back.test.")

	exists := func(f string) bool { _, err := os.Stat(f); return err == nil }
	rl = start(removedAt.Add(30 * time.Minute))
	if !exists(gone) || !exists(back) {
		t.Fatalf("restart within the grace: copies %v %v, want both kept", exists(gone), exists(back))
	}
	if _, ok := rl.purges["gone.test."]; !ok || len(rl.purges) != 1 {
		t.Errorf("restart within the grace: pending %v, want gone.test. only", rl.purges)
	}
	rl = start(removedAt.Add(2 * time.Hour))
	if exists(gone) || !exists(back) {
		t.Errorf("restart after the grace: copies %v %v, want gone.test.'s deleted, back.test.'s kept", exists(gone), exists(back))
	}
	if len(rl.purges) != 0 {
		t.Errorf("restart after the grace: pending %v, want none", rl.purges)
	}
}
