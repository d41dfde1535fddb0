package rrl_test

import (
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/cookie"
	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/rrl"
	"github.com/tern-dns/tern/internal/server"
)

// limitedWorker is an auth Worker (with its response cache and a
// metrics Shard) limited by cfg.
func limitedWorker(t testing.TB, cfg rrl.Config) *rrl.Worker {
	w := responder(t).NewWorker(false, auth.DefaultCacheSize)
	w.CountIn(metrics.New().Shard(metrics.Auth))
	return rrl.NewWorker(w, rrl.New(cfg))
}

func query(t testing.TB, name string, qtype uint16) []byte {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLimitedZeroAllocs: answering a limited client (drops and slips)
// and an exempt one allocates nothing, one query at a time and in
// batches.
func TestLimitedZeroAllocs(t *testing.T) {
	cfg := rrl.Config{Rate: 1, Window: time.Hour, Slip: 2, IPv4Prefix: 24, IPv6Prefix: 56,
		Exempt: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}}
	w := limitedWorker(t, cfg)
	out := make([]byte, server.BufferSize)
	for _, c := range []struct {
		name   string
		client string
		qname  string
	}{
		{"positive", "198.51.100.7", "www.example.test."},
		{"nxdomain", "198.51.100.7", "nx.example.test."},
		{"referral", "198.51.100.7", "a.sub.example.test."},
		{"ipv6", "2001:db8::1", "www.example.test."},
		{"exempt", "192.0.2.1", "www.example.test."},
	} {
		req := server.NewRequest(query(t, c.qname, dns.TypeA), netip.AddrPortFrom(netip.MustParseAddr(c.client), 53), false, nil)
		for range 10 { // past the burst, and the cache filled
			w.Answer(req, out)
		}
		if n := testing.AllocsPerRun(200, func() { w.Answer(req, out[:0]) }); n != 0 {
			t.Errorf("%s: Answer: %v allocations", c.name, n)
		}
		reqs := make([]server.Request, 16)
		outs := make([][]byte, 16)
		bufs := make([][]byte, 16)
		for i := range reqs {
			reqs[i] = *req
			bufs[i] = make([]byte, 0, server.BufferSize)
		}
		batch := func() {
			copy(outs, bufs)
			w.AnswerBatch(reqs, outs)
		}
		batch()
		if n := testing.AllocsPerRun(100, batch); n != 0 {
			t.Errorf("%s: AnswerBatch: %v allocations", c.name, n)
		}
	}
}

// TestSlipped checks the wire form of the answers a limited client
// gets: with slip 2, every other dropped response is the query's
// header and question with QR, AA and TC set, its ID and no records.
func TestSlipped(t *testing.T) {
	w := limitedWorker(t, rrl.Config{Rate: 1, Window: time.Hour, Slip: 2, IPv4Prefix: 24, IPv6Prefix: 56})
	q := query(t, "www.example.test.", dns.TypeA)
	req := server.NewRequest(q, netip.MustParseAddrPort("198.51.100.7:53"), false, nil)
	var got []string
	for range 5 {
		r := w.Answer(req, make([]byte, 0, server.BufferSize))
		switch {
		case r == nil:
			got = append(got, "drop")
		case r[2]&0x02 != 0:
			got = append(got, "tc")
			if len(r) != len(q) || r[0] != q[0] || r[1] != q[1] || r[2]&0x80 == 0 || string(r[4:12]) != "\x00\x01\x00\x00\x00\x00\x00\x00" || string(r[12:]) != string(q[12:]) {
				t.Errorf("slipped response % x, query % x", r, q)
			}
		default:
			got = append(got, "answer")
		}
	}
	if want := "answer drop tc drop tc"; strings.Join(got, " ") != want {
		t.Errorf("got %s, want %s", strings.Join(got, " "), want)
	}
	// TCP is never limited.
	tcp := server.NewRequest(q, netip.MustParseAddrPort("198.51.100.7:53"), true, nil)
	if r := w.Answer(tcp, make([]byte, 0, server.BufferSize)); r == nil || r[2]&0x02 != 0 {
		t.Error("a TCP query was limited")
	}
}

// BenchmarkAnswer is a batch of 32 response-cache hits answered by
// auth alone (off), and through the limiter, passed (on) and dropped
// (limited), as the server's UDP workers answer them.
func BenchmarkAnswer(b *testing.B) {
	q := query(b, "www.example.test.", dns.TypeA)
	for _, c := range []struct {
		name string
		rate int
	}{{"off", 0}, {"on", 1 << 30}, {"limited", 1}} {
		b.Run(c.name, func(b *testing.B) {
			aw := responder(b).NewWorker(false, auth.DefaultCacheSize)
			var w server.Batcher = aw
			if c.rate != 0 {
				w = rrl.NewWorker(aw, rrl.New(rrl.Config{Rate: c.rate, Window: time.Second, Slip: 2, IPv4Prefix: 24, IPv6Prefix: 56}))
			}
			const n = 32
			reqs := make([]server.Request, n)
			outs := make([][]byte, n)
			bufs := make([][]byte, n)
			for i := range reqs {
				reqs[i] = *server.NewRequest(q, netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}), 53), false, nil)
				bufs[i] = make([]byte, 0, server.BufferSize)
			}
			batch := func() {
				copy(outs, bufs)
				w.AnswerBatch(reqs, outs)
			}
			for range 10 {
				batch()
			}
			dnstest.CPUPerAnswer(b, n, batch)
		})
	}
}

// TestCookieExempt: behind a cookie layer, a client whose query carries
// a valid server cookie is never limited; one with a client cookie
// alone is.
func TestCookieExempt(t *testing.T) {
	keys := cookie.NewKeys()
	aw := responder(t).NewWorker(false, auth.DefaultCacheSize)
	m := metrics.New()
	aw.CountIn(m.Shard(metrics.Auth))
	w := rrl.NewWorker(cookie.NewWorker(aw, keys, 1232), rrl.New(rrl.Config{Rate: 1, Window: time.Hour, Slip: 0, IPv4Prefix: 24, IPv6Prefix: 56}))
	cc := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	from := netip.MustParseAddr("198.51.100.7")
	var sc [cookie.ServerLen]byte
	keys.Make(sc[:], cc, from, uint32(time.Now().Unix()))
	withCookie := func(opt []byte) []byte {
		m := new(dns.Msg)
		m.SetQuestion("www.example.test.", dns.TypeA)
		m.SetEdns0(1232, false)
		o := m.IsEdns0()
		o.Option = append(o.Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: hex.EncodeToString(opt)})
		b, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		name string
		q    []byte
		want int // answered of 20
	}{
		{"valid server cookie", withCookie(append(append([]byte(nil), cc...), sc[:]...)), 20},
		{"client cookie only", withCookie(cc), 1},
	} {
		req := server.NewRequest(c.q, netip.AddrPortFrom(from, 53), false, nil)
		got := 0
		for range 20 {
			if w.Answer(req, make([]byte, 0, server.BufferSize)) != nil {
				got++
			}
		}
		if got != c.want {
			t.Errorf("%s: %d of 20 answered, want %d", c.name, got, c.want)
		}
	}
	if d := m.Snapshot().Dropped["rrl"]; d != 19 {
		t.Errorf("rrl drops counted through the cookie layer: %d, want 19", d)
	}
}
