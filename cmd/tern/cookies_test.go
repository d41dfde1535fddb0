package main

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cookie"
	"github.com/tern-dns/tern/internal/dnstest"
)

// Secrets of TestCookiesConfig, as [cookies] takes them.
const (
	cookieS1 = "000102030405060708090a0b0c0d0e0f"
	cookieS2 = "f0e0d0c0b0a090807060504030201000"
	cookieS3 = "3333333333333333cccccccccccccccc"
)

// cookieQuery asks addr (over UDP, from 127.0.0.1) for www.example.test
// A with a COOKIE option of opt's bytes, and returns the RCODE and the
// answer's COOKIE option (nil: none).
func cookieQuery(t *testing.T, addr string, opt []byte) (int, []byte) {
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
	var got []byte
	if o := r.IsEdns0(); o != nil {
		for _, e := range o.Option {
			if c, ok := e.(*dns.EDNS0_COOKIE); ok {
				got, _ = hex.DecodeString(c.Cookie)
			}
		}
	}
	return r.Rcode, got
}

// keysOf returns cookie keys under the secrets (hex), the first making
// cookies.
func keysOf(t *testing.T, hexSecrets ...string) *cookie.Keys {
	t.Helper()
	list, err := cookie.ParseSecrets(hexSecrets)
	if err != nil {
		t.Fatal(err)
	}
	k := cookie.NewKeys()
	k.Set(list)
	return k
}

