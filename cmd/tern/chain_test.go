package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// Chained transfers, on this test's loopback addresses: a Tern primary
// (A), a Tern secondary of A (B) that is itself the primary of another
// Tern secondary (C).
const (
	chainA = "127.0.0.137"
	chainB = "127.0.0.138"
	chainC = "127.0.0.139"
)

// TestChainedSecondaries: issue 13's "a secondary is itself a primary
// for others". A change on A (file edit + tern ctl reload) reaches B by
// A's NOTIFY and an IXFR from A's journal, and C by B's NOTIFY and an
// IXFR served from B's journal of its transfer in (not a whole zone);
// after each of two changes C answers as A does. The SOA refresh is an
// hour: only the NOTIFYs carry the changes.
func TestChainedSecondaries(t *testing.T) {
	bPort, cPort := freePort(t, chainB), freePort(t, chainC)
	// Transfers and NOTIFYs are allowed from loopback: the point is the
	// chain, TSIG and ACLs are TestSecondaryNotify's.
	const acls = `
[[acl]]
name = "loopback"
address = ["127.0.0.0/8"]
action = ["transfer", "notify"]
`
	header := "[server]\ndata-dir = \"data\"\ncontrol = \"ctl.sock\"\n" + acls
	writeConfig := func(dir, text string) string {
		t.Helper()
		cfg := filepath.Join(dir, "tern.toml")
		if err := os.WriteFile(cfg, []byte(header+text), 0o644); err != nil {
			t.Fatal(err)
		}
		return cfg
	}

	aDir := t.TempDir()
	aFile := filepath.Join(aDir, "sec.test.zone")
	secZoneRefresh(t, aFile, 1, 3600, 3600)
	aCfg := writeConfig(aDir, fmt.Sprintf(`
[[remote]]
name = "b"
address = ["%s:%d"]

[[zone]]
origin = "sec.test"
file = "sec.test.zone"
notify = ["b"]
acl = ["loopback"]
`, chainB, bPort))
	aAddr, aLogs := serveLog(t, "-c", aCfg, "--listen", chainA+":0", "--workers", "1")

	bCfg := writeConfig(t.TempDir(), fmt.Sprintf(`
[[remote]]
name = "a"
address = [%q]

[[remote]]
name = "c"
address = ["%s:%d"]

[[zone]]
origin = "sec.test"
primary = ["a"]
notify = ["c"]
acl = ["loopback"]
`, aAddr, chainC, cPort))
	bAddr, bLogs := serveLog(t, "-c", bCfg, "--listen", fmt.Sprintf("%s:%d", chainB, bPort), "--workers", "1")

	cCfg := writeConfig(t.TempDir(), fmt.Sprintf(`
[[remote]]
name = "b"
address = [%q]

[[zone]]
origin = "sec.test"
primary = ["b"]
acl = ["loopback"]
`, bAddr))
	cAddr, cLogs := serveLog(t, "-c", cCfg, "--listen", fmt.Sprintf("%s:%d", chainC, cPort), "--workers", "1")
	logs := func() string {
		return fmt.Sprintf("A's log:\n%s\nB's log:\n%s\nC's log:\n%s", aLogs.String(), bLogs.String(), cLogs.String())
	}

	// sameAnswers checks that C answers as A does, for the names the
	// versions differ in and the apex SOA.
	sameAnswers := func(serial int) {
		t.Helper()
		for _, q := range []struct {
			name  string
			qtype uint16
		}{{"sec.test.", dns.TypeSOA}, {"www.sec.test.", dns.TypeA}, {"sec.test.", dns.TypeNS}, {"ns1.sec.test.", dns.TypeA}} {
			a, c := secAsk(t, aAddr, q.name, q.qtype), secAsk(t, cAddr, q.name, q.qtype)
			if fmt.Sprint(a.Answer) != fmt.Sprint(c.Answer) || a.Rcode != c.Rcode || !c.Authoritative {
				t.Errorf("version %d, %s %s: C answers\n%v\nA answers\n%v", serial, q.name, dns.TypeToString[q.qtype], c, a)
			}
		}
		if soa := secAsk(t, cAddr, "sec.test.", dns.TypeSOA); len(soa.Answer) != 1 || soa.Answer[0].(*dns.SOA).Serial != uint32(serial) {
			t.Errorf("C's SOA is not serial %d: %v", serial, soa)
		}
	}
	secWaitFor(t, bAddr, "192.0.2.1")
	secWaitFor(t, cAddr, "192.0.2.1")
	sameAnswers(1)

	for serial := 2; serial <= 3; serial++ {
		secZoneRefresh(t, aFile, serial, 3600, 3600)
		if code, out, errs := runT("ctl", "-c", aCfg, "reload", "sec.test"); code != 0 {
			t.Fatalf("reload on A: %d %q %q", code, out, errs)
		}
		want := fmt.Sprintf("192.0.2.%d", serial)
		secWaitFor(t, bAddr, want)
		secWaitFor(t, cAddr, want)
		sameAnswers(serial)
	}

	// Each change went A -> B and B -> C as an IXFR: B and C took the
	// first version whole and each change by IXFR (their log says how),
	// and A and B sent two incremental transfers out, none whole.
	for _, srv := range []struct {
		name string
		log  string
	}{{"A", aLogs.String()}, {"B", bLogs.String()}, {"C", cLogs.String()}} {
		if srv.name != "C" {
			if n := strings.Count(srv.log, `msg="IXFR out"`); n != 2 || strings.Contains(srv.log, "IXFR out, the whole zone") {
				t.Errorf("%s sent %d incremental transfers out, want 2\n%s", srv.name, n, logs())
			}
		}
		if srv.name != "A" {
			if n := strings.Count(srv.log, "how=IXFR "); n != 2 || strings.Contains(srv.log, `how="IXFR, whole zone"`) || strings.Contains(srv.log, "IXFR failed") {
				t.Errorf("%s took %d changes by IXFR, want 2\n%s", srv.name, n, logs())
			}
		}
	}
	if !strings.Contains(cLogs.String(), "refresh requested") {
		t.Errorf("C's refreshes were not B's NOTIFYs\n%s", logs())
	}
	if testing.Verbose() {
		t.Log(logs())
	}
}
