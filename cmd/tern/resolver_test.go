package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/dnstest/hierarchy"
)

// testHierarchy: the root on the first address delegates tld. to the
// second, which delegates example.tld. with glue to the third;
// www.example.tld. is a CNAME to a name of the same zone. The third
// also serves stub.test., which nothing delegates: a stub zone of the
// resolver's config.
var testHierarchy = []hierarchy.Zone{
	{Server: 0, Origin: ".", Text: `
. SOA a.root. h.root. 1 7200 3600 1209600 300
. NS a.root.
a.root. A {0}
tld. NS ns.nic.tld.
ns.nic.tld. A {1}
`}, {Server: 1, Origin: "tld.", Text: `
tld. SOA ns.nic.tld. h.nic.tld. 1 7200 3600 1209600 300
tld. NS ns.nic.tld.
ns.nic.tld. A {1}
example.tld. NS ns1.example.tld.
ns1.example.tld. A {2}
`}, {Server: 2, Origin: "example.tld.", Text: `
example.tld. SOA ns1.example.tld. h.example.tld. 1 7200 3600 1209600 300
example.tld. NS ns1.example.tld.
ns1.example.tld. A {2}
www.example.tld. CNAME host.example.tld.
host.example.tld. A 192.0.2.80
`}, {Server: 2, Origin: "stub.test.", Text: `
stub.test. SOA ns.stub.test. h.stub.test. 1 7200 3600 1209600 300
stub.test. NS ns.stub.test.
ns.stub.test. A {2}
www.stub.test. A 192.0.2.90
`},
}

// resolverClient asks addr from the address from (127.0.0.1, or another
// to be outside allow) over netw.
func resolverClient(netw, from string) *dns.Client {
	c := &dns.Client{Net: netw, Timeout: 15 * time.Second}
	ip := net.ParseIP(from)
	if netw == "tcp" {
		c.Dialer = &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: c.Timeout}
	} else {
		c.Dialer = &net.Dialer{LocalAddr: &net.UDPAddr{IP: ip}, Timeout: c.Timeout}
	}
	return c
}

