package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest"
)

// trustAnchor writes a delv trust-anchors file with the KSKs in a zone file.
func trustAnchor(t *testing.T, origin, file string) string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	b.WriteString("trust-anchors {\n")
	zp := dns.NewZoneParser(f, origin, file)
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		if k, isKey := rr.(*dns.DNSKEY); isKey && k.Flags&1 == 1 {
			fmt.Fprintf(&b, "  %s static-key %d %d %d \"%s\";\n", origin, k.Flags, k.Protocol, k.Algorithm, k.PublicKey)
		}
	}
	b.WriteString("};\n")
	path := filepath.Join(t.TempDir(), "anchors.conf")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestValidatesInDelv checks, with BIND's delv as an independent
// validator, that signed answers from the running server are secure and
// that its denials prove what they claim: NSEC and NSEC3 (opt-out) zones,
// positive, wildcard, NXDOMAIN, NODATA, empty non-terminal and no-DS.
// The fixtures were signed by 'tern zone sign' until 2036.
func TestValidatesInDelv(t *testing.T) {
	delv, err := exec.LookPath("delv")
	if err != nil {
		if os.Getenv("TERN_REQUIRE_PEERS") == "1" {
			t.Fatal("delv not installed (bind9-dnsutils)")
		}
		t.Skip("delv not installed")
	}
	const td = "../../internal/auth/testdata/"
	addr := serve(t, "--listen", "127.0.0.1:0",
		"--zone", "signed.test="+td+"signed.test.zone", "--zone", "nsec3.test="+td+"nsec3.test.zone")
	host, port, _ := strings.Cut(addr, ":")
	for _, origin := range []string{"signed.test.", "nsec3.test."} {
		anchors := trustAnchor(t, origin, td+strings.TrimSuffix(origin, ".")+".zone")
		wildcard := "; fully validated"
		if origin == "nsec3.test." {
			// RFC 5155 §6, §8.8: the NSEC3 covering the next closer name
			// has the Opt-Out flag, so it cannot prove that no insecure
			// delegation exists there; validators call the wildcard
			// answer insecure (Knot's answer is the same).
			wildcard = "; unsigned answer"
		}
		for _, tc := range []struct {
			name, qtype, want string
		}{
			{"www", "A", "; fully validated"},
			{"alias", "A", "; fully validated"},
			{"x.w", "A", wildcard},
			{"nope", "A", "; negative response, fully validated"},
			{"a.nope", "AAAA", "; negative response, fully validated"},
			{"www", "MX", "; negative response, fully validated"},
			{"b", "A", "; negative response, fully validated"},
			{"x.w", "MX", "; negative response, fully validated"},
			{"insecure", "DS", "; negative response, fully validated"},
			{"secure", "DS", "; fully validated"},
			{"@", "DNSKEY", "; fully validated"},
		} {
			qname := origin
			if tc.name != "@" {
				qname = tc.name + "." + origin
			}
			out, err := exec.Command(delv, "@"+host, "-p", port, "-a", anchors, "+root="+origin,
				"+nomtrace", "+norrcomments", qname, tc.qtype).CombinedOutput()
			if err != nil && !strings.Contains(string(out), "resolution failed") {
				t.Errorf("%s %s: delv: %v\n%s", qname, tc.qtype, err, out)
				continue
			}
			if !strings.Contains(string(out), tc.want+"\n") {
				t.Errorf("%s %s: delv did not report %q:\n%s", qname, tc.qtype, tc.want, out)
			}
		}
	}
}

// TestAutoSignedZoneValidates serves a zone with a signing policy and
// checks its answers in delv, with the served KSK as trust anchor.
func TestAutoSignedZoneValidates(t *testing.T) {
	delv, err := exec.LookPath("delv")
	if err != nil {
		if os.Getenv("TERN_REQUIRE_PEERS") == "1" {
			t.Fatal("delv not installed (bind9-dnsutils)")
		}
		t.Skip("delv not installed")
	}
	dir := t.TempDir()
	zoneFile := filepath.Join(dir, "auto.test.zone")
	os.WriteFile(zoneFile, []byte("$ORIGIN auto.test.\n$TTL 300\n@ SOA ns1 h 1 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\nwww A 192.0.2.80\n"), 0o644)
	cfg := filepath.Join(dir, "tern.toml")
	os.WriteFile(cfg, []byte(`[server]
listen = ["127.0.0.1:0"]
workers = 1
[[zone]]
origin = "auto.test"
file = "auto.test.zone"
[zone.signing]
key-dir = "keys"
nsec3 = true
`), 0o644)
	addr := serve(t, "-c", cfg)
	host, port, _ := strings.Cut(addr, ":")
	m := new(dns.Msg)
	m.SetQuestion("auto.test.", dns.TypeDNSKEY)
	m.SetEdns0(4096, true)
	r, err := dnstest.Exchange(m, "udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var anchors strings.Builder
	anchors.WriteString("trust-anchors {\n")
	for _, rr := range r.Answer {
		if k, ok := rr.(*dns.DNSKEY); ok && k.Flags&1 == 1 {
			fmt.Fprintf(&anchors, "  auto.test. static-key %d %d %d \"%s\";\n", k.Flags, k.Protocol, k.Algorithm, k.PublicKey)
		}
	}
	anchors.WriteString("};\n")
	af := filepath.Join(dir, "anchors.conf")
	os.WriteFile(af, []byte(anchors.String()), 0o644)
	for _, q := range []struct{ name, qtype, want string }{
		{"www.auto.test.", "A", "; fully validated"},
		{"nope.auto.test.", "A", "; negative response, fully validated"},
		{"www.auto.test.", "TXT", "; negative response, fully validated"},
	} {
		out, _ := exec.Command(delv, "@"+host, "-p", port, "-a", af, "+root=auto.test.", q.name, q.qtype).CombinedOutput()
		if !strings.Contains(string(out), q.want+"\n") {
			t.Errorf("%s %s: delv did not report %q:\n%s", q.name, q.qtype, q.want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "keys", "auto.test.signed")); err != nil {
		t.Errorf("no signed copy kept: %v", err)
	}
}
