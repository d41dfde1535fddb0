package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/control"
	"github.com/tern-dns/tern/internal/dnstest"
)

// Fault tests of issue 13, on its loopback block with kernel-picked
// ports: a slow primary on 127.0.0.108 and the secondary it serves (a
// child process, killed) on 127.0.0.109; the server reloaded under load
// on 127.0.0.129.
const (
	faultPrimary   = "127.0.0.108"
	faultSecondary = "127.0.0.109"
	faultReload    = "127.0.0.129"
	faultHosts     = 20000
)

// slowPrimary serves k.test (faultHosts hosts whose addresses end in
// the serial, refresh 1s) over UDP and TCP, its transfers (AXFR, and
// IXFR answered whole) in messages of 500 records. With hold set, a
// transfer stops after 10 messages, says so on paused, and goes on when
// release is closed; with drip set too, it sends one more message every
// drip meanwhile (a stream that stalls, not one that stops: a secondary's
// read timeout does not end it).
type slowPrimary struct {
	mu      sync.Mutex
	serial  uint32
	hold    bool
	drip    time.Duration
	paused  chan struct{}
	release chan struct{}
}

func (p *slowPrimary) soa(serial uint32) dns.RR {
	rr, _ := dns.NewRR(fmt.Sprintf("k.test. 300 IN SOA ns1.k.test. h.k.test. %d 1 1 3600 300", serial))
	return rr
}

func (p *slowPrimary) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	p.mu.Lock()
	serial, hold, drip := p.serial, p.hold, p.drip
	p.mu.Unlock()
	q := r.Question[0]
	if q.Qtype != dns.TypeAXFR && q.Qtype != dns.TypeIXFR {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		if q.Qtype == dns.TypeSOA {
			m.Answer = []dns.RR{p.soa(serial)}
		}
		w.WriteMsg(m)
		return
	}
	ch := make(chan *dns.Envelope)
	done := make(chan struct{})
	go func() {
		(&dns.Transfer{}).Out(w, r, ch)
		close(done)
	}()
	rrs := []dns.RR{p.soa(serial)}
	for _, s := range []string{"k.test. 300 NS ns1.k.test.", "ns1.k.test. 300 A 192.0.2.1"} {
		rr, _ := dns.NewRR(s)
		rrs = append(rrs, rr)
	}
	for i := range faultHosts {
		rrs = append(rrs, &dns.A{Hdr: dns.RR_Header{Name: fmt.Sprintf("h%d.k.test.", i), Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 300},
			A: net.IPv4(10, byte(i>>8), byte(i), byte(serial))})
	}
	rrs = append(rrs, p.soa(serial))
	for i, n := 0, 0; i < len(rrs); i, n = i+500, n+1 {
		switch {
		case hold && n == 10:
			p.mu.Lock()
			select {
			case <-p.paused: // another transfer paused first
			default:
				close(p.paused)
			}
			p.mu.Unlock()
			if drip == 0 {
				<-p.release
				break
			}
			fallthrough
		case hold && n > 10 && drip > 0:
			select {
			case <-p.release:
			case <-time.After(drip):
			}
		}
		select {
		case ch <- &dns.Envelope{RR: rrs[i:min(i+500, len(rrs))]}:
		case <-done: // the client went away
			return
		}
	}
	close(ch)
	<-done
	w.Close()
}

// start serves p on faultPrimary and returns its address.
func (p *slowPrimary) start(t *testing.T) string {
	t.Helper()
	return p.startOn(t, faultPrimary)
}

// startOn serves p on host (a kernel-picked port) and returns its
// address.
func (p *slowPrimary) startOn(t *testing.T, host string) string {
	t.Helper()
	addr := ""
	for _, network := range []string{"tcp", "udp"} {
		srv := &dns.Server{Net: network, Handler: p}
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		if network == "tcp" {
			l, err := net.Listen("tcp", host+":0")
			if err != nil {
				t.Fatal(err)
			}
			srv.Listener, addr = l, l.Addr().String()
		} else {
			c, err := net.ListenPacket("udp", addr)
			if err != nil {
				t.Skipf("UDP %s taken: %v", addr, err)
			}
			srv.PacketConn = c
		}
		go srv.ActivateAndServe()
		<-started
		t.Cleanup(func() { srv.Shutdown() })
	}
	return addr
}

