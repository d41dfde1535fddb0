package recursor

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/dnstap"
	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// fakeResolver answers from a table, counting its calls; with a gate it
// waits for the gate to close before answering. Its cache (Stale) holds
// a stale answer for names under "expired.", nothing else.
type fakeResolver struct {
	mu          sync.Mutex
	calls       map[string]int
	refreshes   int
	staleLookup int
	gate        chan struct{}
}

func (f *fakeResolver) Stale(name string, qtype uint16) (*resolve.Result, bool) {
	f.mu.Lock()
	f.staleLookup++
	f.mu.Unlock()
	if !strings.HasPrefix(name, "expired.") {
		return nil, false
	}
	return &resolve.Result{Answer: []dns.RR{rr(name + " 30 IN A 192.0.2.30")}, Stale: true}, true
}

func (f *fakeResolver) Resolve(ctx context.Context, name string, qtype uint16) (*resolve.Result, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[name]++
	f.mu.Unlock()
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return &resolve.Result{Rcode: dns.RcodeServerFailure}, &resolve.Error{Reason: resolve.Timeout, Name: name, Detail: "cancelled"}
		}
	}
	switch {
	case strings.HasPrefix(name, "fail."):
		return &resolve.Result{Rcode: dns.RcodeServerFailure}, &resolve.Error{Reason: resolve.NoReachableAuthority, Name: name, Detail: "no server of tld. answered usefully"}
	case strings.HasPrefix(name, "stale."):
		return &resolve.Result{Answer: []dns.RR{rr(name + " 30 IN A 192.0.2.3")}, Stale: true}, nil
	case strings.HasPrefix(name, "nx."):
		return &resolve.Result{Rcode: dns.RcodeNameError, Authority: []dns.RR{rr("tld. 300 IN SOA ns.tld. h.tld. 1 2 3 4 300")}}, nil
	case strings.HasPrefix(name, "signed."):
		return &resolve.Result{Answer: []dns.RR{rr(name + " 60 IN A 192.0.2.1"), rr(name + " 60 IN RRSIG A 13 3 60 20300101000000 20200101000000 1 tld. AAAA")}}, nil
	case strings.HasPrefix(name, "signednx."):
		return &resolve.Result{Rcode: dns.RcodeNameError, Authority: []dns.RR{rr("tld. 300 IN SOA ns.tld. h.tld. 1 2 3 4 300"),
			rr("tld. 300 IN RRSIG SOA 13 1 300 20300101000000 20200101000000 1 tld. AAAA"),
			rr("a.tld. 300 IN NSEC z.tld. A RRSIG NSEC"), rr("a.tld. 300 IN RRSIG NSEC 13 2 300 20300101000000 20200101000000 1 tld. AAAA")}}, nil
	case strings.HasPrefix(name, "secure."):
		return &resolve.Result{Answer: []dns.RR{rr(name + " 60 IN A 192.0.2.1")}, Security: cache.Secure}, nil
	case strings.HasPrefix(name, "iterations."):
		return &resolve.Result{Rcode: dns.RcodeNameError, Authority: []dns.RR{rr("tld. 300 IN SOA ns.tld. h.tld. 1 2 3 4 300")}, Security: cache.Insecure,
			EDE: wire.EDEUnsupportedNSEC3Iterations, Why: "NSEC3 of tld. with 500 iterations (more than 50)"}, nil
	case strings.HasPrefix(name, "insecure."):
		return &resolve.Result{Answer: []dns.RR{rr(name + " 60 IN A 192.0.2.1")}, Security: cache.Insecure}, nil
	case strings.HasPrefix(name, "bogus."):
		return &resolve.Result{Answer: []dns.RR{rr(name + " 60 IN A 192.0.2.1")}, Security: cache.Bogus, EDE: dns.ExtendedErrorCodeSignatureExpired, Why: "expired"}, nil
	case strings.HasPrefix(name, "big."):
		res := &resolve.Result{}
		for i := range 40 {
			res.Answer = append(res.Answer, rr(name+" 60 IN A 192.0.2."+strconv.Itoa(i)))
		}
		return res, nil
	}
	return &resolve.Result{Answer: []dns.RR{rr(name + " 60 IN A 192.0.2.1")}}, nil
}

// Refresh resolves as Resolve does, counted apart.
func (f *fakeResolver) Refresh(ctx context.Context, name string, qtype uint16) (*resolve.Result, error) {
	f.mu.Lock()
	f.refreshes++
	f.mu.Unlock()
	return f.Resolve(ctx, name, qtype)
}

func (f *fakeResolver) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

func rr(s string) dns.RR {
	r, err := dns.NewRR(s)
	if err != nil {
		panic(err)
	}
	return r
}

// localZone is served from the server's own data: a name, and a
// delegation below it.
const localZone = `
local.test. SOA ns.local.test. h.local.test. 1 7200 3600 1209600 300
local.test. NS ns.local.test.
ns.local.test. A 192.0.2.53
www.local.test. A 192.0.2.80
sub.local.test. NS ns.elsewhere.
`

func newRecursor(t testing.TB, res Resolver, opt Options) *Recursor {
	t.Helper()
	z, err := zone.Read(strings.NewReader("$TTL 3600\n"+localZone), "local.test.", "local.test.")
	if err != nil {
		t.Fatal(err)
	}
	opt.Resolver = res
	opt.Auth = auth.New(zone.NewSet(z), auth.Options{Chaos: true, ID: "rec1", Version: "Tern"})
	if opt.Allow == nil {
		opt.Allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	}
	r := New(opt)
	t.Cleanup(r.Close)
	return r
}

var (
	client  = netip.MustParseAddrPort("127.0.0.1:5000")
	client2 = netip.MustParseAddrPort("127.0.0.2:5000")
	outside = netip.MustParseAddrPort("192.0.2.7:5000")
)

// exchange asks w the query m from client and returns the response: the
// one Answer returns, or the deferred one (waited for).
func exchange(t *testing.T, w server.Worker, m *dns.Msg, from netip.AddrPort, tcp bool) (*dns.Msg, bool) {
	t.Helper()
	pkt, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	req := server.NewRequest(pkt, from, tcp, func(msg []byte) { got <- append([]byte(nil), msg...) })
	resp := w.Answer(req, make([]byte, 0, server.BufferSize))
	deferredAnswer := false
	if resp == nil {
		select {
		case resp = <-got:
			deferredAnswer = true
		case <-time.After(30 * time.Second):
			return nil, false
		}
	}
	r := new(dns.Msg)
	if err := r.Unpack(resp); err != nil {
		t.Fatalf("unpacking %x: %v", resp, err)
	}
	return r, deferredAnswer
}

func query(name string, qtype uint16, rd, edns bool) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.Id = 0x1234
	m.RecursionDesired = rd
	if edns {
		m.SetEdns0(1232, true)
	}
	return m
}

func edeOf(m *dns.Msg) (uint16, string, bool) {
	if opt := m.IsEdns0(); opt != nil {
		for _, o := range opt.Option {
			if e, ok := o.(*dns.EDNS0_EDE); ok {
				return e.InfoCode, e.ExtraText, true
			}
		}
	}
	return 0, "", false
}

