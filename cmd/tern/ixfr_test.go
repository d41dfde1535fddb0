package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/peer"
)

// Addresses of TestKnotFollowsByIXFR (issue 13's block, the journal's
// part): Tern on 127.0.0.125, its Knot secondary on 127.0.0.126.
const (
	ixfrTern = "127.0.0.125"
	ixfrKnot = "127.0.0.126"
)

// TestKnotFollowsByIXFR: Knot DNS as a secondary of Tern takes the zone
// whole at first, then, told of each change by Tern's NOTIFY (accepted
// only from Tern's address), follows it by IXFR from Tern's journal (not
// AXFR), and serves what Tern serves.
func TestKnotFollowsByIXFR(t *testing.T) {
	knotPath := peerTool(t, "knotd")
	dir := t.TempDir()
	zoneFile := filepath.Join(dir, "a.zone")
	writeZone := func(serial int) {
		var b strings.Builder
		fmt.Fprintf(&b, "$ORIGIN a.test.\n$TTL 300\n@ SOA ns1 h %d 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\nwww A 192.0.2.%d\n", serial, serial)
		for i := range 200 {
			fmt.Fprintf(&b, "h%d TXT \"host %d, version %d\"\n", i, i, serial/2) // changes every other version
		}
		if err := os.WriteFile(zoneFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeZone(1)
	knotPort := freePort(t, ixfrKnot)
	cfg := filepath.Join(dir, "tern.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`[server]
data-dir = "data"

[[remote]]
name = "knot"
address = ["%s:%d"]

[[acl]]
name = "local"
address = ["127.0.0.0/8"]
action = ["transfer"]

[[zone]]
origin = "a.test"
file = "a.zone"
notify = ["knot"]
acl = ["local"]
`, ixfrKnot, knotPort)), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, logs := serveLog(t, "-c", cfg, "--listen", ixfrTern+":0", "--workers", "1")
	_, ternPort, _ := net.SplitHostPort(addr)
	conf := filepath.Join(dir, "knot.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`server:
    rundir: %q
    listen: %s@%d
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
database:
    storage: %q
log:
  - target: stderr
    any: info
remote:
  - id: tern
    address: %s@%s
acl:
  - id: notify-from-tern
    address: %s
    action: notify
template:
  - id: default
    storage: %q
    zonefile-sync: -1
    master: tern
    acl: notify-from-tern
zone:
  - domain: a.test
`, dir, ixfrKnot, knotPort, filepath.Join(dir, "db"), ixfrTern, ternPort, ixfrTern, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	// Knot keeps what an IXFR brings in its journal, under the database.
	if err := os.MkdirAll(filepath.Join(dir, "db"), 0o700); err != nil {
		t.Fatal(err)
	}
	knotd, err := peer.Start(exec.Command(knotPath, "-c", conf))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(knotd.Stop)
	knot := net.JoinHostPort(ixfrKnot, fmt.Sprint(knotPort))
	// waitFor waits (bounded: a loaded machine, not a measure) until
	// Knot serves serial and www's address of that version.
	waitFor := func(serial int) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			m := new(dns.Msg)
			m.SetQuestion("www.a.test.", dns.TypeA)
			r, err := dns.Exchange(m, knot)
			if err == nil && len(r.Answer) == 1 && r.Answer[0].(*dns.A).A.String() == fmt.Sprintf("192.0.2.%d", serial) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Knot does not serve version %d (%v, %v); knot log:\n%s\ntern log:\n%s", serial, r, err, knotd.Output(), logs.String())
			}
		}
	}
	waitFor(1)
	for serial := 2; serial <= 4; serial++ {
		writeZone(serial)
		hup(t, logs, "msg=reloaded", serial-1)
		waitFor(serial)
	}
	out := knotd.Output()
	// One AXFR at the start, then one IXFR per change, each finished.
	if strings.Count(out, "[a.test.] AXFR, incoming, remote "+ixfrTern+"@"+ternPort+", started") != 1 ||
		strings.Count(out, "[a.test.] IXFR, incoming, remote "+ixfrTern+"@"+ternPort+", finished") != 3 ||
		strings.Contains(out, "fallback to AXFR") || strings.Contains(out, "warning") && strings.Contains(out, "IXFR") {
		t.Errorf("Knot did not follow by IXFR; knot log:\n%s", out)
	}
	if n := strings.Count(logs.String(), `msg="IXFR out"`); n != 3 {
		t.Errorf("%d incremental transfers out, want 3; tern log:\n%s", n, logs.String())
	}
	if testing.Verbose() {
		t.Logf("knot log:\n%s\ntern log:\n%s", out, logs.String())
	}
}
