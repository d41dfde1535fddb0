package rrl_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/rrl"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/zone"
)

// responder serves dnstest.ExampleZone with a delegation, sub.
func responder(t testing.TB) *auth.Responder {
	t.Helper()
	z := dnstest.Zone(t, "example.test.", dnstest.ExampleZone+"sub NS ns.sub\nns.sub A 192.0.2.53\n")
	return auth.New(zone.NewSet(z), auth.Options{})
}

// The test's addresses (this package's block: 127.0.0.151-164).
const (
	serverAddr = "127.0.0.151"
	exemptAddr = "127.0.0.155"
)

var clientAddrs = []string{"127.0.0.152", "127.0.0.153", "127.0.0.154"}

// flood sends n queries for name/qtype from a socket bound to src, as
// fast as it can, and reads the answers until none has come for a
// while. It returns the plain answers, the truncated ones, and how long
// the sending and reading took.
func flood(t *testing.T, src, dst, name string, qtype uint16, n int) (answered, truncated int, took time.Duration) {
	t.Helper()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(src), 0)))
	if err != nil {
		t.Skipf("bind %s: %v", src, err)
	}
	defer c.Close()
	c.SetReadBuffer(1 << 20)
	raddr, err := net.ResolveUDPAddr("udp", dst)
	if err != nil {
		t.Fatal(err)
	}
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	buf := make([]byte, 1500)
	start := time.Now()
	seen := make(map[uint16]bool, n)
	read := func(wait time.Duration) bool {
		c.SetReadDeadline(time.Now().Add(wait))
		k, err := c.Read(buf)
		if err != nil {
			return false
		}
		r := new(dns.Msg)
		if err := r.Unpack(buf[:k]); err != nil {
			t.Errorf("%s: bad response: %v", src, err)
			return true
		}
		if seen[r.Id] {
			t.Errorf("%s: two responses to ID %d", src, r.Id)
		}
		seen[r.Id] = true
		switch {
		case r.Truncated:
			if len(r.Answer)+len(r.Ns)+len(r.Extra) != 0 || len(r.Question) != 1 || r.Question[0].Name != name {
				t.Errorf("%s: slipped response not header and question: %v", src, r)
			}
			truncated++
		default:
			answered++
		}
		return true
	}
	for i := range n {
		m.Id = uint16(i + 1)
		pkt, _ := m.Pack()
		if _, err := c.WriteToUDP(pkt, raddr); err != nil {
			t.Fatal(err)
		}
		// Every 16 queries, read what has come, so that the
		// socket's buffer never fills.
		if i%16 == 15 {
			for read(2 * time.Millisecond) {
			}
		}
	}
	for read(500 * time.Millisecond) {
	}
	return answered, truncated, time.Since(start)
}

// TestFlood floods a server from several loopback addresses and checks
// each client's answered count against the rate over the time the
// flood took, the slip ratio, the exempt client, and that response kinds
// are accounted apart.
func TestFlood(t *testing.T) {
	const (
		rate = 20
		n    = 300
		slip = 2
	)
	counters := metrics.New()
	resp := responder(t)
	h := server.HandlerFunc(func(tcp bool) server.Worker {
		w := resp.NewWorker(tcp, auth.DefaultCacheSize)
		w.CountIn(metrics.Attach(counters, w, metrics.Auth))
		return w
	})
	cfg := rrl.Config{Rate: rate, Window: 2 * time.Second, Slip: slip, IPv4Prefix: 32, IPv6Prefix: 56,
		Exempt: []netip.Prefix{netip.MustParsePrefix(exemptAddr + "/32")}}
	// One worker: one table of accounts, so that a client's rate is
	// the configured one (with several, each worker's own).
	s := server.New(server.Config{Listen: []string{serverAddr + ":0"}, Workers: 1}, rrl.Handler(h, cfg))
	if err := s.Start(context.Background()); err != nil {
		t.Skipf("listen on %s: %v", serverAddr, err)
	}
	defer s.Close()
	dst := s.Addrs()[0]

	drops := 0
	for _, src := range clientAddrs {
		answered, truncated, took := flood(t, src, dst, "www.example.test.", dns.TypeA, n)
		// At least the burst (a second's worth) and at most the
		// burst and the rate over the time it took, counted
		// generously (the flood and its reading, and a second more).
		most := rate * (2 + int(took/time.Second))
		if answered < rate || answered > most {
			t.Errorf("%s: %d of %d answered in %v, want %d..%d", src, answered, n, took, rate, most)
		}
		dropped := n - answered
		drops += dropped
		// Every slip-th dropped response comes back truncated.
		if want := dropped / slip; truncated < want-1 || truncated > want+1 {
			t.Errorf("%s: %d truncated of %d dropped, want about %d (slip %d)", src, truncated, dropped, want, slip)
		}
		t.Logf("%s: %d answered, %d truncated of %d in %v", src, answered, truncated, n, took)
	}

	// The exempt client is never limited.
	if answered, truncated, _ := flood(t, exemptAddr, dst, "www.example.test.", dns.TypeA, n); answered != n || truncated != 0 {
		t.Errorf("exempt %s: %d answered, %d truncated of %d", exemptAddr, answered, truncated, n)
	}

	// Another kind from a limited client has an account of its own:
	// the first second's worth of each passes. Then a flood of the
	// same kind is limited.
	src := clientAddrs[0]
	for _, q := range []struct {
		name  string
		qtype uint16
		what  string
	}{
		{"nx.example.test.", dns.TypeA, "NXDOMAIN"},
		{"www.example.test.", dns.TypeAAAA, "NODATA"},
		{"a.sub.example.test.", dns.TypeA, "referral"},
		{"www.example.com.", dns.TypeA, "REFUSED"},
		{"ns1.example.test.", dns.TypeA, "another name"},
	} {
		if answered, _, _ := flood(t, src, dst, q.name, q.qtype, rate); answered != rate {
			t.Errorf("%s: %s: %d of %d answered after the flood of positive answers", src, q.what, answered, rate)
		}
	}
	// Other names of the zone share the NXDOMAIN account: limited now.
	if answered, _, took := flood(t, src, dst, "other.example.test.", dns.TypeA, n); answered > rate*(2+int(took/time.Second)) {
		t.Errorf("%s: NXDOMAIN for another name: %d of %d answered", src, answered, n)
	}

	// Drops and slips are counted as drop reason "rrl".
	got := counters.Snapshot().Dropped["rrl"]
	if got < uint64(drops) {
		t.Errorf("rrl drops counted: %d, want at least %d", got, drops)
	}
}
