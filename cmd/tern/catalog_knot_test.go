package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/peer"
)

// knotctl runs knotc against the socket sock, retried while Knot starts
// (a minute at most).
func knotctl(t *testing.T, sock string, args ...string) {
	t.Helper()
	knotc := peerTool(t, "knotc")
	var out []byte
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if out, err = exec.Command(knotc, append([]string{"-s", sock}, args...)...).CombinedOutput(); err == nil {
			return
		}
	}
	t.Fatalf("knotc %s: %v: %s", strings.Join(args, " "), err, out)
}

// TestKnotCatalogConsumer: Knot (catalog-role: interpret, a
// catalog-template) consumes the catalog Tern produces: it serves the
// members from Tern, then one added on Tern (zone-add --catalog) after
// Tern's NOTIFY, and drops one removed (zone-remove). Tern on
// 127.0.0.139, Knot on 127.0.0.140.
func TestKnotCatalogConsumer(t *testing.T) {
	knotd := peerTool(t, "knotd")
	const ternIP, knotIP = "127.0.0.139", "127.0.0.140"
	dir := t.TempDir()
	memberZones(t, dir, "a.test", "b.test", "c.test")
	knotPort := freePort(t, knotIP)
	cfg := filepath.Join(dir, "tern.toml")
	text := fmt.Sprintf("[server]\nlisten = [\"%s:0\"]\nworkers = 1\ncontrol = \"ctl.sock\"\ndata-dir = \"data\"\n"+
		"[[remote]]\nname = \"knot\"\naddress = [\"%s:%d\"]\n"+
		"[[acl]]\nname = \"xfr\"\naddress = [\"127.0.0.0/8\"]\naction = [\"transfer\"]\n"+
		"[[zone]]\norigin = \"catalog.example\"\nacl = [\"xfr\"]\nnotify = [\"knot\"]\n", ternIP, knotIP, knotPort)
	for _, z := range []string{"a.test", "b.test"} {
		text += "[[zone]]\norigin = \"" + z + "\"\nfile = \"" + z + ".zone\"\nacl = [\"xfr\"]\nnotify = [\"knot\"]\ncatalog = \"catalog.example\"\n"
	}
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, logs, _ := serveStoppable(t, serveAddr, "-c", cfg)
	_, ternPort, _ := net.SplitHostPort(addr)

	kdir := filepath.Join(dir, "knot")
	if err := os.MkdirAll(filepath.Join(kdir, "db"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(kdir, "knot.conf")
	if err := os.WriteFile(conf, []byte(peer.KnotServer(kdir, []string{fmt.Sprintf("%s@%d", knotIP, knotPort)}, "info")+fmt.Sprintf(`remote:
  - id: tern
    address: %s@%s
acl:
  - id: notify-from-tern
    address: %s
    action: notify
template:
  - id: default
    storage: %q
    zonefile-sync: -1
  - id: member
    storage: %q
    zonefile-sync: -1
    master: tern
    acl: notify-from-tern
zone:
  - domain: catalog.example
    master: tern
    acl: notify-from-tern
    catalog-role: interpret
    catalog-template: member
`, ternIP, ternPort, ternIP, kdir, kdir)), 0o644); err != nil {
		t.Fatal(err)
	}
	proc, err := peer.Start(exec.Command(knotd, "-c", conf))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.Stop)
	defer func() {
		if t.Failed() {
			t.Logf("knot's log:\n%s\ntern's log:\n%s", proc.Output(), logs)
		}
	}()
	knot := fmt.Sprintf("%s:%d", knotIP, knotPort)
	followCatalog(t, cfg, dir, knot)
	if got := soaSerial(t, knot, "b.test."); got != 1 {
		t.Errorf("b.test. on Knot after the removal of a.test.: %d, want 1", got)
	}
}

// TestKnotCatalogProducer: Tern (catalog-role = "interpret") consumes
// the catalog Knot produces (catalog-role: generate, members with
// catalog-role: member): it serves Knot's members, then one added to
// Knot's config (knotc reload) after Knot's NOTIFY, and drops one
// removed. Knot on 127.0.0.141, Tern on 127.0.0.142.
func TestKnotCatalogProducer(t *testing.T) {
	knotd := peerTool(t, "knotd")
	const knotIP, ternIP = "127.0.0.141", "127.0.0.142"
	dir := t.TempDir()
	kdir := filepath.Join(dir, "knot")
	if err := os.MkdirAll(filepath.Join(kdir, "db"), 0o755); err != nil {
		t.Fatal(err)
	}
	memberZones(t, kdir, "m1.test", "m2.test", "m3.test")
	knotPort, ternPort := freePort(t, knotIP), freePort(t, ternIP)
	conf := filepath.Join(kdir, "knot.conf")
	sock := filepath.Join(kdir, "knot.sock")
	writeConf := func(members ...string) {
		text := peer.KnotServer(kdir, []string{fmt.Sprintf("%s@%d", knotIP, knotPort)}, "info") + fmt.Sprintf(`control:
    listen: %q
remote:
  - id: tern
    address: %s@%d
    via: %s
acl:
  - id: to-tern
    address: 127.0.0.0/8
    action: transfer
template:
  - id: default
    storage: %q
    zonefile-sync: -1
    acl: to-tern
    notify: tern
zone:
  - domain: catalog.example
    catalog-role: generate
`, sock, ternIP, ternPort, knotIP, kdir)
		for _, m := range members {
			text += fmt.Sprintf("  - domain: %s\n    file: %s.zone\n    catalog-role: member\n    catalog-zone: catalog.example\n", m, m)
		}
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeConf("m1.test", "m2.test")
	proc, err := peer.Start(exec.Command(knotd, "-c", conf))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.Stop)

	cfg := filepath.Join(dir, "tern.toml")
	text := fmt.Sprintf("[server]\nlisten = [\"%s:%d\"]\nworkers = 1\ncontrol = \"ctl.sock\"\ndata-dir = \"data\"\n"+
		"[[remote]]\nname = \"knot\"\naddress = [\"%s:%d\"]\n"+
		"[[acl]]\nname = \"from-knot\"\naddress = [\"%s\"]\naction = [\"notify\"]\n"+
		"[[zone]]\norigin = \"catalog.example\"\nprimary = [\"knot\"]\nacl = [\"from-knot\"]\ncatalog-role = \"interpret\"\ncatalog-grace = \"1s\"\n",
		ternIP, ternPort, knotIP, knotPort, knotIP)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, logs, _ := serveStoppable(t, serveAddr, "-c", cfg)
	defer func() {
		if t.Failed() {
			t.Logf("knot's log:\n%s\ntern's log:\n%s", proc.Output(), logs)
		}
	}()
	waitSerial(t, addr, "m1.test.", 1)
	waitSerial(t, addr, "m2.test.", 1)

	writeConf("m2.test", "m3.test")
	knotctl(t, sock, "reload")
	waitSerial(t, addr, "m3.test.", 1)
	waitSerial(t, addr, "m1.test.", -dns.RcodeRefused)
	if got := soaSerial(t, addr, "m2.test."); got != 1 {
		t.Errorf("m2.test. on Tern after Knot's change: %d, want 1", got)
	}
}
