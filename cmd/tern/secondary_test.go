package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/control"
	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/peer"
)

// Secondary zones, on issue 13's loopback block: a Tern primary on
// 127.0.0.101, a Tern secondary of it on 127.0.0.102, and 127.0.0.103
// for a primary that is down or Knot as the primary; kernel-picked ports.
const (
	secPrimary = "127.0.0.101"
	secServer  = "127.0.0.102"
	secDown    = "127.0.0.103"
)

// secHeader is the start of both servers' configs: state and control
// socket in the config's directory, key xfr (a format of its secret).
const secHeader = `
[server]
data-dir = "data"
control = "ctl.sock"

[[key]]
name = "xfr"
algorithm = "hmac-sha256"
secret = %q
`

// secZone writes the zone sec.test with serial, www's address ending in
// serial; refresh and retry are 1s so that a test sees the refresh, and
// expire is expire seconds.
func secZone(t *testing.T, path string, serial, expire int) {
	t.Helper()
	secZoneRefresh(t, path, serial, 1, expire)
}

// secZoneRefresh is secZone with refresh seconds.
func secZoneRefresh(t *testing.T, path string, serial, refresh, expire int) {
	t.Helper()
	text := fmt.Sprintf("$ORIGIN sec.test.\n$TTL 300\n@ SOA ns1 h %d %d 1 %d 300\n@ NS ns1\nns1 A 192.0.2.1\nwww A 192.0.2.%d\n", serial, refresh, expire, serial)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// secPrimaryServe starts a Tern primary of sec.test (transfers allowed
// with key xfr) and refused.test (transfers allowed only to 192.0.2.0/24:
// refused to the secondary). It returns its address, the zone file and
// the config (for tern ctl), and a function stopping it.
func secPrimaryServe(t *testing.T, expire int) (addr, file, cfg string, stop func()) {
	t.Helper()
	return secPrimaryServeWith(t, 1, expire, "", secPrimary+":0")
}

// secPrimaryServeWith is secPrimaryServe with sec.test's refresh, more
// config for sec.test (after its acl) and the address to listen on.
func secPrimaryServeWith(t *testing.T, refresh, expire int, more, listen string) (addr, file, cfg string, stop func()) {
	t.Helper()
	dir := t.TempDir()
	file = filepath.Join(dir, "sec.test.zone")
	secZoneRefresh(t, file, 1, refresh, expire)
	refused := filepath.Join(dir, "refused.test.zone")
	if err := os.WriteFile(refused, []byte("$ORIGIN refused.test.\n$TTL 300\n@ SOA ns1 h 1 1 1 3600 300\n@ NS ns1\nns1 A 192.0.2.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg = filepath.Join(dir, "tern.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(secHeader+`
[[acl]]
name = "by-key"
key = ["xfr"]
action = ["transfer"]

[[acl]]
name = "elsewhere"
address = ["192.0.2.0/24"]
action = ["transfer"]

[[zone]]
origin = "sec.test"
file = "sec.test.zone"
acl = ["by-key"]
%s

[[zone]]
origin = "refused.test"
file = "refused.test.zone"
acl = ["elsewhere"]
`, xfrSecret, more)), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, _, stop = serveStoppable(t, serveAddr, "-c", cfg, "--listen", listen, "--workers", "1")
	return addr, file, cfg, stop
}

// secSecondaryConfig writes the config of a Tern secondary of sec.test
// and refused.test from primary (with key xfr) into dir.
func secSecondaryConfig(t *testing.T, dir, primary string) string {
	t.Helper()
	return secSecondaryConfigWith(t, dir, primary, "")
}

// secSecondaryConfigWith is secSecondaryConfig with more config for
// sec.test (after its primary).
func secSecondaryConfigWith(t *testing.T, dir, primary, more string) string {
	t.Helper()
	cfg := filepath.Join(dir, "tern.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(secHeader+`
[[remote]]
name = "ns1"
address = [%q]
key = "xfr"

[[zone]]
origin = "sec.test"
primary = ["ns1"]
%s

[[zone]]
origin = "refused.test"
primary = ["ns1"]
`, xfrSecret, primary, more)), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// secAsk asks addr for name/qtype over UDP and returns the answer.
func secAsk(t *testing.T, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	r, err := dnstest.Exchange(m, "udp", addr)
	if err != nil {
		t.Fatalf("%s %s: %v", name, dns.TypeToString[qtype], err)
	}
	return r
}

// secWaitFor asks addr for www.sec.test A until the answer is want (an
// address), for up to a minute (the machine is loaded: nothing timed).
func secWaitFor(t *testing.T, addr, want string) {
	t.Helper()
	var last *dns.Msg
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		last = secAsk(t, addr, "www.sec.test.", dns.TypeA)
		if len(last.Answer) == 1 {
			if a, ok := last.Answer[0].(*dns.A); ok && a.A.String() == want && last.Authoritative {
				return
			}
		}
	}
	t.Fatalf("www.sec.test. A: never %s; last answer:\n%v", want, last)
}

// secWaitStored waits (bounded) until the secondary's stored copy at
// path holds want, and returns it: the copy is written once the version
// transferred is served (the secondary's storeCopy after Install).
func secWaitStored(t *testing.T, path, want string) []byte {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), want) {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("stored copy %s never holds %q (%v):\n%s", path, want, err, b)
		}
	}
}

// TestSecondary: a Tern secondary of a Tern primary fetches the zone at
// start (AXFR with TSIG), stores it and serves it; follows a change on
// the primary (edit + reload) on the SOA refresh timer; a zone whose
// transfer the primary's ACL refuses is logged and answered SERVFAIL.
// Restarted with the primary down, it serves the stored copy.
func TestSecondary(t *testing.T) {
	paddr, pfile, pcfg, _ := secPrimaryServe(t, 3600)
	dir := t.TempDir()
	cfg := secSecondaryConfig(t, dir, paddr)
	saddr, logs, stop := serveStoppable(t, serveAddr, "-c", cfg, "--listen", secServer+":0", "--workers", "1")

	secWaitFor(t, saddr, "192.0.2.1")
	stored := filepath.Join(dir, "data", "sec.test.zone")
	secWaitStored(t, stored, "by AXFR")
	if r := secAsk(t, saddr, "refused.test.", dns.TypeSOA); r.Rcode != dns.RcodeServerFailure {
		t.Errorf("refused.test. SOA: rcode %s, want SERVFAIL (transfer refused)", dns.RcodeToString[r.Rcode])
	}
	for deadline := time.Now().Add(time.Minute); !strings.Contains(logs.String(), "zone=refused.test. retry-in=30s err=\"ns1 ("+paddr+"): AXFR: answered REFUSED\""); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the refused transfer is not logged:\n%s", logs.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "refused.test.zone")); err == nil {
		t.Error("a refused transfer left a stored copy")
	}

	// A change on the primary reaches the secondary on its refresh timer
	// (1s here): no NOTIFY is sent.
	secZone(t, pfile, 2, 3600)
	if code, out, errs := runT("ctl", "-c", pcfg, "reload", "sec.test"); code != 0 {
		t.Fatalf("reload on the primary: %d %q %q", code, out, errs)
	}
	secWaitFor(t, saddr, "192.0.2.2")
	if soa := secAsk(t, saddr, "sec.test.", dns.TypeSOA); len(soa.Answer) != 1 || soa.Answer[0].(*dns.SOA).Serial != 2 {
		t.Errorf("SOA after the refresh: %v", soa.Answer)
	}
	// The first transfer whole, the change by IXFR from the primary's
	// journal (RFC 1995).
	if !regexp.MustCompile(`transferred serial 1" zone=sec.test. .*how=AXFR`).MatchString(logs.String()) ||
		!regexp.MustCompile(`transferred serial 2" zone=sec.test. .*how=IXFR`).MatchString(logs.String()) {
		t.Errorf("want serial 1 by AXFR, 2 by IXFR:\n%s", logs.String())
	}
	stored2 := secWaitStored(t, stored, "by IXFR")
	if !strings.Contains(string(stored2), "192.0.2.2") || strings.Contains(string(stored2), "192.0.2.1\n") && strings.Count(string(stored2), "192.0.2.1\n") != 1 {
		t.Errorf("stored copy after the IXFR:\n%s", stored2)
	}

	// tern ctl zones: the secondary's role, next refresh and expiry
	// (the last refresh plus the SOA's expire, 3600s).
	code, out, errs := runT("ctl", "-c", cfg, "zones")
	if re := regexp.MustCompile(`(?m)^sec\.test\. +secondary +2 +loaded +\S+ +(-|\d{4}-\S+) +\d{4}-\S+ +` + regexp.QuoteMeta(stored) + `$`); code != 0 || !re.MatchString(out) {
		t.Errorf("ctl zones: %d %q %q, want a line matching %s", code, out, errs, re)
	}
	code, out, _ = runT("ctl", "-c", cfg, "--json", "zones")
	var zs []control.Zone
	if err := json.Unmarshal([]byte(out), &zs); code != 0 || err != nil || len(zs) != 2 {
		t.Fatalf("ctl zones --json: %d %q %v", code, out, err)
	}
	if z := zs[0]; z.Origin != "sec.test." || z.Role != control.RoleSecondary || z.Expires.Before(time.Now().Add(50*time.Minute)) || z.Expires.After(time.Now().Add(time.Hour+time.Minute)) {
		t.Errorf("ctl zones --json: %+v, want a secondary expiring in about an hour", z)
	}
	if z := zs[1]; z.Role != control.RoleSecondary || !z.Expires.IsZero() {
		t.Errorf("ctl zones --json: %+v, want a secondary without expiry (nothing served)", z)
	}

	// tern ctl retransfer: the whole zone again (AXFR), the serial
	// unchanged.
	if code, out, errs := runT("ctl", "-c", cfg, "retransfer", "sec.test"); code != 0 || !strings.Contains(out, "retransfer sec.test.: started") {
		t.Errorf("ctl retransfer: %d %q %q", code, out, errs)
	}
	retransferred := regexp.MustCompile(`retransfer requested[^\n]*\n(?s:.*)transferred serial 2" zone=sec.test. .*how=AXFR`)
	for deadline := time.Now().Add(time.Minute); !retransferred.MatchString(logs.String()); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ctl retransfer did not transfer serial 2 by AXFR:\n%s", logs.String())
		}
	}
	if code, _, errs := runT("ctl", "-c", cfg, "retransfer", "other.test"); code == 0 || !strings.Contains(errs, "zone other.test.: not a secondary zone") {
		t.Errorf("ctl retransfer of a zone not a secondary: %d %q", code, errs)
	}

	// Restarted with its primary down: the stored copy is served.
	stop()
	cfg = secSecondaryConfig(t, dir, fmt.Sprintf("%s:%d", secDown, freePort(t, secDown)))
	saddr, logs = serveLog(t, "-c", cfg, "--listen", secServer+":0", "--workers", "1")
	secWaitFor(t, saddr, "192.0.2.2")
	for deadline := time.Now().Add(time.Minute); !strings.Contains(logs.String(), "refresh failed"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the failed refresh is not logged:\n%s", logs.String())
		}
	}
	secWaitFor(t, saddr, "192.0.2.2") // still served after the failure

	// tern ctl refresh: a secondary zone's refresh starts at once; any
	// other zone is an error.
	n := strings.Count(logs.String(), "refresh failed")
	if code, out, errs := runT("ctl", "-c", cfg, "refresh", "sec.test"); code != 0 || !strings.Contains(out, "refresh sec.test.: started") {
		t.Errorf("ctl refresh: %d %q %q", code, out, errs)
	}
	for deadline := time.Now().Add(time.Minute); !strings.Contains(logs.String(), "refresh requested") || strings.Count(logs.String(), "refresh failed") == n; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ctl refresh did not refresh:\n%s", logs.String())
		}
	}
	if code, _, errs := runT("ctl", "-c", cfg, "refresh", "other.test"); code == 0 || !strings.Contains(errs, "zone other.test.: not a secondary zone") {
		t.Errorf("ctl refresh of a zone not a secondary: %d %q", code, errs)
	}
}

