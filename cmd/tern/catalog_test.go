package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/catalog"
	"github.com/tern-dns/tern/internal/dnstest"
)

// transferRRs is the records of a transfer (AXFR, or IXFR from serial
// when ixfr) of origin from addr.
func transferRRs(t *testing.T, addr, origin string, ixfr bool, serial uint32) []dns.RR {
	t.Helper()
	m := new(dns.Msg)
	if ixfr {
		m.SetIxfr(origin, serial, "invalid.", "invalid.")
	} else {
		m.SetAxfr(origin)
	}
	env, err := (&dns.Transfer{}).In(m, addr)
	if err != nil {
		t.Fatalf("transfer of %s: %v", origin, err)
	}
	var rrs []dns.RR
	for e := range env {
		if e.Error != nil {
			t.Fatalf("transfer of %s: %v", origin, e.Error)
		}
		rrs = append(rrs, e.RR...)
	}
	return rrs
}

// catalogOf is the catalog origin served at addr, transferred (AXFR)
// and interpreted: its serial and members.
func catalogOf(t *testing.T, addr, origin string) (uint32, []string) {
	t.Helper()
	rrs := transferRRs(t, addr, origin, false, 0)
	if len(rrs) < 2 {
		t.Fatalf("AXFR of %s: %d records", origin, len(rrs))
	}
	c, err := catalog.Parse(origin, rrs[:len(rrs)-1]) // the closing SOA left out
	if err != nil {
		t.Fatalf("catalog %s: %v", origin, err)
	}
	if len(c.Ignored) > 0 {
		t.Errorf("catalog %s: entries ignored: %v", origin, c.Ignored)
	}
	var ms []string
	for zone, m := range c.Members {
		if m.ID != catalog.ID(zone) {
			t.Errorf("catalog %s: %s under ID %s, want %s", origin, zone, m.ID, catalog.ID(zone))
		}
		ms = append(ms, zone)
	}
	slices.Sort(ms)
	return rrs[0].(*dns.SOA).Serial, ms
}

