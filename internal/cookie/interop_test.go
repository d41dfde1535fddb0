package cookie_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/cookie"
	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/peer"
	"github.com/tern-dns/tern/internal/server"
)

// Tern's test address (this package's block: 127.0.0.151-164); named
// listens only on addresses its interface scan finds: 127.0.0.1, on a
// free port.
const (
	ternAddr  = "127.0.0.158"
	namedAddr = "127.0.0.1"
)

var (
	digCookie  = regexp.MustCompile(`(?i)COOKIE: ([0-9a-f]+)`)
	digStatus  = regexp.MustCompile(`status: ([A-Z]+)`)
	kdigStatus = regexp.MustCompile(`status: ([A-Z]+);`)
)

// lookup runs dig or kdig with args against addr:port and returns the
// response's status and COOKIE (hex, lower-case), retried a few times
// for a loaded machine.
func lookup(t *testing.T, tool, addr string, port int, args ...string) (status, ck string) {
	t.Helper()
	path, ok := peer.FindTool(tool)
	if !ok {
		t.Skipf("%s not installed (make deps)", tool)
	}
	retry := []string{"+tries=3", "+time=2"}
	if tool == "kdig" {
		retry = []string{"+retry=2", "+timeout=2"}
	}
	all := append(append([]string{"@" + addr, "-p", fmt.Sprint(port), "www.example.test.", "A"}, retry...), args...)
	var out []byte
	var err error
	for range 3 {
		if out, err = exec.Command(path, all...).CombinedOutput(); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", tool, all, err, out)
	}
	re := digStatus
	if tool == "kdig" {
		re = kdigStatus
	}
	if m := re.FindSubmatch(out); m != nil {
		status = string(m[1])
	}
	// The last COOKIE printed is the final response's (dig prints the
	// BADCOOKIE's, then the retry's).
	if ms := digCookie.FindAllSubmatch(out, -1); len(ms) > 0 {
		ck = strings.ToLower(string(ms[len(ms)-1][1]))
	}
	return status, ck
}

// checkCookies runs the cookie exchange of dig and kdig against a
// server: a client cookie gets a server cookie (RFC 9018's form:
// version 1, reserved zero), which a second query presents and is
// accepted (no BADCOOKIE), and a forged server cookie gets BADCOOKIE
// (when wantBad) or an answer (statuses returned for comparison).
func checkCookies(t *testing.T, addr string, port int, wantBad bool) (forged string) {
	const forgedCookie = "0102030405060708010000005cf79f111f8130c3eee29480"
	for _, tool := range []string{"dig", "kdig"} {
		st, ck := lookup(t, tool, addr, port, "+cookie")
		if st != "NOERROR" || len(ck) != 48 || ck[16:24] != "01000000" {
			t.Errorf("%s %s +cookie: status %s, cookie %q (want NOERROR and a 24-byte RFC 9018 cookie)", tool, addr, st, ck)
			continue
		}
		st2, ck2 := lookup(t, tool, addr, port, "+cookie="+ck)
		if st2 != "NOERROR" || len(ck2) != 48 || ck2[:16] != ck[:16] {
			t.Errorf("%s %s +cookie=%s: status %s, cookie %q", tool, addr, ck, st2, ck2)
		}
	}
	st, _ := lookup(t, "dig", addr, port, "+cookie="+forgedCookie, "+nobadcookie")
	if wantBad && st != "BADCOOKIE" {
		t.Errorf("dig %s with a forged server cookie: %s, want BADCOOKIE", addr, st)
	}
	// dig retries a BADCOOKIE with the cookie it got: answered.
	if st, ck := lookup(t, "dig", addr, port, "+cookie="+forgedCookie); st != "NOERROR" || len(ck) != 48 || ck[:16] != forgedCookie[:16] {
		t.Errorf("dig %s forged cookie with retry: %s %q", addr, st, ck)
	}
	return st
}

// TestDigKdigCookies: dig +cookie and kdig +cookie against Tern, and
// the same against BIND's named (RFC 9018 cookies) for comparison.
func TestDigKdigCookies(t *testing.T) {
	h := server.HandlerFunc(func(tcp bool) server.Worker {
		return responder(t).NewWorker(tcp, auth.DefaultCacheSize)
	})
	s := server.New(server.Config{Listen: []string{ternAddr + ":0"}, Workers: 1}, cookie.Handler(h, cookie.NewKeys(), 1232))
	if err := s.Start(context.Background()); err != nil {
		t.Skipf("listen on %s: %v", ternAddr, err)
	}
	defer s.Close()
	_, portText, _ := net.SplitHostPort(s.Addrs()[0])
	var port int
	fmt.Sscan(portText, &port)
	ternForged := checkCookies(t, ternAddr, port, true)

	np, ok := startNamed(t)
	if !ok {
		t.Log("named not installed: no comparison with BIND")
		return
	}
	namedForged := checkCookies(t, namedAddr, np, false)
	t.Logf("a forged server cookie (+nobadcookie): Tern %s, named %s", ternForged, namedForged)
}

