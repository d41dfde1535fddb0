package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/peer"
)

// Zone transfer interop, on issue 13's loopback block: Tern on
// 127.0.0.110, clients bound to 127.0.0.111 (allowed by address) and
// 127.0.0.112 (not allowed unsigned), a Knot secondary on 127.0.0.113,
// an NSD one on 127.0.0.114.
const (
	xfrTern     = "127.0.0.110"
	xfrAllowed  = "127.0.0.111"
	xfrOther    = "127.0.0.112"
	xfrKnot     = "127.0.0.113"
	xfrNSD      = "127.0.0.114"
	xfrSecret   = "c2VjcmV0IGtleSBmb3IgdGhlIGV4YW1wbGUgb25seQ=="
	xfrKeyArg   = "hmac-sha256:xfr:" + xfrSecret
	nsec3Zone   = "../../internal/auth/testdata/nsec3.test.zone"
	bigXfrNames = 3000
)

// peerTool returns the path of a peer's program, skipping the test when
// it is missing, or failing it under TERN_REQUIRE_PEERS=1 (make test).
func peerTool(t *testing.T, name string) string {
	t.Helper()
	if p, ok := peer.FindTool(name); ok {
		return p
	}
	if os.Getenv("TERN_REQUIRE_PEERS") == "1" {
		t.Fatalf("%s not installed", name)
	}
	t.Skipf("%s not installed", name)
	return ""
}