// hostAnswer asks addr for h0.k.test A over UDP once; it returns the
// rcode and the last octet of the address (-1 without one).
func hostAnswer(t *testing.T, addr, name string) (int, int) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	r, err := dnstest.Exchange(m, "udp", addr)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(r.Answer) == 1 {
		if a, ok := r.Answer[0].(*dns.A); ok {
			return r.Rcode, int(a.A.To4()[3])
		}
	}
	return r.Rcode, -1
}

// TestSecondaryKilledMidTransfer: a Tern secondary (a process of its
// own) is killed with SIGKILL in the middle of the AXFR of a zone of
// 20,000 records (the primary holds the stream after 5,000); restarted,
// it serves the copy it had (serial 1) at once, never SERVFAIL, then
// transfers the zone again and converges to serial 2, whole; the stored
// copy was serial 1 until then.
func TestSecondaryKilledMidTransfer(t *testing.T) {
	if testing.Short() {
		t.Skip("kills servers")
	}
	p := &slowPrimary{serial: 1}
	paddr := p.start(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tern.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`[server]
data-dir = "data"
control = ""

[[remote]]
name = "ns1"
address = [%q]

[[zone]]
origin = "k.test"
primary = ["ns1"]
`, paddr)), 0o644); err != nil {
		t.Fatal(err)
	}
	stored := filepath.Join(dir, "data", "k.test.zone")
	var logs dnstest.LogBuffer
	t.Cleanup(func() {
		if t.Failed() || testing.Verbose() {
			t.Logf("the secondary's log:\n%s", logs.String())
		}
	})
	waitFor := func(addr, name string, want int) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			if rcode, got := hostAnswer(t, addr, name); rcode == dns.RcodeSuccess && got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: never serial %d", name, want)
			}
		}
	}
	addr, kill := crashServerAt(t, faultSecondary+":0", cfg, &logs)
	waitFor(addr, "h0.k.test.", 1)

	p.mu.Lock()
	p.serial, p.hold = 2, true
	p.paused, p.release = make(chan struct{}), make(chan struct{})
	p.mu.Unlock()
	select {
	case <-p.paused:
	case <-time.After(time.Minute):
		t.Fatal("the secondary did not start the transfer of serial 2")
	}
	kill()
	p.mu.Lock()
	p.hold = false
	p.mu.Unlock()
	close(p.release)
	if text, err := os.ReadFile(stored); err != nil || !strings.Contains(string(text), "SOA\tns1.k.test. h.k.test. 1 ") {
		t.Fatalf("the stored copy after the kill (%v): %.300s", err, text)
	}

	addr, _ = crashServerAt(t, faultSecondary+":0", cfg, &logs)
	// Served at once from the stored copy (or already the new
	// transfer): never SERVFAIL.
	if rcode, got := hostAnswer(t, addr, "h0.k.test."); rcode != dns.RcodeSuccess || (got != 1 && got != 2) {
		t.Errorf("first answer after the restart: rcode %s, serial %d", dns.RcodeToString[rcode], got)
	}
	waitFor(addr, "h0.k.test.", 2)
	waitFor(addr, fmt.Sprintf("h%d.k.test.", faultHosts-1), 2)
	// The copy is stored once the new version is served (internal/secondary's
	// refresh): soon after, not before.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		text, err := os.ReadFile(stored)
		if err == nil && strings.Contains(string(text), "SOA\tns1.k.test. h.k.test. 2 ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stored copy after converging (%v): %.300s", err, text)
		}
	}
}

