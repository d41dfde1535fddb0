package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/dnssec"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/zone"
)

// TestResolveCommand: 'tern resolve' through a one-zone hierarchy (a root
// zone served on a loopback port that holds the answer itself) prints the
// answer as dig does, and with --trace the query it sent.
func TestResolveCommand(t *testing.T) {
	z, err := zone.Read(strings.NewReader(`$TTL 3600
. SOA a.root. h.root. 1 7200 3600 1209600 300
. NS a.root.
a.root. A 127.0.0.1
www.test. CNAME w2.test.
w2.test. A 192.0.2.1
`), "root", ".")
	if err != nil {
		t.Fatal(err)
	}
	port, hints := serveRoot(t, z)

	code, out, errs := runT("resolve", "www.test", "--trace", "--root-hints", hints, "--port", port)
	for _, want := range []string{
		";; . NS -> a.root. (127.0.0.1:" + port + ") for zone . [root hint, priming query (RFC 8109)]: answer, 1 records in ",
		";; test. A -> a.root. (127.0.0.1:" + port + ") for zone . [root server, primed; QNAME minimised (RFC 9156)]: NODATA in ",
		";; www.test. A -> a.root. (127.0.0.1:" + port + ") for zone . [root server, primed]: answer, 2 records in ",
		";;    chosen: never asked (estimate 376ms); waited up to 376ms\n",
		";; ->>HEADER<<- opcode: QUERY, status: NOERROR\n",
		";; ANSWER SECTION:\nwww.test.\t3600\tIN\tCNAME\tw2.test.\nw2.test.\t3600\tIN\tA\t192.0.2.1\n",
		" 3 upstream queries\n",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("code %d, out\n%s\nerr %q\nwant %q", code, out, errs, want)
		}
	}

	// Without minimisation, the root is asked the name at once.
	code, out, _ = runT("resolve", "www.test", "--trace", "--no-minimise", "--root-hints", hints, "--port", port)
	if want := ";; www.test. A -> a.root. (127.0.0.1:" + port + ") for zone . [root server, primed]: answer, 2 records in "; code != 0 || !strings.Contains(out, want) || !strings.Contains(out, " 2 upstream queries\n") {
		t.Fatalf("code %d, out\n%s\nwant %q", code, out, want)
	}

	// A forward zone: the root server asked as a forwarder, with RD=1,
	// and never primed.
	code, out, _ = runT("resolve", "www.test", "--trace", "--forward", "test=127.0.0.1:"+port, "--root-hints", hints, "--port", port)
	if want := ";; www.test. A -> forwarder 127.0.0.1:" + port + " (127.0.0.1:" + port + ") for zone test. [forwarder for test.; RD=1]: answer, 2 records in "; code != 0 || !strings.Contains(out, want) || !strings.Contains(out, " 1 upstream queries\n") {
		t.Fatalf("code %d, out\n%s\nwant %q", code, out, want)
	}

	// 0x20: the root server (Tern) echoes the case; the client sees
	// the records in the case it asked.
	code, out, _ = runT("resolve", "www.test", "--0x20", "--root-hints", hints, "--port", port)
	if want := ";; ANSWER SECTION:\nwww.test.\t3600\tIN\tCNAME\tw2.test.\n"; code != 0 || !strings.Contains(out, want) {
		t.Fatalf("code %d, out\n%s\nwant %q", code, out, want)
	}

	// IPv6 only: the root's only address is IPv4.
	code, out, _ = runT("resolve", "www.test", "-6", "--root-hints", hints, "--port", port)
	if code != 1 || !strings.Contains(out, "a.root. (127.0.0.1) not asked: IPv4 off") {
		t.Fatalf("code %d, out\n%s", code, out)
	}

	code, out, _ = runT("resolve", "nx.test.", "MX", "--root-hints", hints, "--port", port)
	if code != 0 || !strings.Contains(out, "status: NXDOMAIN") || !strings.Contains(out, ";; AUTHORITY SECTION:\n.\t300\tIN\tSOA\ta.root.") {
		t.Fatalf("code %d, out\n%s", code, out)
	}

	// Nothing listens on the port of a closed socket: SERVFAIL with why.
	l, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, closed, _ := net.SplitHostPort(l.LocalAddr().String())
	l.Close()
	code, out, _ = runT("resolve", "www.test", "--root-hints", hints, "--port", closed, "--timeout", "2s")
	if code != 1 || !strings.Contains(out, "status: SERVFAIL") || !strings.Contains(out, ";; EDE: 23: www.test.: network error: no server of . answered usefully: 127.0.0.1 unreachable\n") {
		t.Fatalf("code %d, out\n%s", code, out)
	}

	for _, args := range [][]string{{}, {"a", "b", "c"}, {"www.test", "NOTATYPE"}, {"www.test", "--port", "0"},
		{"www.test", "-4", "-6"}, {"www.test", "--forward", "test"}, {"www.test", "--stub", "test=nowhere"}, {"www.test", "--forward", "=127.0.0.1"}} {
		if code, _, _ := runT(append([]string{"resolve"}, args...)...); code != 2 {
			t.Errorf("resolve %q: exit code %d, want 2", args, code)
		}
	}
}