// TestServeResolver runs tern serve with a [resolver] pointed at a local
// hierarchy (port 53 of 127.0.0.81-99, its own root hints) and a local
// zone, and asks it as a stub resolver would: each answer on the wire.
func TestServeResolver(t *testing.T) {
	h := hierarchy.Start(t, 81, 99, 3, testHierarchy)
	if h.Port != 53 {
		t.Skipf("the hierarchy is on port %d, not 53 (not root): a resolver asks authorities on 53", h.Port)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("hints", h.Hints())
	write("local.zone", "$ORIGIN local.test.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.53\nwww A 192.0.2.54\n")
	config := `
[server]
listen = ["127.0.0.1:0"]
workers = 1
[resolver]
listen = ["127.0.0.80:0"]
allow = ["127.0.0.1/32"]
root-hints = "hints"
query-loopback = true
validation = false
[[resolver.stub]]
name = "stub.test"
servers = ["` + h.Addrs[2].String() + `"]
[[zone]]
origin = "local.test"
file = "local.zone"
`
	write("tern.toml", config)
	addr, logs := serveUntil(t, regexp.MustCompile(`resolving on (127\.0\.0\.80:\d+)`), "-c", filepath.Join(dir, "tern.toml"))

	ask := func(netw, from, name string, qtype uint16, rd bool) *dns.Msg {
		t.Helper()
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		m.RecursionDesired = rd
		m.SetEdns0(1232, false)
		var r *dns.Msg
		var err error
		for range 3 { // a datagram lost on a loaded machine
			if r, _, err = resolverClient(netw, from).Exchange(m, addr); err == nil {
				return r
			}
		}
		t.Fatalf("%s %s from %s: %v", name, dns.Type(qtype), from, err)
		return nil
	}
	// records are the records of a section with TTLs of at most max
	// shown as max: a response from the cache has them aged.
	records := func(rrs []dns.RR, max uint32) []string {
		var out []string
		for _, rr := range rrs {
			if h := rr.Header(); h.Ttl <= max && h.Ttl > max-60 {
				h.Ttl = max
			}
			out = append(out, strings.Join(strings.Fields(rr.String()), " "))
		}
		return out
	}
	ede := func(m *dns.Msg) int {
		if opt := m.IsEdns0(); opt != nil {
			for _, o := range opt.Option {
				if e, ok := o.(*dns.EDNS0_EDE); ok {
					return int(e.InfoCode)
				}
			}
		}
		return -1
	}

	for _, netw := range []string{"udp", "tcp"} {
		r := ask(netw, "127.0.0.1", "WWW.example.tld.", dns.TypeA, true)
		want := []string{"www.example.tld. 3600 IN CNAME host.example.tld.", "host.example.tld. 3600 IN A 192.0.2.80"}
		if r.Rcode != dns.RcodeSuccess || !r.RecursionAvailable || r.Authoritative || !slices.Equal(records(r.Answer, 3600), want) || r.Question[0].Name != "WWW.example.tld." {
			t.Errorf("%s: answer: %v\nwant %q", netw, r, want)
		}
	}
	r := ask("udp", "127.0.0.1", "www.stub.test.", dns.TypeA, true)
	if r.Rcode != dns.RcodeSuccess || !slices.Equal(records(r.Answer, 3600), []string{"www.stub.test. 3600 IN A 192.0.2.90"}) {
		t.Errorf("stub zone: %v", r)
	}
	r = ask("udp", "127.0.0.1", "nx.example.tld.", dns.TypeA, true)
	if r.Rcode != dns.RcodeNameError || !r.RecursionAvailable || len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != dns.TypeSOA {
		t.Errorf("NXDOMAIN: %v", r)
	}
	r = ask("udp", "127.0.0.2", "www.example.tld.", dns.TypeA, true)
	if r.Rcode != dns.RcodeRefused || r.RecursionAvailable || len(r.Answer) != 0 || ede(r) != 18 {
		t.Errorf("client outside allow: %v", r)
	}
	r = ask("udp", "127.0.0.1", "www.example.tld.", dns.TypeA, false)
	if r.Rcode != dns.RcodeRefused || len(r.Answer) != 0 || ede(r) != 20 {
		t.Errorf("RD=0: %v", r)
	}
	r = ask("udp", "127.0.0.1", "www.local.test.", dns.TypeA, true)
	if r.Rcode != dns.RcodeSuccess || !r.Authoritative || !r.RecursionAvailable || !slices.Equal(records(r.Answer, 60), []string{"www.local.test. 60 IN A 192.0.2.54"}) {
		t.Errorf("local zone: %v", r)
	}

	// A reload keeps the resolver, caches and all (a changed [resolver]
	// is logged as needing a restart): with the hierarchy gone, the name
	// resolved above is still answered, from the cache.
	write("tern.toml", strings.Replace(config, "query-loopback = true\n", "query-loopback = true\nmax-ns-names = 3\n", 1))
	hup(t, logs, "msg=reloaded", 1)
	if !strings.Contains(logs.String(), "reload: resolver changed; it takes effect at the next restart") {
		t.Errorf("the reload did not say the resolver's change waits for a restart:\n%s", logs)
	}
	h.Stop()
	r = ask("udp", "127.0.0.1", "www.example.tld.", dns.TypeA, true)
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 2 {
		t.Errorf("after the reload, the hierarchy stopped: %v", r)
	}
	// The hierarchy gone, its ports answer ICMP port unreachable: EDE 23,
	// Network Error.
	r = ask("udp", "127.0.0.1", "other.example.tld.", dns.TypeA, true)
	if r.Rcode != dns.RcodeServerFailure || !r.RecursionAvailable || ede(r) != 23 {
		t.Errorf("hierarchy down: %v", r)
	}
	if s := logs.String(); !strings.Contains(s, "msg=resolving listen=127.0.0.80:") || !strings.Contains(s, "query-loopback=true") {
		t.Errorf("log:\n%s", s)
	}
}

// TestServeResolverFlag: --resolver alone runs only the resolver (no
// authoritative listener, no demo zone), with the defaults: recursion
// for this host only, never to loopback authorities. Nothing here is
// resolved: every question is answered without asking the internet.
func TestServeResolverFlag(t *testing.T) {
	addr, logs := serveUntil(t, regexp.MustCompile(`resolving on (127\.0\.0\.80:\d+)`), "--resolver", "127.0.0.80:0", "--workers", "1")
	m := new(dns.Msg)
	m.SetQuestion("www.example.test.", dns.TypeA)
	m.RecursionDesired = false
	r, _, err := resolverClient("udp", "127.0.0.1").Exchange(m, addr)
	if err != nil || r.Rcode != dns.RcodeRefused || len(r.Answer) != 0 {
		t.Errorf("RD=0 for the demo zone's name: %v %v (the demo zone is not served)", r, err)
	}
	m.SetQuestion("id.server.", dns.TypeTXT)
	m.Question[0].Qclass = dns.ClassCHAOS
	if r, _, err = resolverClient("udp", "127.0.0.1").Exchange(m, addr); err != nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Errorf("CHAOS id.server.: %v %v", r, err)
	}
	if s := logs.String(); strings.Contains(s, "msg=serving") || !strings.Contains(s, "root-hints=\"embedded IANA hints\" query-loopback=false") {
		t.Errorf("log:\n%s", s)
	}
}

