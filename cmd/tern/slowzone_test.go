package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestReloadBesideStalledTransfer, on this test's loopback addresses
// (Tern on 127.0.0.140, a slow primary on 127.0.0.141): issue 13's "a
// slow transfer of one zone never delays another zone's reload". While
// the transfer of the secondary zone k.test (asked for by tern ctl
// refresh) is held by its primary in the middle of the stream, a
// primary zone's file is edited and the whole configuration reloaded
// (tern ctl reload): the reload returns while the transfer is still
// held, the new serial is served, and the reload's output says k.test
// is still loading. Released, k.test converges to the new serial and
// its reload runs in its own event, logged.
func TestReloadBesideStalledTransfer(t *testing.T) {
	const ternAddr, slowAddr = "127.0.0.140", "127.0.0.141"
	p := &slowPrimary{serial: 1}
	primary := p.startOn(t, slowAddr)
	dir := t.TempDir()
	pFile := filepath.Join(dir, "p.test.zone")
	writeP := func(serial int) {
		t.Helper()
		text := fmt.Sprintf("$ORIGIN p.test.\n$TTL 300\n@ SOA ns1 h %d 3600 600 86400 300\n@ NS ns1\nns1 A 192.0.2.1\nwww A 192.0.2.%d\n", serial, serial)
		if err := os.WriteFile(pFile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeP(1)
	cfg := filepath.Join(dir, "tern.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`[server]
data-dir = "data"
control = "ctl.sock"

[[remote]]
name = "slow"
address = [%q]

[[zone]]
origin = "k.test"
primary = ["slow"]

[[zone]]
origin = "p.test"
file = "p.test.zone"
`, primary)), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, logs := serveLog(t, "-c", cfg, "--listen", ternAddr+":0", "--workers", "1")
	// waitHost waits (bounded: a loaded machine, not a measure) until
	// h0.k.test's address ends in serial.
	waitHost := func(serial int) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			if _, got := hostAnswer(t, addr, "h0.k.test."); got == serial {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("k.test never serial %d; log:\n%s", serial, logs.String())
			}
		}
	}
	waitHost(1)

	// The primary's serial 2 stalls after 10 of its 41 messages: one
	// more every 3s (under the secondary's read timeout, 10s) until
	// released, by the test or after a minute.
	p.mu.Lock()
	p.serial, p.hold, p.drip = 2, true, 3*time.Second
	p.paused, p.release = make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(p.release) })
	p.mu.Unlock()
	held := time.AfterFunc(60*time.Second, release)
	defer held.Stop()
	t.Cleanup(release)
	if code, out, errs := runT("ctl", "-c", cfg, "refresh", "k.test"); code != 0 {
		t.Fatalf("refresh: %d %q %q", code, out, errs)
	}
	select {
	case <-p.paused:
	case <-time.After(time.Minute):
		t.Fatalf("the transfer never started; log:\n%s", logs.String())
	}

	writeP(2)
	type result struct {
		code      int
		out, errs string
	}
	reloaded := make(chan result, 1)
	go func() {
		code, out, errs := runT("ctl", "-c", cfg, "reload")
		reloaded <- result{code, out, errs}
	}()
	var r result
	select {
	case r = <-reloaded:
	case <-time.After(20 * time.Second): // the transfer is held for 60
		t.Fatalf("tern ctl reload still waits for k.test's held transfer; log:\n%s", logs.String())
	}
	if r.code != 0 {
		t.Fatalf("reload: %d %q %q", r.code, r.out, r.errs)
	}
	select {
	case <-p.release:
		t.Fatal("the transfer was released before the reload returned")
	default:
	}
	if m := secAsk(t, addr, "www.p.test.", dns.TypeA); len(m.Answer) != 1 || m.Answer[0].(*dns.A).A.String() != "192.0.2.2" {
		t.Errorf("p.test after the reload: %v", m)
	}
	if soa := secAsk(t, addr, "p.test.", dns.TypeSOA); len(soa.Answer) != 1 || soa.Answer[0].(*dns.SOA).Serial != 2 {
		t.Errorf("p.test's serial after the reload: %v", soa)
	}
	var kLine string
	for line := range strings.Lines(r.out) {
		if strings.HasPrefix(line, "k.test.") {
			kLine = line
		}
	}
	if !strings.Contains(kLine, " loading ") || !strings.Contains(kLine, " 1 ") {
		t.Errorf("the reload's output does not say k.test (serial 1) is still loading:\n%s", r.out)
	}
	if !strings.Contains(logs.String(), "loading=k.test.") {
		t.Errorf("the reload's log does not name k.test as loading:\n%s", logs.String())
	}

	release()
	waitHost(2)
	for deadline := time.Now().Add(time.Minute); !strings.Contains(logs.String(), `msg="reload: loaded once the zone's other event ended" zone=k.test.`); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("k.test's reload never ran after its transfer; log:\n%s", logs.String())
		}
	}
	if testing.Verbose() {
		t.Logf("reload output:\n%s\nlog:\n%s", r.out, logs.String())
	}
}
