package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/peer"
)

// BIND as a primary of Tern: named on 127.0.0.1 (named listens only on
// the addresses of interfaces, and lo has 127.0.0.1 alone), the Tern
// secondary on 127.0.0.106 of issue 13's block; kernel-picked ports.
const (
	bindAddrIP    = "127.0.0.1"
	bindSecondary = "127.0.0.106"
	// knotPrimaryIP is Knot's, as the primary of the same kind of test
	// (TestKnotPrimaryIXFR): Knot listens on any address.
	knotPrimaryIP = "127.0.0.104"
)

// bindZone writes sec.test with serial: www's address and a TXT record
// say the serial, and hosts serial..serial+9 exist, so that each change
// adds a name, deletes one and changes two RRsets. The refresh is an
// hour: only a NOTIFY makes the secondary look.
func bindZone(t *testing.T, path string, serial int) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "$ORIGIN sec.test.\n$TTL 300\n@ SOA ns1 h %d 3600 600 86400 300\n@ NS ns1\nns1 A 192.0.2.1\nwww A 192.0.2.%d\ntxt TXT \"serial %d\"\n", serial, serial, serial)
	for i := serial; i < serial+10; i++ {
		fmt.Fprintf(&b, "host%d A 10.0.0.%d\n", i, i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// bindQuestions are the questions whose answers Tern and BIND must
// agree on after each change: the apex, changed RRsets, hosts added
// and deleted, a name that never exists.
func bindQuestions() []dns.Question {
	q := []dns.Question{
		{Name: "sec.test.", Qtype: dns.TypeSOA},
		{Name: "sec.test.", Qtype: dns.TypeNS},
		{Name: "www.sec.test.", Qtype: dns.TypeA},
		{Name: "txt.sec.test.", Qtype: dns.TypeTXT},
		{Name: "www.sec.test.", Qtype: dns.TypeAAAA},
		{Name: "nothere.sec.test.", Qtype: dns.TypeA},
	}
	for i := range 16 {
		q = append(q, dns.Question{Name: fmt.Sprintf("host%d.sec.test.", i), Qtype: dns.TypeA})
	}
	for i := range q {
		q[i].Qclass = dns.ClassINET
	}
	return q
}

// answerText is what of an answer two servers must agree on: rcode, AA,
// and the answer and authority sections, each sorted.
func answerText(r *dns.Msg) string {
	section := func(rrs []dns.RR) string {
		s := make([]string, len(rrs))
		for i, rr := range rrs {
			s[i] = rr.String()
		}
		slices.Sort(s)
		return strings.Join(s, "\n")
	}
	return fmt.Sprintf("%s aa=%v\nanswer:\n%s\nauthority:\n%s", dns.RcodeToString[r.Rcode], r.Authoritative, section(r.Answer), section(r.Ns))
}

// sameAnswers asks both servers every bindQuestions and fails on the
// first difference.
func sameAnswers(t *testing.T, what, tern, other string) {
	t.Helper()
	for _, q := range bindQuestions() {
		m := new(dns.Msg)
		m.Question = []dns.Question{q}
		a, err := dnstest.Exchange(m, "udp", tern)
		if err != nil {
			t.Fatalf("%s: tern: %v", what, err)
		}
		b, err := dnstest.Exchange(m, "udp", other)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if x, y := answerText(a), answerText(b); x != y {
			t.Errorf("%s: %s %s: tern answers\n%s\nthe primary answers\n%s", what, q.Name, dns.TypeToString[q.Qtype], x, y)
		}
	}
}

// waitLog waits up to a minute for re to match logs n times.
func waitLog(t *testing.T, logs fmt.Stringer, re *regexp.Regexp, n int, also func() string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); len(re.FindAllString(logs.String(), -1)) < n; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d times %s: never; log:\n%s\n%s", n, re, logs.String(), also())
		}
	}
}

// primaryPeer is another server as the primary of a Tern secondary of
// sec.test: followPrimary drives it through changes.
type primaryPeer struct {
	// addr is where it answers.
	addr string
	// start starts it (again) serving the zone file.
	start func() *peer.Process
	// reload makes it load the changed zone file, keeping the
	// difference for IXFR.
	reload func(*peer.Process) error
	// forget drops its history of differences, while it is stopped.
	forget func() error
	// ixfrOut matches its log's line of an incremental transfer sent.
	ixfrOut *regexp.Regexp
}

