package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest"
)

const opsPrivDrop = "127.0.0.181"

// TestPrivilegeDrop: run as root (as make test is; skipped otherwise),
// tern serve with user = "nobody", group = "nogroup" binds port 53,
// then runs as nobody:nogroup (/proc/PID/status's Uid and Gid lines, all
// four ids, and Groups); it still answers over UDP and TCP, and a
// dynamic update, which it journals in data-dir after the drop, is
// answered NOERROR and served.
func TestPrivilegeDrop(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: binds port 53 and drops to nobody")
	}
	dir := t.TempDir()
	// nobody must reach data-dir and the control socket under it.
	// (t.TempDir is DIR/001 with DIR mode 0700.)
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "dyn.zone"), []byte(updZone), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "tern.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`[server]
listen = ["%s:53"]
workers = 1
data-dir = "data"
control = "data/control.sock"
user = "nobody"
group = "nogroup"

[[key]]
name = "upd"
algorithm = "hmac-sha256"
secret = %q

[[acl]]
name = "upd"
key = ["upd"]
action = ["update"]

[[zone]]
origin = "dyn.test"
file = "dyn.zone"
acl = ["upd"]
zonefile-sync = "1h"
`, opsPrivDrop, updSecret)), 0o644); err != nil {
		t.Fatal(err)
	}
	ch := startChild(t, "serve", "-c", cfg)
	if ch.addr != opsPrivDrop+":53" {
		t.Fatalf("serving on %s, want %s:53", ch.addr, opsPrivDrop)
	}
	// The drop follows the start line: wait for its log line.
	for deadline := time.Now().Add(time.Minute); !strings.Contains(ch.logs.String(), "privileges dropped"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no 'privileges dropped' logged: %s", ch.logs.String())
		}
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", ch.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Uid:\t65534\t65534\t65534\t65534\n", "Gid:\t65534\t65534\t65534\t65534\n", "Groups:\t65534 \n"} {
		if !strings.Contains(string(status), want) {
			t.Errorf("/proc/PID/status lacks %q:\n%s", want, status)
		}
	}
	for _, proto := range []string{"udp", "tcp"} {
		m := new(dns.Msg)
		m.SetQuestion("ns1.dyn.test.", dns.TypeA)
		r, err := dnstest.Exchange(m, proto, ch.addr)
		if err != nil || len(r.Answer) != 1 {
			t.Errorf("%s after the drop: %v %v", proto, r, err)
		}
	}
	addSigned(t, ch, `dropped.dyn.test. 60 TXT "as nobody"`)
	if got := updLookup(t, ch.addr, "dropped.dyn.test.", dns.TypeTXT); len(got) != 1 {
		t.Errorf("the update is not served: %v", got)
	}
}
