package zonedb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/update"
	"github.com/tern-dns/tern/internal/zone"
)

// applyUpdate is a Change making the UPDATE edit builds, at now.
func applyUpdate(t *testing.T, now time.Time, edit func(m *dns.Msg)) Change {
	return func(base *zone.Zone, zc *config.Zone) (*zone.Zone, *zone.Diff, error) {
		m := new(dns.Msg)
		m.SetUpdate(zc.Origin)
		edit(m)
		pkt, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		res, err := update.ParseApply(base, pkt, update.Options{Now: now, Signed: zc.Signing != nil})
		if err != nil {
			return nil, nil, err
		}
		return res.Zone, res.Diff, nil
	}
}

func newRR(t *testing.T, s string) dns.RR {
	t.Helper()
	rr, err := dns.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	return rr
}

// lines renders z's records in presentation form, sorted.
func lines(t *testing.T, z *zone.Zone) []string {
	t.Helper()
	rrs, err := Records(z)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(rrs))
	for i, rr := range rrs {
		out[i] = rr.String()
	}
	slices.Sort(out)
	return out
}

// TestUpdateSigned: a dynamic update of a zone the server signs is made
// to its unsigned content and signed again, the RRsets it did not change
// keeping their signatures (only the new RRset, the NSEC records around
// it and the SOA are signed anew); it is served, journaled (IXFR), and
// survives a restart of the Manager before the zone file is rewritten
// (the update journal replayed over the file, then signed). DNSSEC
// records are the signer's: an update of them is REFUSED.
func TestUpdateSigned(t *testing.T) {
	zc, _ := setup(t)
	zc.ACL = []string{"x"}
	zc.ZonefileSync = config.Duration{Duration: time.Hour}
	data := filepath.Join(t.TempDir(), "data")
	clk := &clock{t: time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)}
	var pub published
	m := New([]config.Zone{zc}, pub.publish, nil, clk.now)
	m.KeepJournals(data, func(*config.Zone) int64 { return 1 << 20 })
	ctx := context.Background()
	if _, err := m.Load(ctx); err != nil {
		t.Fatal(err)
	}
	old := pub.zone(t, "auto.test.")
	clk.add(time.Hour)
	if err := m.Update(ctx, "auto.test.", applyUpdate(t, clk.now(), func(u *dns.Msg) {
		u.Insert([]dns.RR{newRR(t, "mail.auto.test. 3600 A 192.0.2.25")})
	})); err != nil {
		t.Fatal(err)
	}
	z := pub.zone(t, "auto.test.")
	if z.Serial == old.Serial {
		t.Fatalf("serial %d unchanged", z.Serial)
	}
	n := z.Lookup(wireName(t, "mail.auto.test."))
	if n == nil || n.Get(dns.TypeA) == nil || !hasSigs(n.Get(dns.TypeA)) || n.Get(dns.TypeNSEC) == nil {
		t.Fatal("mail.auto.test. A not served signed, with an NSEC")
	}
	// Every signature of old is kept but those of the SOA and of the
	// NSEC RRset whose next name is now mail.
	kept := lines(t, z)
	var resigned []string
	for _, l := range lines(t, old) {
		if strings.Contains(l, "\tRRSIG\t") && !slices.Contains(kept, l) {
			resigned = append(resigned, strings.Fields(l)[4]+" "+strings.Fields(l)[0])
		}
	}
	slices.Sort(resigned)
	if want := []string{"NSEC auto.test.", "SOA auto.test."}; !slices.Equal(resigned, want) {
		t.Errorf("signatures replaced: %q, want %q", resigned, want)
	}
	if d, err := m.Since(wireName(t, "auto.test."), old.Serial); err != nil || d.To != z.Serial {
		t.Errorf("IXFR journal: %v %v", d, err)
	}
	// The signer's records are its own.
	err := m.Update(ctx, "auto.test.", applyUpdate(t, clk.now(), func(u *dns.Msg) {
		u.RemoveRRset([]dns.RR{newRR(t, "auto.test. NSEC www.auto.test. A")})
	}))
	if update.Rcode(err) != dns.RcodeRefused || pub.zone(t, "auto.test.") != z {
		t.Errorf("update of NSEC: %v", err)
	}
	file, _ := os.ReadFile(zc.File)
	if strings.Contains(string(file), "mail") {
		t.Fatal("zone file rewritten before zonefile-sync")
	}
	// A restart: the file lacks the change, the update journal has it.
	var pub2 published
	m2 := New([]config.Zone{zc}, pub2.publish, nil, clk.now)
	m2.KeepJournals(data, func(*config.Zone) int64 { return 1 << 20 })
	if _, err := m2.Load(ctx); err != nil {
		t.Fatal(err)
	}
	z2 := pub2.zone(t, "auto.test.")
	if n := z2.Lookup(wireName(t, "mail.auto.test.")); n == nil || !hasSigs(n.Get(dns.TypeA)) || z2.Serial != z.Serial {
		t.Fatalf("after a restart: mail.auto.test. %v, serial %d want %d", n, z2.Serial, z.Serial)
	}
	// Flushed, the file holds the unsigned content with the change,
	// and the update journal is empty.
	if err := m2.SyncZonefile(ctx, "auto.test."); err != nil {
		t.Fatal(err)
	}
	file, _ = os.ReadFile(zc.File)
	if !strings.Contains(string(file), "mail.auto.test.\t3600\tIN\tA\t192.0.2.25") || strings.Contains(string(file), "RRSIG") {
		t.Errorf("zone file after the flush:\n%s", file)
	}
	if uj, err := m2.updateJournal("auto.test."); err != nil {
		t.Fatal(err)
	} else if _, _, ok := uj.Last(); ok {
		t.Error("update journal not emptied by the flush")
	}
}

