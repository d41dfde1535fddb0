package perf

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// responder is an in-process UDP DNS answerer on loopback: it echoes each
// query back as a response, NXDOMAIN for names starting with "nx", and
// drops names starting with "drop" so that loss accounting is exercised.
type responder struct {
	conn *net.UDPConn
	wg   sync.WaitGroup
	mu   sync.Mutex
	seen int
}

func startResponder(t *testing.T, network, addr string) *responder {
	t.Helper()
	c, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	_ = c.SetReadBuffer(4 << 20)
	r := &responder{conn: c}
	r.wg.Go(func() {
		buf := make([]byte, 4096)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return // closed
			}
			r.mu.Lock()
			r.seen++
			r.mu.Unlock()
			if n < 13 {
				continue
			}
			q := buf[:n]
			label := string(q[13 : 13+min(int(q[12]), n-13)])
			if strings.HasPrefix(label, "drop") {
				continue
			}
			q[2] |= 0x80 // QR
			if strings.HasPrefix(label, "nx") {
				q[3] = q[3]&0xf0 | dns.RcodeNameError
			}
			_, _ = c.WriteToUDPAddrPort(q, from)
		}
	})
	t.Cleanup(func() {
		c.Close()
		r.wg.Wait()
	})
	return r
}

func (r *responder) addr() netip.AddrPort { return r.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

func testQueries() []Query {
	return []Query{
		{"www.example.", dns.TypeA},
		{"nx.example.", dns.TypeA},
		{"mail.example.", dns.TypeMX},
		{"drop.example.", dns.TypeA},
	}
}

func TestRunCountsExactly(t *testing.T) {
	for _, engine := range []string{EngineMmsg, EngineXnet} {
		t.Run(engine, func(t *testing.T) {
			r := startResponder(t, "udp4", "127.0.0.1:0")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// The window stays well inside the responder's socket buffer,
			// and the timeout is generous, so a loaded machine (go test
			// -race on two shared cores) loses nothing.
			res, err := Run(ctx, Config{
				Server:         r.addr(),
				Queries:        testQueries()[:3],
				Encode:         EncodeOptions{EDNS: true, UDPSize: 4096},
				Runs:           300, // 900 queries
				MaxOutstanding: 64,
				Clients:        3,
				Timeout:        10 * time.Second,
				Engine:         engine,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Sent != 900 || res.Completed != 900 || res.Lost != 0 {
				t.Errorf("sent %d completed %d lost %d, want 900/900/0", res.Sent, res.Completed, res.Lost)
			}
			if res.Rcodes[dns.RcodeSuccess] != 600 || res.Rcodes[dns.RcodeNameError] != 300 {
				t.Errorf("rcodes NOERROR %d NXDOMAIN %d, want 600 and 300", res.Rcodes[0], res.Rcodes[3])
			}
			if res.Latency.N != res.Completed || res.Latency.Min <= 0 || res.Latency.Max < res.Latency.Min {
				t.Errorf("latency n %d min %d max %d", res.Latency.N, res.Latency.Min, res.Latency.Max)
			}
			if avg(res.ReqBytes, res.Sent) < 30 || avg(res.RespBytes, res.Completed) < 30 {
				t.Errorf("sizes: request %d response %d", res.ReqBytes, res.RespBytes)
			}
		})
	}
}

func TestRunLoss(t *testing.T) {
	for _, engine := range []string{EngineMmsg, EngineXnet} {
		t.Run(engine, func(t *testing.T) {
			r := startResponder(t, "udp4", "127.0.0.1:0")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// 80 queries, a quarter of them dropped by the responder; all
			// fit in the window, so sending ends at once and the run time
			// must not include waiting out the timeouts. The bounds are
			// the timeout itself, not a guess at the machine's speed: a
			// run that waited for the dropped queries cannot end before
			// it, and a run time that counted the wait cannot be shorter.
			const timeout = 1500 * time.Millisecond
			start := time.Now()
			res, err := Run(ctx, Config{
				Server:         r.addr(),
				Queries:        testQueries(),
				Runs:           20,
				MaxOutstanding: 100,
				Clients:        4,
				Timeout:        timeout,
				Engine:         engine,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Sent != 80 || res.Lost != 20 || res.Completed != 60 {
				t.Errorf("sent %d completed %d lost %d, want 80/60/20", res.Sent, res.Completed, res.Lost)
			}
			if el := time.Since(start); el < timeout {
				t.Errorf("returned after %v, before the dropped queries timed out", el)
			}
			if res.RunTime <= 0 || res.RunTime >= timeout {
				t.Errorf("run time %v includes the timeout wait", res.RunTime)
			}
		})
	}
}

func TestRunTimeLimitAndReports(t *testing.T) {
	r := startResponder(t, "udp4", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	res, err := Run(ctx, Config{
		Server:   r.addr(),
		Queries:  testQueries(),
		Duration: 700 * time.Millisecond,
		Timeout:  100 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	// The lower bound is exact; the upper one only catches a run that
	// ignores its duration (and would run to the context's minute).
	if el := time.Since(start); el < 700*time.Millisecond || el > 20*time.Second || res.Interrupted {
		t.Errorf("run took %v (interrupted %v), want 0.7 s and the time to collect answers", el, res.Interrupted)
	}
	if res.Sent == 0 || res.Sent != res.Completed+res.Lost {
		t.Errorf("sent %d != completed %d + lost %d", res.Sent, res.Completed, res.Lost)
	}
	if res.Completed == 0 || res.Rcodes[0] == 0 || res.Rcodes[3] == 0 {
		t.Errorf("completed %d rcodes %v", res.Completed, res.Rcodes)
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Statistics:", "Queries sent:", "Queries completed:", "Queries lost:",
		"Response codes:       NOERROR", "NXDOMAIN", "Average packet size:  request", "Run time (s):",
		"Queries per second:", "Average Latency (s):", "Latency StdDev (s):", "p99.9"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var s Summary
	if err := json.Unmarshal(js.Bytes(), &s); err != nil {
		t.Fatalf("JSON: %v\n%s", err, js.String())
	}
	if s.Sent != res.Sent || s.Rcodes["NXDOMAIN"] != res.Rcodes[3] || s.QPS <= 0 || s.Percentiles["p50"] <= 0 {
		t.Errorf("summary %+v", s)
	}
}

func TestRunGSO(t *testing.T) {
	r := startResponder(t, "udp4", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Equal-size names so that batches really coalesce.
	qs := []Query{{"aa.example.", dns.TypeA}, {"nx.example.", dns.TypeA}, {"bb.example.", dns.TypeA}, {"cc.example.", dns.TypeTXT}}
	res, err := Run(ctx, Config{Server: r.addr(), Queries: qs, Runs: 500, MaxOutstanding: 64, Clients: 2, Timeout: 10 * time.Second, GSO: true})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Sent != 2000 || res.Completed != 2000 || res.Rcodes[dns.RcodeNameError] != 500 {
		t.Errorf("sent %d completed %d NXDOMAIN %d, want 2000/2000/500", res.Sent, res.Completed, res.Rcodes[3])
	}
	if res.GSOSends == 0 {
		t.Error("no query went out in a GSO super-datagram")
	}
}

// TestRunRateLimit checks the pacer end to end without trusting the
// machine to keep up: a loaded machine can only send fewer queries, never
// more, so the assertions are an upper bound on what a time window holds
// and a lower bound on how long a counted run takes. Unlimited, the
// responder answers these runs' queries in a few milliseconds, so a
// limiter that does not limit fails both checks many times over.
func TestRunRateLimit(t *testing.T) {
	r := startResponder(t, "udp4", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const qps = 2000
	// A time window: at most qps × duration (+1 per sending loop, the
	// pacer's first query), at least some.
	res, err := Run(ctx, Config{
		Server:   r.addr(),
		Queries:  testQueries()[:3],
		Duration: 500 * time.Millisecond,
		MaxQPS:   qps,
		Timeout:  time.Second,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Sent > qps/2+10 || res.Sent == 0 {
		t.Errorf("sent %d in 0.5 s at %d qps, want at most %d and more than none", res.Sent, qps, qps/2+10)
	}
	// A count: 600 queries at 2000 qps cannot all be sent in less than
	// 0.3 s (less the few the pacer lets out at once at the start).
	start := time.Now()
	res, err = Run(ctx, Config{
		Server:  r.addr(),
		Queries: testQueries()[:3],
		Runs:    200,
		MaxQPS:  qps,
		Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Sent != 600 {
		t.Errorf("sent %d, want 600", res.Sent)
	}
	if el, least := time.Since(start), time.Duration(590)*time.Second/qps; el < least {
		t.Errorf("600 queries at %d qps took %v, want at least %v", qps, el, least)
	}
}

func TestRunIPv6(t *testing.T) {
	r := startResponder(t, "udp6", "[::1]:0")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Server: r.addr(), Queries: testQueries()[:3], Runs: 10, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Sent != 30 || res.Completed != 30 {
		t.Errorf("sent %d completed %d, want 30 and 30", res.Sent, res.Completed)
	}
}

func TestRunCancel(t *testing.T) {
	r := startResponder(t, "udp4", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	// A run that ignored the cancellation would take the minute, one that
	// waited for the dropped queries the 30 s timeout; the bound between
	// leaves a loaded machine seconds to stop.
	res, err := Run(ctx, Config{Server: r.addr(), Queries: testQueries(), Duration: time.Minute, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if el := time.Since(start); el > 15*time.Second {
		t.Errorf("cancelled run took %v", el)
	}
	if !res.Interrupted || res.Sent != res.Completed+res.Lost {
		t.Errorf("interrupted %v sent %d completed %d lost %d", res.Interrupted, res.Sent, res.Completed, res.Lost)
	}
}

// startTCPResponder answers DNS over TCP on loopback like the UDP responder
// (no drops: a TCP server either answers or closes). With closeAfter > 0 it
// closes each connection after that many answers, as servers with a
// per-connection query limit do.
func startTCPResponder(t *testing.T, closeAfter int) netip.AddrPort {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Skipf("cannot listen: %v", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				buf := make([]byte, 65537)
				for answered := 0; closeAfter == 0 || answered < closeAfter; answered++ {
					if _, err := io.ReadFull(c, buf[:2]); err != nil {
						return
					}
					n := int(buf[0])<<8 | int(buf[1])
					if _, err := io.ReadFull(c, buf[2:2+n]); err != nil || n < 13 {
						return
					}
					buf[4] |= 0x80
					if strings.HasPrefix(string(buf[15:15+min(int(buf[14]), n-13)]), "nx") {
						buf[5] = buf[5]&0xf0 | dns.RcodeNameError
					}
					if _, err := c.Write(buf[:2+n]); err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	return l.Addr().(*net.TCPAddr).AddrPort()
}

func TestRunTCP(t *testing.T) {
	addr := startTCPResponder(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Server: addr, Queries: testQueries()[:3], Runs: 100, TCP: true, Clients: 2, MaxOutstanding: 16, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Sent != 300 || res.Completed != 300 || res.Lost != 0 {
		t.Errorf("sent %d completed %d lost %d, want 300/300/0", res.Sent, res.Completed, res.Lost)
	}
	if res.Rcodes[dns.RcodeNameError] != 100 {
		t.Errorf("NXDOMAIN %d, want 100", res.Rcodes[3])
	}
}

func TestRunTCPReconnects(t *testing.T) {
	addr := startTCPResponder(t, 50)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Server: addr, Queries: testQueries()[:3], Runs: 100, TCP: true, Clients: 1, MaxOutstanding: 1, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	// One query in flight at a time: the query sent just before the server
	// closes is lost, every other one is answered.
	if res.Sent != 300 || res.Completed+res.Lost != 300 {
		t.Errorf("sent %d completed %d lost %d, want 300 = completed + lost", res.Sent, res.Completed, res.Lost)
	}
	if res.Reconnects < 5 || res.Lost > res.Reconnects {
		t.Errorf("%d reconnections, %d lost: want at least 5 reconnections and no more losses", res.Reconnects, res.Lost)
	}
}

// TestRunAllocations checks that the send/receive loop does not allocate
// per query: a run's allocations must not grow with its length.
func TestRunAllocations(t *testing.T) {
	r := startResponder(t, "udp4", "127.0.0.1:0")
	qs := testQueries()[:3]
	for _, tc := range []struct {
		engine string
		check  bool // assert, or only log for comparison
	}{
		{EngineMmsg, true},
		// x/net's ReadBatch parses every datagram's source address into a
		// new net.UDPAddr (socket.parseInetAddr), even on a connected
		// socket: about two allocations per query is its floor (more
		// under -race), so it is only logged.
		{EngineXnet, false},
	} {
		allocs := func(runs int) uint64 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res, err := Run(ctx, Config{Server: r.addr(), Queries: qs, Runs: runs, MaxOutstanding: 32, Clients: 2, Timeout: 10 * time.Second, Engine: tc.engine})
			runtime.ReadMemStats(&after)
			if err != nil || res.Completed != uint64(3*runs) {
				t.Fatalf("%s: Run: %v, completed %d of %d", tc.engine, err, res.Completed, 3*runs)
			}
			return after.Mallocs - before.Mallocs
		}
		small, large := allocs(100), allocs(5000)
		// 14,700 more queries may cost a few more allocations (the
		// responder shares the process), nowhere near one per query.
		if tc.check && large > small+100 {
			t.Errorf("%s: %d allocations for 300 queries, %d for 15000: the loop allocates per query", tc.engine, small, large)
		}
		t.Logf("%s: %d allocations for 300 queries, %d for 15000", tc.engine, small, large)
	}
}
