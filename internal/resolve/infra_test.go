package resolve

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/upstream"
)

// clock is a fake clock that tests move by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newClock() *clock { return &clock{time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)} }

func ap(s string) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr(s), 53) }

// TestInfraRTT: answers smooth the estimate (RFC 6298), timeouts double
// the timeout from the one the query was sent with, and a server backed
// off to probeRTO is passed over but for one probe per timeout interval.
func TestInfraRTT(t *testing.T) {
	c := newClock()
	in := NewInfra(InfraOptions{Now: c.now})
	a := ap("192.0.2.1")
	if wait, rto, noEDNS := in.attempt(a); wait != unknownRTT || rto != unknownRTT || noEDNS {
		t.Fatalf("unknown server: wait %v rto %v noEDNS %v", wait, rto, noEDNS)
	}
	for range 50 {
		in.answered(a, 20*time.Millisecond, upstream.Report{})
	}
	if ch := in.look(a, "example.", c.now()); !ch.known || ch.est < 20*time.Millisecond || ch.est > 25*time.Millisecond {
		t.Errorf("estimate after 50 answers in 20ms: %+v", ch)
	}
	if wait, _, _ := in.attempt(a); wait != minRTO {
		t.Errorf("wait %v, want the minimum %v", wait, minRTO)
	}

	// Two queries sent with the same timeout both time out: it doubles
	// once, not twice (Unbound's rtt_lost).
	b := ap("192.0.2.2")
	_, rto, _ := in.attempt(b)
	in.timedOut(b, rto)
	in.timedOut(b, rto)
	if _, got, _ := in.attempt(b); got != 2*unknownRTT {
		t.Errorf("timeout after two concurrent timeouts %v, want %v", got, 2*unknownRTT)
	}
	// Timeouts in a row: 752ms, 1.5s, 3s, 6s, 12s: backed off.
	for i := 0; ; i++ {
		ch := in.look(b, "example.", c.now())
		if ch.passed != "" || i > 10 {
			t.Fatalf("passed over (%s) after %d timeouts", ch.passed, i+2)
		}
		if ch.probe {
			break
		}
		_, rto, _ := in.attempt(b)
		if i == 0 && rto != 2*unknownRTT {
			t.Fatalf("rto %v", rto)
		}
		in.timedOut(b, rto)
	}
	// Backed off: this query is the probe; the next ones pass it over
	// until the probe has timed out.
	wait, rto, _ := in.attempt(b)
	if rto < probeRTO || wait != upstream.DefaultTimeout {
		t.Fatalf("probe: wait %v rto %v", wait, rto)
	}
	if ch := in.look(b, "example.", c.now()); !strings.Contains(ch.passed, "not answering") {
		t.Fatalf("during the probe: %+v", ch)
	}
	in.timedOut(b, rto)
	c.advance(rto + 2*time.Second)
	if ch := in.look(b, "example.", c.now()); ch.passed != "" {
		t.Fatalf("after the probe interval: passed over (%s)", ch.passed)
	}
	// Another timeout: the next probe interval is longer.
	_, rto2, _ := in.attempt(b)
	in.timedOut(b, rto2)
	c.advance(rto + 2*time.Second)
	if ch := in.look(b, "example.", c.now()); ch.passed == "" || rto2 <= rto {
		t.Fatalf("rto %v then %v; %+v", rto, rto2, ch)
	}
	// An answer to a probe brings the server back.
	c.advance(maxRTO)
	in.attempt(b)
	in.answered(b, 30*time.Millisecond, upstream.Report{})
	if ch := in.look(b, "example.", c.now()); ch.passed != "" || ch.probe || ch.est > unknownRTT {
		t.Fatalf("after an answer: %+v", ch)
	}
}

