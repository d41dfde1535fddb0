package zonedb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/zone"
)

// TestReloadZone: ReloadZone re-reads one zone and leaves the others;
// States shows each zone's serial, load time and last failure (file:line),
// a failed zone keeping the version it served; an unknown zone is
// ErrNoZone.
func TestReloadZone(t *testing.T) {
	dir := t.TempDir()
	write := func(origin string, serial int, broken bool) string {
		t.Helper()
		file := filepath.Join(dir, origin+"zone")
		text := fmt.Sprintf("$ORIGIN %s\n$TTL 300\n@ SOA ns1 h %d 7200 3600 1209600 300\n@ NS ns1\n", origin, serial)
		if broken {
			text += "ns1 A 192.0.2.300\n"
		} else {
			text += "ns1 A 192.0.2.1\n"
		}
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	zones := []config.Zone{{Origin: "a.test.", File: write("a.test.", 1, false)}, {Origin: "b.test.", File: write("b.test.", 1, false)}}
	var p published
	c := &clock{t: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	m := New(zones, p.publish, nil, c.now)
	var announced []string
	m.OnChange(func(origin string, z *zone.Zone) { announced = append(announced, fmt.Sprint(origin, z.Serial)) })
	if _, err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	start := c.now()
	c.add(time.Hour)
	write("a.test.", 2, false)
	write("b.test.", 2, false)
	s, err := m.ReloadZone(context.Background(), "A.test")
	if err != nil || s.Origin != "a.test." || s.Zone.Serial != 2 || !s.Loaded.Equal(c.now()) || s.Err != nil {
		t.Fatalf("ReloadZone: %+v %v", s, err)
	}
	if got := p.zone(t, "b.test.").Serial; got != 1 {
		t.Errorf("b.test. reloaded with a.test.: serial %d", got)
	}
	if got := p.zone(t, "a.test.").Serial; got != 2 {
		t.Errorf("a.test. published serial %d, want 2", got)
	}
	if got := strings.Join(announced, " "); got != "a.test.1 b.test.1 a.test.2" {
		t.Errorf("announced %q", got)
	}

	c.add(time.Hour)
	write("a.test.", 3, true)
	s, err = m.ReloadZone(context.Background(), "a.test.")
	want := "zone a.test.: " + zones[0].File + ":5"
	if err == nil || !strings.Contains(err.Error(), want) || s.Zone.Serial != 2 || s.Err == nil || !s.Loaded.Equal(start.Add(time.Hour)) {
		t.Fatalf("ReloadZone of a broken file: %+v %v, want the old serial 2 kept and %q", s, err, want)
	}
	if got := p.zone(t, "a.test.").Serial; got != 2 {
		t.Errorf("a.test. after a failed reload: serial %d, want 2", got)
	}
	states := m.States()
	if len(states) != 2 || states[0].Origin != "a.test." || states[0].Err == nil || states[1].Origin != "b.test." || states[1].Err != nil || !states[1].Loaded.Equal(start) {
		t.Errorf("States: %+v", states)
	}
	if _, err := m.ReloadZone(context.Background(), "c.test."); !errors.Is(err, ErrNoZone) {
		t.Errorf("ReloadZone of an unknown zone: %v", err)
	}
}