// TestSecondaryServesUntilExpire: with its primary down, a secondary
// answers from its copy until SOA expire (6s here) has passed since its
// last successful refresh, then SERVFAIL; never SERVFAIL to a query sent
// before that time (tern ctl zones tells it), never data again after.
func TestSecondaryServesUntilExpire(t *testing.T) {
	paddr, _, _, stopPrimary := secPrimaryServe(t, 6)
	cfg := secSecondaryConfig(t, t.TempDir(), paddr)
	saddr, logs := serveLog(t, "-c", cfg, "--listen", bindSecondary+":0", "--workers", "1")
	secWaitFor(t, saddr, "192.0.2.1")
	stopPrimary()
	code, out, _ := runT("ctl", "-c", cfg, "--json", "zones")
	var zs []control.Zone
	if err := json.Unmarshal([]byte(out), &zs); code != 0 || err != nil || len(zs) == 0 || zs[0].Expires.IsZero() {
		t.Fatalf("ctl zones: %d %q %v", code, out, err)
	}
	expires := zs[0].Expires
	served, failed, after := 0, false, 0
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		sent := time.Now()
		r := secAsk(t, saddr, "www.sec.test.", dns.TypeA)
		switch {
		case r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1:
			if failed {
				t.Fatalf("data served again after SERVFAIL: %v", r)
			}
			served++
		case r.Rcode == dns.RcodeServerFailure:
			if sent.Before(expires) {
				t.Fatalf("SERVFAIL to a query sent at %s, before the expiry %s", sent.Format(time.RFC3339Nano), expires.Format(time.RFC3339Nano))
			}
			failed = true
		default:
			t.Fatalf("answer: %v", r)
		}
		if failed {
			if after++; after == 10 {
				break
			}
		}
	}
	if !failed || served == 0 {
		t.Fatalf("%d answers from the copy, SERVFAIL %v; log:\n%s", served, failed, logs.String())
	}
}

// TestReloadUnderLoad: queries sent one after another over UDP and TCP,
// each once with no retry, while the zone is reloaded 20 times between
// two versions: every query is answered, NOERROR, with one version's
// data or the other's.
func TestReloadUnderLoad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "r.test.zone")
	write := func(serial int) {
		var b strings.Builder
		fmt.Fprintf(&b, "$ORIGIN r.test.\n$TTL 300\n@ SOA ns1 h %d 3600 600 86400 300\n@ NS ns1\nns1 A 192.0.2.1\nwww A 192.0.2.%d\n", serial, serial)
		for i := range 2000 {
			fmt.Fprintf(&b, "h%d A 10.0.%d.%d\n", i, i>>8, i&255)
		}
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	cfg := filepath.Join(dir, "tern.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[server]\ncontrol = \"ctl.sock\"\n[[zone]]\norigin = \"r.test\"\nfile = %q\n", file)), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, logs := serveLog(t, "-c", cfg, "--listen", faultReload+":0", "--workers", "1")

	stop := make(chan struct{})
	reloads := make(chan error, 1)
	go func() {
		defer close(stop)
		for i := range 20 {
			write(2 + i%2)
			if code, out, errs := runT("ctl", "-c", cfg, "reload", "r.test"); code != 0 {
				reloads <- fmt.Errorf("reload %d: %d %q %q", i, code, out, errs)
				return
			}
		}
		reloads <- nil
	}()
	clients := map[string]*dns.Client{"udp": {Net: "udp", Timeout: 5 * time.Second}, "tcp": {Net: "tcp", Timeout: 5 * time.Second}}
	asked := 0
	for done := false; !done && asked < 20000; asked++ {
		select {
		case <-stop:
			done = true
		default:
		}
		netw := "udp"
		if asked%4 == 3 {
			netw = "tcp"
		}
		m := new(dns.Msg)
		m.SetQuestion("www.r.test.", dns.TypeA)
		r, _, err := clients[netw].Exchange(m, addr)
		if err != nil {
			t.Fatalf("query %d (%s) not answered: %v\n%s", asked, netw, err, logs.String())
		}
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			t.Fatalf("query %d (%s): %v", asked, netw, r)
		}
		if a := r.Answer[0].(*dns.A).A.String(); a < "192.0.2.1" || a > "192.0.2.3" || len(a) != 9 {
			t.Fatalf("query %d (%s): %s", asked, netw, a)
		}
	}
	if err := <-reloads; err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "loaded serial"); n < 20 {
		t.Errorf("%d loads logged, want 21", n)
	}
	t.Logf("%d queries answered during 20 reloads", asked)
}