// followPrimary: a Tern secondary on secPort (acl: NOTIFY from the
// primary, signed with key xfr when signed) takes the zone whole, then
// follows two changes told by the primary's NOTIFY (the SOA refresh is
// an hour), each by IXFR, and a third made while the primary was down
// with its history dropped, which it answers in AXFR form (its history
// does not reach back to Tern's serial). After each, every question is
// answered as the primary answers it.
func followPrimary(t *testing.T, pp primaryPeer, zoneFile string, secPort int, signed bool) {
	proc := pp.start()
	peerLog := func() string {
		state := "running"
		if proc.Exited() {
			state = fmt.Sprintf("exited: %v", proc.Err())
		}
		return fmt.Sprintf("the primary (%s), its log:\n%s", state, proc.Output())
	}
	ternKey := ""
	if signed {
		ternKey = "key = \"xfr\"\n"
	}
	cfg := filepath.Join(t.TempDir(), "tern.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(secHeader+`
[[remote]]
name = "ns1"
address = [%q]
%s
[[acl]]
name = "from-ns1"
remote = ["ns1"]
action = ["notify"]

[[zone]]
origin = "sec.test"
primary = ["ns1"]
acl = ["from-ns1"]
`, xfrSecret, pp.addr, ternKey)), 0o644); err != nil {
		t.Fatal(err)
	}
	saddr, logs := serveLog(t, "-c", cfg, "--listen", fmt.Sprintf("%s:%d", bindSecondary, secPort), "--workers", "1")
	t.Cleanup(func() {
		if t.Failed() || testing.Verbose() {
			t.Logf("tern's log:\n%s\n%s", logs.String(), peerLog())
		}
	})
	// The primary may start after Tern's first try: Tern retries (30s
	// without a copy), within secWaitFor's minute.
	secWaitFor(t, saddr, "192.0.2.1")
	sameAnswers(t, "serial 1", saddr, pp.addr)

	// Two changes, each by NOTIFY and IXFR (serial n-1 to n).
	for serial := 2; serial <= 3; serial++ {
		bindZone(t, zoneFile, serial)
		if err := pp.reload(proc); err != nil {
			t.Fatalf("reload: %v\n%s", err, peerLog())
		}
		secWaitFor(t, saddr, fmt.Sprintf("192.0.2.%d", serial))
		ixfr := regexp.MustCompile(fmt.Sprintf(`transferred serial %d" zone=sec.test. .*how=IXFR `, serial))
		if !ixfr.MatchString(logs.String()) {
			t.Errorf("serial %d not by IXFR:\n%s\n%s", serial, logs.String(), peerLog())
		}
		sameAnswers(t, fmt.Sprintf("serial %d", serial), saddr, pp.addr)
	}
	if n := strings.Count(logs.String(), "refresh requested"); n < 2 {
		t.Errorf("%d refreshes requested, want one per NOTIFY:\n%s", n, logs.String())
	}
	if !pp.ixfrOut.MatchString(proc.Output()) {
		t.Errorf("the primary logs no IXFR out:\n%s", peerLog())
	}

	// Serial 4 while the primary is down, its history dropped: started
	// again, it answers the IXFR from 3 with the whole zone. Tern is told
	// by its NOTIFY, or by tern ctl refresh once it answers.
	proc.Stop()
	if err := pp.forget(); err != nil {
		t.Fatalf("dropping the primary's history: %v", err)
	}
	bindZone(t, zoneFile, 4)
	proc = pp.start()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		m := new(dns.Msg)
		m.SetQuestion("sec.test.", dns.TypeSOA)
		if r, err := dnstest.Exchange(m, "udp", pp.addr); err == nil && len(r.Answer) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the primary does not answer again:\n%s", peerLog())
		}
	}
	if code, out, errs := runT("ctl", "-c", cfg, "refresh", "sec.test"); code != 0 {
		t.Fatalf("ctl refresh: %d %q %q", code, out, errs)
	}
	secWaitFor(t, saddr, "192.0.2.4")
	waitLog(t, logs, regexp.MustCompile(`transferred serial 4" zone=sec.test. .*how="IXFR, whole zone"`), 1, peerLog)
	sameAnswers(t, "serial 4", saddr, pp.addr)
}

// TestBINDPrimary: BIND 9 (named, ixfr-from-differences) as the primary
// of a Tern secondary, without and with TSIG (followPrimary); its
// history is its journal, a change is a SIGHUP.
func TestBINDPrimary(t *testing.T) {
	for _, signed := range []bool{false, true} {
		name := "unsigned"
		if signed {
			name = "TSIG"
		}
		t.Run(name, func(t *testing.T) { followBIND(t, signed) })
	}
}

