package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnssec"
)

// parseDS reads the DS records of text, one per line.
func parseDS(t *testing.T, text string) []*dns.DS {
	t.Helper()
	var ds []*dns.DS
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		rr, err := dns.NewRR(line)
		if err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		d, ok := rr.(*dns.DS)
		if !ok {
			t.Fatalf("output line %q is not a DS", line)
		}
		ds = append(ds, d)
	}
	return ds
}

// TestZoneDS checks 'tern zone ds': one SHA-256 DS per key-signing key,
// equal to miekg/dns's ToDS and to BIND's dnssec-dsfromkey (when
// installed), for a directory of offline signing and for one the key
// manager runs.
func TestZoneDS(t *testing.T) {
	t.Run("offline signing", func(t *testing.T) {
		dir := t.TempDir()
		zf := filepath.Join(dir, "zone")
		if err := os.WriteFile(zf, []byte(cliZone), 0o644); err != nil {
			t.Fatal(err)
		}
		keyDir := filepath.Join(dir, "keys")
		if code, _, errs := runT("zone", "sign", zf, "--origin", "example.org", "--key-dir", keyDir); code != 0 {
			t.Fatalf("sign: exit %d: %s", code, errs)
		}
		keys, err := dnssec.LoadKeys(keyDir, "example.org.")
		if err != nil || len(keys) != 2 || !keys[0].IsKSK() {
			t.Fatalf("keys: %v %v", keys, err)
		}
		checkDS(t, keyDir, keys[0])
	})
	t.Run("managed", func(t *testing.T) {
		keyDir := t.TempDir()
		m, err := dnssec.NewManager(keyDir, "example.org.", dnssec.DefaultPolicy())
		if err != nil {
			t.Fatal(err)
		}
		plan, err := m.Step(time.Now().Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		var ksk *dnssec.Key
		for _, k := range plan.Keys {
			if k.CDS {
				ksk = k
			}
		}
		if ksk == nil {
			t.Fatal("no key with a CDS")
		}
		checkDS(t, keyDir, ksk)
	})
}

// checkDS runs 'tern zone ds' on keyDir and wants exactly the DS of ksk.
func checkDS(t *testing.T, keyDir string, ksk *dnssec.Key) {
	t.Helper()
	code, out, errs := runT("zone", "ds", "--key-dir", keyDir, "--origin", "Example.ORG")
	if code != 0 {
		t.Fatalf("ds: exit %d: %s", code, errs)
	}
	ds := parseDS(t, out)
	want := ksk.DNSKEY.ToDS(dns.SHA256)
	if len(ds) != 1 || ds[0].String() != want.String() {
		t.Fatalf("tern zone ds printed\n%s\nwant\n%s", out, want)
	}
	if ds[0].DigestType != dns.SHA256 || ds[0].KeyTag != ksk.Tag() {
		t.Errorf("DS %s: want digest type 2 and tag %d", ds[0], ksk.Tag())
	}
	bin, err := exec.LookPath("dnssec-dsfromkey")
	if err != nil {
		t.Log("dnssec-dsfromkey not installed: compared with miekg/dns only")
		return
	}
	bind, err := exec.Command(bin, "-2", filepath.Join(keyDir, ksk.Base+".key")).Output()
	if err != nil {
		t.Fatalf("dnssec-dsfromkey: %v", err)
	}
	// BIND prints no TTL: compare the RDATA.
	b := parseDS(t, string(bind))
	if len(b) != 1 || b[0].KeyTag != ds[0].KeyTag || b[0].Algorithm != ds[0].Algorithm ||
		b[0].DigestType != ds[0].DigestType || !strings.EqualFold(b[0].Digest, ds[0].Digest) {
		t.Errorf("dnssec-dsfromkey gives\n%s\ntern zone ds\n%s", bind, out)
	}
}

// TestZoneNoKeys checks that 'tern zone keys' and 'tern zone ds' fail, and
// say why, on a directory holding no keys for the origin.
func TestZoneNoKeys(t *testing.T) {
	empty := t.TempDir()
	other := t.TempDir()
	m, err := dnssec.NewManager(other, "example.org.", dnssec.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Step(time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"keys", "--key-dir", empty, "--origin", "example.com"}, "tern zone keys: " + empty + " holds no keys\n"},
		{[]string{"keys", "--key-dir", empty}, "tern zone keys: " + empty + " holds no keys\n"},
		{[]string{"keys", "--key-dir", other, "--origin", "example.com"},
			"tern zone keys: " + other + " holds no keys for example.com. (it has keys for example.org.)\n"},
		{[]string{"ds", "--key-dir", empty, "--origin", "example.com"}, "tern zone ds: " + empty + " holds no keys\n"},
		{[]string{"ds", "--key-dir", other, "--origin", "example.com."},
			"tern zone ds: " + other + " holds no keys for example.com. (it has keys for example.org.)\n"},
	} {
		code, out, errs := runT(append([]string{"zone"}, tt.args...)...)
		if code != 1 || out != "" || errs != tt.want {
			t.Errorf("tern zone %s: exit %d, stdout %q, stderr %q; want exit 1 and %q", strings.Join(tt.args, " "), code, out, errs, tt.want)
		}
	}
	if code, out, errs := runT("zone", "keys", "--key-dir", other, "--origin", "example.org"); code != 0 || !strings.Contains(out, "KSK") {
		t.Errorf("keys of example.org: exit %d: %s%s", code, out, errs)
	}
}