// TestServeResolverShutdown: stopping tern serve ends the resolutions in
// flight at once, their clients answered SERVFAIL, before the resolver's
// listeners close. A TCP client waits on a resolution whose only root
// server never answers (resolution-timeout 60s); the server is stopped
// once that server has been asked. The resolutions used to be cancelled
// only after the listeners had closed, and closing waits for every TCP
// connection's deferred answers: the client got no answer and tern serve
// took the whole resolution timeout to exit.
func TestServeResolverShutdown(t *testing.T) {
	// The silent root server: port 53 on one of this package's
	// addresses, reading queries and answering none.
	var silent *net.UDPConn
	for last := 99; last >= 90 && silent == nil; last-- {
		silent, _ = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, byte(last)), Port: 53})
	}
	if silent == nil {
		t.Skip("no free port 53 on 127.0.0.90-99 (not root?)")
	}
	defer silent.Close()
	asked := make(chan struct{}, 1)
	go func() {
		buf := make([]byte, 512)
		for {
			if _, _, err := silent.ReadFromUDP(buf); err != nil {
				return
			}
			select {
			case asked <- struct{}{}:
			default:
			}
		}
	}()
	dir := t.TempDir()
	hints := fmt.Sprintf(". 3600000 NS a.root.\na.root. 3600000 A %s\n", silent.LocalAddr().(*net.UDPAddr).IP)
	if err := os.WriteFile(filepath.Join(dir, "hints"), []byte(hints), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "tern.toml")
	if err := os.WriteFile(cfg, []byte(`
[server]
workers = 1
[resolver]
listen = ["127.0.0.80:0"]
allow = ["127.0.0.1/32"]
root-hints = "hints"
query-loopback = true
validation = false
resolution-timeout = "60s"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb dnstest.LogBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "-c", cfg}, &out, &errb) }()
	re := regexp.MustCompile(`resolving on (127\.0\.0\.80:\d+)`)
	var addr string
	for deadline := time.Now().Add(time.Minute); addr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		cancel()
		t.Fatalf("serve printed %q, stderr %q", out.String(), errb.String())
	}

	co, err := resolverClient("tcp", "127.0.0.1").Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	m := new(dns.Msg)
	m.SetQuestion("www.example.tld.", dns.TypeA)
	if err := co.WriteMsg(m); err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the root server was never asked")
	}
	cancel()
	co.SetReadDeadline(time.Now().Add(time.Minute))
	r, err := co.ReadMsg()
	if err != nil || r.Id != m.Id || r.Rcode != dns.RcodeServerFailure {
		t.Errorf("answer while stopping: %v %v, want SERVFAIL", r, err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited with %d, stderr %q", code, errb.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("serve did not exit")
	}
}

// fakeServer answers DNS queries over UDP on a kernel-picked port of ip
// with what handle returns for each (nil: no answer), until the test
// ends; it returns the address. The test is skipped when ip cannot be
// bound.
func fakeServer(t *testing.T, ip string, handle func(q *dns.Msg) *dns.Msg) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", ip+":0")
	if err != nil {
		t.Skipf("%s: %v", ip, err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := new(dns.Msg)
			if q.Unpack(buf[:n]) != nil || len(q.Question) != 1 {
				continue
			}
			if r := handle(q); r != nil {
				if out, err := r.Pack(); err == nil {
					pc.WriteTo(out, from)
				}
			}
		}
	}()
	return pc.LocalAddr().String()
}

// askUDP asks the resolver at addr name/A with EDNS from 127.0.0.1 over
// UDP, up to three times (a datagram lost on a loaded machine).
func askUDP(t *testing.T, addr, name string) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	m.SetEdns0(1232, false)
	var err error
	for range 3 {
		var r *dns.Msg
		if r, _, err = resolverClient("udp", "127.0.0.1").Exchange(m, addr); err == nil {
			return r
		}
	}
	t.Fatal(err)
	return nil
}

// forwardConfig writes, in a new directory, root hints pointing at
// 127.0.0.89, where nothing listens (a question leaving the forward zone
// cannot reach the internet), and a config whose resolver listens on
// 127.0.0.80 with the settings of extra and forwards zone to server;
// it returns the config's path.
func forwardConfig(t *testing.T, zone, server, extra string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hints"), []byte(". 3600000 NS a.root.\na.root. 3600000 A 127.0.0.89\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := `
[resolver]
listen = ["127.0.0.80:0"]
allow = ["127.0.0.1/32"]
root-hints = "hints"
query-loopback = true
validation = false
` + extra + `
[[resolver.forward]]
name = "` + zone + `"
servers = ["` + server + `"]
`
	path := filepath.Join(dir, "tern.toml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServeForward: a [[resolver.forward]] zone of the config sends the
// questions at or below it to its forwarder, in full and with RD=1, and
// the forwarder's answer (RA, no AA) reaches the client through the
// resolver's listener. The forwarder is a fake on a kernel-picked port of
// 127.0.0.88; the root hints point at 127.0.0.89, where nothing listens,
// so that a question leaving the zone could not reach the internet.
func TestServeForward(t *testing.T) {
	asked := make(chan dns.Msg, 16)
	fwd := fakeServer(t, "127.0.0.88", func(q *dns.Msg) *dns.Msg {
		select {
		case asked <- *q.Copy():
		default:
		}
		r := new(dns.Msg)
		r.SetReply(q)
		r.RecursionAvailable = true
		if q.Question[0].Qtype == dns.TypeA {
			rr, _ := dns.NewRR(q.Question[0].Name + " 300 IN A 192.0.2.77")
			r.Answer = []dns.RR{rr}
		}
		if opt := q.IsEdns0(); opt != nil {
			r.SetEdns0(1232, false)
		}
		return r
	})
	config := forwardConfig(t, "Corp.Example", fwd, "")
	addr, _ := serveUntil(t, regexp.MustCompile(`resolving on (127\.0\.0\.80:\d+)`), "-c", config, "--workers", "1")

	r := askUDP(t, addr, "a.b.www.corp.example.")
	if r.Rcode != dns.RcodeSuccess || !r.RecursionAvailable || r.Authoritative || len(r.Answer) != 1 ||
		r.Answer[0].String() != "a.b.www.corp.example.\t300\tIN\tA\t192.0.2.77" {
		t.Errorf("answer through the forwarder: %v", r)
	}
	select {
	case q := <-asked:
		// Forwarders get the whole question (no minimisation) and RD.
		if !q.RecursionDesired || !strings.EqualFold(q.Question[0].Name, "a.b.www.corp.example.") || q.Question[0].Qtype != dns.TypeA {
			t.Errorf("the forwarder was asked %v", &q)
		}
	default:
		t.Error("the forwarder was not asked")
	}
}

// TestServeStaleClientTimeout: with serve-stale on, tern serve's
// resolver answers a query whose resolution outlasts
// stale-answer-client-timeout from its stale data (TTL 30, EDE 3), and
// the resolution goes on: the forwarder (a fake on a kernel-picked port
// of 127.0.0.87) is asked again after the client has its answer. It
// answers the first query with TTL 1, is then silent until the stale
// answer has come, then answers anew (the resolution's retry), and the
// fresh answer reaches the client. Without the timer the stale answer
// would come only once the resolution had failed, and nothing would be
// asked after it.
func TestServeStaleClientTimeout(t *testing.T) {
	const (
		first = iota
		silent
		fresh
	)
	var mode atomic.Int32
	asked := make(chan struct{}, 1024)
	fwd := fakeServer(t, "127.0.0.87", func(q *dns.Msg) *dns.Msg {
		select {
		case asked <- struct{}{}:
		default:
		}
		rdata := map[int32]string{first: " 1 IN A 192.0.2.77", fresh: " 300 IN A 192.0.2.78"}[mode.Load()]
		if rdata == "" {
			return nil
		}
		r := new(dns.Msg)
		r.SetReply(q)
		r.RecursionAvailable = true
		rr, _ := dns.NewRR(q.Question[0].Name + rdata)
		r.Answer = []dns.RR{rr}
		if q.IsEdns0() != nil {
			r.SetEdns0(1232, false)
		}
		return r
	})
	config := forwardConfig(t, "corp.example", fwd, "serve-stale = \"1h\"\nstale-answer-client-timeout = \"100ms\"\nresolution-timeout = \"60s\"")
	addr, _ := serveUntil(t, regexp.MustCompile(`resolving on (127\.0\.0\.80:\d+)`), "-c", config, "--workers", "1")
	ask := func() *dns.Msg { return askUDP(t, addr, "www.corp.example.") }
	staleEDE := func(r *dns.Msg) bool {
		for _, o := range r.IsEdns0().Option {
			if e, ok := o.(*dns.EDNS0_EDE); ok && e.InfoCode == dns.ExtendedErrorCodeStaleAnswer {
				return true
			}
		}
		return false
	}
	if r := ask(); len(r.Answer) != 1 || r.Answer[0].String() != "www.corp.example.\t1\tIN\tA\t192.0.2.77" {
		t.Fatalf("first answer: %v", r)
	}
	mode.Store(silent)
	time.Sleep(1100 * time.Millisecond) // the TTL of 1 runs out
	r := ask()
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 || r.Answer[0].String() != "www.corp.example.\t30\tIN\tA\t192.0.2.77" || !staleEDE(r) {
		t.Fatalf("with the forwarder silent: want the stale answer, TTL 30, EDE 3:\n%v", r)
	}
	for len(asked) > 0 {
		<-asked
	}
	mode.Store(fresh)
	select {
	case <-asked:
	case <-time.After(20 * time.Second):
		t.Fatal("nothing asked after the stale answer: the resolution did not go on")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r := ask()
		if len(r.Answer) == 1 && r.Answer[0].(*dns.A).A.String() == "192.0.2.78" && !staleEDE(r) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fresh answer never came: %v", r)
		}
	}
}

// serveValidating starts tern serve as a validating resolver (on
// 127.0.0.80) over a root zone signed here (signedRootText: w.test.
// secure, bad.test. bogus) served on port 53 of 127.0.0.81-99, with the
// root's DS as trust anchor and the [resolver] lines extra added; it
// returns the resolver's address, the config's directory (tern.toml
// there) and serve's log. Skipped unless the hierarchy has port 53.
func serveValidating(t *testing.T, extra string) (addr, dir string, logs *dnstest.LogBuffer) {
	t.Helper()
	zoneText, ds := signedRootText(t)
	h := hierarchy.Start(t, 81, 99, 1, []hierarchy.Zone{{Server: 0, Origin: ".", Text: zoneText + "a.root. 3600 IN A {0}\n"}})
	if h.Port != 53 {
		t.Skipf("the hierarchy is on port %d, not 53 (not root): a resolver asks authorities on 53", h.Port)
	}
	dir = t.TempDir()
	for name, text := range map[string]string{"hints": h.Hints(), "root.key": ds + "\n", "tern.toml": validatingConfig + extra} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addr, logs = serveUntil(t, regexp.MustCompile(`resolving on (127\.0\.0\.80:\d+)`), "-c", filepath.Join(dir, "tern.toml"))
	return addr, dir, logs
}

// askValidating asks the resolver at addr name's A records over UDP
// from 127.0.0.1, with DO and CD as given.
func askValidating(t *testing.T, addr, name string, do, cd bool) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	m.SetEdns0(1232, do)
	m.CheckingDisabled = cd
	var r *dns.Msg
	var err error
	for range 3 { // a datagram lost on a loaded machine
		if r, _, err = resolverClient("udp", "127.0.0.1").Exchange(m, addr); err == nil {
			return r
		}
	}
	t.Fatalf("%s: %v", name, err)
	return nil
}

// validatingConfig is serveValidating's tern.toml.
const validatingConfig = `
[server]
listen = ["127.0.0.1:0"]
workers = 1
[resolver]
listen = ["127.0.0.80:0"]
allow = ["127.0.0.1/32"]
root-hints = "hints"
query-loopback = true
validation = true
trust-anchor = "root.key"
`

// TestServeResolverValidation: tern serve with validation = true and a
// trust-anchor file (the DS of a root zone signed here, served on port
// 53 of 127.0.0.81-99) on the wire: AD on a secure answer to a client
// that set DO, none to one that set neither DO nor AD; a record changed
// after signing is SERVFAIL with EDE 6 (DNSSEC Bogus), and its data goes
// to a client that set CD.
func TestServeResolverValidation(t *testing.T) {
	addr, dir, _ := serveValidating(t, "")
	for _, tc := range []struct {
		name        string
		do, cd      bool
		rcode       int
		ad          bool
		answers     int
		ede         uint16
		edeExpected bool
	}{
		{"w.test.", true, false, dns.RcodeSuccess, true, 2, 0, false}, // A and its RRSIG
		{"w.test.", false, false, dns.RcodeSuccess, false, 1, 0, false},
		{"bad.test.", true, false, dns.RcodeServerFailure, false, 0, dns.ExtendedErrorCodeDNSBogus, true},
		{"bad.test.", true, true, dns.RcodeSuccess, false, 2, 0, false},
		// RFC 8198: nx2.test. is in the NSEC span that proved nx1.test.
		// absent.
		{"nx1.test.", true, false, dns.RcodeNameError, true, 0, 0, false},
		{"nx2.test.", true, false, dns.RcodeNameError, true, 0, 0, false},
		{"nx3.test.", false, false, dns.RcodeNameError, false, 0, 0, false},
	} {
		r := askValidating(t, addr, tc.name, tc.do, tc.cd)
		code, ok := uint16(0), false
		for _, o := range r.IsEdns0().Option {
			if e, isEDE := o.(*dns.EDNS0_EDE); isEDE {
				code, ok = e.InfoCode, true
			}
		}
		if r.Rcode != tc.rcode || r.AuthenticatedData != tc.ad || len(r.Answer) != tc.answers || code != tc.ede || ok != tc.edeExpected {
			t.Errorf("%s DO %v CD %v: %v", tc.name, tc.do, tc.cd, r)
		}
		if tc.rcode == dns.RcodeNameError {
			// The SOA, and with DO the NSEC records and every RRSIG
			// (RFC 4035 §3.1.3.2); the second name's answer is
			// synthesised from the first's (RFC 8198).
			types := map[uint16]int{}
			for _, rr := range r.Ns {
				types[rr.Header().Rrtype]++
			}
			wantSigs := 0
			if tc.do {
				wantSigs = 1 + types[dns.TypeNSEC]
			}
			if types[dns.TypeSOA] != 1 || (types[dns.TypeNSEC] == 0) != !tc.do || types[dns.TypeRRSIG] != wantSigs {
				t.Errorf("%s DO %v: authority %v", tc.name, tc.do, r.Ns)
			}
		}
	}
	// The trust-anchor file is writable, so RFC 5011 manages it: the
	// first probe of the root's DNSKEY RRset replaces the DS by the key
	// it matches, Valid, in Unbound's auto-trust-anchor-file form.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(dir, "root.key"))
		if strings.Contains(string(b), "DNSKEY\t257 3 ") && strings.Contains(string(b), ";;state=2 [ VALID ]") && !strings.Contains(string(b), "\tDS\t") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("root.key not managed after 30s:\n%s", b)
		}
	}
}

// TestServeNegativeTrustAnchor: [resolver] negative-trust-anchors (RFC
// 7646) through tern serve and its reload: bad.test.'s record changed
// after signing is SERVFAIL (EDE 6); with bad.test. added to the
// config and SIGHUP, it is answered, without AD or EDE, while w.test.
// keeps AD and the reload asks no restart; with it taken out again
// (another SIGHUP) it is SERVFAIL once more, not the answer the response
// cache kept from under the anchor.
func TestServeNegativeTrustAnchor(t *testing.T) {
	addr, dir, logs := serveValidating(t, "")
	ask := func(step, name string, rcode int, ad bool, answers int) {
		t.Helper()
		r := askValidating(t, addr, name, true, false)
		ede := false
		for _, o := range r.IsEdns0().Option {
			_, isEDE := o.(*dns.EDNS0_EDE)
			ede = ede || isEDE
		}
		if r.Rcode != rcode || r.AuthenticatedData != ad || len(r.Answer) != answers || ede != (rcode == dns.RcodeServerFailure) {
			t.Errorf("%s: %s: %v", step, name, r)
		}
	}
	setNTAs := func(list string, n int) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "tern.toml"), []byte(validatingConfig+"negative-trust-anchors = "+list+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		hup(t, logs, "reload: negative trust anchors", n)
	}
	ask("before", "bad.test.", dns.RcodeServerFailure, false, 0)
	setNTAs(`["Bad.Test"]`, 1)
	ask("under the anchor", "bad.test.", dns.RcodeSuccess, false, 2) // A and RRSIG
	ask("under the anchor", "bad.test.", dns.RcodeSuccess, false, 2) // from the response cache
	ask("under the anchor", "w.test.", dns.RcodeSuccess, true, 2)
	setNTAs(`[]`, 2)
	ask("after", "bad.test.", dns.RcodeServerFailure, false, 0)
	if strings.Contains(logs.String(), "next restart") {
		t.Errorf("a reload asked for a restart:\n%s", logs.String())
	}
}