// TestCatalogProduce: a [[zone]] with no file is a catalog zone Tern
// produces (RFC 9432) from the zones naming it; transferred (AXFR) and
// read with catalog.Parse it lists them; zone-add --catalog and
// zone-remove change it with a greater serial, IXFR from the previous
// serial gives the change, a restart keeps serial and members, a reload
// of a config without a member drops it.
func TestCatalogProduce(t *testing.T) {
	dir := t.TempDir()
	for _, z := range []string{"a.test", "b.test", "c.test"} {
		text := fmt.Sprintf("$ORIGIN %s.\n$TTL 300\n@ SOA ns1 h 1 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\n", z)
		if err := os.WriteFile(filepath.Join(dir, z+".zone"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "tern.toml")
	head := "[server]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\ncontrol = \"ctl.sock\"\ndata-dir = \"data\"\n" +
		"[[acl]]\nname = \"xfr\"\naddress = [\"127.0.0.0/8\"]\naction = [\"transfer\"]\n" +
		"[[zone]]\norigin = \"catalog.example\"\nacl = [\"xfr\"]\n" +
		"[[zone]]\norigin = \"a.test\"\nfile = \"a.test.zone\"\ncatalog = \"catalog.example\"\n"
	write := func(text string) {
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(head + "[[zone]]\norigin = \"b.test\"\nfile = \"b.test.zone\"\ncatalog = \"catalog.example\"\n")
	start := func() (string, func()) {
		addr, _, stop := serveStoppable(t, serveAddr, "-c", cfg)
		return addr, stop
	}
	ctl := func(args ...string) { t.Helper(); ctlOK(t, cfg, args...) }
	check := func(addr string, want ...string) uint32 {
		t.Helper()
		serial, got := catalogOf(t, addr, "catalog.example.")
		if !slices.Equal(got, want) {
			t.Errorf("catalog members %v, want %v", got, want)
		}
		return serial
	}
	addr, stop := start()
	s1 := check(addr, "a.test.", "b.test.")

	ctl("zone-add", "c.test", "--file", filepath.Join(dir, "c.test.zone"), "--catalog", "catalog.example")
	s2 := check(addr, "a.test.", "b.test.", "c.test.")
	if int32(s2-s1) <= 0 {
		t.Errorf("serial %d after zone-add, was %d", s2, s1)
	}
	// IXFR from s1: the difference, the new member's PTR added.
	ixfr := transferRRs(t, addr, "catalog.example.", true, s1)
	if len(ixfr) != 5 || ixfr[1].(*dns.SOA).Serial != s1 || ixfr[2].(*dns.SOA).Serial != s2 ||
		ixfr[3].(*dns.PTR).Ptr != "c.test." || ixfr[3].Header().Name != catalog.ID("c.test.")+".zones.catalog.example." {
		t.Errorf("IXFR from %d:\n%v", s1, ixfr)
	}

	ctl("zone-remove", "c.test")
	s3 := check(addr, "a.test.", "b.test.")
	if int32(s3-s2) <= 0 {
		t.Errorf("serial %d after zone-remove, was %d", s3, s2)
	}
	ctl("zone-add", "c.test", "--file", filepath.Join(dir, "c.test.zone"), "--catalog", "catalog.example")
	s4 := check(addr, "a.test.", "b.test.", "c.test.")

	// A restart: the same members, the same serial.
	stop()
	addr, stop = start()
	if s := check(addr, "a.test.", "b.test.", "c.test."); s != s4 {
		t.Errorf("serial %d after a restart, was %d", s, s4)
	}

	// b.test. leaves the config: a reload drops it from the catalog.
	write(head)
	ctl("reload")
	if s := check(addr, "a.test.", "c.test."); int32(s-s4) <= 0 {
		t.Errorf("serial %d after the reload, was %d", s, s4)
	}
	stop()
}

// ctlOK runs tern ctl -c cfg args, which must succeed.
func ctlOK(t *testing.T, cfg string, args ...string) {
	t.Helper()
	if code, out, errs := runT(append([]string{"ctl", "-c", cfg}, args...)...); code != 0 {
		t.Fatalf("ctl %s: %d %q %q", strings.Join(args, " "), code, out, errs)
	}
}

// followCatalog checks that a consumer at addr of the catalog.example
// a Tern (config cfg, zone files in dir) produces with members a.test
// and b.test serves them, then c.test once added to the producer
// (zone-add --catalog), and stops serving a.test once removed.
func followCatalog(t *testing.T, cfg, dir, addr string) {
	t.Helper()
	waitSerial(t, addr, "a.test.", 1)
	waitSerial(t, addr, "b.test.", 1)
	ctlOK(t, cfg, "zone-add", "c.test", "--file", filepath.Join(dir, "c.test.zone"), "--acl", "xfr", "--catalog", "catalog.example")
	waitSerial(t, addr, "c.test.", 1)
	ctlOK(t, cfg, "zone-remove", "a.test")
	waitSerial(t, addr, "a.test.", -dns.RcodeRefused)
}

// waitSerial waits (a minute at most) until addr answers origin's SOA
// with serial want (a negative rcode for none, as soaSerial).
func waitSerial(t *testing.T, addr, origin string, want int) {
	t.Helper()
	got := 0
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		m := new(dns.Msg)
		m.SetQuestion(origin, dns.TypeSOA)
		var r *dns.Msg
		if r, err = dnstest.Exchange(m, "udp", addr); err != nil {
			continue // not listening yet
		}
		if got = -r.Rcode; len(r.Answer) == 1 {
			got = int(r.Answer[0].(*dns.SOA).Serial)
		}
		if got == want {
			return
		}
	}
	t.Fatalf("%s at %s: SOA %d (%v), want %d", origin, addr, got, err, want)
}

// memberZones writes zone files of serial 1 for names under dir.
func memberZones(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, z := range names {
		text := fmt.Sprintf("$ORIGIN %s.\n$TTL 300\n@ SOA ns1 h 1 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\n", z)
		if err := os.WriteFile(filepath.Join(dir, z+".zone"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCatalogConsume: Tern consumes the catalog another Tern produces
// (catalog-role = "interpret"): the members are served as secondaries
// of the catalog's primary; a member added on the producer (zone-add
// --catalog) is served after its NOTIFY, one removed stops being served
// at once and its stored copy is deleted after catalog-grace; a restart
// serves the members at once from the stored state. Producer on
// 127.0.0.137, consumer on 127.0.0.138 (port 5300).
func TestCatalogConsume(t *testing.T) {
	const prodAddr, consAddr = "127.0.0.137:5300", "127.0.0.138:5300"
	p := startCatalogPair(t, prodAddr, consAddr, "catalog-grace = \"1s\"\n")
	pcfg, pdir, ccfg, ctext, cdir, stopC := p.pcfg, p.pdir, p.ccfg, p.ctext, p.cdir, p.stopC
	followCatalog(t, pcfg, pdir, consAddr)
	stored := filepath.Join(cdir, "data", "a.test.zone")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(stored); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not deleted after the grace period", stored)
		}
	}
	if _, err := os.Stat(filepath.Join(cdir, "data", "b.test.zone")); err != nil {
		t.Errorf("b.test.'s stored copy: %v", err)
	}

	// A restart with the producer down: the members are served at once
	// from their stored copies.
	stopC()
	_, _, stopC = serveStoppable(t, serveAddr, "-c", ccfg)
	if got := soaSerial(t, consAddr, "b.test."); got != 1 {
		t.Errorf("b.test. after a restart: %d, want 1", got)
	}
	if got := soaSerial(t, consAddr, "c.test."); got != 1 {
		t.Errorf("c.test. after a restart: %d, want 1", got)
	}
	if got := soaSerial(t, consAddr, "a.test."); got != -dns.RcodeRefused {
		t.Errorf("a.test. after a restart: %d, want REFUSED", got)
	}

	// The catalog out of the consumer's config: a reload stops serving
	// its members.
	if err := os.WriteFile(ccfg, []byte(strings.Split(ctext, "[[zone]]")[0]+"[[zone]]\norigin = \"other.test\"\nfile = \"b.zone\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	memberZones(t, cdir, "other.test")
	if err := os.Rename(filepath.Join(cdir, "other.test.zone"), filepath.Join(cdir, "b.zone")); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runT("ctl", "-c", ccfg, "reload"); code != 0 {
		t.Fatalf("reload: %d %q %q", code, out, errs)
	}
	for _, z := range []string{"b.test.", "c.test.", "catalog.example."} {
		if got := soaSerial(t, consAddr, z); got != -dns.RcodeRefused {
			t.Errorf("%s after the catalog left the config: %d, want REFUSED", z, got)
		}
	}
	stopC()
}

// TestCatalogMaxMembers: a consumer with catalog-max-members = 2
// serves a catalog of two members; the producer's next version, of
// three, is refused (logged, the two still served, the third not);
// the version after it, two again, is interpreted. Producer on
// 127.0.1.80, consumer on 127.0.1.81 (port 5300).
func TestCatalogMaxMembers(t *testing.T) {
	const prodAddr, consAddr = "127.0.1.80:5300", "127.0.1.81:5300"
	p := startCatalogPair(t, prodAddr, consAddr, "catalog-max-members = 2\n")
	waitSerial(t, consAddr, "a.test.", 1)
	waitSerial(t, consAddr, "b.test.", 1)

	ctlOK(t, p.pcfg, "zone-add", "c.test", "--file", filepath.Join(p.pdir, "c.test.zone"), "--acl", "xfr", "--catalog", "catalog.example")
	waitLog(t, p.clogs, regexp.MustCompile("3 members, more than catalog-max-members = 2"), 1, func() string { return "" })
	for z, want := range map[string]int{"a.test.": 1, "b.test.": 1, "c.test.": -dns.RcodeRefused} {
		if got := soaSerial(t, consAddr, z); got != want {
			t.Errorf("%s after the version over the limit: %d, want %d", z, got, want)
		}
	}

	ctlOK(t, p.pcfg, "zone-remove", "a.test")
	waitSerial(t, consAddr, "c.test.", 1)
	waitSerial(t, consAddr, "a.test.", -dns.RcodeRefused)
}

// catalogPair is a Tern producing catalog.example and one consuming it.
type catalogPair struct {
	// pcfg and pdir are the producer's config file and directory
	// (zone files of a.test, b.test, c.test).
	pcfg, pdir string
	// ccfg, ctext and cdir are the consumer's config file, its text
	// and its directory.
	ccfg, ctext, cdir string
	// clogs is the consumer's log (shown when the test fails).
	clogs *dnstest.LogBuffer
	// stopC stops the consumer.
	stopC func()
}

// startCatalogPair starts a Tern at prodAddr producing catalog.example
// of members a.test and b.test (NOTIFY to the consumer), and one at
// consAddr consuming it from the first (catalog-role = "interpret",
// NOTIFY taken from the producer's address) with consExtra added to
// the catalog's [[zone]].
func startCatalogPair(t *testing.T, prodAddr, consAddr, consExtra string) *catalogPair {
	t.Helper()
	p := &catalogPair{pdir: t.TempDir(), cdir: t.TempDir()}
	memberZones(t, p.pdir, "a.test", "b.test", "c.test")
	p.pcfg = filepath.Join(p.pdir, "tern.toml")
	ptext := "[server]\nlisten = [\"" + prodAddr + "\"]\nworkers = 1\ncontrol = \"ctl.sock\"\ndata-dir = \"data\"\n" +
		"[[remote]]\nname = \"c\"\naddress = [\"" + consAddr + "\"]\n" +
		"[[acl]]\nname = \"xfr\"\naddress = [\"127.0.0.0/8\"]\naction = [\"transfer\"]\n" +
		"[[zone]]\norigin = \"catalog.example\"\nacl = [\"xfr\"]\nnotify = [\"c\"]\n"
	for _, z := range []string{"a.test", "b.test"} {
		ptext += "[[zone]]\norigin = \"" + z + "\"\nfile = \"" + z + ".zone\"\nacl = [\"xfr\"]\ncatalog = \"catalog.example\"\n"
	}
	if err := os.WriteFile(p.pcfg, []byte(ptext), 0o644); err != nil {
		t.Fatal(err)
	}
	prodHost, _, _ := strings.Cut(prodAddr, ":")
	p.ccfg = filepath.Join(p.cdir, "tern.toml")
	p.ctext = "[server]\nlisten = [\"" + consAddr + "\"]\nworkers = 1\ncontrol = \"ctl.sock\"\ndata-dir = \"data\"\n" +
		"[[remote]]\nname = \"p\"\naddress = [\"" + prodAddr + "\"]\n" +
		"[[acl]]\nname = \"from-p\"\naddress = [\"" + prodHost + "\"]\naction = [\"notify\"]\n" +
		"[[zone]]\norigin = \"catalog.example\"\nprimary = [\"p\"]\nacl = [\"from-p\"]\ncatalog-role = \"interpret\"\n" + consExtra
	if err := os.WriteFile(p.ccfg, []byte(p.ctext), 0o644); err != nil {
		t.Fatal(err)
	}
	serveStoppable(t, serveAddr, "-c", p.pcfg)
	_, p.clogs, p.stopC = serveStoppable(t, serveAddr, "-c", p.ccfg)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("consumer's log:\n%s", p.clogs)
		}
	})
	return p
}