// TestSecondaryExpire: a secondary whose primary goes away serves its
// copy until the SOA expire time (2s here) has passed without a
// successful refresh, then answers SERVFAIL.
func TestSecondaryExpire(t *testing.T) {
	paddr, _, _, stopPrimary := secPrimaryServe(t, 2)
	cfg := secSecondaryConfig(t, t.TempDir(), paddr)
	saddr, logs := serveLog(t, "-c", cfg, "--listen", secServer+":0", "--workers", "1")
	secWaitFor(t, saddr, "192.0.2.1")
	stopPrimary()
	var r *dns.Msg
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r = secAsk(t, saddr, "www.sec.test.", dns.TypeA); r.Rcode == dns.RcodeServerFailure {
			break
		}
	}
	if r.Rcode != dns.RcodeServerFailure {
		t.Fatalf("www.sec.test. A after expire: %v", r)
	}
	if !strings.Contains(logs.String(), "expired, answered SERVFAIL") {
		t.Errorf("the expiry is not logged:\n%s", logs.String())
	}
}

// TestSecondaryNotify: a NOTIFY from the primary (signed with its key,
// as its remote says; allowed by the zone's acl) makes the secondary
// refresh at once, with an hour's SOA refresh; one the acl does not
// allow (unsigned) is REFUSED and logged.
func TestSecondaryNotify(t *testing.T) {
	secPort := freePort(t, secServer)
	more := fmt.Sprintf("notify = [\"sec\"]\n\n[[remote]]\nname = \"sec\"\naddress = [\"%s:%d\"]\nkey = \"xfr\"", secServer, secPort)
	paddr, pfile, pcfg, _ := secPrimaryServeWith(t, 3600, 3600, more, secPrimary+":0")
	cfg := secSecondaryConfigWith(t, t.TempDir(), paddr, "acl = [\"from-ns1\"]\n\n[[acl]]\nname = \"from-ns1\"\nremote = [\"ns1\"]\naction = [\"notify\"]")
	saddr, logs := serveLog(t, "-c", cfg, "--listen", fmt.Sprintf("%s:%d", secServer, secPort), "--workers", "1")
	secWaitFor(t, saddr, "192.0.2.1")

	secZoneRefresh(t, pfile, 2, 3600, 3600)
	if code, out, errs := runT("ctl", "-c", pcfg, "reload", "sec.test"); code != 0 {
		t.Fatalf("reload on the primary: %d %q %q", code, out, errs)
	}
	secWaitFor(t, saddr, "192.0.2.2")
	if !strings.Contains(logs.String(), "refresh requested") {
		t.Errorf("the refresh was not the NOTIFY's:\n%s", logs.String())
	}

	// Unsigned, from an address the acl does not name: REFUSED.
	m := new(dns.Msg)
	m.SetNotify("sec.test.")
	r, err := dnstest.Exchange(m, "udp", saddr)
	if err != nil {
		t.Fatal(err)
	}
	if r.Rcode != dns.RcodeRefused || r.Opcode != dns.OpcodeNotify {
		t.Errorf("NOTIFY not allowed: %v", r)
	}
	if !strings.Contains(logs.String(), "NOTIFY refused") {
		t.Errorf("the refused NOTIFY is not logged:\n%s", logs.String())
	}
}

