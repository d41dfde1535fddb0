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

// peerSecondary is a peer server to run as a secondary of Tern: its address
// and the configuration it runs with, given its directory, its port,
// Tern's address and port, and the TSIG key's name when tsig is set;
// logIXFR is what its log says of each incremental transfer in from Tern
// (a format of Tern's address and port; "": nothing).
type peerSecondary struct {
	name, addr string
	tool       string
	args       func(conf string) []string
	config     func(dir string, port int, tern, ternPort, key string) string
	logIXFR    string
	tsig       bool
}

// knotSecondary is Knot's configuration as a secondary of Tern.
func knotSecondary(dir string, port int, tern, ternPort, key string) string {
	return knotSecondaryOf("a.test", "127.0.0.126", dir, port, tern, ternPort, key)
}

// knotSecondaryOf is Knot's configuration as a secondary of Tern for
// domain, listening on addr@port, NOTIFYs allowed from Tern.
func knotSecondaryOf(domain, addr, dir string, port int, tern, ternPort, key string) string {
	var keys, remoteKey, aclKey string
	if key != "" {
		keys = fmt.Sprintf("key:\n  - id: %s\n    algorithm: hmac-sha256\n    secret: %s\n", key, xfrSecret)
		remoteKey = "\n    key: " + key
		aclKey = "\n    key: " + key
	}
	return peer.KnotServer(dir, []string{fmt.Sprintf("%s@%d", addr, port)}, "info") + fmt.Sprintf(`%sremote:
  - id: tern
    address: %s@%s%s
acl:
  - id: notify-from-tern
    address: %s
    action: notify%s
template:
  - id: default
    storage: %q
    zonefile-sync: -1
    master: tern
    acl: notify-from-tern
zone:
  - domain: %s
`, keys, tern, ternPort, remoteKey, tern, aclKey, dir, domain)
}

// The secondaries of TestSecondariesFollowByIXFR, on the journal's part
// of issue 13's addresses: each with a Tern of its own.
var ixfrSecondaries = []struct {
	tern string
	sec  peerSecondary
}{
	{"127.0.0.125", peerSecondary{name: "knot", addr: "127.0.0.126", tool: "knotd",
		args:    func(conf string) []string { return []string{"-c", conf} },
		config:  knotSecondary,
		logIXFR: "[a.test.] IXFR, incoming, remote %s@%s, finished"}},
	// The same with TSIG: NOTIFYs, SOA queries and transfers signed, the
	// incremental streams message by message (RFC 8945 §5.3.1). The
	// addresses are the first case's: the cases run one after another.
	{"127.0.0.125", peerSecondary{name: "knot with TSIG", addr: "127.0.0.126", tool: "knotd",
		args:    func(conf string) []string { return []string{"-c", conf} },
		config:  knotSecondary,
		logIXFR: "[a.test.] IXFR, incoming, remote %s@%s, finished", tsig: true}},
	{"127.0.0.127", peerSecondary{name: "nsd", addr: "127.0.0.128", tool: "nsd",
		args: func(conf string) []string { return []string{"-d", "-c", conf} },
		config: func(dir string, port int, tern, ternPort, _ string) string {
			return peer.NSDServer(dir, dir, []string{fmt.Sprintf("127.0.0.128@%d", port)}, "verbosity: 2", "tcp-count: 20") +
				fmt.Sprintf(`zone:
    name: a.test
    zonefile: %q
    request-xfr: %s@%s NOKEY
    allow-notify: %s NOKEY
`, filepath.Join(dir, "a.test.zone"), tern, ternPort, tern)
		},
		// NSD 4.6 logs an update's bytes, not how it came: Tern's
		// log says which transfers were incremental.
		logIXFR: ""}},
}

// TestSecondariesFollowByIXFR: Knot DNS (without and with TSIG) and NSD
// as secondaries of Tern take the zone whole at first, then, told of
// each change by Tern's NOTIFY (accepted only from Tern's address, and
// with TSIG only signed), follow it by IXFR from Tern's journal (not
// AXFR), and serve what Tern serves.
func TestSecondariesFollowByIXFR(t *testing.T) {
	for _, tc := range ixfrSecondaries {
		t.Run(tc.sec.name, func(t *testing.T) { followByIXFR(t, tc.tern, tc.sec) })
	}
}

