package zonedb

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/zone"
)

// zoneText is a small zone file for origin with the given serial.
func zoneText(origin string, serial int) string {
	return fmt.Sprintf("$ORIGIN %s\n$TTL 300\n@ SOA ns1 hostmaster %d 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\n", origin, serial)
}

// brokenText is a zone file whose line 4 does not parse.
func brokenText(origin string) string {
	return fmt.Sprintf("$ORIGIN %s\n$TTL 300\n@ SOA ns1 hostmaster 9 7200 3600 1209600 300\nbad A 1.2.3\n", origin)
}

func write(t *testing.T, file, text string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// logged is a Manager's log, read back by the tests.
type logged struct{ bytes.Buffer }

func (l *logged) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// has reports whether one line of the log holds every part.
func (l *logged) has(parts ...string) bool {
	for _, line := range strings.Split(l.String(), "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return true
		}
	}
	return false
}

// state is what a published set serves for origin: "serial N",
// "unavailable" or "absent".
func state(t *testing.T, p *published, origin string) string {
	t.Helper()
	z, err := zone.Placeholder(origin)
	if err != nil {
		t.Fatal(err)
	}
	got := p.set.Get(z.Origin)
	switch {
	case got == nil:
		return "absent"
	case got.Unavailable:
		return "unavailable"
	default:
		return fmt.Sprintf("serial %d", got.Serial)
	}
}

// expectServed checks what p serves for each origin (see state) and that
// log has a line with each list of parts.
func expectServed(t *testing.T, when string, p *published, log *logged, want map[string]string, lines [][]string) {
	t.Helper()
	for origin, w := range want {
		if got := state(t, p, origin); got != w {
			t.Errorf("%s, %s: %s, want %s", when, origin, got, w)
		}
	}
	for _, parts := range lines {
		if !log.has(parts...) {
			t.Errorf("%s: log lacks a line with %q:\n%s", when, parts, log.String())
		}
	}
}

// TestPartialLoad: one missing and one broken zone file do not stop the
// others at start; each failed zone is a placeholder (answered SERVFAIL)
// and its file:line is logged. A reload swaps in each zone that loads and
// keeps each failed one's previous version.
func TestPartialLoad(t *testing.T) {
	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }
	write(t, file("good.zone"), zoneText("good.test.", 1))
	write(t, file("broken.zone"), brokenText("broken.test."))
	zones := []config.Zone{
		{Origin: "good.test.", File: file("good.zone")},
		{Origin: "missing.test.", File: file("missing.zone")},
		{Origin: "Broken.Test", File: file("broken.zone")}, // as a --zone flag may spell it
	}
	var pub published
	var log logged
	m := New(zones, pub.publish, log.logger(), nil)

	n, err := m.Load(context.Background())
	if n != 1 || err == nil || !strings.Contains(err.Error(), "missing.zone") || !strings.Contains(err.Error(), "broken.zone:4") {
		t.Fatalf("Load: %d serving, error %v; want 1 and both files named", n, err)
	}
	expectServed(t, "after Load", &pub, &log,
		map[string]string{"good.test.": "serial 1", "missing.test.": "unavailable", "broken.test.": "unavailable"},
		[][]string{
			{"loaded serial 1", "zone=good.test.", "took="},
			{"not loaded: ", "missing.zone", "zone=missing.test."},
			{"not loaded: ", "broken.zone:4", "zone=broken.test."},
		})

	// The broken file is fixed, the good one breaks, the missing one
	// stays missing.
	write(t, file("broken.zone"), zoneText("broken.test.", 7))
	write(t, file("good.zone"), brokenText("good.test."))
	log.Reset()
	n, err = m.Reload(context.Background(), zones)
	if n != 2 || err == nil || !strings.Contains(err.Error(), "good.zone:4") {
		t.Fatalf("Reload: %d serving, error %v; want 2 and good.zone:4", n, err)
	}
	expectServed(t, "after Reload", &pub, &log,
		map[string]string{"good.test.": "serial 1", "missing.test.": "unavailable", "broken.test.": "serial 7"},
		[][]string{
			{"kept serial 1: ", "good.zone:4", "zone=good.test."},
			{"not loaded: ", "missing.zone", "zone=missing.test."},
			{"loaded serial 7", "zone=broken.test."},
		})

	t.Logf("log of the reload:\n%s", log.String())

	// Nothing at all loads: Load says so (serving 0).
	var pub2 published
	m2 := New(zones[1:2], pub2.publish, nil, nil)
	if n, err := m2.Load(context.Background()); n != 0 || err == nil {
		t.Errorf("Load of only a missing file: %d serving, error %v", n, err)
	}
}