// TestInfraMemory: lameness per zone, EDNS rejection, and what HostTTL
// forgets.
func TestInfraMemory(t *testing.T) {
	c := newClock()
	in := NewInfra(InfraOptions{Now: c.now, HostTTL: time.Minute})
	a, b := ap("192.0.2.1"), ap("192.0.2.2")
	in.setLame(a, "example.com.")
	if ch := in.look(a, "example.com.", c.now()); !strings.Contains(ch.passed, "lame for example.com.") {
		t.Errorf("lame: %+v", ch)
	}
	if ch := in.look(a, "example.net.", c.now()); ch.passed != "" {
		t.Errorf("lame for another zone: %+v", ch)
	}

	in.answered(a, 10*time.Millisecond, upstream.Report{EDNSRejected: true})
	if _, _, noEDNS := in.attempt(a); !noEDNS {
		t.Error("EDNS rejection not remembered")
	}
	// A server known to answer with EDNS: a rejection (spoofed, or a
	// middlebox) is not believed.
	in.answered(b, 10*time.Millisecond, upstream.Report{EDNSAnswered: true})
	in.answered(b, 10*time.Millisecond, upstream.Report{EDNSRejected: true})
	if _, _, noEDNS := in.attempt(b); noEDNS {
		t.Error("EDNS rejection believed from a server that answered with EDNS")
	}

	// Backed off b.
	for range 6 {
		_, rto, _ := in.attempt(b)
		in.timedOut(b, rto)
	}
	c.advance(time.Minute + time.Second)
	if ch := in.look(a, "example.com.", c.now()); ch.passed != "" || ch.known {
		t.Errorf("after HostTTL a is still known: %+v", ch)
	}
	if _, _, noEDNS := in.attempt(a); noEDNS {
		t.Error("after HostTTL, EDNS rejection remembered")
	}
	// b keeps its backed-off timeout: probed, not trusted afresh.
	if ch := in.look(b, "example.com.", c.now()); !ch.probe {
		t.Errorf("after HostTTL the unresponsive b: %+v", ch)
	}
}

// TestInfraBounded: no more hosts are kept than MaxHosts (per shard).
func TestInfraBounded(t *testing.T) {
	c := newClock()
	in := NewInfra(InfraOptions{Now: c.now, MaxHosts: 64})
	for i := range 5000 {
		a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 53)
		in.answered(a, time.Millisecond, upstream.Report{})
		in.setLame(a, "example.")
	}
	for i := range in.shards {
		if h, l := len(in.shards[i].hosts), len(in.shards[i].lame); h > in.perHost || l > in.perHost {
			t.Fatalf("shard %d: %d hosts, %d lame entries, limit %d", i, h, l, in.perHost)
		}
	}
}

// timed is an Exchanger over a fake's canned answers whose servers take a
// given time on the fake clock to answer, or never answer (the wait is
// then spent on the clock).
type timed struct {
	*fake
	clock   *clock
	latency map[string]time.Duration
	dead    map[string]bool
	asked   map[string]int
}

func (x *timed) ExchangeOptions(ctx context.Context, server netip.AddrPort, q dns.Question, opt upstream.Options) (*dns.Msg, upstream.Report, error) {
	s := server.Addr().String()
	x.asked[s]++
	if x.dead[s] {
		x.clock.advance(opt.UDPTimeout)
		return nil, upstream.Report{}, context.DeadlineExceeded
	}
	d := x.latency[s]
	if d == 0 {
		d = time.Millisecond
	}
	x.clock.advance(d)
	m, err := x.fake.Exchange(ctx, server, q)
	return m, upstream.Report{RTT: d}, err
}

const exCom3 = "10.0.0.7" // example.com.'s third server

// threeServers gives example.com. three servers that all answer.
func threeServers(t testing.TB, f *fake) {
	f.answers[key{gtld, "example.com.", 0}] = referral(t,
		[]string{"example.com. 3600 IN NS ns1.example.com.", "example.com. 3600 IN NS ns2.example.com.", "example.com. 3600 IN NS ns3.example.com."},
		"ns1.example.com. 3600 IN A "+exCom, "ns2.example.com. 3600 IN A "+exCom2, "ns3.example.com. 3600 IN A "+exCom3)
	for _, s := range []string{exCom2, exCom3} {
		f.answers[key{s, "www.example.com.", dns.TypeA}] = answer(t, "www.example.com. 300 IN A 192.0.2.9")
	}
}

