package resolve

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestNSNameFailureRemembered: a delegation to NS names that do not
// resolve (the non-responsive delegation attacks: here their zone's
// server never answers) costs their resolutions once; the next client
// queries under it fail without resolving them again while their failure
// is remembered (5 s, then 10), then try again.
func TestNSNameFailureRemembered(t *testing.T) {
	c := newClock()
	f := world(t)
	var ns []string
	for i := range 5 {
		ns = append(ns, fmt.Sprintf("example.com. 3600 IN NS ns%d.example.net.", i))
	}
	f.answers[key{gtld, "example.com.", 0}] = referral(t, ns)
	var steps []Step
	r := New(f, Options{Hints: []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr(root)}}}, Now: c.now,
		Trace: func(s Step) { steps = append(steps, s) }})
	for i, tc := range []struct {
		after   time.Duration
		nsAsked bool
	}{{0, true}, {time.Second, false}, {4*time.Second - time.Millisecond, false}, {time.Millisecond, true}, {9 * time.Second, false}, {time.Second, true}} {
		c.advance(tc.after)
		steps = nil
		// A new name each time: the client's question is not the one
		// whose failure is remembered.
		_, err := r.Resolve(context.Background(), fmt.Sprintf("q%d.example.com.", i), dns.TypeA)
		if err == nil {
			t.Fatal("resolved")
		}
		n := 0
		for _, s := range steps {
			if s.Depth > 0 {
				n++
			}
		}
		if (n > 0) != tc.nsAsked {
			t.Errorf("resolution %d: %d queries for the NS names; want some: %v\n%v", i, n, tc.nsAsked, err)
		}
		if !tc.nsAsked && !strings.Contains(err.Error(), "its failure is remembered") {
			t.Errorf("resolution %d: error %v does not say why the NS names were not resolved", i, err)
		}
	}
}

// inflight is an Exchanger over a fake's canned answers that records the
// most queries outstanding at once, in all and per resolution (told by a
// context value), each query taking a little while.
type inflight struct {
	f        *fake
	mu       sync.Mutex
	now, max int
	per      map[any]int
	maxPer   int
}

type resolutionKey struct{}

func (x *inflight) Exchange(ctx context.Context, server netip.AddrPort, q dns.Question) (*dns.Msg, error) {
	id := ctx.Value(resolutionKey{})
	x.mu.Lock()
	x.now++
	x.per[id]++
	x.max, x.maxPer = max(x.max, x.now), max(x.maxPer, x.per[id])
	m, err := x.f.Exchange(ctx, server, q)
	x.mu.Unlock()
	time.Sleep(time.Millisecond)
	x.mu.Lock()
	x.now--
	x.per[id]--
	x.mu.Unlock()
	return m, err
}

// TestOneOutstandingPerResolution: a resolution has at most one upstream
// query outstanding at a time (DNSBomb-class pulses need many per client
// query), whatever it follows (glueless delegations, CNAMEs across
// zones); concurrent resolutions overlap.
func TestOneOutstandingPerResolution(t *testing.T) {
	f := world(t)
	threeServers(t, f)
	f.answers[key{exCom, "a.example.com.", dns.TypeA}] = answer(t, "a.example.com. 300 IN CNAME www.example.net.")
	f.answers[key{gtld, "example.org.", 0}] = referral(t, []string{"example.org. 3600 IN NS ns.example.net."})
	f.answers[key{exNet, "www.example.org.", dns.TypeA}] = answer(t, "www.example.org. 300 IN A 192.0.2.3")
	f.answers[key{root, "org.", 0}] = referral(t, []string{"org. 172800 IN NS a.gtld.net."}, "a.gtld.net. 172800 IN A "+gtld)
	x := &inflight{f: f, per: map[any]int{}}
	r := New(x, Options{Hints: []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr(root)}}}, FailureTTL: -1})
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.WithValue(context.Background(), resolutionKey{}, i)
			name := []string{"www.example.com.", "a.example.com.", "www.example.org."}[i%3]
			if _, err := r.Resolve(ctx, name, dns.TypeA); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	t.Logf("most queries outstanding: %d in all, %d per resolution", x.max, x.maxPer)
	if x.maxPer != 1 {
		t.Errorf("%d queries outstanding at once for one resolution, want 1", x.maxPer)
	}
}