// TestAnswer: the decisions of Answer, each on the wire.
func TestAnswer(t *testing.T) {
	r := newRecursor(t, &fakeResolver{}, Options{})
	w := r.NewWorker(false)
	malformed := query("www.example.tld.", dns.TypeA, true, false)
	malformed.Question = nil
	badvers := query("www.example.tld.", dns.TypeA, true, true)
	badvers.IsEdns0().SetVersion(1)
	notify := query("www.example.tld.", dns.TypeSOA, true, false)
	notify.Opcode = dns.OpcodeNotify
	hs := query("www.example.tld.", dns.TypeA, true, false)
	hs.Question[0].Qclass = dns.ClassHESIOD
	chaos := query("id.server.", dns.TypeTXT, true, false)
	chaos.Question[0].Qclass = dns.ClassCHAOS
	chaosNoRD, hsNoRD := chaos.Copy(), hs.Copy()
	chaosNoRD.RecursionDesired, hsNoRD.RecursionDesired = false, false
	for _, tc := range []struct {
		name     string
		m        *dns.Msg
		from     netip.AddrPort
		rcode    int
		ra, aa   bool
		deferred bool
		answers  int
		ede      int // -1: none
	}{
		{"resolved", query("WWW.Example.TLD.", dns.TypeA, true, true), client, dns.RcodeSuccess, true, false, true, 1, -1},
		{"NXDOMAIN", query("nx.example.tld.", dns.TypeA, true, false), client, dns.RcodeNameError, true, false, true, 0, -1},
		{"SERVFAIL with EDE 22", query("fail.example.tld.", dns.TypeA, true, true), client, dns.RcodeServerFailure, true, false, true, 0, 22},
		{"stale answer with EDE 3", query("stale.example.tld.", dns.TypeA, true, true), client, dns.RcodeSuccess, true, false, true, 1, 3},
		{"SERVFAIL without EDNS, no EDE", query("fail.example.tld.", dns.TypeA, true, false), client, dns.RcodeServerFailure, true, false, true, 0, -1},
		{"client outside allow", query("www.example.tld.", dns.TypeA, true, true), outside, dns.RcodeRefused, false, false, false, 0, 18},
		{"client outside allow, local data too", query("www.local.test.", dns.TypeA, true, true), outside, dns.RcodeRefused, false, false, false, 0, 18},
		{"RD=0", query("www.example.tld.", dns.TypeA, false, true), client, dns.RcodeRefused, true, false, false, 0, 20},
		{"RD=0 in a local zone", query("www.local.test.", dns.TypeA, false, true), client, dns.RcodeSuccess, true, true, false, 1, -1},
		{"RD=0 NXDOMAIN in a local zone", query("nx.local.test.", dns.TypeA, false, false), client, dns.RcodeNameError, true, true, false, 0, -1},
		{"RD=0 below a local delegation", query("www.sub.local.test.", dns.TypeA, false, false), client, dns.RcodeRefused, true, false, false, 0, -1},
		{"RD=0 CHAOS identity", chaosNoRD, client, dns.RcodeSuccess, true, true, false, 1, -1},
		{"RD=0 class HS", hsNoRD, client, dns.RcodeRefused, true, false, false, 0, -1},
		{"RD=1 in a local zone", query("www.local.test.", dns.TypeA, true, true), client, dns.RcodeSuccess, true, true, false, 1, -1},
		{"NXDOMAIN in a local zone", query("nx.local.test.", dns.TypeA, true, false), client, dns.RcodeNameError, true, true, false, 0, -1},
		{"below a local delegation: resolved", query("www.sub.local.test.", dns.TypeA, true, false), client, dns.RcodeSuccess, true, false, true, 1, -1},
		{"CHAOS identity", chaos, client, dns.RcodeSuccess, true, true, false, 1, -1},
		{"no question", malformed, client, dns.RcodeFormatError, true, false, false, 0, -1},
		{"EDNS version 1", badvers, client, dns.RcodeBadVers, true, false, false, 0, -1},
		{"NOTIFY", notify, client, dns.RcodeNotImplemented, true, false, false, 0, -1},
		{"class HS", hs, client, dns.RcodeRefused, true, false, false, 0, -1},
		{"AXFR", query("example.tld.", dns.TypeAXFR, true, false), client, dns.RcodeRefused, true, false, false, 0, -1},
		{"TSIG as QTYPE", query("example.tld.", dns.TypeTSIG, true, false), client, dns.RcodeFormatError, true, false, false, 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, deferred := exchange(t, w, tc.m, tc.from, false)
			if resp == nil {
				t.Fatal("no answer")
			}
			if resp.Rcode != tc.rcode || resp.RecursionAvailable != tc.ra || resp.Authoritative != tc.aa || deferred != tc.deferred || len(resp.Answer) != tc.answers {
				t.Errorf("rcode %s RA %v AA %v deferred %v answers %d, want %s %v %v %v %d\n%v",
					dns.RcodeToString[resp.Rcode], resp.RecursionAvailable, resp.Authoritative, deferred, len(resp.Answer),
					dns.RcodeToString[tc.rcode], tc.ra, tc.aa, tc.deferred, tc.answers, resp)
			}
			if resp.Id != tc.m.Id || resp.RecursionDesired != tc.m.RecursionDesired {
				t.Errorf("ID %x RD %v, want the query's", resp.Id, resp.RecursionDesired)
			}
			if len(tc.m.Question) == 1 && (len(resp.Question) != 1 || resp.Question[0].Name != tc.m.Question[0].Name) {
				t.Errorf("question %v, want %v as written", resp.Question, tc.m.Question)
			}
			if (resp.IsEdns0() != nil) != (tc.m.IsEdns0() != nil) {
				t.Errorf("OPT %v, query's %v", resp.IsEdns0(), tc.m.IsEdns0())
			} else if opt := resp.IsEdns0(); opt != nil && (opt.UDPSize() != 1232 || opt.Do() != tc.m.IsEdns0().Do()) {
				t.Errorf("OPT %v", opt)
			}
			code, text, ok := edeOf(resp)
			if ok != (tc.ede >= 0) || (ok && int(code) != tc.ede) {
				t.Errorf("EDE %v %d %q, want %d", ok, code, text, tc.ede)
			}
			if tc.ede == 22 && !strings.Contains(text, "no reachable authority") {
				t.Errorf("EDE text %q", text)
			}
		})
	}
}

// TestTruncated: an answer larger than the client's UDP limit comes with
// TC set; over TCP whole.
func TestTruncated(t *testing.T) {
	r := newRecursor(t, &fakeResolver{}, Options{})
	for _, tcp := range []bool{false, true} {
		resp, _ := exchange(t, r.NewWorker(tcp), query("big.example.tld.", dns.TypeA, true, false), client, tcp)
		if resp.Truncated == tcp || (tcp && len(resp.Answer) != 40) {
			t.Errorf("tcp %v: TC %v, %d answers", tcp, resp.Truncated, len(resp.Answer))
		}
	}
}

// pending sends m from from to w, which must defer it, and returns the
// channel its answer comes on.
func pending(t *testing.T, w server.Worker, m *dns.Msg, from netip.AddrPort) (chan []byte, []byte) {
	t.Helper()
	pkt, _ := m.Pack()
	got := make(chan []byte, 1)
	req := server.NewRequest(pkt, from, false, func(msg []byte) { got <- append([]byte(nil), msg...) })
	return got, w.Answer(req, make([]byte, 0, server.BufferSize))
}

// mailed waits until a resolution has mailed w a response to store.
func mailed(t *testing.T, w *Worker) {
	t.Helper()
	mailedN(t, w, 1)
}

// mailedN waits until w's box holds n responses (no query taking them
// meanwhile).
func mailedN(t *testing.T, w *Worker, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		w.rc.box.mu.Lock()
		got := len(w.rc.box.mail)
		w.rc.box.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d responses mailed, want %d", got, n)
		}
	}
}

func wait(t *testing.T, ch chan []byte) *dns.Msg {
	t.Helper()
	select {
	case b := <-ch:
		m := new(dns.Msg)
		if err := m.Unpack(b); err != nil {
			t.Fatal(err)
		}
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("no deferred answer")
	}
	return nil
}

