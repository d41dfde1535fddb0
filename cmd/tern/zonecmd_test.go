package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnssec"
)

const cliZone = `$ORIGIN example.org.
$TTL 300
@ SOA ns hostmaster 1 7200 3600 1209600 300
@ NS ns
ns A 192.0.2.1
www A 192.0.2.2
sub NS ns.sub
ns.sub A 192.0.2.3
`

// TestZoneSignCLI runs 'tern zone sign' end to end: keys are created once
// with safe modes, reused on the next run, and the output is a signed zone
// with the requested validity window.
func TestZoneSignCLI(t *testing.T) {
	dir := t.TempDir()
	zf := filepath.Join(dir, "example.org.zone")
	if err := os.WriteFile(zf, []byte(cliZone), 0o644); err != nil {
		t.Fatal(err)
	}
	keyDir := filepath.Join(dir, "keys")
	sign := func(extra ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		args := append([]string{"sign", zf, "--origin", "example.org", "--key-dir", keyDir}, extra...)
		if code := runZone(context.Background(), args, &out, &errb); code != 0 {
			t.Fatalf("tern zone %v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	out := sign("--algorithm", "ed25519", "--nsec3", "--inception", "20260101000000", "--expiration", "20260201000000")
	keys, _ := filepath.Glob(filepath.Join(keyDir, "*.private"))
	if len(keys) != 2 {
		t.Fatalf("want 2 private keys, got %v", keys)
	}
	fi, err := os.Stat(keyDir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("key dir mode %v %v", fi.Mode(), err)
	}
	var nsec3, sigs int
	zp := dns.NewZoneParser(strings.NewReader(out), "", "")
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		switch r := rr.(type) {
		case *dns.NSEC3:
			nsec3++
		case *dns.RRSIG:
			sigs++
			if r.Algorithm != dns.ED25519 || r.Inception != uint32(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()) ||
				r.Expiration != uint32(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC).Unix()) {
				t.Errorf("RRSIG %s", r)
			}
		}
	}
	if err := zp.Err(); err != nil {
		t.Fatalf("output does not parse: %v", err)
	}
	if nsec3 == 0 || sigs == 0 {
		t.Fatalf("output has %d NSEC3 and %d RRSIG", nsec3, sigs)
	}
	// Second run: same keys (no new files), NSEC this time.
	out2 := sign("--algorithm", "ed25519", "--validity", "7d")
	keys2, _ := filepath.Glob(filepath.Join(keyDir, "*.private"))
	if len(keys2) != 2 || !strings.Contains(out2, "\tNSEC\t") {
		t.Errorf("second run: keys %v", keys2)
	}
	var rep, errb bytes.Buffer
	if code := runZone(context.Background(), []string{"keys", "--key-dir", keyDir}, &rep, &errb); code != 0 ||
		!strings.Contains(rep.String(), "KSK") || !strings.Contains(rep.String(), "ZSK") {
		t.Errorf("tern zone keys: %d %q %q", code, rep.String(), errb.String())
	}
}

func TestZoneSignCLIErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"sign"},
		{"sign", "x.zone", "--origin", "example.org"},
		{"sign", "x.zone", "--origin", "example.org", "--key-dir", t.TempDir(), "--opt-out"},
		{"sign", "x.zone", "--origin", "example.org", "--key-dir", t.TempDir(), "--algorithm", "rsamd5"},
		{"sign", "x.zone", "--origin", "example.org", "--key-dir", t.TempDir(), "--validity", "soon"},
		{"bogus"},
	} {
		var out, errb bytes.Buffer
		if code := runZone(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("tern zone %v: exit %d, want 2", args, code)
		}
	}
	var out, errb bytes.Buffer
	missing := []string{"sign", filepath.Join(t.TempDir(), "none.zone"), "--origin", "example.org", "--key-dir", t.TempDir()}
	if code := runZone(context.Background(), missing, &out, &errb); code != 1 {
		t.Errorf("missing zone file: exit %d, want 1", code)
	}
}

