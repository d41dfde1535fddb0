package zonedb

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/tern-dns/tern/internal/config"
)

// TestSecondaryReload: a secondary zone without a stored copy is a
// placeholder, not a failure; once it has data, only Install changes it:
// a reload neither re-reads the stored copy nor brings back a zone that
// expired (RFC 1035 §3.3.13: past expire it is not served).
func TestSecondaryReload(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.test.zone")
	zones := []config.Zone{{Origin: "s.test.", File: file, Primary: []string{"p"}}}
	var pub published
	var log logged
	m := New(zones, pub.publish, log.logger(), nil)
	ctx := context.Background()
	if serving, err := m.Load(ctx); serving != 0 || err != nil {
		t.Fatalf("no copy: serving %d, err %v", serving, err)
	}
	expectServed(t, "no copy", &pub, &log, map[string]string{"s.test.": "unavailable"}, [][]string{{"no stored copy yet"}})

	write(t, file, zoneText("s.test.", 1))
	if serving, err := m.Reload(ctx, zones); serving != 1 || err != nil {
		t.Fatalf("reload with a copy: serving %d, err %v", serving, err)
	}
	expectServed(t, "copy", &pub, &log, map[string]string{"s.test.": "serial 1"}, nil)

	if err := m.Expire(ctx, "s.test.", errors.New("expired")); err != nil {
		t.Fatal(err)
	}
	expectServed(t, "expired", &pub, &log, map[string]string{"s.test.": "unavailable"}, nil)
	write(t, file, zoneText("s.test.", 2))
	m.Reload(ctx, zones)
	m.ReloadZone(ctx, "s.test.")
	expectServed(t, "expired, reloaded", &pub, &log, map[string]string{"s.test.": "unavailable"}, nil)
}