// TestInFlightOnce: identical questions asked while one resolution runs
// wait on it (one Resolve call) and each get their own response (ID,
// question case); the limits on clients and resolutions hold.
func TestInFlightOnce(t *testing.T) {
	f := &fakeResolver{gate: make(chan struct{})}
	r := newRecursor(t, f, Options{MaxPerClient: 2, MaxResolutions: 2})
	w := r.NewWorker(false)
	var chans []chan []byte
	for i, name := range []string{"same.example.tld.", "SAME.example.tld.", "same.EXAMPLE.tld."} {
		m := query(name, dns.TypeA, true, false)
		m.Id = uint16(i + 1)
		from := client
		if i == 2 {
			from = client2
		}
		ch, resp := pending(t, w, m, from)
		if resp != nil {
			t.Fatalf("query %d answered now", i)
		}
		chans = append(chans, ch)
	}
	// client has two waiting: a third query of it is dropped.
	if ch, resp := pending(t, w, query("other.example.tld.", dns.TypeA, true, false), client); resp != nil {
		t.Errorf("third query of one client answered %x", resp)
	} else {
		select {
		case <-ch:
			t.Error("third query of one client deferred")
		default:
		}
	}
	// One more question is in flight (2 = MaxResolutions); a third gets
	// SERVFAIL at once.
	ch4, resp := pending(t, w, query("second.example.tld.", dns.TypeA, true, false), client2)
	if resp != nil {
		t.Fatalf("second question answered now")
	}
	_, resp = pending(t, w, query("third.example.tld.", dns.TypeA, true, false), netip.MustParseAddrPort("127.0.0.3:1"))
	if m := new(dns.Msg); resp == nil || m.Unpack(resp) != nil || m.Rcode != dns.RcodeServerFailure || !m.RecursionAvailable {
		t.Errorf("over max-resolutions: %x", resp)
	}
	if n, waiting := r.InFlight(); n != 2 || waiting != 4 {
		t.Errorf("in flight %d, waiting %d; want 2, 4", n, waiting)
	}
	// A prefetch of a question in flight starts nothing.
	same, _ := query("same.example.tld.", dns.TypeA, true, false).Pack()
	if r.mesh.prefetch(asked{[]byte("same.example.tld."), dns.TypeA}, same, 512, mailTo{}) {
		t.Error("prefetch of a question in flight started")
	}
	close(f.gate)
	for i, ch := range chans {
		m := wait(t, ch)
		if m.Id != uint16(i+1) || len(m.Answer) != 1 || m.Question[0].Name != []string{"same.example.tld.", "SAME.example.tld.", "same.EXAMPLE.tld."}[i] {
			t.Errorf("waiter %d: %v", i, m)
		}
	}
	wait(t, ch4)
	if n := f.count("same.example.tld."); n != 1 {
		t.Errorf("%d resolutions of one question, want 1", n)
	}
	// Everything released: the counts are back to zero.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if n, waiting := r.InFlight(); n == 0 && waiting == 0 {
			break
		}
	}
	if n, waiting := r.InFlight(); n != 0 || waiting != 0 {
		t.Errorf("after: in flight %d, waiting %d", n, waiting)
	}
	if !r.mesh.prefetch(asked{[]byte("same.example.tld."), dns.TypeA}, same, 512, mailTo{}) {
		t.Error("prefetch did not start")
	}
}

// burst starts n resolutions at once on r's mesh (its fakeResolver
// gated by gate), lets them finish, and waits until every goroutine waits
// for the next.
func burst(t *testing.T, r *Recursor, w server.Worker, gate chan struct{}, n int) {
	t.Helper()
	var chans []chan []byte
	for i := range n {
		ch, resp := pending(t, w, query(fmt.Sprintf("burst%d.example.tld.", i), dns.TypeA, true, false), client)
		if resp != nil {
			t.Fatalf("burst query %d answered now", i)
		}
		chans = append(chans, ch)
	}
	if got := r.mesh.count(); got != n {
		t.Fatalf("%d goroutines for %d resolutions at once", got, n)
	}
	close(gate)
	for _, ch := range chans {
		wait(t, ch)
	}
	for _, ok := r.mesh.idlers(); !ok; _, ok = r.mesh.idlers() {
		runtime.Gosched()
	}
}

// TestResolversLastFirst: after a burst of resolutions at once, a load of
// one at a time is served by the goroutine that waited least, the others
// handed nothing (so that they end after the idle time, their stacks
// given back: TestIdleResolversEnd). Handed the jobs in turn, as before,
// all of them would live on.
func TestResolversLastFirst(t *testing.T) {
	f := &fakeResolver{gate: make(chan struct{})}
	r := newRecursor(t, f, Options{MaxPerClient: 64})
	r.mesh.idleFor = time.Hour
	w := r.NewWorker(false)
	burst(t, r, w, f.gate, 8)
	before, _ := r.mesh.idlers()
	for i := range 20 {
		wait(t, mustDefer(t, w, fmt.Sprintf("one%d.example.tld.", i)))
		var after []chan job
		ok := false
		for !ok {
			runtime.Gosched()
			after, ok = r.mesh.idlers()
		}
		if !slices.Equal(after, before) {
			t.Fatalf("resolution %d one at a time: the goroutines wait in another order (%d of them)", i, len(after))
		}
	}
}

// TestIdleResolversEnd: the goroutines of a burst of resolutions, handed
// nothing more, end after the idle time.
func TestIdleResolversEnd(t *testing.T) {
	f := &fakeResolver{gate: make(chan struct{})}
	r := newRecursor(t, f, Options{MaxPerClient: 64})
	r.mesh.idleFor = time.Millisecond
	burst(t, r, r.NewWorker(false), f.gate, 8)
	for deadline := time.Now().Add(10 * time.Second); r.mesh.count() > 0 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
	}
	if n := r.mesh.count(); n != 0 {
		t.Errorf("%d goroutines left", n)
	}
}

// mustDefer asks w for name from client and returns the channel its
// deferred answer comes on.
func mustDefer(t *testing.T, w server.Worker, name string) chan []byte {
	t.Helper()
	ch, resp := pending(t, w, query(name, dns.TypeA, true, false), client)
	if resp != nil {
		t.Fatalf("%s answered now", name)
	}
	return ch
}

// TestCloseAnswersWaiters: closing the Recursor ends its resolutions and
// answers their waiters (SERVFAIL).
func TestCloseAnswersWaiters(t *testing.T) {
	f := &fakeResolver{gate: make(chan struct{})}
	r := newRecursor(t, f, Options{})
	ch, _ := pending(t, r.NewWorker(false), query("slow.example.tld.", dns.TypeA, true, false), client)
	r.Close()
	if m := wait(t, ch); m.Rcode != dns.RcodeServerFailure {
		t.Errorf("%v", m)
	}
}

// TestClosedStartsNothing: once the Recursor is closed, a query that
// needs a resolution gets SERVFAIL at once and no resolution starts (none
// is added to the WaitGroup Close waited on), nor does a prefetch.
func TestClosedStartsNothing(t *testing.T) {
	f := &fakeResolver{}
	r := newRecursor(t, f, Options{})
	w := r.NewWorker(false)
	r.Close()
	_, resp := pending(t, w, query("late.example.tld.", dns.TypeA, true, false), client)
	if m := new(dns.Msg); resp == nil || m.Unpack(resp) != nil || m.Rcode != dns.RcodeServerFailure {
		t.Errorf("query after Close: %x, want SERVFAIL now", resp)
	}
	late, _ := query("late.example.tld.", dns.TypeA, true, false).Pack()
	if r.mesh.prefetch(asked{[]byte("late.example.tld."), dns.TypeA}, late, 512, mailTo{}) {
		t.Error("prefetch started after Close")
	}
	r.wg.Wait()
	if n := f.count("late.example.tld."); n != 0 {
		t.Errorf("%d resolutions started after Close", n)
	}
}