// knotPrimaryConf is the knot.conf of Knot DNS as the primary of
// sec.test (dir/sec.test.zone) for a Tern secondary at tern (ip@port):
// listening on listen (ip@port), controlled through sock, sending NOTIFY
// to tern from via; transfers allowed to it by TSIG key xfr when signed
// (the NOTIFY signed too), else by address. template holds further
// lines of the default template.
func knotPrimaryConf(dir, listen, sock, tern, via string, signed bool, template ...string) string {
	acl, key := "address: 127.0.0.0/8", ""
	if signed {
		acl, key = "key: xfr", "\n    key: xfr"
	}
	var extra strings.Builder
	for _, line := range template {
		fmt.Fprintf(&extra, "    %s\n", line)
	}
	return peer.KnotServer(dir, []string{listen}, "info") + fmt.Sprintf(`control:
    listen: %q
key:
  - id: xfr
    algorithm: hmac-sha256
    secret: %s
remote:
  - id: tern
    address: %s
    via: %s%s
acl:
  - id: to-tern
    %s
    action: transfer
template:
  - id: default
    storage: %q
    zonefile-sync: -1
%szone:
  - domain: sec.test
    file: sec.test.zone
    notify: tern
    acl: to-tern
`, sock, xfrSecret, tern, via, key, acl, dir, extra.String())
}

