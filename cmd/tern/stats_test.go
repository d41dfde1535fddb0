package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// statsAddr is the address of the stats tests' servers (the block
// 127.0.0.195-199 is this file's).
const statsAddr = "127.0.0.195"

// TestCtlStats: without a metrics listener, tern ctl stats counts the
// queries sent (by server, transport, QTYPE, RCODE and zone, with their
// response sizes), a runt datagram as a malformed drop and the zone's
// load; exact counts (one exchange each, no retry), in --json and in
// the text form.
func TestCtlStats(t *testing.T) {
	dir := t.TempDir()
	zoneFile := filepath.Join(dir, "example.zone")
	ctlZone(t, zoneFile, 1, false)
	cfg := filepath.Join(dir, "tern.toml")
	text := fmt.Sprintf("[server]\nlisten = [\"%s:0\"]\nworkers = 1\ncontrol = \"ctl.sock\"\n[[zone]]\norigin = \"example\"\nfile = %q\n", statsAddr, zoneFile)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, logs := serveLog(t, "-c", cfg)
	ask := func(netw, name string, qtype uint16, want int) {
		t.Helper()
		askOnce(t, addr, netw, name, qtype, want)
	}
	for range 3 {
		ask("udp", "ns1.example.", dns.TypeA, dns.RcodeSuccess)
	}
	ask("tcp", "ns1.example.", dns.TypeAAAA, dns.RcodeSuccess)
	ask("udp", "nope.example.", dns.TypeMX, dns.RcodeNameError)
	ask("udp", "www.example.org.", dns.TypeTXT, dns.RcodeRefused)
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte{1, 2, 3}) // a runt: dropped
	c.Close()

	// The counters are published at the end of each batch, and the
	// runt has no answer to wait for: asked until it shows.
	var s statsResult
	var out string
	for try := 0; try < 200; try++ {
		var code int
		var errs string
		code, out, errs = runT("ctl", "-c", cfg, "--json", "stats")
		if code != 0 {
			t.Fatalf("stats --json: %d %q %q; log:\n%s", code, out, errs, logs.String())
		}
		s = statsResult{}
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("stats --json: %v in %q", err, out)
		}
		if s.Dropped["malformed"] == 1 && s.Queries["auth"] == 6 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range []struct {
		what      string
		got, want uint64
	}{
		{"queries auth", s.Queries["auth"], 6},
		{"queries resolver", s.Queries["resolver"], 0},
		{"udp", s.Transports["udp"], 5},
		{"tcp", s.Transports["tcp"], 1},
		{"NOERROR", s.Rcodes["NOERROR"], 4},
		{"NXDOMAIN", s.Rcodes["NXDOMAIN"], 1},
		{"REFUSED", s.Rcodes["REFUSED"], 1},
		{"A", s.Qtypes["A"], 3},
		{"AAAA", s.Qtypes["AAAA"], 1},
		{"MX", s.Qtypes["MX"], 1},
		{"TXT", s.Qtypes["TXT"], 1},
		{"malformed", s.Dropped["malformed"], 1},
		{"no cookie", s.Cookies["none"], 6},
		{"load ok", s.ZoneEvents["load"]["ok"], 1},
		{"load failed", s.ZoneEvents["load"]["failed"], 0},
		{"cache hits", s.CacheHits, 0},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.what, c.got, c.want)
		}
	}
	sizes := map[string]uint64{}
	for _, z := range s.Sizes {
		var n uint64
		for _, b := range z.Buckets {
			n += b.Count
		}
		if n != z.Count || z.Bytes < 12*z.Count {
			t.Errorf("sizes %+v: buckets or bytes do not add up", z)
		}
		sizes[z.Server+"/"+z.Transport] = z.Count
	}
	if sizes["auth/udp"] != 5 || sizes["auth/tcp"] != 1 || len(sizes) != 2 {
		t.Errorf("sizes: %v", sizes)
	}
	if len(s.Zones) != 1 || s.Zones[0].Origin != "example." || s.Zones[0].Queries != 5 || s.Zones[0].Serial != 1 || s.Zones[0].LastEvent != "load" {
		t.Errorf("zones: %+v", s.Zones)
	}
	if s.Started.IsZero() || s.Uptime < 0 {
		t.Errorf("started %v, uptime %d", s.Started, s.Uptime)
	}
	if t.Failed() {
		t.Logf("stats --json:\n%s", out)
	}

	code, out, errs := runT("ctl", "-c", cfg, "stats")
	if code != 0 {
		t.Fatalf("stats: %d %q %q", code, out, errs)
	}
	for _, re := range []string{
		`(?m)^uptime: +\S+ \(since \S+\)$`,
		`(?m)^queries: +auth 6, resolver 0$`,
		`(?m)^by transport: +tcp 1, udp 5$`,
		`(?m)^by rcode: +NOERROR 4, NXDOMAIN 1, REFUSED 1$`,
		`(?m)^by qtype: +A 3, AAAA 1, MX 1, TXT 1$`,
		`(?m)^dropped: +dnstap 0, limit 0, malformed 1, rrl 0$`,
		`(?m)^cookies: +none 6$`,
		`(?m)^sizes auth udp: +5 responses, \d+ bytes \(mean \d+\): <=\d+ \d+`,
		`(?m)^resolver cache: +hits 0, misses 0$`,
		`(?m)^zone events: +load 1 ok 0 failed, refresh 0 ok 0 failed, transfer 0 ok 0 failed$`,
		`(?m)^zones: 1 served, 1 queried or failed$`,
		`(?m)^example\. +primary +1 +5 +load \S+$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("stats lacks %s:\n%s", re, out)
		}
	}
}

// TestCtlSlowZone: while one zone's reload is stuck (its file a FIFO no
// one writes yet), another zone's reload, status, zones and stats
// answer: per-zone work runs outside serve's main loop. Then the stuck
// reload ends once the file is written, with its new serial.
func TestCtlSlowZone(t *testing.T) {
	dir := t.TempDir()
	slow, fast := filepath.Join(dir, "slow.zone"), filepath.Join(dir, "fast.zone")
	writeZone := func(path, origin string, serial int) {
		t.Helper()
		text := fmt.Sprintf("$ORIGIN %s.\n$TTL 300\n@ SOA ns1 h %d 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\n", origin, serial)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeZone(slow, "slow", 1)
	writeZone(fast, "fast", 1)
	cfg := filepath.Join(dir, "tern.toml")
	text := fmt.Sprintf("[server]\nlisten = [\"%s:0\"]\nworkers = 1\ncontrol = \"ctl.sock\"\n[[zone]]\norigin = \"slow\"\nfile = %q\n[[zone]]\norigin = \"fast\"\nfile = %q\n", statsAddr, slow, fast)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, logs := serveLog(t, "-c", cfg)
	if err := os.Remove(slow); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(slow, 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct {
		code      int
		out, errs string
	}
	stuck := make(chan result, 1)
	go func() {
		code, out, errs := runT("ctl", "-c", cfg, "--timeout", "2m", "reload", "slow.")
		stuck <- result{code, out, errs}
	}()
	// The reload is stuck once it has the FIFO open for reading: a
	// writer can open it then (ENXIO before). The writer is held open,
	// nothing written, so the reload waits on its read until the file is
	// written below; whatever happens, closing it lets the reload go (at
	// EOF). The wait is bounded, for a loaded machine, not a measure.
	defer func() {
		// A reload still in its open (should the test fail before the
		// writer below) is let go: a writer's open and close.
		if f, err := os.OpenFile(slow, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}()
	var fifo *os.File
	for deadline := time.Now().Add(time.Minute); fifo == nil; time.Sleep(10 * time.Millisecond) {
		f, err := os.OpenFile(slow, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			fifo = f
			break
		}
		select {
		case r := <-stuck:
			t.Fatalf("reload slow. ended without reading its file: %d %q %q; log:\n%s", r.code, r.out, r.errs, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reload of slow. never opened its file: %v; log:\n%s", err, logs.String())
		}
	}
	defer fifo.Close()
	// The other commands, while slow. is stuck: each would wait for it
	// (until its timeout, a failure) if it ran in the main loop behind
	// it.
	writeZone(fast, "fast", 2)
	for _, args := range [][]string{{"reload", "fast."}, {"status"}, {"zones"}, {"stats"}} {
		code, out, errs := runT(append([]string{"ctl", "-c", cfg, "--timeout", "30s"}, args...)...)
		if code != 0 {
			t.Errorf("%s while slow. reloads: %d %q %q; log:\n%s", args, code, out, errs, logs.String())
		}
	}
	if got := soaSerial(t, addr, "fast."); got != 2 {
		t.Errorf("fast. serial %d after its reload, want 2", got)
	}
	select {
	case r := <-stuck:
		t.Fatalf("reload slow. ended before its file was written: %d %q %q", r.code, r.out, r.errs)
	default:
	}
	fmt.Fprintf(fifo, "$ORIGIN slow.\n$TTL 300\n@ SOA ns1 h 2 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\n")
	fifo.Close()
	r := <-stuck
	if r.code != 0 || !strings.Contains(r.out, "slow.  primary  2") {
		t.Errorf("reload slow.: %d %q %q", r.code, r.out, r.errs)
	}
}

// TestCtlStatsResolverCache: tern ctl stats gives the resolver's caches'
// sizes. Twenty names resolved through a forwarder (a fake on a
// kernel-picked port of 127.0.0.1) are twenty more RRsets, a name it
// answers NXDOMAIN (with AA) one more negative entry; asked again, each is a
// response-cache hit, and the worker's response cache holds the 21
// responses. The config is forwardConfig's (every question is inside
// the forward zone; the root hints point where nothing listens).
func TestCtlStatsResolverCache(t *testing.T) {
	const k = 20
	fwd := fakeServer(t, "127.0.0.1", func(q *dns.Msg) *dns.Msg {
		r := new(dns.Msg)
		r.SetReply(q)
		r.RecursionAvailable = true
		name := q.Question[0].Name
		switch {
		case strings.HasPrefix(strings.ToLower(name), "nx."):
			// Authoritative: the resolver caches the negative
			// answers of authorities only.
			r.Rcode, r.Authoritative = dns.RcodeNameError, true
			soa, _ := dns.NewRR("stats.test. 300 IN SOA ns.stats.test. h.stats.test. 1 7200 3600 1209600 300")
			r.Ns = []dns.RR{soa}
		case q.Question[0].Qtype == dns.TypeA:
			rr, _ := dns.NewRR(name + " 300 IN A 192.0.2.7")
			r.Answer = []dns.RR{rr}
		}
		if q.IsEdns0() != nil {
			r.SetEdns0(1232, false)
		}
		return r
	})
	// Its own control socket beside the config (a table after
	// forwardConfig's [resolver] keys).
	cfg := forwardConfig(t, "stats.test", fwd, "[server]\nworkers = 1\ncontrol = \"ctl.sock\"\n")
	addr, logs := serveUntil(t, regexp.MustCompile(`resolving on (127\.0\.0\.80:\d+)`), "-c", cfg)
	stats := func() (statsResult, string) {
		t.Helper()
		code, out, errs := runT("ctl", "-c", cfg, "--json", "stats")
		if code != 0 {
			t.Fatalf("stats --json: %d %q %q; log:\n%s", code, out, errs, logs.String())
		}
		var s statsResult
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("stats --json: %v in %q", err, out)
		}
		if s.ResolverCache == nil {
			t.Fatalf("stats --json has no resolver_cache: %s", out)
		}
		return s, out
	}
	before, _ := stats()
	names := []string{"nx.stats.test."}
	for i := range k {
		names = append(names, fmt.Sprintf("h%d.stats.test.", i))
	}
	for round := range 2 {
		for _, name := range names {
			rcode, answers := dns.RcodeSuccess, 1
			if name == names[0] {
				rcode, answers = dns.RcodeNameError, 0
			}
			if r := askUDP(t, addr, name); r.Rcode != rcode || len(r.Answer) != answers {
				t.Fatalf("round %d: %s: %v", round, name, r)
			}
		}
	}
	// The worker publishes its counters at the end of each batch: asked
	// until its last hit shows.
	after, out := stats()
	for try := 0; try < 200 && after.CacheHits < k+1; try++ {
		time.Sleep(20 * time.Millisecond)
		after, out = stats()
	}
	b, a := before.ResolverCache, after.ResolverCache
	if after.CacheHits < k+1 || a.RRsets-b.RRsets != k || a.Negative-b.Negative != 1 || a.Bytes <= b.Bytes ||
		b.Responses != 0 || a.Responses != k+1 || a.ResponseBytes <= b.ResponseBytes {
		t.Errorf("after %d names resolved twice: hits %d; resolver cache before %+v, after %+v; want %d more RRsets, 1 more negative entry, %d responses",
			k+1, after.CacheHits, *b, *a, k, k+1)
		t.Logf("stats --json:\n%s", out)
	}

	code, out, errs := runT("ctl", "-c", cfg, "stats")
	if re := regexp.MustCompile(fmt.Sprintf(`(?m)^resolver cache size: +rrsets %d, negative %d, bytes %d; responses %d, response bytes \d+$`, a.RRsets, a.Negative, a.Bytes, k+1)); code != 0 || !re.MatchString(out) {
		t.Errorf("stats: %d %q %q: lacks %s", code, out, errs, re)
	}
}