// TestZeroAllocs: the answers given on the worker's goroutine (refusals,
// local data) allocate nothing.
func TestZeroAllocs(t *testing.T) {
	for _, counted := range []bool{false, true} {
		var set *metrics.Set
		if counted {
			set = metrics.New()
		}
		r := newRecursor(t, &fakeResolver{}, Options{Metrics: set})
		w := r.NewWorker(false)
		out := make([]byte, 0, server.BufferSize)
		for _, tc := range []struct {
			name string
			m    *dns.Msg
			from netip.AddrPort
		}{
			{"outside allow", query("www.example.tld.", dns.TypeA, true, true), outside},
			{"RD=0", query("www.example.tld.", dns.TypeA, false, true), client},
			{"local data", query("www.local.test.", dns.TypeA, true, true), client},
		} {
			pkt, _ := tc.m.Pack()
			req := server.NewRequest(pkt, tc.from, false, nil)
			if n := testing.AllocsPerRun(100, func() { w.Answer(req, out) }); n != 0 {
				t.Errorf("%s (metrics %v): %v allocations", tc.name, counted, n)
			}
		}
		// AllocsPerRun answers each query once more than it counts.
		if !counted {
			continue
		}
		if got := set.Snapshot().Queries["resolver"]; got != 3*101 {
			t.Errorf("%d queries counted, want %d", got, 3*101)
		}
	}
}

type exchangerFunc func(context.Context, netip.AddrPort, dns.Question) (*dns.Msg, error)

func (f exchangerFunc) Exchange(ctx context.Context, s netip.AddrPort, q dns.Question) (*dns.Msg, error) {
	return f(ctx, s, q)
}

// hitAllocsNothing asks w name/A from client, a response-cache hit, and
// checks that answering it allocates nothing.
func hitAllocsNothing(t *testing.T, w *Worker, name string) {
	t.Helper()
	pkt, _ := query(name, dns.TypeA, true, true).Pack()
	req := server.NewRequest(pkt, client, false, nil)
	out := make([]byte, 0, server.BufferSize)
	if n := testing.AllocsPerRun(100, func() { w.Answer(req, out) }); n != 0 {
		t.Errorf("a hit: %v allocations", n)
	}
}

// TestMailAged: a response mailed to a worker is stored with the time
// it was built, not the time the worker next looks in its cache: a
// worker that got no query for longer than the response's TTL must not
// serve it as fresh. The response here is built at the start (TTL 60)
// and stored two minutes later; it used to be served then with its TTL
// of 60 whole.
func TestMailAged(t *testing.T) {
	var clock atomic.Int64
	clock.Store(1e9)
	f := &fakeResolver{}
	r := newRecursor(t, f, Options{ResponseCache: 64, Now: func() time.Time { return time.Unix(clock.Load(), 0) }})
	w := r.NewWorker(false).(*Worker)
	ask := func(id uint16) (*dns.Msg, bool) {
		t.Helper()
		m := query("aged.example.tld.", dns.TypeA, true, true)
		m.Id = id
		return exchange(t, w, m, client, false)
	}
	if resp, deferred := ask(0); !deferred || len(resp.Answer) != 1 {
		t.Fatalf("first query: deferred %v, %v", deferred, resp)
	}
	mailed(t, w)
	clock.Add(120)
	if resp, deferred := ask(2); !deferred {
		t.Errorf("two minutes later: a response of TTL 60 served from the cache: %v", resp)
	}
}

// TestMailBeforeZoneChange: a response resolved while the local zones
// changed is not stored in the response cache once the worker has seen
// the change: new.test. becomes a local zone while www.new.test. is
// being resolved, and the next query gets the local data (it used to get
// the resolved answer from the cache, stored right after the cache was
// emptied for the change).
func TestMailBeforeZoneChange(t *testing.T) {
	f := &fakeResolver{gate: make(chan struct{})}
	r := newRecursor(t, f, Options{ResponseCache: 64})
	w := r.NewWorker(false).(*Worker)
	var chans []chan []byte
	for id := range uint16(2) {
		m := query("www.new.test.", dns.TypeA, true, true)
		m.Id = id
		ch, resp := pending(t, w, m, client)
		if resp != nil {
			t.Fatalf("query %d answered now", id)
		}
		chans = append(chans, ch)
	}
	local, err := zone.Read(strings.NewReader("$TTL 3600\n"+localZone), "local.test.", "local.test.")
	if err != nil {
		t.Fatal(err)
	}
	added, err := zone.Read(strings.NewReader("$TTL 3600\nnew.test. SOA ns.new.test. h.new.test. 1 2 3 4 5\nnew.test. NS ns.new.test.\nns.new.test. A 192.0.2.53\nwww.new.test. A 192.0.2.99\n"), "new.test.", "new.test.")
	if err != nil {
		t.Fatal(err)
	}
	r.auth.Publish(zone.NewSet(local, added))
	close(f.gate)
	for _, ch := range chans {
		wait(t, ch)
	}
	mailed(t, w)
	resp, deferred := exchange(t, w, query("www.new.test.", dns.TypeA, true, true), client, false)
	if deferred || !resp.Authoritative || len(resp.Answer) != 1 || resp.Answer[0].(*dns.A).A.String() != "192.0.2.99" {
		t.Errorf("after new.test. became local: deferred %v, %v", deferred, resp)
	}
}

// TestResponseCache: responses built on resolutions' goroutines reach the
// worker's response cache through its mailbox, stored as they come, so
// that the query after the first resolution hits; hits come with the
// query's ID and aged TTLs, allocate nothing, and one close to expiry
// starts one refresh whose response replaces the old.
func TestResponseCache(t *testing.T) {
	now := time.Unix(1e9, 0)
	f := &fakeResolver{}
	r := newRecursor(t, f, Options{ResponseCache: 64, Now: func() time.Time { return now }})
	w := r.NewWorker(false).(*Worker)
	ask := func(id uint16) (*dns.Msg, bool) {
		t.Helper()
		m := query("Cached.example.tld.", dns.TypeA, true, true)
		m.Id = id
		return exchange(t, w, m, client, false)
	}
	if resp, deferred := ask(0); !deferred || len(resp.Answer) != 1 {
		t.Fatalf("first query: deferred %v, %v", deferred, resp)
	}
	mailed(t, w)
	// The second query is a hit: the response was stored when it came
	// by mail (it used to wait for the question's second miss, and the
	// second query took a resolution of its own).
	resp, deferred := ask(7)
	if deferred || resp.Id != 7 || len(resp.Answer) != 1 || resp.Answer[0].Header().Ttl != 60 || resp.Question[0].Name != "Cached.example.tld." || !resp.RecursionAvailable {
		t.Fatalf("second query: deferred %v, %v", deferred, resp)
	}
	now = now.Add(30 * time.Second)
	if resp, deferred = ask(8); deferred || resp.Answer[0].Header().Ttl != 30 {
		t.Fatalf("30 s later: deferred %v, %v", deferred, resp)
	}
	hitAllocsNothing(t, w, "cached.example.tld.")
	if n := f.count("cached.example.tld."); n != 1 {
		t.Errorf("%d resolutions, want 1", n)
	}
	// In the last tenth of the TTL: the hit still answers, and starts
	// one refresh.
	now = now.Add(25 * time.Second)
	if resp, deferred = ask(9); deferred || resp.Answer[0].Header().Ttl != 5 {
		t.Fatalf("55 s later: deferred %v, %v", deferred, resp)
	}
	mailed(t, w)
	if n := f.count("cached.example.tld."); n != 2 || f.refreshes != 1 {
		t.Errorf("%d resolutions, %d of them refreshes; want 2, 1 (one prefetch)", n, f.refreshes)
	}
	if resp, deferred = ask(12); deferred || resp.Answer[0].Header().Ttl != 60 {
		t.Fatalf("after the prefetch: deferred %v, %v", deferred, resp)
	}
}

