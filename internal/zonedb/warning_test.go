package zonedb

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tern-dns/tern/internal/config"
)

// TestWarningsLogged: a zone with an out-of-zone record is served, and
// the server logs the warning with zone, file and line; a reload that
// lowers the serial is logged too.
func TestWarningsLogged(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "w.test.zone")
	write := func(serial string) {
		t.Helper()
		text := "$ORIGIN w.test.\n$TTL 300\n@ SOA ns h " + serial + " 2 3 4 60\n@ NS ns\nns A 192.0.2.1\nwww.other.test. A 192.0.2.9\n"
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("5")
	var log logged
	pub := &published{}
	zones := []config.Zone{{Origin: "w.test.", File: file}}
	m := New(zones, pub.publish, log.logger(), time.Now)
	if _, err := m.Load(context.Background()); err != nil {
		t.Fatalf("the zone is refused: %v", err)
	}
	pub.zone(t, "w.test.")
	want := []string{"level=WARN", `msg="www.other.test. is outside the zone w.test.: record ignored"`,
		"zone=w.test.", "file=" + file, "line=6"}
	if !log.has(want...) {
		t.Errorf("no log line with %q in\n%s", want, log.String())
	}
	write("4")
	if _, err := m.Reload(context.Background(), zones); err != nil {
		t.Fatal(err)
	}
	want = []string{"level=WARN", `msg="the SOA serial went down from 5 to 4 (RFC 1982): secondaries and caches keep the old version"`,
		"zone=w.test.", "file=" + file, "line=3"}
	if !log.has(want...) {
		t.Errorf("no log line with %q in\n%s", want, log.String())
	}
}