// TestKnotPrimary: Knot DNS as the primary of a Tern secondary, with
// TSIG (transfers and NOTIFY signed with key xfr): Tern serves Knot's
// zone, and a change on Knot (edit + knotc zone-reload) reaches Tern by
// Knot's NOTIFY (the SOA refresh is an hour).
func TestKnotPrimary(t *testing.T) {
	knotd := peerTool(t, "knotd")
	knotc := peerTool(t, "knotc")
	dir := t.TempDir()
	knotPort := freePort(t, secDown)
	secPort := freePort(t, secServer)
	zoneFile := filepath.Join(dir, "sec.test.zone")
	secZoneRefresh(t, zoneFile, 1, 3600, 3600)
	conf := filepath.Join(dir, "knot.conf")
	sock := filepath.Join(dir, "knot.sock")
	text := knotPrimaryConf(dir, fmt.Sprintf("%s@%d", secDown, knotPort), sock, fmt.Sprintf("%s@%d", secServer, secPort), secDown, true)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	proc, err := peer.Start(exec.Command(knotd, "-c", conf))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.Stop)

	cfg := secSecondaryConfigWith(t, t.TempDir(), fmt.Sprintf("%s:%d", secDown, knotPort),
		"acl = [\"from-ns1\"]\n\n[[acl]]\nname = \"from-ns1\"\nremote = [\"ns1\"]\naction = [\"notify\"]")
	saddr, logs := serveLog(t, "-c", cfg, "--listen", fmt.Sprintf("%s:%d", secServer, secPort), "--workers", "1")
	// Knot may start after Tern's first try: Tern retries (30s without
	// a copy), within secWaitFor's minute.
	secWaitFor(t, saddr, "192.0.2.1")

	secZoneRefresh(t, zoneFile, 2, 3600, 3600)
	var out []byte
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if out, err = exec.Command(knotc, "-s", sock, "zone-reload", "sec.test").CombinedOutput(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("knotc zone-reload: %v: %s\nknot log:\n%s", err, out, proc.Output())
		}
	}
	secWaitFor(t, saddr, "192.0.2.2")
	if !strings.Contains(logs.String(), "refresh requested") {
		t.Errorf("the refresh was not Knot's NOTIFY's:\n%s\nknot log:\n%s", logs.String(), proc.Output())
	}
	// Knot, its zone loaded whole from the file, has no differences:
	// it answers the IXFR with the whole zone (RFC 1995 §4).
	if !strings.Contains(logs.String(), `how="IXFR, whole zone"`) {
		t.Errorf("serial 2 not by IXFR answered whole:\n%s", logs.String())
	}
	if testing.Verbose() {
		t.Logf("tern log:\n%s\nknot log:\n%s", logs.String(), proc.Output())
	}
}