// BenchmarkCacheHit is a response-cache hit through Answer, refusals and
// all checks included, against the authoritative engine's own cached
// answer to the same query shape (auth's worker with its response cache).
func BenchmarkCacheHit(b *testing.B) {
	r := newRecursor(b, &fakeResolver{}, Options{ResponseCache: 64})
	w := r.NewWorker(false).(*Worker)
	pkt, _ := query("cached.example.tld.", dns.TypeA, true, true).Pack()
	out := make([]byte, 0, server.BufferSize)
	got := make(chan []byte, 1)
	w.Answer(server.NewRequest(pkt, client, false, func(m []byte) { got <- m }), out)
	<-got
	for !w.rc.box.pending.Load() {
		time.Sleep(time.Millisecond)
	}
	req := server.NewRequest(pkt, client, false, nil)
	if m := new(dns.Msg); m.Unpack(w.Answer(req, out)) != nil || len(m.Answer) != 1 {
		b.Fatal("no hit")
	}
	b.Run("recursor", func(b *testing.B) {
		for b.Loop() {
			w.Answer(req, out)
		}
	})
	// A batch of 32, as the server hands them to a Batcher: the clock
	// read once; ns/op is per query.
	reqs := make([]server.Request, 32)
	outs := make([][]byte, 32)
	b.Run("recursor-batch", func(b *testing.B) {
		for b.Loop() {
			for i := range reqs {
				reqs[i] = *server.NewRequest(pkt, client, false, nil)
				outs[i] = out[:0]
			}
			w.AnswerBatch(reqs, outs)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(reqs)), "ns/query")
	})
	aw := r.auth.NewWorker(false, 64)
	lpkt, _ := query("www.local.test.", dns.TypeA, true, true).Pack()
	lreq := server.NewRequest(lpkt, client, false, nil)
	aw.Answer(lreq, out)
	aw.Answer(lreq, out)
	b.Run("auth", func(b *testing.B) {
		for b.Loop() {
			aw.Answer(lreq, out)
		}
	})
}

// BenchmarkCountedHits is a UDP worker's batch of 32 response-cache hits
// (A and AAAA questions alternating, as bench/metrics.sh's resolver-hits
// asks), plain, with the answers counted (metrics), or recorded by
// dnstap (the worker wrapped as tern serve wraps it, the Tap's writer
// draining every 5 ms): the A/B of what counting or recording costs
// the resolver per answer, in the thread's CPU time (cpu-ns/answer);
// under callgrind (instructions per op at two -test.benchtime counts,
// divided by 32) the deterministic one.
func BenchmarkCountedHits(b *testing.B) {
	for _, name := range []string{"plain", "metrics", "dnstap"} {
		var set *metrics.Set
		if name == "metrics" {
			set = metrics.New()
		}
		b.Run(name, func(b *testing.B) {
			r := newRecursor(b, &fakeResolver{}, Options{ResponseCache: 64, Metrics: set})
			w := r.NewWorker(false).(*Worker)
			var bw server.Batcher = w
			var tap *dnstap.Tap
			if name == "dnstap" {
				// Drained every 100 us, each batch waiting (below) for
				// the writer to have written the last: so that the
				// records fit, and the benchmark measures recording,
				// not dropping (the waiting costs the worker's thread
				// no CPU).
				var err error
				tap, err = dnstap.Open(dnstap.Options{File: filepath.Join(b.TempDir(), "d.fstrm"), Interval: 100 * time.Microsecond})
				if err != nil {
					b.Fatal(err)
				}
				defer tap.Close()
				bw = dnstap.NewWorker(w, tap, dnstap.Client, false)
			}
			out := make([]byte, 0, server.BufferSize)
			var pkts [][]byte
			for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
				pkt, _ := query("cached.example.tld.", qt, true, true).Pack()
				got := make(chan []byte, 1)
				w.Answer(server.NewRequest(pkt, client, false, func(m []byte) { got <- m }), out)
				<-got
				for !w.rc.box.pending.Load() {
					time.Sleep(time.Millisecond)
				}
				if m := new(dns.Msg); m.Unpack(w.Answer(server.NewRequest(pkt, client, false, nil), out)) != nil || len(m.Answer) == 0 {
					b.Fatal("no hit")
				}
				pkts = append(pkts, pkt)
			}
			reqs := make([]server.Request, 32)
			outs := make([][]byte, 32)
			bufs := make([][]byte, 32)
			for i := range bufs {
				bufs[i] = make([]byte, 0, server.BufferSize)
			}
			var recorded uint64
			dnstest.CPUPerAnswer(b, len(reqs), func() {
				for i := range reqs {
					reqs[i] = *server.NewRequest(pkts[i%2], client, false, nil)
					outs[i] = bufs[i][:0]
				}
				bw.AnswerBatch(reqs, outs)
				if tap != nil {
					// Two messages per answer, CLIENT_QUERY and
					// CLIENT_RESPONSE.
					recorded += 2 * uint64(len(reqs))
					for tap.Written()+2*tap.Dropped() < recorded {
						time.Sleep(20 * time.Microsecond)
					}
				}
			})
			if tap != nil {
				b.ReportMetric(float64(tap.Dropped())/float64(b.N*len(reqs)), "dropped/answer")
			}
			if set != nil && set.Snapshot().CacheHits < uint64(b.N*len(reqs)) {
				b.Fatalf("%d cache hits counted, want at least %d", set.Snapshot().CacheHits, b.N*len(reqs))
			}
		})
	}
}

// TestNSID: identity.nsid goes to clients that ask for it (RFC 5001), in
// resolved responses and in refusals, and to no other.
func TestNSID(t *testing.T) {
	r := newRecursor(t, &fakeResolver{}, Options{NSID: []byte("rec1")})
	w := r.NewWorker(false)
	for _, tc := range []struct {
		name string
		rd   bool
		ask  bool
	}{{"resolved", true, true}, {"refused", false, true}, {"resolved, not asked", true, false}} {
		m := query("www.example.tld.", dns.TypeA, tc.rd, true)
		if tc.ask {
			m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_NSID{Code: dns.EDNS0NSID})
		}
		resp, _ := exchange(t, w, m, client, false)
		got := ""
		for _, o := range resp.IsEdns0().Option {
			if n, ok := o.(*dns.EDNS0_NSID); ok {
				got = n.Nsid
			}
		}
		if want := map[bool]string{true: "72656331", false: ""}[tc.ask]; got != want {
			t.Errorf("%s: NSID %q, want %q", tc.name, got, want)
		}
	}
}