// TestResolveDNSSEC: the authorities are asked with DO, and the RRSIGs
// they send are printed with --dnssec only, as dig +dnssec prints them.
// (The zone has a DNSKEY, so that it is served as signed; nothing is
// validated.)
func TestResolveDNSSEC(t *testing.T) {
	z, err := zone.Read(strings.NewReader(`$TTL 3600
. SOA a.root. h.root. 1 7200 3600 1209600 300
. NS a.root.
. DNSKEY 257 3 13 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw==
a.root. A 127.0.0.1
w2.test. A 192.0.2.1
w2.test. RRSIG A 13 2 3600 20300101000000 20200101000000 1 . AAAA
`), "root", ".")
	if err != nil {
		t.Fatal(err)
	}
	port, hints := serveRoot(t, z)
	const sig = "w2.test.\t3600\tIN\tRRSIG\tA 13 2 3600 20300101000000 20200101000000 1 . AAAA"
	for _, show := range []bool{false, true} {
		args := []string{"resolve", "w2.test", "--root-hints", hints, "--port", port}
		if show {
			args = append(args, "--dnssec")
		}
		code, out, _ := runT(args...)
		if code != 0 || !strings.Contains(out, "w2.test.\t3600\tIN\tA\t192.0.2.1") || strings.Contains(out, sig) != show {
			t.Errorf("--dnssec %v: code %d, want the RRSIG printed %v; out\n%s", show, code, show, out)
		}
	}
}

// serveRoot serves the root zone z on a kernel-picked loopback port until
// the test ends, and returns the port and a root hints file naming
// 127.0.0.1.
func serveRoot(t *testing.T, z *zone.Zone) (port, hints string) {
	t.Helper()
	srv := server.New(server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1}, handler(auth.New(zone.NewSet(z), auth.Options{}), 0, nil, nil))
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	_, port, _ = net.SplitHostPort(srv.Addrs()[0])
	hints = filepath.Join(t.TempDir(), "root.hints")
	if err := os.WriteFile(hints, []byte(". 3600000 NS a.root.\na.root. 3600000 A 127.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return port, hints
}

// TestResolveValidate: --validate with --trust-anchor: a root zone signed
// here (its DS the anchor) validates Secure; a record changed after
// signing is bogus, refused (SERVFAIL, exit 1) with its EDE; without
// --validate the same data is printed.
func TestResolveValidate(t *testing.T) {
	text, ds := signedRootText(t)
	z, err := zone.Read(strings.NewReader(text+"a.root. 3600 IN A 127.0.0.1\n"), "root", ".")
	if err != nil {
		t.Fatal(err)
	}
	port, hints := serveRoot(t, z)
	anchor := filepath.Join(t.TempDir(), "root.key")
	if err := os.WriteFile(anchor, []byte(ds+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		validate bool
		code     int
		want     []string
	}{
		{"w.test", true, 0, []string{"security: secure (AD)", "w.test.\t3600\tIN\tA\t192.0.2.1"}},
		{"bad.test", true, 1, []string{"status: SERVFAIL", "security: bogus, EDE 6"}},
		{"bad.test", false, 0, []string{"status: NOERROR", "bad.test.\t3600\tIN\tA\t192.0.2.66"}},
	} {
		args := []string{"resolve", tc.name, "--root-hints", hints, "--port", port}
		if tc.validate {
			args = append(args, "--validate", "--trust-anchor", anchor)
		}
		code, out, _ := runT(args...)
		for _, w := range tc.want {
			if code != tc.code || !strings.Contains(out, w) {
				t.Errorf("%v: code %d, want %d and %q; out\n%s", args, code, tc.code, w, out)
			}
		}
		if tc.validate && tc.code != 0 && strings.Contains(out, "192.0.2.66") {
			t.Errorf("%v: bogus data printed\n%s", args, out)
		}
	}
}

// signedRootText is a root zone signed now with one Ed25519 key (the
// names w.test. and bad.test., the latter's address changed after
// signing: bogus), in zone-file form, and its key's DS record. a.root.'s
// address is left to the caller (unsigned: the server's address).
func signedRootText(t *testing.T) (text, ds string) {
	t.Helper()
	var rrs []dns.RR
	zp := dns.NewZoneParser(strings.NewReader(`$TTL 3600
. SOA a.root. h.root. 1 7200 3600 1209600 300
. NS a.root.
w.test. A 192.0.2.1
bad.test. A 192.0.2.2
`), ".", "")
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		rrs = append(rrs, rr)
	}
	k, err := dnssec.GenerateKey(".", dns.ZONE|dns.SEP, dns.ED25519, 3600, nil)
	if err != nil {
		t.Fatal(err)
	}
	k.SignZone = true
	signed, err := dnssec.SignZone(context.Background(), rrs, ".", []*dnssec.Key{k}, dnssec.Options{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, rr := range signed {
		if a, ok := rr.(*dns.A); ok && a.Hdr.Name == "bad.test." {
			a.A = net.IPv4(192, 0, 2, 66)
		}
		fmt.Fprintln(&b, rr)
	}
	return b.String(), k.DNSKEY.ToDS(dns.SHA256).String()
}
