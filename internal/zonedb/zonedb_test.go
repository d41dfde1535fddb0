package zonedb

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/zone"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// published keeps the last set a Manager published.
type published struct{ set *zone.Set }

func (p *published) publish(s *zone.Set) { p.set = s }

func (p *published) zone(t *testing.T, origin string) *zone.Zone {
	t.Helper()
	w := make([]byte, 0, 64)
	for _, l := range dns.SplitDomainName(origin) {
		w = append(w, byte(len(l)))
		w = append(w, l...)
	}
	w = append(w, 0)
	z := p.set.Get(w)
	if z == nil {
		t.Fatalf("%s not published", origin)
	}
	return z
}

func setup(t *testing.T) (config.Zone, string) {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile("testdata/auto.test.zone")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "auto.test.zone")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(dir, "keys")
	return config.Zone{Origin: "auto.test.", File: file, Signing: &config.Signing{
		KeyDir:            keys,
		SignatureValidity: config.Duration{Duration: 10 * 24 * time.Hour},
		SignatureRefresh:  config.Duration{Duration: 3 * 24 * time.Hour},
	}}, keys
}

func dnskeyTags(t *testing.T, z *zone.Zone) []uint16 {
	t.Helper()
	set := z.Apex.Get(dns.TypeDNSKEY)
	if set == nil {
		t.Fatal("no DNSKEY at the apex")
	}
	var tags []uint16
	set.Each(func(tail []byte) {
		buf := append([]byte{0}, tail...) // root owner + tail
		rr, _, err := dns.UnpackRR(buf, 0)
		if err != nil {
			t.Fatal(err)
		}
		tags = append(tags, rr.(*dns.DNSKEY).KeyTag())
	})
	return tags
}

func TestAutoSign(t *testing.T) {
	zc, keys := setup(t)
	clk := &clock{t: time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)}
	var pub published
	m := New([]config.Zone{zc}, pub.publish, nil, clk.now)
	if _, err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	z := pub.zone(t, "auto.test.")
	if !z.Signed || z.Apex.Get(dns.TypeNSEC) == nil || !hasSigs(z.SOA) {
		t.Fatal("zone not signed with NSEC")
	}
	tags := dnskeyTags(t, z)
	if len(tags) != 2 {
		t.Fatalf("DNSKEY tags %v, want a KSK and a ZSK", tags)
	}
	// Keys, state and the signed copy are on disk, private keys 0600.
	entries, _ := os.ReadDir(keys)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if strings.HasSuffix(e.Name(), ".private") {
			if fi, _ := e.Info(); fi.Mode().Perm() != 0o600 {
				t.Errorf("%s mode %v", e.Name(), fi.Mode().Perm())
			}
		}
	}
	if len(names) < 4 || !contains(names, "auto.test.signed") {
		t.Errorf("key dir holds %v", names)
	}
	if fi, err := os.Stat(keys); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("key dir mode: %v %v", fi.Mode().Perm(), err)
	}

	// The next event is a signature refresh well before expiry.
	next := m.Next()
	if next.IsZero() || !next.After(clk.now()) || next.After(clk.now().Add(10*24*time.Hour)) {
		t.Fatalf("next event %v", next)
	}
	before := sigExpiration(t, z)
	clk.add(next.Sub(clk.now()) + time.Minute)
	if err := m.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	z2 := pub.zone(t, "auto.test.")
	if z2 == z {
		t.Fatal("nothing re-published at the refresh time")
	}
	if after := sigExpiration(t, z2); !after.After(before) {
		t.Errorf("SOA signature expiration %v not moved past %v", after, before)
	}

	// A restart finds the same keys.
	var pub2 published
	m2 := New([]config.Zone{zc}, pub2.publish, nil, clk.now)
	if _, err := m2.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := dnskeyTags(t, pub2.zone(t, "auto.test.")); !sameTags(got, tags) {
		t.Errorf("after restart DNSKEY tags %v, want %v", got, tags)
	}

	// A reload of a broken file keeps the old zone, and its signing:
	// the next refresh re-signs the content it serves, not the broken
	// file's.
	os.WriteFile(zc.File, []byte("$ORIGIN auto.test.\n@ 60 SOA ns1 h 2 1 1 1 1\nbad A 1.2.3\n"), 0o644)
	last := pub2.zone(t, "auto.test.")
	if n, err := m2.Reload(context.Background(), []config.Zone{zc}); n != 1 || err == nil || !strings.Contains(err.Error(), "auto.test.zone:3") {
		t.Errorf("reload: %d serving, error %v, want 1 and the file's line", n, err)
	}
	if pub2.zone(t, "auto.test.") != last {
		t.Error("a failed reload replaced the zone")
	}
	clk.add(m2.Next().Sub(clk.now()) + time.Minute)
	if err := m2.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if z := pub2.zone(t, "auto.test."); z == last || z.Serial != last.Serial+1 {
		t.Errorf("refresh after a failed reload: serial %d, want %d re-signed", z.Serial, last.Serial+1)
	}
}

func sigExpiration(t *testing.T, z *zone.Zone) time.Time {
	t.Helper()
	sigs, _ := z.SOA.Sigs()
	tail := sigs.Wire
	rr, _, err := dns.UnpackRR(append([]byte{0}, tail...), 0)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(int64(rr.(*dns.RRSIG).Expiration), 0)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sameTags(a, b []uint16) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		found := false
		for _, y := range b {
			found = found || x == y
		}
		if !found {
			return false
		}
	}
	return true
}

func hasSigs(s *zone.RRset) bool {
	_, ok := s.Sigs()
	return ok
}