// TestWaitLimits: the bounds on queries waiting on resolutions, on the
// wire. Each case's queries (each a question of its own, the resolver
// blocked) come from its clients in order; want says which are deferred
// (answered once the resolver is let go) and which are dropped (no
// answer now, none later).
func TestWaitLimits(t *testing.T) {
	v6 := func(s string) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr(s), 5000) }
	v4 := func(s string) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr(s), 5000) }
	for _, tc := range []struct {
		name    string
		opt     Options
		clients []netip.AddrPort
		want    []bool // deferred
	}{
		{"addresses of one /64 share the per-client count", Options{MaxPerClient: 2},
			[]netip.AddrPort{v6("2001:db8:1:2::1"), v6("2001:db8:1:2::2"), v6("2001:db8:1:2:ffff::3"), v6("2001:db8:1:3::1")},
			[]bool{true, true, false, true}},
		{"client-prefix-ipv6 128 counts per address", Options{MaxPerClient: 2, ClientPrefixIPv6: 128},
			[]netip.AddrPort{v6("2001:db8:1:2::1"), v6("2001:db8:1:2::1"), v6("2001:db8:1:2::2"), v6("2001:db8:1:2::1")},
			[]bool{true, true, true, false}},
		{"IPv4 counts per address by default", Options{MaxPerClient: 1},
			[]netip.AddrPort{v4("127.0.0.1"), v4("127.0.0.2"), v4("127.0.0.1")},
			[]bool{true, true, false}},
		{"client-prefix-ipv4 24", Options{MaxPerClient: 1, ClientPrefixIPv4: 24},
			[]netip.AddrPort{v4("127.0.0.1"), v4("127.0.0.2"), v4("127.0.1.2"), v6("::ffff:127.0.0.3")},
			[]bool{true, false, true, false}},
		{"max-waiting bounds all clients together", Options{MaxPerClient: 2, MaxWaiting: 3},
			[]netip.AddrPort{v4("127.0.0.1"), v4("127.0.0.2"), v4("127.0.0.3"), v4("127.0.0.4"), v6("2001:db8::1")},
			[]bool{true, true, true, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeResolver{gate: make(chan struct{})}
			tc.opt.Allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("2001:db8::/32")}
			r := newRecursor(t, f, tc.opt)
			w := r.NewWorker(false)
			chans := make([]chan []byte, len(tc.clients))
			deferred := 0
			for i, from := range tc.clients {
				m := query("q"+strconv.Itoa(i)+".example.tld.", dns.TypeA, true, false)
				m.Id = uint16(i + 1)
				ch, resp := pending(t, w, m, from)
				if resp != nil {
					t.Fatalf("query %d from %s answered now: %x", i, from, resp)
				}
				chans[i] = ch
				if tc.want[i] {
					deferred++
				}
			}
			if _, waiting := r.InFlight(); waiting != deferred {
				t.Errorf("%d waiting, want %d", waiting, deferred)
			}
			close(f.gate)
			for i, ch := range chans {
				if !tc.want[i] {
					continue
				}
				if m := wait(t, ch); m.Id != uint16(i+1) || m.Rcode != dns.RcodeSuccess || len(m.Answer) != 1 {
					t.Errorf("query %d: %v", i, m)
				}
			}
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if n, waiting := r.InFlight(); n == 0 && waiting == 0 {
					break
				}
			}
			if n, waiting := r.InFlight(); n != 0 || waiting != 0 {
				t.Errorf("after: in flight %d, waiting %d", n, waiting)
			}
			// The dropped queries never got an answer.
			for i, ch := range chans {
				select {
				case b := <-ch:
					t.Errorf("query %d, dropped, answered %x", i, b)
				default:
				}
			}
			// Room again: the first client's next query is deferred.
			ch, resp := pending(t, w, query("again.example.tld.", dns.TypeA, true, false), tc.clients[0])
			if resp != nil {
				t.Fatalf("after: answered now %x", resp)
			}
			wait(t, ch)
		})
	}
}

// countingReply is a replier that counts its Sends and Releases.
type countingReply struct {
	sends, releases *atomic.Int32
}

func (c countingReply) Send([]byte) error { c.sends.Add(1); return nil }
func (c countingReply) Release()          { c.releases.Add(1) }

// TestWaitLimitsNoLeak: a query over a bound gets no Reply at all (defer
// is not called), and every query admitted has its Reply sent and released
// once its resolution ends, whatever the bounds refused meanwhile.
func TestWaitLimitsNoLeak(t *testing.T) {
	f := &fakeResolver{gate: make(chan struct{})}
	r := newRecursor(t, f, Options{MaxPerClient: 3, MaxWaiting: 5})
	var made, sends, releases atomic.Int32
	deferReply := func() replier { made.Add(1); return countingReply{&sends, &releases} }
	pkt, _ := query("x.example.tld.", dns.TypeA, true, false).Pack()
	got := map[joined]int{}
	for i := range 12 {
		from := netip.MustParseAddr("2001:db8::" + strconv.Itoa(i%3+1)) // one /64
		if i >= 6 {
			from = netip.MustParseAddr("2001:db8:0:" + strconv.Itoa(i) + "::1") // a /64 each
		}
		got[r.mesh.join(asked{[]byte("q" + strconv.Itoa(i) + ".example.tld."), dns.TypeA}, pkt, 512, false, false, netip.AddrPortFrom(from, 5353), mailTo{}, deferReply)]++
	}
	if got[deferred] != 5 || got[overClient] != 3 || got[overWaiting] != 4 || made.Load() != 5 {
		t.Fatalf("joined %v, %d replies made; want 5 deferred, 3 over the client's, 4 over the total, 5 made", got, made.Load())
	}
	close(f.gate)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && releases.Load() < 5; time.Sleep(time.Millisecond) {
	}
	r.Close()
	if sends.Load() != 5 || releases.Load() != 5 {
		t.Errorf("%d sent, %d released; want 5, 5", sends.Load(), releases.Load())
	}
	if n, waiting := r.InFlight(); n != 0 || waiting != 0 {
		t.Errorf("after: in flight %d, waiting %d", n, waiting)
	}
}

// TestDNSSECRecords: the RRSIG, NSEC and NSEC3 records of a resolution go
// only to a client that set DO (RFC 4035 §3.2.1), or in the answer to one
// that asked for their type; the response cache keeps the two apart
// (a DO client asking first does not give RRSIGs to the next).
func TestDNSSECRecords(t *testing.T) {
	r := newRecursor(t, &fakeResolver{}, Options{})
	w := r.NewWorker(false)
	noDO := func(name string, qtype uint16) *dns.Msg {
		m := query(name, qtype, true, true)
		m.IsEdns0().SetDo(false)
		return m
	}
	for _, tc := range []struct {
		name               string
		m                  *dns.Msg
		answers, authority []uint16 // the types, in order
	}{
		{"DO: the RRSIG", query("signed.example.tld.", dns.TypeA, true, true), []uint16{dns.TypeA, dns.TypeRRSIG}, nil},
		{"DO=0: no RRSIG", noDO("signed.example.tld.", dns.TypeA), []uint16{dns.TypeA}, nil},
		{"DO=0 again, after the DO response was cached", noDO("signed.example.tld.", dns.TypeA), []uint16{dns.TypeA}, nil},
		{"no EDNS: no RRSIG", query("signed.example.tld.", dns.TypeA, true, false), []uint16{dns.TypeA}, nil},
		{"DO=0 asking for RRSIG: the RRSIG", noDO("signed.example.tld.", dns.TypeRRSIG), []uint16{dns.TypeA, dns.TypeRRSIG}, nil},
		{"NXDOMAIN with DO: SOA, NSEC and RRSIGs", query("signednx.example.tld.", dns.TypeA, true, true), nil, []uint16{dns.TypeSOA, dns.TypeRRSIG, dns.TypeNSEC, dns.TypeRRSIG}},
		{"NXDOMAIN with DO=0: the SOA", noDO("signednx.example.tld.", dns.TypeA), nil, []uint16{dns.TypeSOA}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := exchange(t, w, tc.m, client, false)
			if resp == nil {
				t.Fatal("no answer")
			}
			types := func(rrs []dns.RR) []uint16 {
				var out []uint16
				for _, rr := range rrs {
					out = append(out, rr.Header().Rrtype)
				}
				return out
			}
			if !slices.Equal(types(resp.Answer), tc.answers) || !slices.Equal(types(resp.Ns), tc.authority) {
				t.Errorf("answer %v authority %v, want types %v %v", resp.Answer, resp.Ns, tc.answers, tc.authority)
			}
		})
	}
}