// TestReloadConfig: a reload with a changed zone list serves the zones
// added, stops the zones removed and applies changed files; a zone whose
// new file fails keeps its old version.
func TestReloadConfig(t *testing.T) {
	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }
	write(t, file("a.zone"), zoneText("a.test.", 1))
	write(t, file("a2.zone"), zoneText("a.test.", 2))
	write(t, file("b.zone"), zoneText("b.test.", 1))
	write(t, file("c.zone"), zoneText("c.test.", 1))
	var pub published
	var log logged
	m := New([]config.Zone{{Origin: "a.test.", File: file("a.zone")}, {Origin: "b.test.", File: file("b.zone")}}, pub.publish, log.logger(), nil)
	if n, err := m.Load(context.Background()); n != 2 || err != nil {
		t.Fatalf("Load: %d, %v", n, err)
	}
	for _, step := range []struct {
		name  string
		zones []config.Zone
		want  map[string]string
	}{
		{"a's file changed, b removed, c added",
			[]config.Zone{{Origin: "a.test.", File: file("a2.zone")}, {Origin: "c.test.", File: file("c.zone")}},
			map[string]string{"a.test.": "serial 2", "b.test.": "absent", "c.test.": "serial 1"}},
		{"a's new file is missing: a keeps serial 2",
			[]config.Zone{{Origin: "a.test.", File: file("none.zone")}, {Origin: "c.test.", File: file("c.zone")}},
			map[string]string{"a.test.": "serial 2", "b.test.": "absent", "c.test.": "serial 1"}},
		{"everything removed",
			nil,
			map[string]string{"a.test.": "absent", "b.test.": "absent", "c.test.": "absent"}},
	} {
		m.Reload(context.Background(), step.zones)
		for origin, want := range step.want {
			if got := state(t, &pub, origin); got != want {
				t.Errorf("%s: %s: %s, want %s", step.name, origin, got, want)
			}
		}
		if pub.set.Len() != len(step.zones) {
			t.Errorf("%s: %d zones published, want %d", step.name, pub.set.Len(), len(step.zones))
		}
	}
	if !log.has("removed", "zone=b.test.") {
		t.Errorf("no removal logged:\n%s", log.String())
	}
}

// TestReloadSigningSettings: a changed signing policy applies on reload
// (NSEC to NSEC3), and a zone whose signing is removed is served
// unsigned and no longer maintained.
func TestReloadSigningSettings(t *testing.T) {
	zc, _ := setup(t)
	var pub published
	m := New([]config.Zone{zc}, pub.publish, nil, nil)
	if _, err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if z := pub.zone(t, "auto.test."); !z.Signed || z.NSEC3 != nil {
		t.Fatal("not signed with NSEC")
	}
	nsec3 := zc
	sg := *zc.Signing
	sg.NSEC3 = true
	nsec3.Signing = &sg
	if _, err := m.Reload(context.Background(), []config.Zone{nsec3}); err != nil {
		t.Fatal(err)
	}
	if z := pub.zone(t, "auto.test."); !z.Signed || z.NSEC3 == nil {
		t.Error("signing: nsec3 = true did not apply on reload")
	}
	unsigned := zc
	unsigned.Signing = nil
	if _, err := m.Reload(context.Background(), []config.Zone{unsigned}); err != nil {
		t.Fatal(err)
	}
	if z := pub.zone(t, "auto.test."); z.Signed {
		t.Error("signing removed, zone still served signed")
	}
	if !m.Next().IsZero() {
		t.Error("signing removed, zone still scheduled for re-signing")
	}
}
