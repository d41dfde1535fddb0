package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/dnstest"
)

func runT(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestCheckZone(t *testing.T) {
	code, out, errs := runT("check", "zone", "../../examples/example.com.zone", "--origin", "example.com")
	if code != 0 || !strings.Contains(out, "zone example.com. OK:") || !strings.Contains(out, "serial 2026120201") {
		t.Fatalf("code %d out %q err %q", code, out, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad.zone")
	os.WriteFile(bad, []byte("$ORIGIN x.test.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nw CNAME ns\nw A 192.0.2.1\nq A 999.1.1.1\n"), 0o644)
	code, _, errs = runT("check", "zone", "--origin", "x.test", bad)
	if code == 0 || !strings.Contains(errs, "bad.zone:7:") {
		t.Fatalf("code %d err %q: want the syntax error's line", code, errs)
	}
	os.WriteFile(bad, []byte("$ORIGIN x.test.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nw CNAME ns\nw A 192.0.2.1\n"), 0o644)
	code, _, errs = runT("check", "zone", "--origin", "x.test", bad)
	if code == 0 || !strings.Contains(errs, "bad.zone:6: A record beside a CNAME") {
		t.Fatalf("code %d err %q", code, errs)
	}
}

// TestCheckZoneWarnings: 'tern check zone' loads what the peers load and
// prints every warning, and beside errors every warning too.
func TestCheckZoneWarnings(t *testing.T) {
	f := filepath.Join(t.TempDir(), "w.zone")
	text := "$ORIGIN x.test.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\nwww.other.test. A 192.0.2.9\n@ MX 10 mail\n"
	os.WriteFile(f, []byte(text), 0o644)
	code, out, errs := runT("check", "zone", f, "--origin", "x.test")
	if code != 0 || !strings.Contains(out, "serial 1 (with the warnings above)") ||
		!strings.Contains(errs, "w.zone:6: warning: www.other.test. is outside the zone x.test.: record ignored\n") ||
		!strings.Contains(errs, "w.zone:7: warning: MX target mail.x.test. has no A or AAAA record in the zone\n") {
		t.Fatalf("code %d out %q err %q", code, out, errs)
	}
	os.WriteFile(f, []byte(text+"w CNAME ns\nw A 192.0.2.1\n"), 0o644)
	code, _, errs = runT("check", "zone", f, "--origin", "x.test")
	if code != 1 || !strings.Contains(errs, "w.zone:6: warning: www.other.test.") || !strings.Contains(errs, "w.zone:9: A record beside a CNAME") {
		t.Fatalf("code %d err %q", code, errs)
	}
}

func TestCheckConfig(t *testing.T) {
	code, out, errs := runT("check", "config", "../../examples/tern.toml")
	if code != 0 || !strings.Contains(out, "OK: 1 zones") {
		t.Fatalf("code %d out %q err %q", code, out, errs)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "w.zone"), []byte("$ORIGIN x.test.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\nwww.other.test. A 192.0.2.9\n"), 0o644)
	warn := filepath.Join(dir, "warn.toml")
	os.WriteFile(warn, []byte("[[zone]]\norigin = \"x.test\"\nfile = \"w.zone\"\n"), 0o644)
	code, _, errs = runT("check", "config", warn)
	if code != 0 || !strings.Contains(errs, "w.zone:6: warning: www.other.test. is outside the zone x.test.: record ignored") {
		t.Fatalf("code %d err %q", code, errs)
	}
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[server]\nlisten = [\"127.0.0.1:53\"]\nbogus = 1\n"), 0o644)
	code, _, errs = runT("check", "config", bad)
	if code == 0 || !strings.Contains(errs, "bad.toml:3") || !strings.Contains(errs, "bogus") {
		t.Fatalf("code %d err %q", code, errs)
	}
	// What serve would refuse at start, check refuses too.
	overlap := filepath.Join(dir, "overlap.toml")
	os.WriteFile(overlap, []byte("[server]\nlisten = [\"0.0.0.0:5399\", \"127.0.0.1:5399\"]\n[[zone]]\norigin = \"x.test\"\nfile = \"w.zone\"\n"), 0o644)
	code, _, errs = runT("check", "config", overlap)
	if code != 1 || !strings.Contains(errs, "server.listen: listen 127.0.0.1:5399: 0.0.0.0:5399, also listed, covers it") {
		t.Fatalf("code %d err %q", code, errs)
	}
	// A trust-anchor file that holds no anchor, named.
	os.WriteFile(filepath.Join(dir, "root.key"), []byte(". IN A 192.0.2.1\n"), 0o644)
	anchor := filepath.Join(dir, "anchor.toml")
	os.WriteFile(anchor, []byte("[resolver]\nlisten = [\"127.0.0.80:5399\"]\nvalidation = true\ntrust-anchor = \"root.key\"\n"), 0o644)
	code, _, errs = runT("check", "config", anchor)
	if code != 1 || !strings.Contains(errs, "resolver.trust-anchor: "+filepath.Join(dir, "root.key")+": . A: a trust anchor is a DS or DNSKEY record") {
		t.Fatalf("code %d err %q", code, errs)
	}
	// Validation is on by default. Root hints of a private root without
	// a trust-anchor are refused (the embedded root anchors would make
	// every answer bogus), naming both ways out; a copy of the IANA
	// hints takes the embedded anchors.
	os.WriteFile(filepath.Join(dir, "private.hints"), []byte(". 1 IN NS ns.root.test.\nns.root.test. 1 IN A 127.0.0.81\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "iana.hints"), []byte(". 1 IN NS a.root-servers.net.\na.root-servers.net. 1 IN A 198.41.0.4\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "root.ds"), []byte(". IN DS 20326 8 2 E06D44B80B8F1D39A95C0B0D7C65D08458E880409BBC683457104237C7F8EC8D\n"), 0o644)
	for _, tc := range []struct{ name, extra, want string }{
		{"private root, no anchor", "root-hints = \"private.hints\"\n", "names ns.root.test. 127.0.0.81, not an IANA root server"},
		{"private root, validation off", "root-hints = \"private.hints\"\nvalidation = false\n", ""},
		{"private root, its anchor", "root-hints = \"private.hints\"\ntrust-anchor = \"root.ds\"\n", ""},
		{"IANA hints copy", "root-hints = \"iana.hints\"\n", ""},
		{"embedded hints", "", ""},
	} {
		path := filepath.Join(dir, "hints.toml")
		os.WriteFile(path, []byte("[resolver]\nlisten = [\"127.0.0.80:5399\"]\n"+tc.extra), 0o644)
		code, _, errs = runT("check", "config", path)
		if tc.want == "" && code != 0 || tc.want != "" && (code != 1 || !strings.Contains(errs, tc.want) || !strings.Contains(errs, "set resolver.trust-anchor") || !strings.Contains(errs, "validation = false")) {
			t.Errorf("%s: code %d err %q", tc.name, code, errs)
		}
	}
}

func serve(t *testing.T, args ...string) string {
	t.Helper()
	addr, _ := serveLog(t, args...)
	return addr
}

// serveLog is serve that also returns what the server logs.
func serveLog(t *testing.T, args ...string) (string, *dnstest.LogBuffer) {
	t.Helper()
	return serveUntil(t, serveAddr, args...)
}

// serveAddr matches the address tern serve prints.
var serveAddr = regexp.MustCompile(`on (127\.\d+\.\d+\.\d+:\d+)`)

// serveUntil starts tern serve with args and waits until what it prints
// matches re; it returns re's first group and what the server logs.
func serveUntil(t *testing.T, re *regexp.Regexp, args ...string) (string, *dnstest.LogBuffer) {
	t.Helper()
	addr, logs, _ := serveStoppable(t, re, args...)
	return addr, logs
}

// serveStoppable is serveUntil that also returns a function stopping
// the server (and waiting for it to end), for a restart within a test.
func serveStoppable(t *testing.T, re *regexp.Regexp, args ...string) (string, *dnstest.LogBuffer, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb dnstest.LogBuffer
	done := make(chan struct{})
	code := 0
	go func() {
		code = run(ctx, append([]string{"serve"}, args...), &out, &errb)
		close(done)
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	// Unloaded, serve prints its address within milliseconds; on a
	// loaded machine loading (and signing) the zones can take seconds.
	// The wait ends at once if serve returns.
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1], &errb, stop
		}
		select {
		case <-done:
			t.Fatalf("serve exited with %d: printed %q, stderr %q", code, out.String(), errb.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("serve printed %q, stderr %q", out.String(), errb.String())
	return "", nil, nil
}

func TestServeDemo(t *testing.T) {
	addr := serve(t, "--listen", "127.0.0.1:0")
	m := new(dns.Msg)
	m.SetQuestion("www.example.test.", dns.TypeA)
	r, err := dnstest.Exchange(m, "udp", addr)
	if err != nil || len(r.Answer) != 1 || !r.Authoritative {
		t.Fatalf("%v %v", r, err)
	}
}

func TestServeZoneFlag(t *testing.T) {
	addr := serve(t, "--listen", "127.0.0.1:0", "--zone", "example.com=../../examples/example.com.zone", "--workers", "1")
	m := new(dns.Msg)
	m.SetQuestion("mail.example.com.", dns.TypeAAAA)
	r, err := dnstest.Exchange(m, "udp", addr)
	if err != nil || len(r.Answer) != 1 {
		t.Fatalf("%v %v", r, err)
	}
	m.SetQuestion("www.example.test.", dns.TypeA)
	if r, err := dnstest.Exchange(m, "udp", addr); err != nil || r.Rcode != dns.RcodeRefused {
		t.Fatalf("demo zone served beside --zone: %v %v", r, err)
	}
}

// TestServeTwiceFails: a second tern serve on the address of a running
// one exits with an error that names the address and why, as a second
// knotd does (it used to share the port and take half the queries).
func TestServeTwiceFails(t *testing.T) {
	addr := serve(t, "--listen", "127.0.0.1:0", "--workers", "2")
	code, _, errs := runT("serve", "--listen", addr, "--workers", "2")
	if want := "listen " + addr + ": address in use by another process"; code == 0 || !strings.Contains(errs, want) {
		t.Fatalf("second serve: code %d, stderr %q, want an error with %q", code, errs, want)
	}
}

func TestServeBadZoneFails(t *testing.T) {
	code, _, errs := runT("serve", "--listen", "127.0.0.1:0", "--zone", "x.test=/nonexistent.zone")
	if code == 0 || !strings.Contains(errs, "nonexistent.zone") {
		t.Fatalf("code %d err %q", code, errs)
	}
}

// TestServePartialLoad: a zone whose file is missing does not stop the
// server: the zones that load are served, the missing one is answered
// SERVFAIL without AA (as Knot answers it) over UDP and TCP, and the log
// names it.
func TestServePartialLoad(t *testing.T) {
	addr, logs := serveLog(t, "--listen", "127.0.0.1:0", "--workers", "1",
		"--zone", "example.com=../../examples/example.com.zone", "--zone", "missing.test=/nonexistent/missing.zone")
	for _, network := range []string{"udp", "tcp"} {
		c := &dns.Client{Net: network}
		m := new(dns.Msg)
		m.SetQuestion("mail.example.com.", dns.TypeAAAA)
		if r, _, err := c.Exchange(m, addr); err != nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 || !r.Authoritative {
			t.Errorf("%s: loaded zone: %v %v", network, r, err)
		}
		m.SetQuestion("www.missing.test.", dns.TypeA)
		m.SetEdns0(1232, true)
		r, _, err := c.Exchange(m, addr)
		if err != nil || r.Rcode != dns.RcodeServerFailure || r.Authoritative || len(r.Answer)+len(r.Ns) != 0 || r.IsEdns0() == nil {
			t.Errorf("%s: zone not loaded: %v %v; want SERVFAIL, no AA, no records, OPT", network, r, err)
		}
	}
	// The start-up log: version, config, each zone's serial and load time.
	s := logs.String()
	for _, want := range []string{
		"msg=starting version=", `config="none (defaults and flags)" zones=2`,
		`msg="loaded serial 2026120201" zone=example.com. file=../../examples/example.com.zone took=`,
		`msg="not loaded: zone missing.test.: open /nonexistent/missing.zone:`,
		"msg=serving zones=1 listen=127.0.0.1:",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("log lacks %q:\n%s", want, s)
		}
	}
}

// TestHandlerCache: server.response-cache sizes each UDP worker's cache
// (0: none, other sizes rounded up to a power of two); TCP workers have
// none.
func TestHandlerCache(t *testing.T) {
	resp := auth.New(nil, auth.Options{})
	for _, tc := range []struct{ size, udp int }{{0, 0}, {1, 4}, {100, 128}, {8192, 8192}} {
		h := handler(resp, tc.size, nil, nil)
		if got := h.NewWorker(false).(*auth.Worker).CacheSize(); got != tc.udp {
			t.Errorf("response-cache %d: UDP worker caches %d, want %d", tc.size, got, tc.udp)
		}
		if got := h.NewWorker(true).(*auth.Worker).CacheSize(); got != 0 {
			t.Errorf("response-cache %d: TCP worker caches %d, want 0", tc.size, got)
		}
	}
}
