package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/dnstest"
)

// hup sends SIGHUP to this process (serve catches it) and waits for the
// reload's last log line, the n-th line holding done.
func hup(t *testing.T, logs *dnstest.LogBuffer, done string, n int) {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// Unloaded, a reload takes milliseconds; the minute is a bound for a
	// reload that never ends, not a measure of one.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if strings.Count(logs.String(), done) >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %q after SIGHUP; log:\n%s", done, logs.String())
}

// soaSerial asks addr for origin's SOA: its serial, or -rcode when the
// answer has none.
func soaSerial(t *testing.T, addr, origin string) int {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(origin, dns.TypeSOA)
	r, err := dnstest.Exchange(m, "udp", addr)
	if err != nil {
		t.Fatalf("%s SOA: %v", origin, err)
	}
	if len(r.Answer) != 1 {
		return -r.Rcode
	}
	return int(r.Answer[0].(*dns.SOA).Serial)
}

// TestServeReloadConfig: SIGHUP re-reads the config file. Zones added are
// served, zones removed are REFUSED, a changed zone file applies, the log
// level applies, a changed listener is logged as needing a restart; a
// config with errors changes nothing and the log says why.
func TestServeReloadConfig(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	for _, z := range []struct {
		file, origin string
		serial       int
	}{{"a.zone", "a.test.", 1}, {"a2.zone", "a.test.", 2}, {"b.zone", "b.test.", 1}, {"c.zone", "c.test.", 5}} {
		text := fmt.Sprintf("$ORIGIN %s\n$TTL 300\n@ SOA ns1 h %d 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\n", z.origin, z.serial)
		if err := os.WriteFile(path(z.file), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := path("tern.toml")
	writeConfig := func(server string, zones ...string) {
		t.Helper()
		text := "[server]\n" + server + "\n"
		for _, z := range zones {
			origin, file, _ := strings.Cut(z, "=")
			text += fmt.Sprintf("[[zone]]\norigin = %q\nfile = %q\n", origin, file)
		}
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeConfig(`listen = ["127.0.0.1:0"]`+"\nworkers = 1", "a.test=a.zone", "b.test=b.zone")
	addr, logs := serveLog(t, "-c", cfg)
	refused := -dns.RcodeRefused
	expect := func(step string, want map[string]int) {
		t.Helper()
		for origin, w := range want {
			if got := soaSerial(t, addr, origin); got != w {
				t.Errorf("%s: %s SOA: %d, want %d (negative: -rcode)", step, origin, got, w)
			}
		}
	}
	expect("start", map[string]int{"a.test.": 1, "b.test.": 1, "c.test.": refused})

	// a's file changes, b goes, c comes; a listener is added and the log
	// level raised.
	writeConfig(`listen = ["127.0.0.1:0", "127.0.0.1:1"]`+"\nworkers = 1\nlog-level = \"debug\"", "a.test=a2.zone", "c.test=c.zone")
	hup(t, logs, "msg=reloaded", 1)
	expect("reload", map[string]int{"a.test.": 2, "b.test.": refused, "c.test.": 5})
	for _, want := range []string{"server.listen changed; it takes effect at the next restart", "loaded serial 5", "removed zone=b.test.", "level=DEBUG msg=\"reload: config read\""} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), "server.workers") || strings.Contains(logs.String(), "server.log-level") {
		t.Errorf("unchanged or applied settings logged as needing a restart:\n%s", logs.String())
	}

	// A config with errors: nothing changes, and the log says where.
	writeConfig("bogus = 1", "b.test=b.zone")
	hup(t, logs, "reload: the config has errors, nothing changed", 1)
	expect("bad config", map[string]int{"a.test.": 2, "b.test.": refused, "c.test.": 5})
	if !strings.Contains(logs.String(), "tern.toml:2") {
		t.Errorf("the config error's line is not logged:\n%s", logs.String())
	}
	if testing.Verbose() {
		t.Logf("log:\n%s", logs.String())
	}
}

// TestRestartChanges: every [server] and [identity] key but log-level is
// reported when it changed, with its toml name, and a changed [resolver]
// table; nothing when equal.
func TestRestartChanges(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name   string
		change func(c *config.Config)
		want   string
	}{
		{"unchanged", func(*config.Config) {}, ""},
		{"log level applies", func(c *config.Config) { c.Server.LogLevel = "debug" }, ""},
		{"zones apply", func(c *config.Config) { c.Zones = append(c.Zones, config.Zone{Origin: "x."}) }, ""},
		{"listen", func(c *config.Config) { c.Server.Listen = []string{"127.0.0.1:53"} }, "server.listen"},
		{"idle timeout", func(c *config.Config) { c.Server.TCPIdleTimeout.Duration = time.Minute }, "server.tcp-idle-timeout"},
		{"chaos", func(c *config.Config) { c.Identity.Enabled = &no }, "identity.chaos"},
		{"two", func(c *config.Config) { c.Identity.NSID = "x"; c.Server.ResponseCache = 1 }, "server.response-cache identity.nsid"},
		// The resolver, and its caches, are kept across reloads.
		{"resolver added", func(c *config.Config) { c.Resolver = config.DefaultResolver() }, "resolver"},
		{"resolver limit", func(c *config.Config) { c.Resolver = config.DefaultResolver(); c.Resolver.MaxNSNames = 2 }, "resolver"},
	} {
		next := config.Default()
		tc.change(next)
		var keys []string
		for _, c := range restartChanges(config.Default(), next) {
			keys = append(keys, c.key)
		}
		if got := strings.Join(keys, " "); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestServeReloadFromDemo: a server started from a config without zones
// serves the demo zone; a reload that finds zones serves them instead.
func TestServeReloadFromDemo(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tern.toml")
	server := "[server]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n"
	if err := os.WriteFile(cfg, []byte(server), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, logs := serveLog(t, "-c", cfg)
	if got := soaSerial(t, addr, demoOrigin); got <= 0 {
		t.Fatalf("demo zone SOA: %d", got)
	}
	abs, err := filepath.Abs("../../examples/example.com.zone")
	if err != nil {
		t.Fatal(err)
	}
	zones := server + fmt.Sprintf("[[zone]]\norigin = \"example.com\"\nfile = %q\n", abs)
	if err := os.WriteFile(cfg, []byte(zones), 0o644); err != nil {
		t.Fatal(err)
	}
	hup(t, logs, "msg=reloaded", 1)
	if got := soaSerial(t, addr, "example.com."); got != 2026120201 {
		t.Errorf("example.com. SOA after reload: %d", got)
	}
	if got := soaSerial(t, addr, demoOrigin); got != -dns.RcodeRefused {
		t.Errorf("demo zone after reload: %d, want REFUSED", got)
	}
}