// TestClientResponseTimer: RFC 8767 §5 on the wire. With the client
// response timer on, queries whose resolution has not ended when it
// fires are answered from the resolver's stale data (TTL 30, EDE 3)
// while the resolution goes on; its fresh response still reaches the
// worker's response cache, and the next query is a hit with it. A
// question the cache holds nothing for keeps its client waiting for the
// resolution. The resolver is blocked until the end: nothing here
// depends on how long the timer takes.
func TestClientResponseTimer(t *testing.T) {
	f := &fakeResolver{gate: make(chan struct{})}
	r := newRecursor(t, f, Options{ResponseCache: 64, StaleClientTimeout: 20 * time.Millisecond})
	w := r.NewWorker(false).(*Worker)
	var staleChans []chan []byte
	for id := range uint16(2) {
		m := query("expired.example.tld.", dns.TypeA, true, true)
		m.Id = id + 1
		ch, resp := pending(t, w, m, client)
		if resp != nil {
			t.Fatalf("query %d answered now: %x", id, resp)
		}
		staleChans = append(staleChans, ch)
	}
	noData, resp := pending(t, w, query("nothing.example.tld.", dns.TypeA, true, true), client2)
	if resp != nil {
		t.Fatalf("answered now: %x", resp)
	}
	for i, ch := range staleChans {
		m := wait(t, ch)
		code, _, ok := edeOf(m)
		if m.Id != uint16(i+1) || m.Rcode != dns.RcodeSuccess || !m.RecursionAvailable || len(m.Answer) != 1 ||
			m.Answer[0].Header().Ttl != 30 || m.Answer[0].(*dns.A).A.String() != "192.0.2.30" || !ok || code != dns.ExtendedErrorCodeStaleAnswer {
			t.Errorf("query %d: want the stale answer, TTL 30, EDE 3:\n%v", i, m)
		}
	}
	// nothing.example.tld.'s timer fired (it is no longer armed) and
	// found nothing: its client still waits.
	nothing := question{"nothing.example.tld.", dns.TypeA}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		r.mesh.mu.Lock()
		armed := r.mesh.flights[nothing].timer != nil
		r.mesh.mu.Unlock()
		if !armed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the client response timer never fired")
		}
	}
	if n, waiting := r.InFlight(); n != 2 || waiting != 1 {
		t.Errorf("resolutions %d, waiting %d; want 2 (both go on), 1", n, waiting)
	}
	select {
	case b := <-noData:
		t.Errorf("no stale data, answered before the resolution: %x", b)
	default:
	}
	close(f.gate)
	if m := wait(t, noData); len(m.Answer) != 1 || m.Answer[0].(*dns.A).A.String() != "192.0.2.1" {
		t.Errorf("after the resolution: %v", m)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if n, _ := r.InFlight(); n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("resolutions never ended")
		}
	}
	// A resolution mails its response after it has left the mesh (and
	// InFlight): the query below is a hit only once both are in w's box.
	mailedN(t, w, 2)
	for i, ch := range staleChans {
		select {
		case b := <-ch:
			t.Errorf("query %d answered twice: %x", i, b)
		default:
		}
	}
	if n := f.count("expired.example.tld."); n != 1 {
		t.Errorf("%d resolutions of expired.example.tld., want 1", n)
	}
	// The resolution went on and its response was mailed: a hit, fresh.
	m, deferred := exchange(t, w, query("expired.example.tld.", dns.TypeA, true, true), client, false)
	if _, _, ok := edeOf(m); deferred || ok || len(m.Answer) != 1 || m.Answer[0].Header().Ttl != 60 || m.Answer[0].(*dns.A).A.String() != "192.0.2.1" {
		t.Errorf("after the resolution: deferred %v, want the fresh answer from the response cache:\n%v", deferred, m)
	}
	hitAllocsNothing(t, w, "expired.example.tld.")
}