// startNamed runs BIND's named on namedAddr, a free port, serving
// testZone, with extra options, until the test ends; it returns the
// port, or false when named is not installed.
func startNamed(t *testing.T, extra ...string) (int, bool) {
	t.Helper()
	named, ok := peer.FindTool("named")
	if !ok {
		return 0, false
	}
	dir := t.TempDir()
	zf := filepath.Join(dir, "example.test.zone")
	conf := filepath.Join(dir, "named.conf")
	np := dnstest.FreePort(t, namedAddr)
	text := peer.NamedOptions(dir, namedAddr, np, extra...) + fmt.Sprintf("zone \"example.test\" { type primary; file %q; };\n", zf)
	if err := os.WriteFile(zf, []byte(dnstest.ExampleZone), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	proc, err := peer.Start(exec.Command(named, "-g", "-n", "1", "-c", conf))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.Stop)
	// Until named serves the zone (a TCP query: no cookie rule
	// refuses it).
	deadline := time.Now().Add(20 * time.Second)
	for {
		m := new(dns.Msg)
		m.SetQuestion("www.example.test.", dns.TypeA)
		r, err := dnstest.Exchange(m, "tcp", fmt.Sprintf("%s:%d", namedAddr, np))
		if err == nil && r.Rcode == dns.RcodeSuccess {
			break
		}
		if time.Now().After(deadline) || proc.Exited() {
			t.Fatalf("named did not answer (%v %v):\n%s", r, err, proc.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return np, true
}

// TestSharedSecretWithNamed: Tern and BIND's named given the same
// cookie secret (named's cookie-secret, siphash24: RFC 9018 cookies)
// accept each other's server cookies, as servers of an anycast set
// must: named, told to require a valid server cookie over UDP, answers
// a query bearing Tern's cookie and refuses (BADCOOKIE) one bearing a
// cookie of another secret; Tern echoes named's. And a Tern rolled over
// to a new secret (the shared one second) still accepts named's.
func TestSharedSecretWithNamed(t *testing.T) {
	const shared, other = "e5e973e5a6b2a43f48e7dc849e37bfcf", "445536bcd2513298075a5d379663c962"
	np, ok := startNamed(t, fmt.Sprintf("cookie-secret %q;", shared), "cookie-algorithm siphash24;", "require-server-cookie yes;", "answer-cookie yes;")
	if !ok {
		t.Skip("named not installed (make deps)")
	}
	named := fmt.Sprintf("%s:%d", namedAddr, np)
	serve := func(secrets ...string) string {
		t.Helper()
		list, err := cookie.ParseSecrets(secrets)
		if err != nil {
			t.Fatal(err)
		}
		keys := cookie.NewKeys()
		keys.Set(list)
		h := server.HandlerFunc(func(tcp bool) server.Worker { return responder(t).NewWorker(tcp, auth.DefaultCacheSize) })
		s := server.New(server.Config{Listen: []string{namedAddr + ":0"}, Workers: 1}, cookie.Handler(h, keys, 1232))
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s.Addrs()[0]
	}
	tern, rolled, stranger := serve(shared), serve(other, shared), serve(other)
	cc := []byte{0x24, 0x64, 0xc4, 0xab, 0xcf, 0x10, 0xc9, 0x57}
	// ask sends a UDP query with the COOKIE option opt to addr and
	// returns the RCODE, the number of answers and the COOKIE returned.
	ask := func(addr string, opt []byte) (int, int, []byte) {
		t.Helper()
		m := new(dns.Msg)
		m.SetQuestion("www.example.test.", dns.TypeA)
		m.SetEdns0(1232, false)
		o := m.IsEdns0()
		o.Option = append(o.Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: hex.EncodeToString(opt)})
		r, err := dnstest.Exchange(m, "udp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return r.Rcode, len(r.Answer), respCookie(t, r)
	}
	// Each server's cookie for cc (a client cookie alone gets one; named
	// requires a server cookie: BADCOOKIE, with one).
	_, _, fromNamed := ask(named, cc)
	_, _, fromTern := ask(tern, cc)
	_, _, fromStranger := ask(stranger, cc)
	for _, c := range []struct {
		what     string
		to       string
		opt      []byte
		rcode    int
		answered bool
	}{
		{"named takes Tern's cookie", named, fromTern, dns.RcodeSuccess, true},
		{"named takes its own", named, fromNamed, dns.RcodeSuccess, true},
		{"named refuses another secret's", named, fromStranger, cookie.RcodeBadCookie, false},
		{"Tern takes named's", tern, fromNamed, dns.RcodeSuccess, true},
		{"a rolled Tern takes named's (previous secret)", rolled, fromNamed, dns.RcodeSuccess, true},
		{"another secret's Tern refuses named's", stranger, fromNamed, cookie.RcodeBadCookie, false},
	} {
		if len(c.opt) != cookie.ClientLen+cookie.ServerLen {
			t.Fatalf("%s: no server cookie to present (%x)", c.what, c.opt)
		}
		rcode, n, got := ask(c.to, c.opt)
		if rcode != c.rcode || (n == 1) != c.answered || len(got) != cookie.ClientLen+cookie.ServerLen {
			t.Errorf("%s: %s, %d answers, cookie %x; want %s, answered %v, a cookie", c.what, dns.RcodeToString[rcode], n, got, dns.RcodeToString[c.rcode], c.answered)
		}
	}
}