// TestChoose: choose sorts a zone's addresses in place: IPv4 before
// IPv6, each family fastest first (the band drawn by a Rand that keeps
// the order), probes last, lame ones and those backed off and not due for
// a probe passed over and told; without a trace, in the stack's space.
func TestChoose(t *testing.T) {
	c := newClock()
	in := NewInfra(InfraOptions{Now: c.now, Rand: func(int) int { return 0 }})
	r := &Resolver{infra: in, port: 53}
	addr := func(i int) netip.Addr {
		return netip.MustParseAddr([]string{"192.0.2.1", "192.0.2.2", "2001:db8::3", "192.0.2.4", "192.0.2.5", "2001:db8::6", "192.0.2.7"}[i])
	}
	// 1 fast, 2 slow (out of the band), 3 fast IPv6, 4 lame, 5 backed
	// off and due for a probe, 6 unknown IPv6, 7 backed off and not due.
	for range 20 {
		in.answered(netip.AddrPortFrom(addr(0), 53), 10*time.Millisecond, upstream.Report{})
		in.answered(netip.AddrPortFrom(addr(1), 53), 900*time.Millisecond, upstream.Report{})
		in.answered(netip.AddrPortFrom(addr(2), 53), 20*time.Millisecond, upstream.Report{})
	}
	in.setLame(netip.AddrPortFrom(addr(3), 53), "example.")
	for _, i := range []int{4, 6} {
		for range 6 {
			_, rto, _ := in.attempt(netip.AddrPortFrom(addr(i), 53))
			in.timedOut(netip.AddrPortFrom(addr(i), 53), rto)
		}
	}
	c.advance(time.Minute)
	in.attempt(netip.AddrPortFrom(addr(6), 53)) // 7's probe under way
	ts := make([]target, 7)
	names := make([]string, len(ts))
	for i := range names {
		names[i] = fmt.Sprintf("ns%d.", i+1)
	}
	fill := func() {
		for i := range ts {
			ts[i] = target{name: names[i], addr: addr(i)}
		}
	}
	fill()
	var passed []string
	ru := &run{r: r}
	got := ru.choose("example.", ts, func(reason, _ string) { passed = append(passed, reason) })
	var order []string
	for _, t := range got {
		order = append(order, t.name)
	}
	if want := []string{"ns1.", "ns2.", "ns5.", "ns3.", "ns6."}; !slices.Equal(order, want) {
		t.Errorf("order %q, want %q", order, want)
	}
	if len(passed) != 2 || !strings.HasPrefix(passed[0], "ns4. (192.0.2.4) lame") || !strings.HasPrefix(passed[1], "ns7. (192.0.2.7) not answering") {
		t.Errorf("passed over %q, want ns4. lame and ns7. not answering", passed)
	}
	if !slices.Equal(got[0].passed, passed) {
		t.Errorf("first target's passed %q, want %q", got[0].passed, passed)
	}
	// Those passed over stay in ts, behind those returned: iterate
	// looks in it for the addresses it has already (tried), and one
	// lost there would be passed over, or asked, again when another NS
	// name resolves to it.
	for i := range ts {
		if !slices.ContainsFunc(ts, func(t target) bool { return t.addr == addr(i) }) {
			t.Errorf("%s (%s) no longer in ts after choose", names[i], addr(i))
		}
	}
	// The usual case: a zone's servers, none passed over.
	ts = ts[:3]
	pass := func(string, string) { t.Fatal("passed over") }
	if n := testing.AllocsPerRun(100, func() {
		fill()
		ru.choose("example.", ts, pass)
	}); n != 0 {
		t.Errorf("%v allocations choosing among %d addresses, want 0", n, len(ts))
	}
}

