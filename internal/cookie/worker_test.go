package cookie_test

import (
	"bytes"
	"encoding/hex"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/cookie"
	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/zone"
)

// responder serves dnstest.ExampleZone.
func responder(t testing.TB) *auth.Responder {
	t.Helper()
	return auth.New(zone.NewSet(dnstest.Zone(t, "example.test.", dnstest.ExampleZone)), auth.Options{})
}

// query is a query for www.example.test. A with EDNS and, unless opt is
// nil, a COOKIE option of opt's bytes.
func query(t testing.TB, opt []byte, edns bool) []byte {
	m := new(dns.Msg)
	m.SetQuestion("www.example.test.", dns.TypeA)
	if edns {
		m.SetEdns0(1232, false)
		if opt != nil {
			o := m.IsEdns0()
			o.Option = append(o.Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: hex.EncodeToString(opt)})
		}
	}
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// respCookie is the COOKIE option of r, or nil.
func respCookie(t testing.TB, r *dns.Msg) []byte {
	o := r.IsEdns0()
	if o == nil {
		return nil
	}
	for _, e := range o.Option {
		if c, ok := e.(*dns.EDNS0_COOKIE); ok {
			b, err := hex.DecodeString(c.Cookie)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	return nil
}

const client = "198.51.100.7"

type fixture struct {
	keys *cookie.Keys
	w    *cookie.Worker
	// set has the metrics the worker counts in.
	set *metrics.Set
}

func newFixture(t testing.TB) *fixture {
	keys := cookie.NewKeys()
	inner := responder(t).NewWorker(false, auth.DefaultCacheSize)
	set := metrics.New()
	inner.CountIn(set.Shard(metrics.Auth))
	return &fixture{keys: keys, w: cookie.NewWorker(inner, keys, 1232), set: set}
}

func (f *fixture) ask(t testing.TB, pkt []byte, from string, tcp bool) (*dns.Msg, []byte) {
	t.Helper()
	req := server.NewRequest(pkt, netip.AddrPortFrom(netip.MustParseAddr(from), 5353), tcp, nil)
	resp := f.w.Answer(req, make([]byte, 0, server.BufferSize))
	if resp == nil {
		t.Fatal("no response")
	}
	r := new(dns.Msg)
	if err := r.Unpack(resp); err != nil {
		t.Fatalf("response does not unpack: %v", err)
	}
	return r, resp
}

// made is a cookie of f's keys for cc and the client, made age ago.
func (f *fixture) made(cc []byte, age time.Duration) []byte {
	var sc [cookie.ServerLen]byte
	f.keys.Make(sc[:], cc, netip.MustParseAddr(client), uint32(time.Now().Add(-age).Unix()))
	return append(append([]byte(nil), cc...), sc[:]...)
}

// TestCookieRules checks each rule at wire level through an
// authoritative worker: what comes back, its RCODE and its cookie.
func TestCookieRules(t *testing.T) {
	cc := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	for _, c := range []struct {
		name  string
		opt   func(f *fixture) []byte
		edns  bool
		tcp   bool
		rcode int
		// cookie: "none", "fresh" (a new valid one), "echo" (the
		// query's own)
		cookie string
	}{
		{"no EDNS", nil, false, false, dns.RcodeSuccess, "none"},
		{"EDNS, no cookie", nil, true, false, dns.RcodeSuccess, "none"},
		{"client cookie only", func(*fixture) []byte { return cc }, true, false, dns.RcodeSuccess, "fresh"},
		{"valid server cookie: echoed", func(f *fixture) []byte { return f.made(cc, time.Minute) }, true, false, dns.RcodeSuccess, "echo"},
		{"31 minutes old: refreshed", func(f *fixture) []byte { return f.made(cc, 31*time.Minute) }, true, false, dns.RcodeSuccess, "fresh"},
		{"previous secret: accepted, replaced", func(f *fixture) []byte { o := f.made(cc, time.Minute); f.keys.RotateRandom(); return o }, true, false, dns.RcodeSuccess, "fresh"},
		{"two secrets ago: BADCOOKIE", func(f *fixture) []byte {
			o := f.made(cc, time.Minute)
			f.keys.RotateRandom()
			f.keys.RotateRandom()
			return o
		}, true, false, cookie.RcodeBadCookie, "fresh"},
		{"expired over UDP: BADCOOKIE", func(f *fixture) []byte { return f.made(cc, 61*time.Minute) }, true, false, cookie.RcodeBadCookie, "fresh"},
		{"expired over TCP: answered", func(f *fixture) []byte { return f.made(cc, 61*time.Minute) }, true, true, dns.RcodeSuccess, "fresh"},
		{"from the future: BADCOOKIE", func(f *fixture) []byte { return f.made(cc, -6*time.Minute) }, true, false, cookie.RcodeBadCookie, "fresh"},
		{"another client's: BADCOOKIE", func(f *fixture) []byte {
			var sc [cookie.ServerLen]byte
			f.keys.Make(sc[:], cc, netip.MustParseAddr("198.51.100.8"), uint32(time.Now().Unix()))
			return append(append([]byte(nil), cc...), sc[:]...)
		}, true, false, cookie.RcodeBadCookie, "fresh"},
		{"8-byte server cookie: BADCOOKIE", func(*fixture) []byte { return append(append([]byte(nil), cc...), cc...) }, true, false, cookie.RcodeBadCookie, "fresh"},
		{"7 bytes: FORMERR", func(*fixture) []byte { return cc[:7] }, true, false, dns.RcodeFormatError, "none"},
		{"9 bytes: FORMERR", func(*fixture) []byte { return make([]byte, 9) }, true, false, dns.RcodeFormatError, "none"},
		{"41 bytes: FORMERR", func(*fixture) []byte { return make([]byte, 41) }, true, true, dns.RcodeFormatError, "none"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			var opt []byte
			if c.opt != nil {
				opt = c.opt(f)
			}
			q := query(t, opt, c.edns)
			r, _ := f.ask(t, q, client, c.tcp)
			if r.Rcode != c.rcode {
				t.Errorf("rcode %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[c.rcode])
			}
			if answered := len(r.Answer) == 1; answered != (c.rcode == dns.RcodeSuccess) {
				t.Errorf("%d answers", len(r.Answer))
			}
			got := respCookie(t, r)
			switch c.cookie {
			case "none":
				if got != nil {
					t.Errorf("cookie %x, want none", got)
				}
				if c.rcode == dns.RcodeFormatError && (r.IsEdns0() == nil || len(r.Question) != 1) {
					t.Errorf("FORMERR without OPT or question: %v", r)
				}
			case "echo":
				if !bytes.Equal(got, opt) {
					t.Errorf("cookie %x, want the query's %x", got, opt)
				}
			case "fresh":
				if len(got) != 24 || !bytes.Equal(got[:8], cc) || bytes.Equal(got, opt) {
					t.Fatalf("cookie %x, want a fresh one for %x", got, cc)
				}
				if v := f.keys.Check(got, netip.MustParseAddr(client), uint32(time.Now().Unix())); v != cookie.Valid {
					t.Errorf("the fresh cookie is %v", v)
				}
			}
			// A valid cookie exempts from RRL.
			if want := c.cookie == "echo" || c.name == "31 minutes old: refreshed" || c.name == "previous secret: accepted, replaced"; f.w.ValidCookie(0) != want {
				t.Errorf("ValidCookie %v, want %v", f.w.ValidCookie(0), want)
			}
		})
	}
}

// TestCookieCache: the response cache holds no cookie. Two clients
// asking the same question (hits after the second miss) each get their
// own cookie, and a query without one gets none.
func TestCookieCache(t *testing.T) {
	f := newFixture(t)
	a := []byte{1, 1, 1, 1, 1, 1, 1, 1}
	b := []byte{2, 2, 2, 2, 2, 2, 2, 2}
	for i := range 4 {
		ra, _ := f.ask(t, query(t, a, true), client, false)
		rb, _ := f.ask(t, query(t, b, true), "198.51.100.99", false)
		rn, _ := f.ask(t, query(t, nil, true), client, false)
		if ca := respCookie(t, ra); !bytes.Equal(ca[:8], a) {
			t.Errorf("round %d: client a got %x", i, ca)
		}
		if cb := respCookie(t, rb); !bytes.Equal(cb[:8], b) {
			t.Errorf("round %d: client b got %x", i, cb)
		}
		if cn := respCookie(t, rn); cn != nil {
			t.Errorf("round %d: a query without cookie got %x", i, cn)
		}
		if len(ra.Answer) != 1 || len(rb.Answer) != 1 || len(rn.Answer) != 1 {
			t.Errorf("round %d: answers %d %d %d", i, len(ra.Answer), len(rb.Answer), len(rn.Answer))
		}
	}
}

// TestCookieMetrics: each query's cookie outcome counts in the inner
// Worker's metrics Shard, published when its answer is (BADCOOKIE and
// FORMERR, made by the cookie layer alone, too), one at a time and in
// batches.
func TestCookieMetrics(t *testing.T) {
	cc := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	f := newFixture(t)
	ask := func(opt []byte, edns, tcp bool) {
		t.Helper()
		req := server.NewRequest(query(t, opt, edns), netip.AddrPortFrom(netip.MustParseAddr(client), 5353), tcp, nil)
		if f.w.Answer(req, make([]byte, 0, server.BufferSize)) == nil {
			t.Fatal("no response")
		}
	}
	other := f.made(cc, time.Minute)
	other[len(other)-1] ^= 1
	ask(nil, false, false)
	ask(nil, true, false)
	ask(cc, true, false)
	ask(f.made(cc, time.Minute), true, false)
	ask(f.made(cc, time.Minute), true, false)
	ask(f.made(cc, 31*time.Minute), true, false)
	ask(other, true, true)
	ask(other, true, false)
	ask(cc[:7], true, false)
	// A batch without cookies, and one with.
	batch := func(opts ...[]byte) {
		reqs := make([]server.Request, len(opts))
		outs := make([][]byte, len(opts))
		for i, o := range opts {
			reqs[i] = *server.NewRequest(query(t, o, true), netip.AddrPortFrom(netip.MustParseAddr(client), 5353), false, nil)
			outs[i] = make([]byte, 0, server.BufferSize)
		}
		f.w.AnswerBatch(reqs, outs)
	}
	batch(nil, nil, nil)
	batch(nil, cc, other)
	// A runt is no query: the inner Worker drops it, uncounted here.
	f.w.Answer(server.NewRequest([]byte{1, 2, 3}, netip.AddrPortFrom(netip.MustParseAddr(client), 5353), false, nil), nil)
	want := map[string]uint64{"none": 6, "client-only": 2, "valid": 2, "refreshed": 1, "bad": 1, "malformed": 1, "badcookie": 2}
	got := f.set.Snapshot().Cookies
	for k, v := range want {
		if got[k] != v {
			t.Errorf("cookies %s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("cookies: %v, want %v", got, want)
	}
}

// TestCookieZeroAllocs: queries without a cookie and with one (client
// only, valid) allocate nothing, one at a time and in batches, with
// their outcomes counted in metrics.
func TestCookieZeroAllocs(t *testing.T) {
	f := newFixture(t)
	cc := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	for _, c := range []struct {
		name string
		q    []byte
	}{
		{"no EDNS", query(t, nil, false)},
		{"no cookie", query(t, nil, true)},
		{"client cookie", query(t, cc, true)},
		{"valid cookie", query(t, f.made(cc, time.Minute), true)},
	} {
		req := server.NewRequest(c.q, netip.AddrPortFrom(netip.MustParseAddr(client), 53), false, nil)
		out := make([]byte, 0, server.BufferSize)
		for range 3 {
			f.w.Answer(req, out)
		}
		if n := testing.AllocsPerRun(200, func() { f.w.Answer(req, out) }); n != 0 {
			t.Errorf("%s: Answer: %v allocations", c.name, n)
		}
		reqs := make([]server.Request, 8)
		outs := make([][]byte, 8)
		bufs := make([][]byte, 8)
		for i := range reqs {
			reqs[i] = *req
			bufs[i] = make([]byte, 0, server.BufferSize)
		}
		batch := func() { copy(outs, bufs); f.w.AnswerBatch(reqs, outs) }
		batch()
		if n := testing.AllocsPerRun(100, batch); n != 0 {
			t.Errorf("%s: AnswerBatch: %v allocations", c.name, n)
		}
	}
}

// BenchmarkAnswer: batches of 32 auth response-cache hits, EDNS
// queries, answered by auth alone (off), through the cookie layer
// without a cookie (on), with a client cookie (client) and with a valid
// server cookie (valid), counted in metrics; thread CPU per answer.
func BenchmarkAnswer(b *testing.B) {
	cc := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	for _, c := range []string{"off", "on", "client", "valid"} {
		b.Run(c, func(b *testing.B) {
			f := newFixture(b)
			inner := responder(b).NewWorker(false, auth.DefaultCacheSize)
			inner.CountIn(metrics.New().Shard(metrics.Auth))
			var w server.Batcher = cookie.NewWorker(inner, f.keys, 1232)
			q := query(b, nil, true)
			switch c {
			case "off":
				w = inner
			case "client":
				q = query(b, cc, true)
			case "valid":
				q = query(b, f.made(cc, 0), true)
			}
			const n = 32
			reqs := make([]server.Request, n)
			outs := make([][]byte, n)
			bufs := make([][]byte, n)
			for i := range reqs {
				reqs[i] = *server.NewRequest(q, netip.AddrPortFrom(netip.MustParseAddr(client), 53), false, nil)
				bufs[i] = make([]byte, 0, server.BufferSize)
			}
			batch := func() { copy(outs, bufs); w.AnswerBatch(reqs, outs) }
			for range 10 {
				batch()
			}
			dnstest.CPUPerAnswer(b, n, batch)
		})
	}
}