// TestCookiesConfig: the [cookies] table on the wire, through tern
// serve. Servers given the same secret (secret, or secret-file; an
// anycast set) accept each other's cookies and echo them; one whose
// secret was rolled over (secret-file: the new secret first, the
// previous second) accepts the previous secret's cookies and answers
// with one of the new; a reload (SIGHUP) applies a rewritten secret
// file; with answer-cookie = false no answer carries a COOKIE option
// and no cookie gets BADCOOKIE. Each cookie returned is checked against
// the secret it must have been made with (cookie.Keys in the test).
func TestCookiesConfig(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "cookie-secrets")
	if err := os.WriteFile(secretFile, []byte("# rolled: S2 makes cookies, S1 accepted\n"+cookieS2+"\n"+cookieS1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func(name, table string) *child {
		t.Helper()
		cfg := filepath.Join(dir, name+".toml")
		conf := "[server]\ncontrol = \"\"\ndata-dir = \"data-" + name + "\"\n[cookies]\n" + table
		if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		return startChild(t, "serve", "-c", cfg, "--listen", "127.0.0.1:0", "--workers", "1")
	}
	a := start("a", fmt.Sprintf("secret = [%q]\n", cookieS1))
	b := start("b", fmt.Sprintf("secret = [%q]\n", "0x"+cookieS1)) // Knot's form
	rolled := start("rolled", "secret-file = \"cookie-secrets\"\n")
	off := start("off", "answer-cookie = false\n")
	random := start("random", "")

	k1, k2, k3 := keysOf(t, cookieS1), keysOf(t, cookieS2), keysOf(t, cookieS3)
	client := netip.MustParseAddr("127.0.0.1")
	cc := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	// made is a client cookie and a server cookie of keys, made now.
	made := func(k *cookie.Keys) []byte {
		var sc [cookie.ServerLen]byte
		k.Make(sc[:], cc, client, uint32(time.Now().Unix()))
		return append(append([]byte(nil), cc...), sc[:]...)
	}
	forged := append(append([]byte(nil), cc...), 1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)

	type row struct {
		name   string
		server *child
		opt    func() []byte
		rcode  int
		// want: "none" (no COOKIE option), "echo" (the query's), or
		// the keys the fresh server cookie must be valid under.
		want  string
		fresh *cookie.Keys
	}
	run := func(t *testing.T, rows []row) {
		for _, r := range rows {
			t.Run(r.name, func(t *testing.T) {
				opt := r.opt()
				rcode, got := cookieQuery(t, r.server.addr, opt)
				if rcode != r.rcode {
					t.Errorf("rcode %s, want %s", dns.RcodeToString[rcode], dns.RcodeToString[r.rcode])
				}
				switch r.want {
				case "none":
					if got != nil {
						t.Errorf("COOKIE %x, want none", got)
					}
				case "echo":
					if !bytes.Equal(got, opt) {
						t.Errorf("COOKIE %x, want the query's %x echoed", got, opt)
					}
				default:
					if len(got) != 24 || !bytes.Equal(got[:8], cc) || bytes.Equal(got, opt) {
						t.Fatalf("COOKIE %x, want a fresh one", got)
					}
					if v := r.fresh.Check(got, client, uint32(time.Now().Unix())); v != cookie.Valid {
						t.Errorf("the fresh cookie is %v under %s's secret, want valid", v, r.want)
					}
				}
			})
		}
	}
	client8 := func() []byte { return cc }
	run(t, []row{
		{"same secret: a's own", a, func() []byte { return made(k1) }, dns.RcodeSuccess, "echo", nil},
		{"same secret: b takes a's", b, func() []byte { _, c := cookieQuery(t, a.addr, cc); return c }, dns.RcodeSuccess, "echo", nil},
		{"same secret: a takes b's", a, func() []byte { _, c := cookieQuery(t, b.addr, cc); return c }, dns.RcodeSuccess, "echo", nil},
		{"same secret: client cookie", b, client8, dns.RcodeSuccess, "S1", k1},
		{"other secret: BADCOOKIE", a, func() []byte { return made(k2) }, cookie.RcodeBadCookie, "S1", k1},
		{"rolled: the new secret's echoed", rolled, func() []byte { return made(k2) }, dns.RcodeSuccess, "echo", nil},
		{"rolled: the previous secret's accepted, a new one given", rolled, func() []byte { _, c := cookieQuery(t, a.addr, cc); return c }, dns.RcodeSuccess, "S2", k2},
		{"rolled: unknown secret: BADCOOKIE", rolled, func() []byte { return made(k3) }, cookie.RcodeBadCookie, "S2", k2},
		{"not rolled: the new secret's refused", a, func() []byte { _, c := cookieQuery(t, rolled.addr, cc); return c }, cookie.RcodeBadCookie, "S1", k1},
		{"off: client cookie", off, client8, dns.RcodeSuccess, "none", nil},
		{"off: forged server cookie answered", off, func() []byte { return forged }, dns.RcodeSuccess, "none", nil},
		{"off: malformed option ignored", off, func() []byte { return cc[:5] }, dns.RcodeSuccess, "none", nil},
	})

	// Roll on: S3 makes cookies, S2 accepted, S1 dropped; applied by a
	// reload.
	if err := os.WriteFile(secretFile, []byte(cookieS3+"\n"+cookieS2+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sighup(t, rolled, "reloaded")
	run(t, []row{
		{"reloaded: the new secret's echoed", rolled, func() []byte { return made(k3) }, dns.RcodeSuccess, "echo", nil},
		{"reloaded: the previous secret's accepted", rolled, func() []byte { return made(k2) }, dns.RcodeSuccess, "S3", k3},
		{"reloaded: the dropped secret's refused", rolled, func() []byte { return made(k1) }, cookie.RcodeBadCookie, "S3", k3},
	})

	// A broken secret file fails the reload, naming its line, and
	// changes nothing.
	if err := os.WriteFile(secretFile, []byte(cookieS1+"\nnot-a-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sighup(t, rolled, secretFile+":2: a secret is 32 hexadecimal digits")
	run(t, []row{
		{"failed reload: secrets kept", rolled, func() []byte { return made(k3) }, dns.RcodeSuccess, "echo", nil},
	})

	// A reload that configures a secret where a random one made the
	// cookies keeps the random one accepted (secret-lifetime): a
	// client's cookie of before gets an answer and a cookie of the
	// configured secret, not a BADCOOKIE round trip.
	_, before := cookieQuery(t, random.addr, cc)
	if len(before) != 24 {
		t.Fatalf("random: COOKIE %x, want a server cookie", before)
	}
	conf := "[server]\ncontrol = \"\"\ndata-dir = \"data-random\"\n[cookies]\n" + fmt.Sprintf("secret = [%q]\n", cookieS1)
	if err := os.WriteFile(filepath.Join(dir, "random.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	sighup(t, random, "reloaded")
	run(t, []row{
		{"configured after random: the random secret's cookie accepted", random, func() []byte { return before }, dns.RcodeSuccess, "S1", k1},
		{"configured after random: its own echoed", random, func() []byte { return made(k1) }, dns.RcodeSuccess, "echo", nil},
	})
}

// sighup sends c a SIGHUP and waits (a minute at most) for want in its
// log.
func sighup(t *testing.T, c *child, want string) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, c.logs, regexp.MustCompile(regexp.QuoteMeta(want)), 1, func() string { return "" })
}

// TestCookieRotationBesideReload: the random secret's rotation (a
// ticker's goroutine) never replaces secrets a reload configured at the
// same moment: each time the reload's secret is in use once set returns,
// the rotation ticking beside it all along. Bounded: 2,000,000 reloads
// or 3 s (without cookieSecrets.mu it failed in 4 runs of 5 at 500,000).
func TestCookieRotationBesideReload(t *testing.T) {
	want := keysOf(t, cookieS1)
	secret, err := cookie.ParseSecret(cookieS1)
	if err != nil {
		t.Fatal(err)
	}
	c := &cookieSecrets{keys: cookie.NewKeys()}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				c.tick()
			}
		}
	}()
	defer func() { close(stop); <-done }()
	cc, addr := []byte{1, 2, 3, 4, 5, 6, 7, 8}, netip.MustParseAddr("192.0.2.1")
	var got, exp [cookie.ServerLen]byte
	want.Make(exp[:], cc, addr, 1)
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; i < 2000000 && (i%1000 != 0 || time.Now().Before(deadline)); i++ {
		c.set([]cookie.Secret{secret}, time.Now())
		c.keys.Make(got[:], cc, addr, 1)
		if got != exp {
			t.Fatalf("reload %d: a rotation replaced the configured secret", i)
		}
		c.set(nil, time.Now()) // back to a random secret, rotated
	}
}

// TestCookieSecretSwitch: a reload that configures a secret where a
// random one made cookies, or removes the configured ones, keeps every
// secret accepted until then (the one making cookies and the other: the
// random secret's previous, a configured list's second) accepted for
// secret-lifetime (as a rotation keeps its previous one), also across a
// rotation, and no longer; a reload between configured secrets keeps
// of the configured ones only what it lists (an operator's roll-over),
// and the random secrets a switch kept until their time (docs/config.md).
func TestCookieSecretSwitch(t *testing.T) {
	s1, err := cookie.ParseSecret(cookieS1)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := cookie.ParseSecret(cookieS2)
	if err != nil {
		t.Fatal(err)
	}
	cc, addr := []byte{1, 2, 3, 4, 5, 6, 7, 8}, netip.MustParseAddr("192.0.2.1")
	start := time.Unix(1_800_000_000, 0)
	at := func(d time.Duration) uint32 { return uint32(start.Add(d).Unix()) }
	c := &cookieSecrets{keys: cookie.NewKeys(), lifetime: 20 * time.Minute}
	made := func() []byte {
		var sc [cookie.ServerLen]byte
		c.keys.Make(sc[:], cc, addr, at(0))
		return append(append([]byte(nil), cc...), sc[:]...)
	}
	check := func(what string, opt []byte, d time.Duration, want cookie.Verdict) {
		t.Helper()
		if v := c.keys.Check(opt, addr, at(d)); v != want {
			t.Errorf("%s, %v later: %v, want %v", what, d, v, want)
		}
	}
	previous := made()
	c.tick() // the random secret rotated: previous's still accepted
	random := made()
	c.set([]cookie.Secret{s1}, start) // random -> configured
	for _, d := range []time.Duration{time.Minute, 19 * time.Minute} {
		check("random secret's cookie after a secret is configured", random, d, cookie.Stale)
		check("previous random secret's cookie after a secret is configured", previous, d, cookie.Stale)
	}
	check("random secret's cookie after secret-lifetime", random, 21*time.Minute, cookie.Bad)
	check("previous random secret's cookie after secret-lifetime", previous, 21*time.Minute, cookie.Bad)
	configured := made()
	c.set([]cookie.Secret{s2}, start) // configured -> configured
	second := made()
	check("a configured secret's cookie after a reload dropped it", configured, time.Minute, cookie.Bad)
	check("random secret's cookie after a configured -> configured reload", random, time.Minute, cookie.Stale)
	c.set([]cookie.Secret{s1, s2}, start)
	c.set(nil, start) // configured -> random
	c.tick()          // and rotated at once
	for _, d := range []time.Duration{time.Minute, 19 * time.Minute} {
		check("configured secret's cookie after the secret is removed and rotated", configured, d, cookie.Stale)
		check("configured second secret's cookie after the secrets are removed", second, d, cookie.Stale)
	}
	check("configured secret's cookie after secret-lifetime", configured, 21*time.Minute, cookie.Bad)
	check("configured second secret's cookie after secret-lifetime", second, 21*time.Minute, cookie.Bad)
	check("random secret's cookie after a second switch", random, time.Minute, cookie.Bad)
}