func TestParseTimeAndDuration(t *testing.T) {
	want := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, s := range []string{"20260304050607", "2026-03-04T05:06:07Z", "1772600767"} {
		got, err := parseTime(s)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseTime(%q) = %v, %v", s, got, err)
		}
	}
	if d, err := parseDuration("30d"); err != nil || d != 30*24*time.Hour {
		t.Errorf("parseDuration(30d) = %v %v", d, err)
	}
	if _, err := parseDuration("-1h"); err == nil {
		t.Error("negative duration accepted")
	}
}

// TestZoneSignManagedDir checks that offline signing of a key directory run
// by the key manager uses the manager's keys and creates none.
func TestZoneSignManagedDir(t *testing.T) {
	dir := t.TempDir()
	zf := filepath.Join(dir, "zone")
	if err := os.WriteFile(zf, []byte(cliZone), 0o644); err != nil {
		t.Fatal(err)
	}
	keyDir := filepath.Join(dir, "keys")
	m, err := dnssec.NewManager(keyDir, "example.org.", dnssec.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := m.Step(time.Now().Add(-time.Hour))
	if err != nil || len(plan.Keys) != 2 {
		t.Fatalf("Step: %v, %d keys", err, len(plan.Keys))
	}
	var out, errb bytes.Buffer
	if code := runZone(context.Background(), []string{"sign", zf, "--origin", "example.org", "--key-dir", keyDir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if files, _ := filepath.Glob(filepath.Join(keyDir, "*.private")); len(files) != 2 {
		t.Errorf("keys in managed dir: %v", files)
	}
	for _, k := range plan.Keys {
		if !strings.Contains(out.String(), k.DNSKEY.PublicKey) {
			t.Errorf("key %d not in the signed zone", k.Tag())
		}
	}
	if !strings.Contains(out.String(), "\tCDS\t") {
		t.Error("managed KSK has no CDS in the signed zone")
	}
}

// TestZoneSignReadsAsServe: 'tern zone sign' reads a zone file as 'tern
// serve' and 'tern check' do: $GENERATE records take the $TTL in force
// (miekg/dns alone gives them 3600), and a relative $INCLUDE is followed.
func TestZoneSignReadsAsServe(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []string // owners that must be in the output with TTL 300
		absent     string   // an owner that must not be
	}{
		{"generate", cliZone + "$GENERATE 1-3 host$ A 192.0.2.$\n",
			[]string{"host1.example.org.", "host2.example.org.", "host3.example.org."}, ""},
		{"include", cliZone + "$INCLUDE extra.inc\n", []string{"included.example.org."}, ""},
		// Left out with a warning, as 'tern serve' leaves it out.
		{"outside the zone", cliZone + "www.other.test. A 192.0.2.9\n", []string{"www.example.org."}, "www.other.test."},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			zf := filepath.Join(dir, "example.org.zone")
			if err := os.WriteFile(zf, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "extra.inc"), []byte("included TXT \"from the include\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			// What the server loads is the reference.
			var chk, chkErr bytes.Buffer
			if code := run(context.Background(), []string{"check", "zone", zf, "--origin", "example.org"}, &chk, &chkErr); code != 0 {
				t.Fatalf("tern check: exit %d: %s%s", code, chk.String(), chkErr.String())
			}
			var out, errb bytes.Buffer
			args := []string{"sign", zf, "--origin", "example.org", "--key-dir", filepath.Join(dir, "keys")}
			if code := runZone(context.Background(), args, &out, &errb); code != 0 {
				t.Fatalf("tern zone sign: exit %d: %s", code, errb.String())
			}
			got := map[string]uint32{}
			zp := dns.NewZoneParser(strings.NewReader(out.String()), "", "")
			for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
				if t := rr.Header().Rrtype; t == dns.TypeA || t == dns.TypeTXT {
					got[rr.Header().Name] = rr.Header().Ttl
				}
			}
			if err := zp.Err(); err != nil {
				t.Fatal(err)
			}
			if _, ok := got[c.absent]; ok {
				t.Errorf("%s is in the output", c.absent)
			}
			for _, name := range c.want {
				if ttl, ok := got[name]; !ok || ttl != 300 {
					t.Errorf("%s: in the output %v, TTL %d; want TTL 300 (the $TTL)", name, ok, ttl)
				}
			}
		})
	}
}