// TestClientResponseTimerOff: without the timer a client waits for the
// resolution, stale data or not, and the cache is not looked at.
func TestClientResponseTimerOff(t *testing.T) {
	f := &fakeResolver{gate: make(chan struct{})}
	r := newRecursor(t, f, Options{})
	ch, resp := pending(t, r.NewWorker(false), query("expired.example.tld.", dns.TypeA, true, true), client)
	if resp != nil {
		t.Fatalf("answered now: %x", resp)
	}
	close(f.gate)
	if m := wait(t, ch); len(m.Answer) != 1 || m.Answer[0].(*dns.A).A.String() != "192.0.2.1" {
		t.Errorf("%v", m)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.staleLookup != 0 {
		t.Errorf("%d stale lookups with the timer off", f.staleLookup)
	}
}

// TestValidated: a resolution's validation state on the wire. AD on
// Secure data to a client that set DO or AD (RFC 4035 §3.2.3, RFC 6840
// §5.7), never on Insecure; Bogus data refused (SERVFAIL, the EDE saying
// why, RFC 8914) unless the client set CD (RFC 4035 §3.2.2). Each query
// asked twice: the second is a response-cache hit, which must not carry
// another client's flags.
func TestValidated(t *testing.T) {
	r := newRecursor(t, &fakeResolver{}, Options{ResponseCache: 64})
	w := r.NewWorker(false).(*Worker)
	ask := func(name string, do, ad, cd bool) *dns.Msg {
		m := query(name, dns.TypeA, true, true)
		m.IsEdns0().SetDo(do)
		m.AuthenticatedData, m.CheckingDisabled = ad, cd
		return m
	}
	for _, tc := range []struct {
		name       string
		m          *dns.Msg
		rcode      int
		ad         bool
		answers    int
		ede        uint16
		edePresent bool
	}{
		{"secure, DO: AD", ask("secure.tld.", true, false, false), dns.RcodeSuccess, true, 1, 0, false},
		{"secure, AD: AD", ask("secure.tld.", false, true, false), dns.RcodeSuccess, true, 1, 0, false},
		{"secure, neither: no AD", ask("secure.tld.", false, false, false), dns.RcodeSuccess, false, 1, 0, false},
		{"insecure, DO: no AD", ask("insecure.tld.", true, false, false), dns.RcodeSuccess, false, 1, 0, false},
		// RFC 9276 §3.2: insecure for NSEC3 iterations says so.
		{"insecure by NSEC3 iterations: EDE 27", ask("iterations.tld.", true, false, false), dns.RcodeNameError, false, 0, wire.EDEUnsupportedNSEC3Iterations, true},
		{"bogus: SERVFAIL with the EDE", ask("bogus.tld.", true, false, false), dns.RcodeServerFailure, false, 0, dns.ExtendedErrorCodeSignatureExpired, true},
		{"bogus, CD: the data", ask("bogus.tld.", true, false, true), dns.RcodeSuccess, false, 1, 0, false},
		{"bogus again without CD: SERVFAIL", ask("bogus.tld.", false, false, false), dns.RcodeServerFailure, false, 0, dns.ExtendedErrorCodeSignatureExpired, true},
	} {
		for round := range 2 {
			m := tc.m.Copy()
			m.Id = uint16(round + 1)
			resp, deferred := exchange(t, w, m, client, false)
			if resp == nil {
				t.Fatalf("%s: no answer", tc.name)
			}
			if deferred && resp.Rcode == dns.RcodeSuccess {
				if round == 1 {
					t.Errorf("%s: second query not a response-cache hit", tc.name)
				}
				// Its response is mailed to the response cache.
				mailed(t, w)
			}
			code, _, ok := edeOf(resp)
			if resp.Rcode != tc.rcode || resp.AuthenticatedData != tc.ad || len(resp.Answer) != tc.answers || ok != tc.edePresent || code != tc.ede {
				t.Errorf("%s (round %d): rcode %s AD %v answers %d EDE %d %v, want %s %v %d %d %v", tc.name, round, dns.RcodeToString[resp.Rcode], resp.AuthenticatedData,
					len(resp.Answer), code, ok, dns.RcodeToString[tc.rcode], tc.ad, tc.answers, tc.ede, tc.edePresent)
			}
		}
	}
}

// TestTCPResponseCache: TCP workers have a response cache too: the
// second TCP query of a question is answered at once, whole (a large
// response, over what UDP takes), without a second resolution, with the
// query's ID; UDP workers' caches are apart.
func TestTCPResponseCache(t *testing.T) {
	f := &fakeResolver{}
	r := newRecursor(t, f, Options{ResponseCache: 64})
	w := r.NewWorker(true).(*Worker)
	ask := func(id uint16) (*dns.Msg, bool) {
		t.Helper()
		m := query("big.example.tld.", dns.TypeA, true, false)
		m.Id = id
		return exchange(t, w, m, client, true)
	}
	if resp, deferred := ask(1); !deferred || len(resp.Answer) != 40 {
		t.Fatalf("first query: deferred %v, %v", deferred, resp)
	}
	mailed(t, w)
	resp, deferred := ask(2)
	if deferred || resp.Id != 2 || resp.Truncated || len(resp.Answer) != 40 {
		t.Errorf("second query: deferred %v, ID %d, TC %v, %d answers", deferred, resp.Id, resp.Truncated, len(resp.Answer))
	}
	f.mu.Lock()
	calls := f.calls["big.example.tld."]
	f.mu.Unlock()
	if calls != 1 {
		t.Errorf("%d resolutions, want 1", calls)
	}
	if _, deferred := exchange(t, r.NewWorker(false), query("big.example.tld.", dns.TypeA, true, false), client, false); !deferred {
		t.Errorf("a UDP worker answered from the TCP workers' cache")
	}
}

// TestTCPCacheRecycled: the server keeps TCP workers in a sync.Pool,
// which lets them go at a GC; the response cache of one let go goes to
// the next TCP worker made instead of with it.
func TestTCPCacheRecycled(t *testing.T) {
	r := newRecursor(t, &fakeResolver{}, Options{ResponseCache: 64})
	rc := r.NewWorker(true).(*Worker).rc
	// The worker is unreachable now; its cleanup runs after a GC.
	for i := 0; ; i++ {
		runtime.GC()
		r.spareMu.Lock()
		n := len(r.spareTCP)
		r.spareMu.Unlock()
		if n == 1 {
			break
		}
		if i == 1000 {
			t.Fatal("the cache of a TCP worker let go was not kept")
		}
		time.Sleep(time.Millisecond)
	}
	w := r.NewWorker(true).(*Worker)
	if w.rc != rc {
		t.Errorf("a new TCP worker got another cache than the one kept")
	}
	if got := r.NewWorker(true).(*Worker).rc; got == rc {
		t.Errorf("two TCP workers share a cache")
	}
	runtime.KeepAlive(w)
}

// stepResolver is a fakeResolver whose resolutions each wait for a
// value on step.
type stepResolver struct {
	fakeResolver
	step chan struct{}
}

func (s *stepResolver) Resolve(ctx context.Context, name string, qtype uint16) (*resolve.Result, error) {
	select {
	case <-s.step:
	case <-ctx.Done():
	}
	return s.fakeResolver.Resolve(ctx, name, qtype)
}

// freeFlight waits until m's resolutions have ended and their flights
// are free for reuse, and returns the one free flight.
func freeFlight(t *testing.T, m *mesh) *flight {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		m.mu.Lock()
		n, free := len(m.flights), m.free
		m.mu.Unlock()
		if n == 0 && len(free) == 1 {
			return free[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d flights in flight, %d free; want 0, 1", n, len(free))
		}
	}
}

// TestMailOutlivesFlight: the mail a resolution posts stays whole when
// its flight is reused before the worker takes it: the next resolution
// (another worker's query, so that the first worker takes no mail
// meanwhile) builds its query copies and responses in the same flight's
// buffers.
func TestMailOutlivesFlight(t *testing.T) {
	r := newRecursor(t, &fakeResolver{}, Options{ResponseCache: 64})
	w, other := r.NewWorker(false).(*Worker), r.NewWorker(false).(*Worker)
	// Names of one length: the second's copies land where the first's
	// were.
	first, second := "a.example.tld.", "b.example.tld."
	if m, deferred := exchange(t, w, query(first, dns.TypeA, true, true), client, false); !deferred || len(m.Answer) != 1 {
		t.Fatalf("%s: deferred %v, %v", first, deferred, m)
	}
	f := freeFlight(t, r.mesh)
	if m, deferred := exchange(t, other, query(second, dns.TypeA, true, true), client, false); !deferred || len(m.Answer) != 1 {
		t.Fatalf("%s: deferred %v, %v", second, deferred, m)
	}
	if freeFlight(t, r.mesh) != f {
		t.Fatal("the second resolution did not reuse the first's flight")
	}
	mailed(t, w)
	m, deferred := exchange(t, w, query(first, dns.TypeA, true, true), client, false)
	if deferred || len(m.Answer) != 1 || m.Question[0].Name != first || m.Answer[0].Header().Name != first {
		t.Errorf("%s again: deferred %v, want a hit with its own answer:\n%v", first, deferred, m)
	}
}

// TestTimerOfEndedUse: a client response timer armed for a flight's
// earlier use, firing after the flight is reused for the same question
// (its Stop came too late), leaves the new use alone: its timer stays
// the one armed for it, and its waiter waits for its resolution.
func TestTimerOfEndedUse(t *testing.T) {
	res := &stepResolver{step: make(chan struct{})}
	r := newRecursor(t, res, Options{StaleClientTimeout: time.Hour})
	m := r.mesh
	var sends, releases atomic.Int32
	deferReply := func() replier { return countingReply{&sends, &releases} }
	q := question{"expired.example.tld.", dns.TypeA}
	pkt, _ := query(q.name, q.qtype, true, false).Pack()
	if got := m.join(asked{[]byte(q.name), q.qtype}, pkt, 512, false, false, client, mailTo{}, deferReply); got != deferred {
		t.Fatalf("first use: %v", got)
	}
	m.mu.Lock()
	f, gen := m.flights[q], m.flights[q].gen
	m.mu.Unlock()
	res.step <- struct{}{}
	if freeFlight(t, m) != f {
		t.Fatal("the flight is not free after its resolution")
	}
	if got := m.join(asked{[]byte(q.name), q.qtype}, pkt, 512, false, false, client, mailTo{}, deferReply); got != deferred {
		t.Fatalf("second use: %v", got)
	}
	m.mu.Lock()
	reused, timer := m.flights[q] == f, f.timer
	m.mu.Unlock()
	if !reused || timer == nil {
		t.Fatalf("second use: flight reused %v, timer %v", reused, timer)
	}
	m.clientTimeout(q, f, gen)
	m.mu.Lock()
	same := f.timer == timer
	m.mu.Unlock()
	if !same {
		t.Error("the earlier use's timer replaced the timer of the flight's new use")
	}
	res.step <- struct{}{}
	freeFlight(t, m)
	if sends.Load() != 2 || releases.Load() != 2 {
		t.Errorf("%d sent, %d released; want 2, 2", sends.Load(), releases.Load())
	}
}
