package zonedb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/zone"
)

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
	addr := func(i int) string { return fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255) }
	write := func(i int) config.Zone {
		origin := fmt.Sprintf("z%d.test.", i)
		file := filepath.Join(dir, origin+"zone")
		text := fmt.Sprintf("$ORIGIN %s\n$TTL 3600\n@ SOA ns1 host %d 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\nwww A %s\n", origin, i+1, addr(i))
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return config.Zone{Origin: origin, File: file}
	}
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
		if a, ok := r.Answer[0].(*dns.A); !ok || a.A.String() != addr(i) {
			t.Fatalf("%s: answer %v, want %s", name, r.Answer[0], addr(i))
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