// TestServerSelection: resolutions through a zone with a fast, a slow and
// a dead server. The fast one gets nearly every query once the others are
// measured; the dead one is asked until its timeout backs off and then
// only probed, once per interval; a lame one is asked once.
func TestServerSelection(t *testing.T) {
	c := newClock()
	f := world(t)
	threeServers(t, f)
	x := &timed{fake: f, clock: c,
		latency: map[string]time.Duration{exCom: 10 * time.Millisecond, exCom2: 900 * time.Millisecond},
		dead:    map[string]bool{exCom3: true}, asked: map[string]int{}}
	rng := rand.New(rand.NewPCG(1, 2))
	in := NewInfra(InfraOptions{Now: c.now, Rand: rng.IntN})
	var steps []Step
	// Failures are not cached: every resolution goes to the servers.
	r := New(x, Options{Hints: []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr(root)}}}, Infra: in,
		Trace: func(s Step) { steps = append(steps, s) }, FailureTTL: -1})
	resolve := func(n int) {
		t.Helper()
		for range n {
			if _, err := r.Resolve(context.Background(), "www.example.com.", dns.TypeA); err != nil {
				t.Fatal(err)
			}
		}
	}
	resolve(200)
	fast, slow, dead := x.asked[exCom], x.asked[exCom2], x.asked[exCom3]
	t.Logf("200 resolutions: fast %d, slow %d, dead %d", fast, slow, dead)
	// The slow and dead ones fall out of the band of the fast one at
	// their first answer (900ms) or timeout (752ms): they are not asked
	// again while it answers.
	if fast < 197 || slow > 2 || dead > 2 {
		t.Errorf("fast server asked %d times, slow %d, dead %d: want the fast one for nearly all of 200", fast, slow, dead)
	}

	// All three die: each is asked until its timeout has backed off to
	// 12s (five timeouts in a row from 376ms, eight from the 50ms of the
	// fast one), then passed over but for a probe.
	for _, s := range []string{exCom, exCom2, exCom3} {
		x.dead[s] = true
	}
	fail := func(n int) (err error) {
		t.Helper()
		for range n {
			if _, err = r.Resolve(context.Background(), "www.example.com.", dns.TypeA); err == nil {
				t.Fatal("resolved through dead servers")
			}
		}
		return err
	}
	clear(x.asked)
	fail(30)
	t.Logf("30 resolutions, all dead: asked %v", x.asked)
	for _, s := range []string{exCom, exCom2, exCom3} {
		if n := x.asked[s]; n < 5 || n > 10 {
			t.Errorf("dead server %s asked %d times in 30 resolutions, want 5-10 (backed off, a probe)", s, n)
		}
	}
	clear(x.asked)
	err := fail(10)
	if n := x.asked[exCom] + x.asked[exCom2] + x.asked[exCom3]; n != 0 {
		t.Errorf("backed-off servers asked %d times", n)
	}
	if !strings.Contains(err.Error(), "not answering") {
		t.Errorf("error %v does not say the servers are not answering", err)
	}
	// Their probe interval over, each is probed once, then passed over
	// again.
	c.advance(30 * time.Second)
	clear(x.asked)
	fail(10)
	for _, s := range []string{exCom, exCom2, exCom3} {
		if n := x.asked[s]; n != 1 {
			t.Errorf("dead server %s asked %d times after its probe interval, want 1 probe", s, n)
		}
	}
	// ns2 comes back: its next probe finds it, and it is used.
	delete(x.dead, exCom2)
	c.advance(time.Minute)
	steps = nil
	resolve(1)
	if s := steps[len(steps)-1]; s.Server != ap(exCom2) || !strings.HasPrefix(s.Selection, "probe") {
		t.Errorf("last step %+v, want a probe of %s", s, exCom2)
	}
	clear(x.asked)
	resolve(10)
	if x.asked[exCom2] != 10 {
		t.Errorf("recovered server asked %d times in 10 resolutions", x.asked[exCom2])
	}

	// ns2 turns lame: asked once, then passed over for the zone.
	f.answers[key{exCom2, "www.example.com.", dns.TypeA}] = &dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeRefused}}
	clear(x.asked)
	fail(10)
	if x.asked[exCom2] != 1 {
		t.Errorf("lame server asked %d times in 10 resolutions, want 1", x.asked[exCom2])
	}
}

// BenchmarkInfra: what the infrastructure cache costs one upstream query
// (ordering a zone's three servers, the attempt, the answer), from every
// core at once over 1000 servers, without a trace.
func BenchmarkInfra(b *testing.B) {
	in := NewInfra(InfraOptions{})
	var ts [][]target
	for i := range 1000 {
		var z []target
		for j := range 3 {
			z = append(z, target{name: "ns.example.", addr: netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i) + byte(j)})})
		}
		ts = append(ts, z)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		o := make([]target, 3) // order sorts in place
		for pb.Next() {
			i++
			copy(o, ts[i%len(ts)])
			in.order("example.", 53, o, false)
			s := o[0].server(53)
			in.attempt(s)
			in.answered(s, time.Duration(i%50)*time.Millisecond, upstream.Report{})
		}
	})
}

// TestPassedOverOnce: an address of a zone passed over (lame) is not
// taken up again when an NS name without glue resolves to it: the error
// tells it once. Until choose kept the addresses it passed over, an IPv4
// one passed over beside an IPv6 one chosen was written over, and
// iterate's tried did not find it for ns3.example.net.
func TestPassedOverOnce(t *testing.T) {
	f := world(t)
	f.unreachable = map[string]bool{"2001:db8::2": true}
	f.answers[key{gtld, "example.com.", 0}] = referral(t,
		[]string{"example.com. 3600 IN NS ns1.example.com.", "example.com. 3600 IN NS ns2.example.com.", "example.com. 3600 IN NS ns3.example.net."},
		"ns1.example.com. 3600 IN A "+exCom, "ns2.example.com. 3600 IN AAAA 2001:db8::2")
	f.answers[key{exNet, "ns3.example.net.", dns.TypeA}] = answer(t, "ns3.example.net. 300 IN A "+exCom)
	var steps []Step
	r := resolver(t, f, Limits{}, &steps)
	r.infra.setLame(netip.AddrPortFrom(netip.MustParseAddr(exCom), 53), "example.com.")
	_, err := r.Resolve(context.Background(), "www.example.com.", dns.TypeA)
	if err == nil {
		t.Fatal("resolved through a lame server")
	}
	if n := strings.Count(err.Error(), "("+exCom+")"); n != 1 {
		t.Errorf("%s told %d times, want once: %v", exCom, n, err)
	}
}
