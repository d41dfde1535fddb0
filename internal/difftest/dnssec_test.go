package difftest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// resignEnv, when "1", makes TestResignZones rewrite testdata/signed.
const resignEnv = "TERN_DIFFTEST_RESIGN"

// signedZones describes the presigned copies of the test zones: the
// parent with NSEC (RFC 4034), the nested zone with NSEC3 with a salt and
// 5 extra iterations (RFC 9276 section 3.1 advises against both, but
// servers still meet such zones and must hash with them), and gen.test.
// with NSEC3 opt-out (RFC 5155 section 6), no salt and no extra
// iterations.
func signedZones() []signedZone {
	return []signedZone{
		{"child.example.test.", true, false}, // first: its DS goes into the parent
		{"example.test.", false, false},
		{"gen.test.", true, true},
		{".", false, false},
	}
}

// signedZone is how one presigned zone is signed.
type signedZone struct {
	origin string
	nsec3  bool
	optOut bool
}

// TestResignZones regenerates testdata/signed/*.signed with ldns-signzone.
// It runs only with TERN_DIFFTEST_RESIGN=1, since signatures are random
// and the committed files should change only on purpose. Signatures are
// valid from 2026-01-01 to 2036-01-01.
func TestResignZones(t *testing.T) {
	if os.Getenv(resignEnv) != "1" {
		t.Skipf("set %s=1 to re-sign testdata/signed", resignEnv)
	}
	keygen, signzone, key2ds := needTool(t, "ldns-keygen"), needTool(t, "ldns-signzone"), needTool(t, "ldns-key2ds")
	zones, err := TestZones("testdata")
	if err != nil {
		t.Fatal(err)
	}
	root, err := RootZone("testdata")
	if err != nil {
		t.Fatal(err)
	}
	byOrigin := map[string]*Zone{".": root}
	for _, z := range zones {
		byOrigin[z.Origin] = z
	}
	dir := t.TempDir()
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(filepath.Join("testdata", "signed"), 0o755); err != nil {
		t.Fatal(err)
	}
	var extra []string // DS records for the parent
	for _, sz := range signedZones() {
		flat, err := byOrigin[sz.origin].WriteFlat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(extra) > 0 && sz.origin == "example.test." {
			f, err := os.OpenFile(flat, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.WriteString(strings.Join(extra, "\n") + "\n")
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
		// One key with the SEP flag signs everything (a combined signing
		// key); ldns-keygen prints its base name.
		key := run(keygen, "-a", "ECDSAP256SHA256", "-k", sz.origin)
		args := []string{"-i", "20260101000000", "-e", "20360101000000", "-o", sz.origin,
			"-f", filepath.Join(dir, fileStem(sz.origin)+".signed")}
		if sz.nsec3 {
			if sz.optOut {
				args = append(args, "-n", "-t", "0", "-p")
			} else {
				args = append(args, "-n", "-t", "5", "-s", "aabbccdd")
			}
		}
		run(signzone, append(args, flat, key)...)
		if sz.origin == "child.example.test." {
			ds := run(key2ds, "-n", "-2", key+".key")
			extra = append(extra, ds)
		}
		signed, err := os.ReadFile(filepath.Join(dir, fileStem(sz.origin)+".signed"))
		if err != nil {
			t.Fatal(err)
		}
		header := "; Presigned copy of the " + sz.origin + " test zone, written by\n" +
			"; TERN_DIFFTEST_RESIGN=1 go test -run TestResignZones ./internal/difftest/\n"
		if err := os.WriteFile(filepath.Join("testdata", "signed", fileStem(sz.origin)+".signed"), append([]byte(header), signed...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// loadSigned loads the presigned zones in the order the servers get them.
func loadSigned(t *testing.T) []*Zone {
	t.Helper()
	var zones []*Zone
	for _, origin := range []string{"example.test.", "child.example.test.", "gen.test."} {
		path, err := filepath.Abs(filepath.Join("testdata", "signed", fileStem(origin)+".signed"))
		if err != nil {
			t.Fatal(err)
		}
		z, err := LoadZone(path, origin)
		if err != nil {
			t.Fatal(err)
		}
		zones = append(zones, z)
	}
	return zones
}

// TestDifferentialDNSSEC repeats the differential test on the presigned
// zones with the DO bit set on every query that carries EDNS, so that
// RRSIGs and NSEC/NSEC3 denial proofs (RFC 4035 section 3.1, RFC 5155
// section 7.2) are compared too. Queries without EDNS stay as they are and
// check that no DNSSEC records leak into answers for clients that did not
// ask for them (RFC 4035 section 3.2.1).
func TestDifferentialDNSSEC(t *testing.T) {
	unsigned, err := TestZones("testdata")
	if err != nil {
		t.Fatal(err)
	}
	zones := loadSigned(t)
	allow, err := LoadAllowlist("allowlist.txt")
	if err != nil {
		t.Fatal(err)
	}
	qs := Generate(unsigned)
	for i := range qs {
		if qs[i].EDNS != 0 {
			qs[i].DO = true
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), queryBudget)
	defer cancel()
	knot := startKnot(t, zones)
	start := time.Now()
	knotOut := runQueries(ctx, knot, qs)
	inform(t, "knot: %d queries in %v", len(qs), time.Since(start).Round(time.Millisecond))
	checkReference(t, "knot", qs, knotOut)
	checkReproducible(ctx, t, knot, qs, knotOut)
	if compareNSD(t) {
		nsd := startNSD(t, zones)
		nsdOut := runQueries(ctx, nsd, qs)
		nk := compareOutcomes("knot", "nsd", qs, knotOut, nsdOut, nil)
		inform(t, "information only (NSD is not the reference):\n%s%s", nk.summary(), nk.details(maxShown(15)))
	}
	t.Run("tern-vs-knot", func(t *testing.T) {
		tern := startTern(t, zones)
		start := time.Now()
		ternOut := runQueries(ctx, tern, qs)
		inform(t, "tern: %d queries in %v", len(qs), time.Since(start).Round(time.Millisecond))
		tk := compareOutcomes("knot", "tern", qs, knotOut, ternOut, allow)
		if len(tk.items) > 0 {
			t.Errorf("Tern differs from Knot on signed zones:\n%s%s", tk.summary(), tk.details(maxShown(30)))
		} else {
			inform(t, "%s", tk.summary())
		}
	})
}
