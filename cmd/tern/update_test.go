package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/peer"
)

// Issue 14's addresses (127.0.0.130-149): each test its own.
const (
	updNsupdate  = "127.0.0.130"
	updKnsupdate = "127.0.0.131"
	updKnotTern  = "127.0.0.132"
	updKnot      = "127.0.0.133"
	updCertbot   = "127.0.0.135"
	updCertbotPy = "127.0.0.136"
	updSecret    = "dXBkYXRlIGtleSBmb3IgdGhlIHRlc3RzIG9ubHkhIQ=="
	updKeyArg    = "hmac-sha256:upd:" + updSecret
	updZone      = "$ORIGIN dyn.test.\n$TTL 300\n@ SOA ns1 hostmaster 1 3600 600 86400 300\n@ NS ns1\nns1 A 192.0.2.1\n"
)

// updConfig writes dyn.test's zone file and a config in dir: updates
// allowed to key upd, transfers to 127.0.0.0/8, the zone file rewritten
// sync after an update; more follows the zone's keys.
func updConfig(t *testing.T, dir, sync, more string) (cfg, zoneFile string) {
	t.Helper()
	zoneFile = filepath.Join(dir, "dyn.zone")
	if err := os.WriteFile(zoneFile, []byte(updZone), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg = filepath.Join(dir, "tern.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`[server]
data-dir = "data"
control = ""

[[key]]
name = "upd"
algorithm = "hmac-sha256"
secret = %q

[[acl]]
name = "upd"
key = ["upd"]
action = ["update"]

[[acl]]
name = "local"
address = ["127.0.0.0/8"]
action = ["transfer"]

[[zone]]
origin = "dyn.test"
file = "dyn.zone"
acl = ["upd", "local"]
zonefile-sync = %q
%s`, updSecret, sync, more)), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, zoneFile
}

// updServe starts tern serve with cfg on host and returns its address,
// log and stop function.
func updServe(t *testing.T, cfg, host string) (string, *dnstest.LogBuffer, func()) {
	t.Helper()
	return serveStoppable(t, serveAddr, "-c", cfg, "--listen", host+":0", "--workers", "1")
}

// runUpdate runs an update client (nsupdate, knsupdate) with script on
// its standard input and returns its output and error.
func runUpdate(t *testing.T, tool string, args []string, addr, script string) (string, error) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(tool, args...)
	cmd.Stdin = strings.NewReader(fmt.Sprintf("server %s %s\nzone dyn.test.\n%ssend\n", host, port, script))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// updLookup returns the records of name and qtype served at addr, as
// dnstest.Records prints them.
func updLookup(t *testing.T, addr, name string, qtype uint16) []string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	r, err := dnstest.Exchange(m, "udp", addr)
	if err != nil {
		t.Fatalf("%s %s: %v", name, dns.Type(qtype), err)
	}
	return dnstest.Records(r.Answer)
}

// updSerial is the serial served at addr.
func updSerial(t *testing.T, addr string) uint32 {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion("dyn.test.", dns.TypeSOA)
	r, err := dnstest.Exchange(m, "udp", addr)
	if err != nil || len(r.Answer) != 1 {
		t.Fatalf("SOA: %v %v", r, err)
	}
	return r.Answer[0].(*dns.SOA).Serial
}

// waitFile waits (bounded: a loaded machine, not a measure) until the
// zone file holds want (or, with absent, no longer holds it).
func waitFile(t *testing.T, file, want string, absent bool, logs *dnstest.LogBuffer) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		b, err := os.ReadFile(file)
		if err == nil && strings.Contains(string(b), want) != absent {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("zone file (absent %v) %q:\n%s\ntern log:\n%s", absent, want, b, logs.String())
		}
	}
}

// TestNsupdate: BIND's nsupdate adds and deletes records with TSIG; each
// change is served at once (the answer comes after it is journaled), is
// not yet in the zone file while zonefile-sync has not passed, and is
// served after a restart: the stop is graceful, so the zone file is
// written at shutdown and nothing is left to replay (the journal's replay
// after a crash is TestUpdateCrash's). An unsigned update is refused.
func TestNsupdate(t *testing.T) {
	nsupdate := peerTool(t, "nsupdate")
	dir := t.TempDir()
	cfg, zoneFile := updConfig(t, dir, "1h", "")
	addr, logs, stop := updServe(t, cfg, updNsupdate)
	key := []string{"-y", updKeyArg}
	if out, err := runUpdate(t, nsupdate, key, addr, "update add www.dyn.test. 60 A 192.0.2.9\nupdate add www.dyn.test. 60 AAAA 2001:db8::9\nupdate add _acme-challenge.dyn.test. 60 TXT \"token\"\n"); err != nil {
		t.Fatalf("nsupdate: %v\n%s\ntern log:\n%s", err, out, logs.String())
	}
	if got := updLookup(t, addr, "www.dyn.test.", dns.TypeA); len(got) != 1 || !strings.Contains(got[0], "192.0.2.9") {
		t.Fatalf("www A after the update: %q", got)
	}
	if got := updSerial(t, addr); got != 2 {
		t.Errorf("serial %d after one update, want 2", got)
	}
	if b, _ := os.ReadFile(zoneFile); string(b) != updZone {
		t.Errorf("zone file rewritten before zonefile-sync:\n%s", b)
	}
	if out, err := runUpdate(t, nsupdate, nil, addr, "update add evil.dyn.test. 60 A 192.0.2.66\n"); err == nil || !strings.Contains(out, "REFUSED") {
		t.Errorf("unsigned nsupdate: %v\n%s", err, out)
	}
	if out, err := runUpdate(t, nsupdate, key, addr, "update delete www.dyn.test. AAAA\n"); err != nil {
		t.Fatalf("nsupdate delete: %v\n%s", err, out)
	}
	if got := updLookup(t, addr, "www.dyn.test.", dns.TypeAAAA); len(got) != 0 {
		t.Errorf("www AAAA after its deletion: %q", got)
	}
	stop()
	// issue 15's graceful shutdown: the pending zonefile-sync written.
	if b, err := os.ReadFile(zoneFile); err != nil || !strings.Contains(string(b), "192.0.2.9") || strings.Contains(string(b), "2001:db8::9") {
		t.Errorf("zone file after a graceful stop (%v):\n%s", err, b)
	}
	addr, logs, _ = updServe(t, cfg, updNsupdate)
	if got := updLookup(t, addr, "www.dyn.test.", dns.TypeA); len(got) != 1 {
		t.Errorf("www A after a restart: %q\ntern log:\n%s", got, logs.String())
	}
	if got := updLookup(t, addr, "www.dyn.test.", dns.TypeAAAA); len(got) != 0 {
		t.Errorf("www AAAA after a restart: %q", got)
	}
	if got := updLookup(t, addr, "evil.dyn.test.", dns.TypeA); len(got) != 0 {
		t.Errorf("a refused update served: %q", got)
	}
	if got := updSerial(t, addr); got != 3 {
		t.Errorf("serial %d after a restart, want 3", got)
	}
	if strings.Contains(logs.String(), "replayed over the file") {
		t.Errorf("a replay after a graceful stop (the file was not written):\n%s", logs.String())
	}
}

// TestKnsupdate: Knot's knsupdate adds and deletes records with TSIG;
// with zonefile-sync 0 the zone file holds each change soon after, and a
// restart serves what the file holds.
func TestKnsupdate(t *testing.T) {
	knsupdate := peerTool(t, "knsupdate")
	dir := t.TempDir()
	cfg, zoneFile := updConfig(t, dir, "0s", "")
	addr, logs, stop := updServe(t, cfg, updKnsupdate)
	key := []string{"-y", updKeyArg}
	if out, err := runUpdate(t, knsupdate, key, addr, "update add host.dyn.test. 120 TXT \"hello\"\nupdate add alias.dyn.test. 120 CNAME host.dyn.test.\n"); err != nil {
		t.Fatalf("knsupdate: %v\n%s\ntern log:\n%s", err, out, logs.String())
	}
	if got := updLookup(t, addr, "alias.dyn.test.", dns.TypeTXT); len(got) != 2 {
		t.Fatalf("alias TXT after the update: %q", got)
	}
	waitFile(t, zoneFile, "alias.dyn.test.\t120\tIN\tCNAME\thost.dyn.test.", false, logs)
	// A prerequisite that fails changes nothing (RFC 2136 §3.2).
	if out, err := runUpdate(t, knsupdate, key, addr, "prereq nxdomain host.dyn.test.\nupdate add other.dyn.test. 60 A 192.0.2.1\n"); err == nil || !strings.Contains(out, "YXDOMAIN") {
		t.Errorf("knsupdate with a failing prerequisite: %v\n%s", err, out)
	}
	if out, err := runUpdate(t, knsupdate, key, addr, "prereq yxdomain host.dyn.test.\nupdate delete alias.dyn.test.\n"); err != nil {
		t.Fatalf("knsupdate delete: %v\n%s", err, out)
	}
	if got := updLookup(t, addr, "alias.dyn.test.", dns.TypeTXT); len(got) != 0 {
		t.Errorf("alias after its deletion: %q", got)
	}
	waitFile(t, zoneFile, "alias.dyn.test.", true, logs)
	waitFile(t, zoneFile, "hostmaster.dyn.test. 3 ", false, logs)
	stop()
	addr, logs, _ = updServe(t, cfg, updKnsupdate)
	if got := updLookup(t, addr, "host.dyn.test.", dns.TypeTXT); len(got) != 1 || updSerial(t, addr) != 3 {
		t.Errorf("after a restart: host TXT %q, serial %d\ntern log:\n%s", got, updSerial(t, addr), logs.String())
	}
	if regexp.MustCompile("replayed").MatchString(logs.String()) {
		t.Errorf("a replay after the file was written:\n%s", logs.String())
	}
}

// TestUpdateKnotSecondary: Knot DNS as a secondary of Tern follows
// dynamic updates by NOTIFY and IXFR (from Tern's journal, not AXFR).
func TestUpdateKnotSecondary(t *testing.T) {
	knotd := peerTool(t, "knotd")
	nsupdate := peerTool(t, "nsupdate")
	dir := t.TempDir()
	knotPort := freePort(t, updKnot)
	cfg, _ := updConfig(t, dir, "0s", fmt.Sprintf("notify = [\"knot\"]\n\n[[remote]]\nname = \"knot\"\naddress = [\"%s:%d\"]\n", updKnot, knotPort))
	addr, logs, _ := updServe(t, cfg, updKnotTern)
	ternHost, ternPort, _ := net.SplitHostPort(addr)
	kdir := filepath.Join(dir, "knot")
	if err := os.MkdirAll(filepath.Join(kdir, "db"), 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(kdir, "knot.conf")
	if err := os.WriteFile(conf, []byte(knotSecondaryOf("dyn.test", updKnot, kdir, knotPort, ternHost, ternPort, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	proc, err := peer.Start(exec.Command(knotd, "-c", conf))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.Stop)
	knot := net.JoinHostPort(updKnot, fmt.Sprint(knotPort))
	// waitKnot waits (bounded) until Knot serves serial.
	waitKnot := func(serial uint32) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			m := new(dns.Msg)
			m.SetQuestion("dyn.test.", dns.TypeSOA)
			r, err := dns.Exchange(m, knot)
			if err == nil && len(r.Answer) == 1 && r.Answer[0].(*dns.SOA).Serial == serial {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Knot does not serve serial %d (%v, %v); its log:\n%s\ntern log:\n%s", serial, r, err, proc.Output(), logs.String())
			}
		}
	}
	waitKnot(1)
	key := []string{"-y", updKeyArg}
	if out, err := runUpdate(t, nsupdate, key, addr, "update add www.dyn.test. 60 A 192.0.2.9\nupdate add _acme-challenge.dyn.test. 60 TXT \"token\"\n"); err != nil {
		t.Fatalf("nsupdate: %v\n%s", err, out)
	}
	waitKnot(2)
	if got := updLookup(t, knot, "www.dyn.test.", dns.TypeA); len(got) != 1 {
		t.Errorf("Knot's www A: %q", got)
	}
	if out, err := runUpdate(t, nsupdate, key, addr, "update delete _acme-challenge.dyn.test. TXT \"token\"\n"); err != nil {
		t.Fatalf("nsupdate: %v\n%s", err, out)
	}
	waitKnot(3)
	if got := updLookup(t, knot, "_acme-challenge.dyn.test.", dns.TypeTXT); len(got) != 0 {
		t.Errorf("Knot's _acme-challenge TXT after its deletion: %q", got)
	}
	out := proc.Output()
	if n := strings.Count(out, "[dyn.test.] IXFR, incoming"); n < 2 || strings.Contains(out, "fallback to AXFR") {
		t.Errorf("Knot took %d IXFRs, want 2; its log:\n%s", n, out)
	}
}

// certbotExchange makes what certbot's dns-rfc2136 plugin sends (its
// _RFC2136Client, certbot 2.1): TSIG-signed SOA queries over TCP for the
// record's name and each parent until an authoritative SOA answers, then
// a TSIG-signed UPDATE over TCP of that zone adding (or deleting, class
// NONE) the TXT record.
func certbotExchange(t *testing.T, addr, name, content string, add bool) {
	t.Helper()
	c := &dns.Client{Net: "tcp", Timeout: 10 * time.Second, TsigSecret: map[string]string{"upd.": updSecret}}
	zone := ""
	for n := name; zone == "" && n != "."; {
		m := new(dns.Msg)
		m.SetQuestion(n, dns.TypeSOA)
		m.RecursionDesired = false
		m.SetTsig("upd.", dns.HmacSHA256, 300, time.Now().Unix())
		r, _, err := c.Exchange(m, addr)
		if err != nil {
			t.Fatalf("SOA %s: %v", n, err)
		}
		if r.Rcode == dns.RcodeSuccess && r.Authoritative && len(r.Answer) == 1 && r.Answer[0].Header().Rrtype == dns.TypeSOA {
			zone = n
		}
		i, _ := dns.NextLabel(n, 0)
		n = n[i:]
	}
	if zone != "dyn.test." {
		t.Fatalf("zone found %q, want dyn.test.", zone)
	}
	m := new(dns.Msg)
	m.SetUpdate(zone)
	rr, err := dns.NewRR(fmt.Sprintf("%s 300 TXT %q", name, content))
	if err != nil {
		t.Fatal(err)
	}
	if add {
		m.Insert([]dns.RR{rr})
	} else {
		m.Remove([]dns.RR{rr})
	}
	m.SetTsig("upd.", dns.HmacSHA256, 300, time.Now().Unix())
	r, _, err := c.Exchange(m, addr)
	if err != nil || r.Rcode != dns.RcodeSuccess {
		t.Fatalf("UPDATE (add %v): %v %v", add, r, err)
	}
}

// TestCertbotExchange: the exchange of certbot's dns-rfc2136 plugin, made
// by the test, creates the _acme-challenge TXT record a DNS-01
// challenge needs (two of them at once, as for a name and its wildcard)
// and removes each.
func TestCertbotExchange(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := updConfig(t, dir, "0s", "")
	addr, _, _ := updServe(t, cfg, updCertbot)
	name := "_acme-challenge.www.dyn.test."
	certbotExchange(t, addr, name, "token-one", true)
	certbotExchange(t, addr, name, "token-two", true)
	if got := updLookup(t, addr, name, dns.TypeTXT); len(got) != 2 {
		t.Fatalf("TXT after two adds: %q", got)
	}
	certbotExchange(t, addr, name, "token-one", false)
	if got := updLookup(t, addr, name, dns.TypeTXT); len(got) != 1 || !strings.Contains(got[0], "token-two") {
		t.Fatalf("TXT after one deletion: %q", got)
	}
	certbotExchange(t, addr, name, "token-two", false)
	if got := updLookup(t, addr, name, dns.TypeTXT); len(got) != 0 {
		t.Fatalf("TXT after both deletions: %q", got)
	}
}

// certbotScript drives Debian's python3-certbot-dns-rfc2136 (certbot
// 2.1) as certbot does during a DNS-01 challenge: its client adds the
// TXT record, then deletes it.
const certbotScript = `
import sys
from certbot_dns_rfc2136._internal.dns_rfc2136 import _RFC2136Client
import dns.tsig
server, port, secret, op, name, content = sys.argv[1:7]
c = _RFC2136Client(server, int(port), "upd", secret, dns.tsig.HMAC_SHA256, 10)
if op == "add":
    c.add_txt_record(name, content, 300)
else:
    c.del_txt_record(name, content)
`

// TestCertbotPlugin runs certbot's own dns-rfc2136 client code (Debian's
// python3-certbot-dns-rfc2136) against Tern: the TXT record is created
// and removed.
func TestCertbotPlugin(t *testing.T) {
	python := "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import certbot_dns_rfc2136._internal.dns_rfc2136").Run(); err != nil {
		if os.Getenv("TERN_REQUIRE_PEERS") == "1" {
			t.Fatalf("python3-certbot-dns-rfc2136 not installed: %v", err)
		}
		t.Skipf("python3-certbot-dns-rfc2136 not installed: %v", err)
	}
	dir := t.TempDir()
	cfg, _ := updConfig(t, dir, "0s", "")
	addr, logs, _ := updServe(t, cfg, updCertbotPy)
	host, port, _ := net.SplitHostPort(addr)
	name := "_acme-challenge.www.dyn.test."
	certbot := func(op string) {
		t.Helper()
		out, err := exec.Command(python, "-c", certbotScript, host, port, updSecret, op, name, "certbot-token").CombinedOutput()
		if err != nil {
			t.Fatalf("certbot client %s: %v\n%s\ntern log:\n%s", op, err, out, logs.String())
		}
	}
	certbot("add")
	if got := updLookup(t, addr, name, dns.TypeTXT); len(got) != 1 || !strings.Contains(got[0], "certbot-token") {
		t.Fatalf("TXT after certbot's add: %q", got)
	}
	certbot("delete")
	if got := updLookup(t, addr, name, dns.TypeTXT); len(got) != 0 {
		t.Fatalf("TXT after certbot's delete: %q", got)
	}
}