// xfrServe starts tern serve with two zones to transfer: big.test
// (bigXfrNames names, several messages) and the signed nsec3.test, both
// allowed to xfrAllowed unsigned and to anyone with key xfr. It returns
// the address and the zone files.
func xfrServe(t *testing.T) (string, map[string]string, *dnstest.LogBuffer) {
	t.Helper()
	dir := t.TempDir()
	var z bytes.Buffer
	z.WriteString("$ORIGIN big.test.\n$TTL 300\n@ SOA ns1 hostmaster 2026120301 3600 600 86400 300\n@ NS ns1\nns1 A 192.0.2.1\n")
	for i := range bigXfrNames {
		fmt.Fprintf(&z, "host%d A 10.0.%d.%d\n", i, i>>8, i&255)
		fmt.Fprintf(&z, "host%d TXT \"record %d of the big zone\"\n", i, i)
	}
	big := filepath.Join(dir, "big.test.zone")
	if err := os.WriteFile(big, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	nsec3, err := filepath.Abs(nsec3Zone)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "tern.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
[server]
data-dir = "data"

[[key]]
name = "xfr"
algorithm = "hmac-sha256"
secret = %q

[[acl]]
name = "by-address"
address = [%q]
action = ["transfer"]

[[acl]]
name = "by-key"
key = ["xfr"]
action = ["transfer"]

[[zone]]
origin = "big.test"
file = %q
acl = ["by-address", "by-key"]

[[zone]]
origin = "nsec3.test"
file = %q
acl = ["by-address", "by-key"]
`, xfrSecret, xfrAllowed, big, nsec3)), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, logs := serveLog(t, "-c", cfg, "--listen", xfrTern+":0", "--workers", "1")
	return addr, map[string]string{"big.test.": big, "nsec3.test.": nsec3}, logs
}

// zoneRecords is dnstest.ZoneRecords, failing the test on an error.
func zoneRecords(t *testing.T, file, origin string) []string {
	t.Helper()
	recs, err := dnstest.ZoneRecords(file, origin)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// transferred parses the records a kdig or dig AXFR printed: the SOA
// first and last (the last left out), TSIGs left out, sorted.
func transferred(t *testing.T, out string) []string {
	t.Helper()
	var rrs []dns.RR
	for _, line := range strings.Split(out, "\n") {
		// TSIG records have no presentation format miekg/dns reads.
		if line == "" || strings.HasPrefix(line, ";") || strings.Contains(line, "\tTSIG\t") {
			continue
		}
		rr, err := dns.NewRR(line)
		if err != nil || rr == nil {
			t.Fatalf("unreadable line %q: %v", line, err)
		}
		rrs = append(rrs, rr)
	}
	if len(rrs) < 2 || rrs[0].Header().Rrtype != dns.TypeSOA || rrs[len(rrs)-1].Header().Rrtype != dns.TypeSOA {
		t.Fatalf("not an AXFR: %d records\n%s", len(rrs), out)
	}
	return dnstest.Records(rrs[:len(rrs)-1])
}

func sameZone(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") == strings.Join(want, "\n") {
		return
	}
	in := map[string]bool{}
	for _, s := range got {
		in[s] = true
	}
	missing := 0
	for _, s := range want {
		if !in[s] {
			if missing < 5 {
				t.Errorf("%s: missing %s", what, s)
			}
			missing++
		}
	}
	t.Errorf("%s: %d records, want %d (%d missing)", what, len(got), len(want), missing)
}

// TestAXFRWithKdigAndDig transfers the zones out with kdig and dig, by
// address and by TSIG key, and checks who is refused.
func TestAXFRWithKdigAndDig(t *testing.T) {
	kdig := peerTool(t, "kdig")
	dig := peerTool(t, "dig")
	addr, files, _ := xfrServe(t)
	host, port, _ := net.SplitHostPort(addr)
	for _, tc := range []struct {
		name   string
		tool   string
		args   []string
		origin string
		ok     bool
	}{
		{"kdig, allowed address", kdig, []string{"-b", xfrAllowed}, "big.test.", true},
		{"kdig, allowed address, signed zone", kdig, []string{"-b", xfrAllowed}, "nsec3.test.", true},
		{"kdig, other address", kdig, []string{"-b", xfrOther}, "big.test.", false},
		{"kdig, other address with the key", kdig, []string{"-b", xfrOther, "-y", xfrKeyArg}, "big.test.", true},
		{"kdig, wrong key", kdig, []string{"-b", xfrAllowed, "-y", "hmac-sha256:xfr:b3RoZXIgc2VjcmV0IG9mIHRoZSBzYW1lIGxlbmd0aCEh"}, "big.test.", false},
		{"dig, allowed address", dig, []string{"-b", xfrAllowed, "+nocmd", "+nostats"}, "big.test.", true},
		{"dig, other address with the key", dig, []string{"-b", xfrOther, "-y", xfrKeyArg, "+nocmd", "+nostats"}, "nsec3.test.", true},
		{"dig, other address", dig, []string{"-b", xfrOther, "+nocmd", "+nostats"}, "big.test.", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			if tc.tool == kdig {
				args = append([]string{"@" + host, "-p", port, "+tcp"}, tc.args...)
			} else {
				args = append([]string{"@" + host, "-p", port}, tc.args...)
			}
			args = append(args, tc.origin, "AXFR")
			cmd := exec.Command(tc.tool, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			out := stdout.String() + stderr.String()
			if !tc.ok {
				// kdig: "failed to query server"/"REFUSED", dig: "Transfer failed."
				if err == nil && !strings.Contains(out, "REFUSED") && !strings.Contains(out, "Transfer failed") && !strings.Contains(out, "NOTAUTH") && !strings.Contains(out, "BADSIG") {
					t.Fatalf("not refused:\n%s", out)
				}
				return
			}
			if err != nil || strings.Contains(out, "WARNING") || strings.Contains(out, "failed") {
				t.Fatalf("%v:\n%s", err, out)
			}
			sameZone(t, tc.origin, transferred(t, stdout.String()), zoneRecords(t, files[tc.origin], tc.origin))
		})
	}
}

// freePort returns a port that was free on host for TCP and UDP.
func freePort(t *testing.T, host string) int { return dnstest.FreePort(t, host) }

// TestKnotSecondary runs knotd as a secondary of Tern for both zones,
// transferring with TSIG (multi-message, RFC 8945 §5.3.1), and checks
// that Knot then serves what the zone files hold.
func TestKnotSecondary(t *testing.T) {
	knotPath := peerTool(t, "knotd")
	kdig := peerTool(t, "kdig")
	addr, files, logs := xfrServe(t)
	ternHost, ternPort, _ := net.SplitHostPort(addr)
	dir := t.TempDir()
	port := freePort(t, xfrKnot)
	conf := filepath.Join(dir, "knot.conf")
	if err := os.WriteFile(conf, []byte(peer.KnotServer(dir, []string{fmt.Sprintf("%s@%d", xfrKnot, port)}, "info")+fmt.Sprintf(`key:
  - id: xfr
    algorithm: hmac-sha256
    secret: %s
remote:
  - id: tern
    address: %s@%s
    key: xfr
acl:
  - id: local
    address: 127.0.0.0/8
    action: transfer
template:
  - id: default
    storage: %q
    zonefile-sync: -1
    journal-content: none
    master: tern
    acl: local
zone:
  - domain: big.test
  - domain: nsec3.test
`, xfrSecret, ternHost, ternPort, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	knotd, err := peer.Start(exec.Command(knotPath, "-c", conf))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(knotd.Stop)
	knot := net.JoinHostPort(xfrKnot, fmt.Sprint(port))
	for origin, file := range files {
		want := zoneRecords(t, file, origin)
		// Knot fetches the zones at start: wait (bounded) until it
		// serves the SOA.
		deadline := time.Now().Add(60 * time.Second)
		for {
			m := new(dns.Msg)
			m.SetQuestion(origin, dns.TypeSOA)
			r, err := dns.Exchange(m, knot)
			if err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: Knot did not serve the zone within 60 s (%v, %v); knot log:\n%s\ntern log:\n%s", origin, r, err, knotd.Output(), logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		out, err := exec.Command(kdig, "@"+xfrKnot, "-p", fmt.Sprint(port), "+tcp", origin, "AXFR").CombinedOutput()
		if err != nil {
			t.Fatalf("kdig AXFR from Knot: %v\n%s", err, out)
		}
		sameZone(t, "Knot's copy of "+origin, transferred(t, string(out)), want)
	}
	// Knot asked with the key (its remote has one), so every message
	// it took was signed and verified.
	for _, origin := range []string{"big.test.", "nsec3.test."} {
		if !strings.Contains(logs.String(), `msg="AXFR out" zone=`+origin) || !strings.Contains(logs.String(), "key=xfr.") {
			t.Errorf("no signed transfer of %s in tern's log:\n%s", origin, logs.String())
		}
	}
	if strings.Contains(knotd.Output(), "TSIG") || !strings.Contains(knotd.Output(), "[big.test.] AXFR, incoming") {
		t.Errorf("knot log:\n%s", knotd.Output())
	}
}

// TestNSDSecondary runs nsd as a secondary of Tern for both zones, with
// AXFR and TSIG, and checks that NSD then serves what the zone files hold.
func TestNSDSecondary(t *testing.T) {
	nsdPath := peerTool(t, "nsd")
	kdig := peerTool(t, "kdig")
	addr, files, logs := xfrServe(t)
	ternHost, ternPort, _ := net.SplitHostPort(addr)
	dir := t.TempDir()
	port := freePort(t, xfrNSD)
	var zones strings.Builder
	for origin := range files {
		fmt.Fprintf(&zones, "zone:\n    name: %s\n    request-xfr: AXFR %s@%s xfr\n    allow-notify: %s xfr\n    provide-xfr: 127.0.0.0/8 NOKEY\n",
			origin, ternHost, ternPort, ternHost)
	}
	conf := filepath.Join(dir, "nsd.conf")
	text := peer.NSDServer(dir, dir, []string{fmt.Sprintf("%s@%d", xfrNSD, port)}, "verbosity: 2") +
		fmt.Sprintf("key:\n    name: xfr\n    algorithm: hmac-sha256\n    secret: %q\n", xfrSecret) + zones.String()
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	nsd, err := peer.Start(exec.Command(nsdPath, "-d", "-c", conf))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nsd.Stop)
	server := net.JoinHostPort(xfrNSD, fmt.Sprint(port))
	for origin, file := range files {
		deadline := time.Now().Add(60 * time.Second)
		for {
			m := new(dns.Msg)
			m.SetQuestion(origin, dns.TypeSOA)
			r, err := dns.Exchange(m, server)
			if err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1 {
				break
			}
			if time.Now().After(deadline) || nsd.Exited() {
				t.Fatalf("%s: NSD did not serve the zone within 60 s (%v, %v); nsd output:\n%s\ntern log:\n%s", origin, r, err, nsd.Output(), logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		out, err := exec.Command(kdig, "@"+xfrNSD, "-p", fmt.Sprint(port), "+tcp", origin, "AXFR").CombinedOutput()
		if err != nil {
			t.Fatalf("kdig AXFR from NSD: %v\n%s", err, out)
		}
		sameZone(t, "NSD's copy of "+origin, transferred(t, string(out)), zoneRecords(t, file, origin))
		// NSD asked with the key: every message signed and verified.
		if !strings.Contains(logs.String(), `msg="AXFR out" zone=`+origin) || !strings.Contains(logs.String(), "key=xfr.") {
			t.Errorf("no signed transfer of %s in tern's log:\n%s", origin, logs.String())
		}
	}
}
