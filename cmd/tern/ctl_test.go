package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tern-dns/tern/internal/control"
)

// TestMain keeps the servers the tests start off /run: server.control's
// default is under $RUNTIME_DIRECTORY, here a temp dir (the servers
// started with defaults share it: the first takes the socket, the others
// log that it is in use and serve without one).
func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		// A server TestUpdateCrash kills: it leaves nothing to clean.
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "tern-run")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("RUNTIME_DIRECTORY", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// ctlZone writes a zone file of example. with serial; broken adds an
// address that does not parse on line 5.
func ctlZone(t *testing.T, path string, serial int, broken bool) {
	t.Helper()
	text := fmt.Sprintf("$ORIGIN example.\n$TTL 300\n@ SOA ns1 h %d 7200 3600 1209600 300\n@ NS ns1\n", serial)
	if broken {
		text += "ns1 A 192.0.2.300\n"
	} else {
		text += "ns1 A 192.0.2.1\n"
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCtl: tern ctl against a running tern serve: status, zones, reload
// of one zone after its file changed (the new serial shown and served),
// a reload of a broken file (file:line reported, the old version kept
// serving, the zone shown failed), reload of all, notify, JSON output.
func TestCtl(t *testing.T) {
	dir := t.TempDir()
	zoneFile := filepath.Join(dir, "example.zone")
	ctlZone(t, zoneFile, 1, false)
	cfg := filepath.Join(dir, "tern.toml")
	text := fmt.Sprintf("[server]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\ncontrol = \"ctl.sock\"\n[[zone]]\norigin = \"example\"\nfile = %q\n", zoneFile)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, logs := serveLog(t, "-c", cfg)

	// The socket opens right after the listeners: retried until it does.
	var code int
	var out, errs string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if code, out, errs = runT("ctl", "-c", cfg, "status"); code == 0 {
			break
		}
	}
	if code != 0 {
		t.Fatalf("status: %d %q %q; log:\n%s", code, out, errs, logs.String())
	}
	for _, re := range []string{`(?m)^version: +\S`, `(?m)^zones: +1$`, `(?m)^resolver: +off$`, `(?m)^started: +\S+ \(up \S+\)$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("status lacks %s:\n%s", re, out)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, "ctl.sock"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("control socket: %v %v", fi, err)
	}

	zoneLine := func(step, serial, state string) {
		t.Helper()
		code, out, errs := runT("ctl", "-s", filepath.Join(dir, "ctl.sock"), "zones")
		// A primary: no refresh or expiry.
		re := regexp.MustCompile(`(?m)^example\. +primary +` + serial + ` +` + state + ` +\d{4}-\S+ +- +- +` + regexp.QuoteMeta(zoneFile) + `$`)
		if code != 0 || !re.MatchString(out) {
			t.Errorf("%s: zones: %d %q %q, want a line matching %s", step, code, out, errs, re)
		}
	}
	zoneLine("start", "1", "loaded")

	ctlZone(t, zoneFile, 2, false)
	if code, out, errs := runT("ctl", "-c", cfg, "reload", "example."); code != 0 || !strings.Contains(out, "example.  primary  2") {
		t.Errorf("reload example.: %d %q %q", code, out, errs)
	}
	zoneLine("reloaded", "2", "loaded")
	if got := soaSerial(t, addr, "example."); got != 2 {
		t.Errorf("serial served after reload: %d", got)
	}

	// A broken file: the error names the zone and file:line, the old
	// version serves on.
	ctlZone(t, zoneFile, 3, true)
	code, out, errs = runT("ctl", "-c", cfg, "reload", "example")
	if want := "zone example.: " + zoneFile + ":5"; code != 1 || !strings.Contains(errs, want) {
		t.Errorf("reload of a broken file: %d %q %q, want exit 1 and %q", code, out, errs, want)
	}
	zoneLine("broken", "2", "failed")
	if got := soaSerial(t, addr, "example."); got != 2 {
		t.Errorf("serial served after a failed reload: %d, want the old 2", got)
	}
	code, out, _ = runT("ctl", "-c", cfg, "--json", "zones")
	var zs []control.Zone
	if err := json.Unmarshal([]byte(out), &zs); code != 0 || err != nil || len(zs) != 1 {
		t.Fatalf("zones --json: %d %q %v", code, out, err)
	}
	if z := zs[0]; z.Origin != "example." || z.Role != control.RolePrimary || !z.NextRefresh.IsZero() || !z.Expires.IsZero() || z.Serial != 2 || !z.Serving || z.State != control.ZoneFailed || !strings.Contains(z.Error, zoneFile+":5") || z.File != zoneFile {
		t.Errorf("zones --json: %+v", z)
	}

	// Reload of all (the config re-read) reports the same, then
	// succeeds once the file is fixed.
	if code, _, errs := runT("ctl", "-c", cfg, "reload"); code != 1 || !strings.Contains(errs, "zone example.: "+zoneFile+":5") {
		t.Errorf("reload (all) of a broken file: %d %q", code, errs)
	}
	ctlZone(t, zoneFile, 3, false)
	if code, out, errs := runT("ctl", "-c", cfg, "reload"); code != 0 || !strings.Contains(out, "example.  primary  3") {
		t.Errorf("reload (all): %d %q %q", code, out, errs)
	}
	zoneLine("fixed", "3", "loaded")

	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"reload", "other."}, 1, "zone other.: no such zone configured"},
		{[]string{"notify", "example."}, 1, "zone example.: no notify list"},
		{[]string{"notify", "other."}, 1, "zone other.: not served"},
		{[]string{"notify"}, 2, "want one ZONE"},
		{[]string{"retransfer", "example."}, 1, "zone example.: not a secondary zone"},
		{[]string{"retransfer"}, 2, "want one ZONE"},
		{[]string{"status", "x"}, 2, "unexpected argument"},
		{[]string{"reboot"}, 2, "unknown command"},
	} {
		code, _, errs := runT(append([]string{"ctl", "-c", cfg}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.err) {
			t.Errorf("ctl %s: %d %q, want %d and %q", strings.Join(tc.args, " "), code, errs, tc.code, tc.err)
		}
	}
	if code, _, errs := runT("ctl", "-s", filepath.Join(dir, "none.sock"), "status"); code != 1 || !strings.Contains(errs, "none.sock") {
		t.Errorf("ctl to no server: %d %q", code, errs)
	}
	if testing.Verbose() {
		t.Logf("log:\n%s", logs.String())
	}
}

// TestCtlNotify: tern ctl notify sends the zone's NOTIFYs again, beside
// those of its load, and says to which addresses.
func TestCtlNotify(t *testing.T) {
	dir := t.TempDir()
	ns2 := newNotifyReceiver(t, "127.0.0.1")
	ctlZone(t, filepath.Join(dir, "example.zone"), 7, false)
	cfg := filepath.Join(dir, "tern.toml")
	text := fmt.Sprintf("[server]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\ncontrol = \"ctl.sock\"\n[[remote]]\nname = \"ns2\"\naddress = [%q]\n[[zone]]\norigin = \"example\"\nfile = \"example.zone\"\nnotify = [\"ns2\"]\n", ns2.conn.LocalAddr().String())
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	serve(t, "-c", cfg)
	ns2.wait(t, 7) // the load's
	var code int
	var out, errs string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if code, out, errs = runT("ctl", "-c", cfg, "notify", "example"); code == 0 || !strings.Contains(errs, "control socket") {
			break
		}
	}
	if want := "notify example.: sending to " + ns2.conn.LocalAddr().String(); code != 0 || !strings.Contains(out, want) {
		t.Fatalf("notify: %d %q %q, want %q", code, out, errs, want)
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		ns2.mu.Lock()
		n := len(ns2.serials)
		ns2.mu.Unlock()
		if n >= 2 {
			return
		}
	}
	t.Fatalf("NOTIFYs received: %v, want the load's and the command's", ns2.serials)
}

// TestCtlDefaultSocket: with neither -c nor -s, tern ctl talks to
// server.control's default, $RUNTIME_DIRECTORY/control.sock, where a
// server whose config does not set server.control listens.
func TestCtlDefaultSocket(t *testing.T) {
	run := t.TempDir()
	t.Setenv("RUNTIME_DIRECTORY", run) // TestMain's is restored after
	dir := t.TempDir()
	ctlZone(t, filepath.Join(dir, "example.zone"), 4, false)
	cfg := filepath.Join(dir, "tern.toml")
	if err := os.WriteFile(cfg, []byte("[server]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n[[zone]]\norigin = \"example\"\nfile = \"example.zone\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, logs := serveLog(t, "-c", cfg)
	var code int
	var out, errs string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if code, out, errs = runT("ctl", "zones"); code == 0 {
			break
		}
	}
	if code != 0 || !regexp.MustCompile(`(?m)^example\. +primary +4 +loaded `).MatchString(out) {
		t.Fatalf("ctl zones (no -c, no -s): %d %q %q; log:\n%s", code, out, errs, logs.String())
	}
	if fi, err := os.Stat(filepath.Join(run, "control.sock")); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Errorf("%s/control.sock: %v %v", run, fi, err)
	}
	// Elsewhere: no server answers.
	t.Setenv("RUNTIME_DIRECTORY", t.TempDir())
	if code, _, errs := runT("ctl", "status"); code != 1 || !strings.Contains(errs, "control.sock") {
		t.Errorf("ctl status with no server in $RUNTIME_DIRECTORY: %d %q", code, errs)
	}
}
