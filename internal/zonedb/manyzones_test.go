package zonedb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/zone"
)

// smallZoneAddr is www's address in small zone i.
func smallZoneAddr(i int) string { return fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255) }

// writeSmallZone writes zone file i of a hosting provider's small
// zones (bench/manyzones's: SOA, NS, ns1 and www addresses) into dir,
// origin zI.test., and returns its configuration.
func writeSmallZone(tb testing.TB, dir string, i int) config.Zone {
	tb.Helper()
	origin := fmt.Sprintf("z%d.test.", i)
	file := filepath.Join(dir, origin+"zone")
	text := fmt.Sprintf("$ORIGIN %s\n$TTL 3600\n@ SOA ns1 host %d 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\nwww A %s\n", origin, i+1, smallZoneAddr(i))
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	return config.Zone{Origin: origin, File: file}
}

// manyZonesN is the number of zones TestManyZones loads (bench/manyzones
// loads 100,000 with the servers); 1,000 under the race detector.
var manyZonesN = map[bool]int{false: 10000, true: 1000}[raceEnabled]

// TestManyZones: 10,000 small zone files (1,000 with -race) (a hosting provider's, as
// bench/manyzones serves 100,000 of) load through the Manager, are
// published once, and each zone's own www address is answered from it
// (AA, the zone's address, not a neighbour's); a name in none of them is
// REFUSED; a zone added then is served beside them and one removed is
// not.
func TestManyZones(t *testing.T) {
	dir := t.TempDir()
	write := func(i int) config.Zone { return writeSmallZone(t, dir, i) }
	zs := make([]config.Zone, manyZonesN)
	for i := range zs {
		zs[i] = write(i)
	}
	resp := auth.New(nil, auth.Options{})
	var pub published
	m := New(zs, func(s *zone.Set) { pub.publish(s); resp.Publish(s) }, nil, nil)
	defer m.Close()
	serving, err := m.Load(context.Background())
	if err != nil || serving != manyZonesN || pub.set.Len() != manyZonesN {
		t.Fatalf("Load: %d serving, %d published, %v", serving, pub.set.Len(), err)
	}
	var s auth.Scratch
	out := make([]byte, 0, auth.BufferSize)
	ask := func(name string) *dns.Msg {
		t.Helper()
		q := new(dns.Msg)
		q.SetQuestion(name, dns.TypeA)
		pkt, _ := q.Pack()
		r := new(dns.Msg)
		if err := r.Unpack(resp.Answer(&s, pkt, out, false)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}
	check := func(i int) {
		t.Helper()
		name := fmt.Sprintf("www.z%d.test.", i)
		r := ask(name)
		if r.Rcode != dns.RcodeSuccess || !r.Authoritative || len(r.Answer) != 1 {
			t.Fatalf("%s: %v", name, r)
		}
		if a, ok := r.Answer[0].(*dns.A); !ok || a.A.String() != smallZoneAddr(i) {
			t.Fatalf("%s: answer %v, want %s", name, r.Answer[0], smallZoneAddr(i))
		}
	}
	for i := range manyZonesN {
		check(i)
	}
	if r := ask("www.z10.other."); r.Rcode != dns.RcodeRefused {
		t.Errorf("a name in no zone: %s, want REFUSED", dns.RcodeToString[r.Rcode])
	}

	added := write(manyZonesN)
	if err := m.AddZone(context.Background(), added); err != nil {
		t.Fatal(err)
	}
	check(manyZonesN)
	if err := m.RemoveZone("z7.test."); err != nil {
		t.Fatal(err)
	}
	if r := ask("www.z7.test."); r.Rcode != dns.RcodeRefused {
		t.Errorf("a zone removed: %s, want REFUSED", dns.RcodeToString[r.Rcode])
	}
	check(8)
	if pub.set.Len() != manyZonesN {
		t.Errorf("%d zones published after one added and one removed, want %d", pub.set.Len(), manyZonesN)
	}
}

// BenchmarkZoneBytes reports the heap a small zone costs when served
// (B/zone: the live heap after a collection, less the one before the
// zones were loaded, per zone), loaded as tern serve loads a
// configuration of 10,000 of them: the configuration parsed (and kept,
// as serve keeps the running one), a Manager loading each file, an
// auth Responder preparing each zone's answers. Deterministic, unlike
// a server's RSS, for an A/B of what a zone keeps.
func BenchmarkZoneBytes(b *testing.B) {
	const n = 10000
	dir := b.TempDir()
	var text strings.Builder
	for i := range n {
		zc := writeSmallZone(b, dir, i)
		fmt.Fprintf(&text, "[[zone]]\norigin = %q\nfile = %q\n", zc.Origin, zc.File)
	}
	data := []byte(text.String())
	text.Reset()
	for b.Loop() {
		before := dnstest.LiveHeap()
		cfg, err := config.Parse(filepath.Join(dir, "tern.toml"), data)
		if err != nil {
			b.Fatal(err)
		}
		resp := auth.New(nil, auth.Options{})
		m := New(cfg.Zones, resp.Publish, nil, nil)
		if serving, err := m.Load(context.Background()); err != nil || serving != n {
			b.Fatalf("Load: %d serving, %v", serving, err)
		}
		after := dnstest.LiveHeap()
		b.ReportMetric(float64(after-before)/n, "B/zone")
		runtime.KeepAlive(cfg)
		m.Close()
		runtime.KeepAlive(resp)
	}
}