// TestUpdateUnsigned: updates in a row, each to the version the last
// made; secondary zones refuse them; a Manager without a journal
// directory refuses them too; a change that fails changes nothing.
func TestUpdateUnsigned(t *testing.T) {
	dir := t.TempDir()
	a, s := filepath.Join(dir, "a.zone"), filepath.Join(dir, "s.zone")
	write(t, a, zoneText("a.test.", 1))
	write(t, s, zoneText("s.test.", 1))
	zones := []config.Zone{
		{Origin: "a.test.", File: a, ACL: []string{"x"}, ZonefileSync: config.Duration{Duration: time.Hour}},
		{Origin: "s.test.", File: s, Primary: []string{"p"}},
		{Origin: "cat.test.", ACL: []string{"x"}},
	}
	ctx := context.Background()
	var pub published
	m := New(zones, pub.publish, nil, nil)
	m.ProduceCatalogs(func(string) []string { return []string{"a.test."} })
	if _, err := m.Load(ctx); err != nil {
		t.Fatal(err)
	}
	add := applyUpdate(t, time.Now(), func(u *dns.Msg) { u.Insert([]dns.RR{newRR(t, "x.a.test. 60 A 192.0.2.1")}) })
	if err := m.Update(ctx, "a.test.", add); !errors.Is(err, ErrNoJournal) {
		t.Errorf("without a journal directory: %v", err)
	}
	m = New(zones, pub.publish, nil, nil)
	m.ProduceCatalogs(func(string) []string { return []string{"a.test."} })
	m.KeepJournals(filepath.Join(dir, "data"), func(*config.Zone) int64 { return 1 << 20 })
	if _, err := m.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Update(ctx, "s.test.", add); !errors.Is(err, ErrSecondary) {
		t.Errorf("secondary: %v", err)
	}
	if err := m.Update(ctx, "cat.test.", add); !errors.Is(err, ErrGenerated) {
		t.Errorf("catalog zone: %v", err)
	}
	if err := m.Update(ctx, "other.test.", add); !errors.Is(err, ErrNoZone) {
		t.Errorf("zone not configured: %v", err)
	}
	for i := range 5 {
		name := "h" + string(rune('0'+i)) + ".a.test."
		if err := m.Update(ctx, "a.test.", applyUpdate(t, time.Now(), func(u *dns.Msg) {
			u.Insert([]dns.RR{newRR(t, name+" 60 A 192.0.2.1")})
		})); err != nil {
			t.Fatal(err)
		}
	}
	z := pub.zone(t, "a.test.")
	if z.Serial != 6 || z.Lookup(wireName(t, "h0.a.test.")) == nil || z.Lookup(wireName(t, "h4.a.test.")) == nil {
		t.Fatalf("after 5 updates: serial %d", z.Serial)
	}
	fail := errors.New("no")
	if err := m.Update(ctx, "a.test.", func(*zone.Zone, *config.Zone) (*zone.Zone, *zone.Diff, error) { return nil, nil, fail }); err != fail || pub.zone(t, "a.test.") != z {
		t.Errorf("a failed change: %v", err)
	}
	// A reload re-reads the file and replays the journal over it: the
	// version served stays.
	if _, err := m.Reload(ctx, zones); err != nil {
		t.Fatal(err)
	}
	if z2 := pub.zone(t, "a.test."); z2.Serial != 6 || z2.Digest() != z.Digest() {
		t.Errorf("after a reload: serial %d", z2.Serial)
	}
}
