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

	// The socket is open once serve prints where it serves (it opens
	// before the listeners, logged so): asked at once.
	if l := logs.String(); !strings.Contains(l, `msg="control socket"`) || strings.Index(l, `msg="control socket"`) > strings.Index(l, "msg=serving") {
		t.Errorf("the control socket opened after the listeners:\n%s", l)
	}
	code, out, errs := runT("ctl", "-c", cfg, "status")
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
	code, out, errs := runT("ctl", "zones")
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

// ctlJSON runs tern ctl --json with args and decodes what it prints,
// which must be one JSON value and nothing else, into v; it returns the
// exit code and what was printed.
func ctlJSON(t *testing.T, v any, args ...string) (int, string) {
	t.Helper()
	code, out, errs := runT(append([]string{"ctl", "--json"}, args...)...)
	if errs != "" {
		t.Errorf("ctl --json %s: stderr %q, want nothing", strings.Join(args, " "), errs)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Errorf("ctl --json %s: %v in %q", strings.Join(args, " "), err, out)
	} else if dec.More() {
		t.Errorf("ctl --json %s: more than one value in %q", strings.Join(args, " "), out)
	}
	return code, out
}

// TestCtlJSON: every command's --json output is one JSON value on stdout
// with the fields a script needs, exit 0; a failure is
// {"error": ..., "result": ...} on stdout (the result a reload has
// despite a failed zone), exit 1, stderr empty. A primary zone NOTIFYs a
// receiver; a secondary zone's primary is 127.0.0.240:53, where nothing
// listens (refused at once: refresh and retransfer only start).
func TestCtlJSON(t *testing.T) {
	dir := t.TempDir()
	ns2 := newNotifyReceiver(t, "127.0.0.1")
	zoneFile := filepath.Join(dir, "example.zone")
	ctlZone(t, zoneFile, 7, false)
	cfg := filepath.Join(dir, "tern.toml")
	text := fmt.Sprintf("[server]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\ncontrol = \"ctl.sock\"\ndata-dir = \"data\"\n"+
		"[[remote]]\nname = \"ns2\"\naddress = [%q]\n"+
		"[[zone]]\norigin = \"example\"\nfile = \"example.zone\"\nnotify = [\"ns2\"]\n"+
		"[[remote]]\nname = \"gone\"\naddress = [\"127.0.0.240:53\"]\n"+
		"[[zone]]\norigin = \"sec.test\"\nprimary = [\"gone\"]\n", ns2.conn.LocalAddr().String())
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, logs := serveLog(t, "-c", cfg)
	var st control.Status
	if code, out := ctlJSON(t, &st, "-c", cfg, "status"); code != 0 || st.Version == "" || st.Zones != 2 || st.Resolver || st.Started.IsZero() || st.Uptime < 0 {
		t.Errorf("status --json: %d %s", code, out)
	}

	// reload, whole and one zone: the zones as they are after it.
	for _, args := range [][]string{{"reload"}, {"reload", "example"}} {
		var zs []control.Zone
		code, out := ctlJSON(t, &zs, append([]string{"-c", cfg}, args...)...)
		var ex *control.Zone
		for i := range zs {
			if zs[i].Origin == "example." {
				ex = &zs[i]
			}
		}
		if want := map[int]int{1: 2, 2: 1}[len(args)]; code != 0 || len(zs) != want || ex == nil || ex.Serial != 7 || !ex.Serving || ex.State != control.ZoneLoaded || ex.Role != control.RolePrimary || ex.File != zoneFile {
			t.Errorf("%s --json: %d %s, want %d zones, example. serial 7 loaded", strings.Join(args, " "), code, out, want)
		}
	}

	// The commands on one zone: {"zone", "result"}.
	for _, tc := range []struct {
		args []string
		want control.ZoneResult
	}{
		{[]string{"notify", "EXAMPLE"}, control.ZoneResult{Zone: "example.", Result: control.ResultSent, To: []string{ns2.conn.LocalAddr().String()}}},
		{[]string{"refresh", "sec.test"}, control.ZoneResult{Zone: "sec.test.", Result: control.ResultStarted}},
		{[]string{"retransfer", "sec.test."}, control.ZoneResult{Zone: "sec.test.", Result: control.ResultStarted}},
	} {
		var r control.ZoneResult
		if code, out := ctlJSON(t, &r, append([]string{"-s", filepath.Join(dir, "ctl.sock")}, tc.args...)...); code != 0 || r.Zone != tc.want.Zone || r.Result != tc.want.Result || strings.Join(r.To, ",") != strings.Join(tc.want.To, ",") {
			t.Errorf("%s --json: %d %s, want %+v", strings.Join(tc.args, " "), code, out, tc.want)
		}
	}

	// Failures: {"error"}, with a reload's result beside it.
	ctlZone(t, zoneFile, 8, true)
	for _, tc := range []struct {
		args   []string
		err    string
		result bool // a result beside the error: the reload's zones
	}{
		{[]string{"-c", cfg, "reload", "example"}, "zone example.: " + zoneFile + ":5", true},
		{[]string{"-c", cfg, "reload"}, "zone example.: " + zoneFile + ":5", true},
		{[]string{"-c", cfg, "reload", "other."}, "zone other.: no such zone configured", false},
		{[]string{"-c", cfg, "refresh", "example."}, "zone example.: not a secondary zone", false},
		{[]string{"-c", cfg, "retransfer", "other."}, "zone other.: not a secondary zone", false},
		{[]string{"-c", cfg, "notify", "sec.test"}, "zone sec.test.: no notify list", false},
		{[]string{"-s", filepath.Join(dir, "none.sock"), "status"}, "none.sock", false},
		{[]string{"-c", filepath.Join(dir, "none.toml"), "status"}, "none.toml", false},
	} {
		var resp struct {
			Error  string         `json:"error"`
			Result []control.Zone `json:"result"`
		}
		code, out := ctlJSON(t, &resp, tc.args...)
		if code != 1 || !strings.Contains(resp.Error, tc.err) || (len(resp.Result) != 0) != tc.result {
			t.Errorf("%s --json: %d %s, want exit 1, error %q, a result %v", strings.Join(tc.args, " "), code, out, tc.err, tc.result)
		}
		if tc.result && (len(resp.Result) == 0 || resp.Result[0].Origin != "example." || resp.Result[0].State != control.ZoneFailed || resp.Result[0].Serial != 7 || !strings.Contains(resp.Result[0].Error, zoneFile+":5")) {
			t.Errorf("%s --json: result %+v, want example. failed, serving 7", strings.Join(tc.args, " "), resp.Result)
		}
	}
	// A usage error stays text on stderr (exit 2): no command ran.
	if code, out, errs := runT("ctl", "--json", "-c", cfg, "notify"); code != 2 || out != "" || !strings.Contains(errs, "want one ZONE") {
		t.Errorf("notify --json without ZONE: %d %q %q", code, out, errs)
	}
	if testing.Verbose() {
		t.Logf("log:\n%s", logs.String())
	}
}