func followBIND(t *testing.T, signed bool) {
	named := peerTool(t, "named")
	dir := t.TempDir()
	bindPort := freePort(t, bindAddrIP)
	secPort := freePort(t, bindSecondary)
	zoneFile := filepath.Join(dir, "sec.test.zone")
	bindZone(t, zoneFile, 1)

	keyed, allow := "", "127.0.0.1;"
	if signed {
		keyed = " key xfr"
		allow = "key xfr;"
	}
	conf := filepath.Join(dir, "named.conf")
	text := peer.NamedOptions(dir, bindAddrIP, bindPort,
		// Answers without the NS set in authority, as Tern (and Knot)
		// answer: the sections compared are then the same.
		"minimal-responses yes;",
		"notify explicit;",
		fmt.Sprintf("also-notify { %s port %d%s; };", bindSecondary, secPort, keyed),
		fmt.Sprintf("notify-source %s;", bindAddrIP),
		"ixfr-from-differences yes;",
		fmt.Sprintf("allow-transfer { %s };", allow)) +
		fmt.Sprintf("key \"xfr\" { algorithm hmac-sha256; secret %q; };\nzone \"sec.test\" { type primary; file %q; };\n", xfrSecret, zoneFile)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	followPrimary(t, primaryPeer{
		addr: fmt.Sprintf("%s:%d", bindAddrIP, bindPort),
		start: func() *peer.Process {
			proc, err := peer.Start(exec.Command(named, "-g", "-n", "1", "-c", conf))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(proc.Stop)
			return proc
		},
		reload:  func(p *peer.Process) error { return p.Signal(syscall.SIGHUP) },
		forget:  func() error { return os.Remove(zoneFile + ".jnl") },
		ixfrOut: regexp.MustCompile(`transfer of 'sec.test/IN': IXFR ended`),
	}, zoneFile, secPort, signed)
}

// TestKnotPrimaryIXFR: Knot DNS as the primary of a Tern secondary,
// without and with TSIG (followPrimary), its zone loaded by difference
// (zonefile-load: difference; journal-content: all, as the difference is
// taken against the zone kept in the journal): a change is
// knotc zone-reload, its history its journal (the database directory).
func TestKnotPrimaryIXFR(t *testing.T) {
	for _, signed := range []bool{false, true} {
		name := "unsigned"
		if signed {
			name = "TSIG"
		}
		t.Run(name, func(t *testing.T) { followKnot(t, signed) })
	}
}

func followKnot(t *testing.T, signed bool) {
	knotd := peerTool(t, "knotd")
	knotc := peerTool(t, "knotc")
	dir := t.TempDir()
	knotPort := freePort(t, knotPrimaryIP)
	secPort := freePort(t, bindSecondary)
	zoneFile := filepath.Join(dir, "sec.test.zone")
	bindZone(t, zoneFile, 1)
	conf := filepath.Join(dir, "knot.conf")
	sock := filepath.Join(dir, "knot.sock")
	text := knotPrimaryConf(dir, fmt.Sprintf("%s@%d", knotPrimaryIP, knotPort), sock, fmt.Sprintf("%s@%d", bindSecondary, secPort), knotPrimaryIP, signed,
		"zonefile-load: difference", "journal-content: all")
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	followPrimary(t, primaryPeer{
		addr: fmt.Sprintf("%s:%d", knotPrimaryIP, knotPort),
		start: func() *peer.Process {
			// Knot keeps its journal there, and does not make it.
			if err := os.MkdirAll(filepath.Join(dir, "db"), 0o755); err != nil {
				t.Fatal(err)
			}
			proc, err := peer.Start(exec.Command(knotd, "-c", conf))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(proc.Stop)
			return proc
		},
		reload: func(*peer.Process) error {
			var out []byte
			var err error
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if out, err = exec.Command(knotc, "-s", sock, "zone-reload", "sec.test").CombinedOutput(); err == nil {
					return nil
				}
			}
			return fmt.Errorf("knotc zone-reload: %v: %s", err, out)
		},
		forget:  func() error { return os.RemoveAll(filepath.Join(dir, "db")) },
		ixfrOut: regexp.MustCompile(`\[sec\.test\.\] IXFR, outgoing, remote [^,]+, started, serial 2 -> 3`),
	}, zoneFile, secPort, signed)
}
