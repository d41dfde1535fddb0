package zonedb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/journal"
	"github.com/tern-dns/tern/internal/zone"
)

// wireName is origin in canonical wire form.
func wireName(t *testing.T, origin string) []byte {
	t.Helper()
	w, err := zone.Placeholder(origin)
	if err != nil {
		t.Fatal(err)
	}
	return w.Origin
}

// TestJournalOnReload: a reload that changes the serial of a zone with
// an ACL records the difference, which Since returns (also across a
// restart of the Manager); a zone without an ACL keeps no journal. Each
// new serial is announced (OnChange), an unchanged one is not.
func TestJournalOnReload(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	a, b := filepath.Join(dir, "a.zone"), filepath.Join(dir, "b.zone")
	write(t, a, zoneText("a.test.", 1)+"www A 192.0.2.7\n")
	write(t, b, zoneText("b.test.", 1))
	zones := []config.Zone{{Origin: "a.test.", File: a, ACL: []string{"x"}}, {Origin: "b.test.", File: b}}
	max := func(*config.Zone) int64 { return 1 << 20 }
	var pub published
	m := New(zones, pub.publish, nil, nil)
	m.KeepJournals(data, max)
	var announced []string
	m.OnChange(func(origin string, z *zone.Zone) { announced = append(announced, fmt.Sprint(origin, z.Serial)) })
	if _, err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	// An IXFR before any change finds no journal and makes none.
	if _, err := m.Since(wireName(t, "a.test."), 1); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("before any change: %v", err)
	}
	if _, err := os.Stat(journal.Path(data, "a.test.")); !os.IsNotExist(err) {
		t.Errorf("an IXFR made a journal file: %v", err)
	}
	write(t, a, zoneText("a.test.", 2)+"www A 192.0.2.8\n")
	write(t, b, zoneText("b.test.", 2))
	for range 2 { // the second time, nothing changed
		if _, err := m.Reload(context.Background(), zones); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"a.test.1", "b.test.1", "a.test.2", "b.test.2"}; !slices.Equal(announced, want) {
		t.Errorf("announced %v, want %v", announced, want)
	}
	d, err := m.Since(wireName(t, "a.test."), 1)
	if err != nil {
		t.Fatal(err)
	}
	if d.From != 1 || d.To != 2 || len(d.Deleted) != 1 || len(d.Added) != 1 {
		t.Errorf("difference %d→%d, %d deleted, %d added", d.From, d.To, len(d.Deleted), len(d.Added))
	}
	if _, err := m.Since(wireName(t, "b.test."), 1); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("b.test. (no acl): %v", err)
	}
	if _, err := os.Stat(journal.Path(data, "b.test.")); !os.IsNotExist(err) {
		t.Errorf("b.test. has a journal file: %v", err)
	}
	// A new Manager (a restart) finds the journal on disk.
	m2 := New(zones, pub.publish, nil, nil)
	m2.KeepJournals(data, max)
	if _, err := m2.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d, err := m2.Since(wireName(t, "a.test."), 1); err != nil || d.To != 2 {
		t.Errorf("after a restart: %v", err)
	}
}

// TestJournalOnResign: each re-signing of a signed zone with an ACL is
// recorded: the replaced signatures deleted, the new ones added.
func TestJournalOnResign(t *testing.T) {
	zc, _ := setup(t)
	zc.ACL = []string{"x"}
	clk := &clock{t: time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)}
	var pub published
	m := New([]config.Zone{zc}, pub.publish, nil, clk.now)
	m.KeepJournals(filepath.Join(t.TempDir(), "data"), func(*config.Zone) int64 { return 1 << 20 })
	if _, err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := pub.zone(t, "auto.test.")
	clk.add(m.Next().Sub(clk.now()) + time.Minute)
	if err := m.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := pub.zone(t, "auto.test.")
	if after.Serial == before.Serial {
		t.Fatal("re-signing kept the serial")
	}
	d, err := m.Since(before.Origin, before.Serial)
	if err != nil {
		t.Fatal(err)
	}
	if d.To != after.Serial || len(d.Deleted) == 0 || len(d.Added) == 0 {
		t.Errorf("difference %d→%d, %d deleted, %d added", d.From, d.To, len(d.Deleted), len(d.Added))
	}
	got, err := d.Apply(before.SortedRecords())
	if err != nil {
		t.Fatal(err)
	}
	if want := after.SortedRecords(); len(got) != len(want) {
		t.Errorf("applied: %d records, want %d", len(got), len(want))
	}
}

// TestJournalAfterEditWhileDown: a zone file edited while the server was
// down, its serial kept, empties the journal at the next start (its
// differences lead to records the zone no longer has); an unchanged file
// keeps it.
func TestJournalAfterEditWhileDown(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	a := filepath.Join(dir, "a.zone")
	write(t, a, zoneText("a.test.", 1)+"www A 192.0.2.7\n")
	zones := []config.Zone{{Origin: "a.test.", File: a, ACL: []string{"x"}}}
	start := func() *Manager {
		var pub published
		m := New(zones, pub.publish, nil, nil)
		m.KeepJournals(data, func(*config.Zone) int64 { return 1 << 20 })
		if _, err := m.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := start()
	write(t, a, zoneText("a.test.", 2)+"www A 192.0.2.8\n")
	if _, err := m.Reload(context.Background(), zones); err != nil {
		t.Fatal(err)
	}
	if _, err := start().Since(wireName(t, "a.test."), 1); err != nil {
		t.Fatalf("restart, file unchanged: %v", err)
	}
	write(t, a, zoneText("a.test.", 2)+"www A 192.0.2.9\n")
	if _, err := start().Since(wireName(t, "a.test."), 1); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("restart, file edited under the same serial: %v, want ErrNotFound", err)
	}
}

// TestNoJournalAfterRemoval: a change whose zone is removed while it is
// being made (an UPDATE's, RemoveZone not waiting for it) is neither
// served nor recorded: its journal is not written (nor opened again) for
// a zone no longer served, whose next addition would find the change
// in it.
func TestNoJournalAfterRemoval(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	a := filepath.Join(dir, "a.zone")
	write(t, a, zoneText("a.test.", 1))
	zones := []config.Zone{{Origin: "a.test.", File: a, ACL: []string{"x"}}}
	var pub published
	m := New(zones, pub.publish, nil, nil)
	t.Cleanup(m.Close)
	m.KeepJournals(data, func(*config.Zone) int64 { return 1 << 20 })
	if _, err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	next, err := zone.Read(strings.NewReader(zoneText("a.test.", 2)), "a.zone", "a.test.")
	if err != nil {
		t.Fatal(err)
	}
	release, applied := heldApply(t, m, "a.test.", next)
	if err := m.RemoveZone("a.test."); err != nil {
		t.Fatal(err)
	}
	release()
	if err := <-applied; !errors.Is(err, ErrNoZone) {
		t.Errorf("Apply across its zone's removal: %v, want the zone gone", err)
	}
	if _, err := os.Stat(journal.Path(data, "a.test.")); !os.IsNotExist(err) {
		t.Errorf("the removed zone's journal was written: %v", err)
	}
}