func followByIXFR(t *testing.T, ternAddr string, sec peerSecondary) {
	path := peerTool(t, sec.tool)
	dir := t.TempDir()
	zoneFile := filepath.Join(dir, "a.zone")
	writeZone := func(serial int) {
		var b strings.Builder
		fmt.Fprintf(&b, "$ORIGIN a.test.\n$TTL 300\n@ SOA ns1 h %d 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\nwww A 192.0.2.%d\n", serial, serial)
		for i := range 200 {
			v := 0
			if i < 50 {
				v = serial / 2 // a quarter changes every other version
			}
			fmt.Fprintf(&b, "h%d TXT \"host %d, version %d\"\n", i, i, v)
		}
		if err := os.WriteFile(zoneFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeZone(1)
	secPort := freePort(t, sec.addr)
	// Unsigned, transfers are allowed by address; with TSIG, by key.
	remoteKey, allow, key := "", `address = ["127.0.0.0/8"]`, ""
	if sec.tsig {
		key = "xfr"
		remoteKey = `key = "xfr"`
		allow = fmt.Sprintf("key = [\"xfr\"]\n\n[[key]]\nname = \"xfr\"\nalgorithm = \"hmac-sha256\"\nsecret = %q", xfrSecret)
	}
	cfg := filepath.Join(dir, "tern.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`[server]
data-dir = "data"

[[remote]]
name = "secondary"
address = ["%s:%d"]
%s

[[zone]]
origin = "a.test"
file = "a.zone"
notify = ["secondary"]
acl = ["local"]

[[acl]]
name = "local"
action = ["transfer"]
%s
`, sec.addr, secPort, remoteKey, allow)), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, logs := serveLog(t, "-c", cfg, "--listen", ternAddr+":0", "--workers", "1")
	_, ternPort, _ := net.SplitHostPort(addr)
	secDir := filepath.Join(dir, sec.name)
	// Knot keeps what an IXFR brings in its journal, under the database.
	if err := os.MkdirAll(filepath.Join(secDir, "db"), 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(secDir, sec.name+".conf")
	if err := os.WriteFile(conf, []byte(sec.config(secDir, secPort, ternAddr, ternPort, key)), 0o644); err != nil {
		t.Fatal(err)
	}
	proc, err := peer.Start(exec.Command(path, sec.args(conf)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.Stop)
	server := net.JoinHostPort(sec.addr, fmt.Sprint(secPort))
	// waitFor waits (bounded: a loaded machine, not a measure) until the
	// secondary serves www's address of version serial.
	waitFor := func(serial int) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			m := new(dns.Msg)
			m.SetQuestion("www.a.test.", dns.TypeA)
			r, err := dns.Exchange(m, server)
			if err == nil && len(r.Answer) == 1 && r.Answer[0].(*dns.A).A.String() == fmt.Sprintf("192.0.2.%d", serial) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not serve version %d (%v, %v); its log:\n%s\ntern log:\n%s", sec.name, serial, r, err, proc.Output(), logs.String())
			}
		}
	}
	waitFor(1)
	for serial := 2; serial <= 4; serial++ {
		writeZone(serial)
		hup(t, logs, "msg=reloaded", serial-1)
		waitFor(serial)
	}
	out := proc.Output()
	if sec.logIXFR != "" {
		if n := strings.Count(out, fmt.Sprintf(sec.logIXFR, ternAddr, ternPort)); n != 3 || strings.Contains(out, "fallback to AXFR") {
			t.Errorf("%s took %d IXFRs, want 3; its log:\n%s", sec.name, n, out)
		}
	}
	if n := strings.Count(logs.String(), `msg="IXFR out"`); n != 3 || strings.Contains(logs.String(), "IXFR out, the whole zone") ||
		sec.tsig && strings.Count(logs.String(), `key=xfr.`) < 3 {
		t.Errorf("%d incremental transfers out, want 3; tern log:\n%s", n, logs.String())
	}
	if testing.Verbose() {
		t.Logf("%s log:\n%s\ntern log:\n%s", sec.name, out, logs.String())
	}
}
