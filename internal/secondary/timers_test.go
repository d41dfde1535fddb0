package secondary

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/zone"
	"github.com/tern-dns/tern/internal/zonedb"
)

// waitFor polls cond until it holds, failing the test after a minute (a
// bound on a stuck test, not a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after a minute", what)
		}
	}
}

// TestTimersAcrossRestart: a secondary's timers are stored beside its
// copy, and a restart (a new Manager and Secondaries over the same
// files) serves the copy and refreshes when the stored timers say: not
// before a refresh is due, at once when it fell due while the server
// was down, and a copy whose expiry passed while down is expired at
// once (SERVFAIL), however new its file is. Before, the timers were the
// file's time and every start refreshed at once.
func TestTimersAcrossRestart(t *testing.T) {
	p := &fakePrimary{refresh: 3600}
	p.set(1, "good")
	addr := p.start(t)
	file := filepath.Join(t.TempDir(), "b.test.zone")
	zc := config.Zone{Origin: "b.test.", File: file, Primary: []string{"p"}}
	sz := Zone{Origin: "b.test.", File: file, Primaries: []Primary{{Remote: "p", Addr: addr}}}
	ctx := context.Background()
	start := func() (*zonedb.Manager, *Secondaries) {
		m := zonedb.New([]config.Zone{zc}, func(*zone.Set) {}, nil, nil)
		if _, err := m.Load(ctx); err != nil {
			t.Fatal(err)
		}
		s := New(m, nil, Options{Timeout: 5 * time.Second})
		s.Set([]Zone{sz})
		t.Cleanup(func() { s.Close(); m.Close() })
		return m, s
	}
	serial := func(m *zonedb.Manager) int {
		z := m.Served("b.test.")
		if z == nil || z.Unavailable {
			return -1
		}
		return int(z.Serial)
	}
	queries := func() int { p.mu.Lock(); defer p.mu.Unlock(); return p.queries }

	m, s := start()
	waitFor(t, "the first transfer", func() bool { return serial(m) == 1 })
	var stored Timers
	waitFor(t, "the timers stored", func() bool {
		var err error
		stored, err = readTimers(file)
		return err == nil && !stored.NextRefresh.IsZero()
	})
	if d := stored.NextRefresh.Sub(stored.LastRefresh); d != time.Hour || !stored.Expires.Equal(stored.LastRefresh.Add(time.Hour)) {
		t.Fatalf("stored timers %+v: want the next refresh and the expiry an hour (SOA refresh, expire) after the last", stored)
	}
	s.Close()
	m.Close()

	// Restarted before the refresh is due: served at once, the refresh
	// timed as stored.
	m, s = start()
	if serial(m) != 1 {
		t.Fatalf("restart: serial %d served, want the stored copy's 1", serial(m))
	}
	if got, _ := s.Timers("b.test."); !got.NextRefresh.Equal(stored.NextRefresh) || !got.LastRefresh.Equal(stored.LastRefresh) {
		t.Errorf("restart: timers %+v, want the stored %+v", got, stored)
	}
	s.Close()
	m.Close()

	// The refresh fell due while down: at once.
	now := time.Now()
	before := queries()
	if err := writeTimers(file, Timers{LastRefresh: now.Add(-30 * time.Minute), NextRefresh: now.Add(-time.Minute), Expires: now.Add(30 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	m, s = start()
	waitFor(t, "the refresh due while down", func() bool {
		got, _ := s.Timers("b.test.")
		return queries() > before && got.LastRefresh.After(now)
	})
	s.Close()
	m.Close()

	// Expired while down, the primary gone: SERVFAIL at once, though the
	// copy's file was written just now.
	p.set(1, "down")
	if err := writeTimers(file, Timers{LastRefresh: now.Add(-2 * time.Hour), NextRefresh: now.Add(time.Hour), Expires: now.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(file, now, now); err != nil {
		t.Fatal(err)
	}
	m, _ = start()
	waitFor(t, "the expiry passed while down", func() bool { return serial(m) == -1 })
	waitFor(t, "the timers of an expired zone stored", func() bool {
		got, err := readTimers(file)
		return err == nil && got.LastRefresh.IsZero() && got.Expires.IsZero()
	})
}
