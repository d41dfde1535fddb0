package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// TestCtlZoneAdd: tern ctl zone-add serves a zone the config does not
// name at once, beside the configured one; it survives a reload of the
// config and a restart (kept under data-dir), and zone-remove ends it
// (REFUSED), for good. A zone served already, a file that does not load
// (file:line named), an undefined acl and a zone without file nor
// primary are refused and change nothing. On 127.0.0.130 (issue 14's
// block).
func TestCtlZoneAdd(t *testing.T) {
	dir := t.TempDir()
	ctlZone(t, filepath.Join(dir, "example.zone"), 1, false)
	added := filepath.Join(dir, "added.zone")
	os.WriteFile(added, []byte("$ORIGIN added.test.\n$TTL 300\n@ SOA ns1 h 5 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.5\n"), 0o644)
	broken := filepath.Join(dir, "broken.zone")
	os.WriteFile(broken, []byte("$ORIGIN broken.test.\n$TTL 300\n@ SOA ns1 h 5 7200 3600 1209600 300\nns1 A 192.0.2.300\n"), 0o644)
	cfg := filepath.Join(dir, "tern.toml")
	text := "[server]\nlisten = [\"127.0.0.130:0\"]\nworkers = 1\ncontrol = \"ctl.sock\"\ndata-dir = \"data\"\n[[acl]]\nname = \"xfr\"\naddress = [\"127.0.0.0/8\"]\naction = [\"transfer\"]\n[[zone]]\norigin = \"example\"\nfile = \"example.zone\"\n"
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func() (string, func()) {
		addr, _, stop := serveStoppable(t, serveAddr, "-c", cfg)
		return addr, stop
	}
	addr, stop := start()
	ctl := func(args ...string) (int, string, string) {
		return runT(append([]string{"ctl", "-c", cfg}, args...)...)
	}

	if code, out, errs := ctl("zone-add", "Added.Test", "--file", added, "--acl", "xfr"); code != 0 || !strings.Contains(out, "added.test.  primary  5") {
		t.Fatalf("zone-add: %d %q %q", code, out, errs)
	}
	if got := soaSerial(t, addr, "added.test."); got != 5 {
		t.Fatalf("added.test. served %d, want 5", got)
	}
	if got := soaSerial(t, addr, "example."); got != 1 {
		t.Errorf("example. served %d, want 1", got)
	}
	// Its ACL holds: a transfer from loopback is allowed.
	m := new(dns.Msg)
	m.SetAxfr("added.test.")
	if env, err := (&dns.Transfer{}).In(m, addr); err != nil {
		t.Errorf("AXFR of the added zone: %v", err)
	} else {
		n := 0
		for e := range env {
			if e.Error != nil {
				t.Errorf("AXFR of the added zone: %v", e.Error)
			}
			n += len(e.RR)
		}
		if n != 4 {
			t.Errorf("AXFR of the added zone: %d records, want 4", n)
		}
	}

	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"zone-add", "added.test", "--file", added}, 1, "zone added.test.: served already"},
		{[]string{"zone-add", "example", "--file", added}, 1, "zone example.: served already"},
		{[]string{"zone-add", "broken.test", "--file", broken}, 1, broken + ":4"},
		{[]string{"zone-add", "other.test", "--file", added, "--acl", "nope"}, 1, `"nope"`},
		{[]string{"zone-add", "other.test"}, 1, "no file"},
		{[]string{"zone-add"}, 2, "want one ZONE"},
		{[]string{"zone-remove", "nowhere.test"}, 1, "zone nowhere.test.: no such zone"},
	} {
		if code, _, errs := ctl(tc.args...); code != tc.code || !strings.Contains(errs, tc.err) {
			t.Errorf("ctl %s: %d %q, want %d and %q", strings.Join(tc.args, " "), code, errs, tc.code, tc.err)
		}
	}
	if got := soaSerial(t, addr, "broken.test."); got != -dns.RcodeRefused {
		t.Errorf("broken.test. after a failed zone-add: %d, want REFUSED", got)
	}

	// A reload of the config keeps it, as does a restart.
	if code, out, errs := ctl("reload"); code != 0 || !strings.Contains(out, "added.test.") {
		t.Errorf("reload: %d %q %q", code, out, errs)
	}
	if got := soaSerial(t, addr, "added.test."); got != 5 {
		t.Errorf("added.test. after a reload: %d, want 5", got)
	}
	stop()
	addr, stop = start()
	if got := soaSerial(t, addr, "added.test."); got != 5 {
		t.Errorf("added.test. after a restart: %d, want 5", got)
	}

	if code, out, errs := ctl("zone-remove", "added.test"); code != 0 || out != "zone-remove added.test.: removed\n" {
		t.Errorf("zone-remove: %d %q %q", code, out, errs)
	}
	if got := soaSerial(t, addr, "added.test."); got != -dns.RcodeRefused {
		t.Errorf("added.test. after zone-remove: %d, want REFUSED", got)
	}
	stop()
	addr, _ = start()
	if got := soaSerial(t, addr, "added.test."); got != -dns.RcodeRefused {
		t.Errorf("added.test. after zone-remove and a restart: %d, want REFUSED", got)
	}
	if got := soaSerial(t, addr, "example."); got != 1 {
		t.Errorf("example. after the restarts: %d, want 1", got)
	}
	if code, out, _ := ctl("zones"); code != 0 || strings.Contains(out, "added.test") {
		t.Errorf("zones after zone-remove: %q", out)
	}
}
