package resolve

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
)

// TestFailureCache: a failed resolution fails again from memory, without
// upstream queries, for 5 s, then 10, 20, ... at most 5 minutes while it
// keeps failing (RFC 9520 §3.2); a success forgets it; another question
// is not concerned.
func TestFailureCache(t *testing.T) {
	c := newClock()
	f := world(t)
	delete(f.answers, key{exCom, "www.example.com.", dns.TypeA}) // never answers
	r := New(f, Options{Hints: []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr(root)}}}, Now: c.now})
	resolve := func(name string) (*Result, *Error, int) {
		t.Helper()
		before := len(f.asked)
		res, err := r.Resolve(context.Background(), name, dns.TypeA)
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("error %v", err)
		}
		return res, e, len(f.asked) - before
	}
	res, e, n := resolve("www.example.com.")
	if e == nil || e.Cached || n == 0 {
		t.Fatalf("first resolution: error %v, %d queries", e, n)
	}
	first := e.Reason
	// The hold doubles at each failure in a row: 5s, 10s, ..., 5 min.
	hold := 5 * time.Second
	for i := range 9 {
		res, e, n = resolve("WWW.example.com.")
		if e == nil || !e.Cached || e.Reason != first || n != 0 || res.Rcode != dns.RcodeServerFailure || res.Queries != 0 {
			t.Fatalf("failure %d, within its hold: error %+v, %d queries, rcode %d", i, e, n, res.Rcode)
		}
		if code, text := e.EDE(); code != wire.EDECachedError || !strings.HasPrefix(text, "cached: www.example.com.: ") {
			t.Fatalf("EDE %d %q", code, text)
		}
		c.advance(hold - time.Millisecond)
		if _, e, n = resolve("www.example.com."); e == nil || !e.Cached || n != 0 {
			t.Fatalf("failure %d, 1ms before its hold of %v ends: error %v, %d queries", i, hold, e, n)
		}
		c.advance(time.Millisecond)
		if _, e, n = resolve("www.example.com."); e == nil || e.Cached || n == 0 {
			t.Fatalf("failure %d, at the end of its hold of %v: error %v, %d queries", i, hold, e, n)
		}
		hold = min(2*hold, 5*time.Minute)
	}
	if hold != 5*time.Minute {
		t.Fatalf("hold %v after 10 failures", hold)
	}
	// Another question asks upstream.
	if _, e, n := resolve("www.example.net."); e != nil || n == 0 {
		t.Fatalf("another name: error %v, %d queries", e, n)
	}
	// It answers again: once the hold is over, the success forgets the
	// failures, and the next failure is held 5 s again.
	f.answers[key{exCom, "www.example.com.", dns.TypeA}] = answer(t, "www.example.com. 300 IN A 192.0.2.1")
	c.advance(5 * time.Minute)
	if _, e, _ := resolve("www.example.com."); e != nil {
		t.Fatal(e)
	}
	delete(f.answers, key{exCom, "www.example.com.", dns.TypeA})
	c.advance(time.Hour) // the servers' backoff forgotten
	resolve("www.example.com.")
	c.advance(5 * time.Second)
	if _, e, n := resolve("www.example.com."); e == nil || e.Cached || n == 0 {
		t.Fatalf("after a success, a failure held longer than 5 s: error %v, %d queries", e, n)
	}
}

// TestFailureCacheCallerGone: a resolution the caller cancelled is not
// remembered as a failure; with FailureTTL negative nothing is.
func TestFailureCacheCallerGone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := New(blocking{}, Options{Limits: Limits{Timeout: 50 * time.Millisecond}})
	if _, err := r.Resolve(ctx, "www.example.com.", dns.TypeA); err == nil {
		t.Fatal("resolved")
	}
	if e := r.fails.get("www.example.com.", dns.TypeA, time.Now()); e != nil {
		t.Errorf("a cancelled resolution remembered: %v", e)
	}
	r.Resolve(context.Background(), "www.example.com.", dns.TypeA)
	if e := r.fails.get("www.example.com.", dns.TypeA, time.Now()); e == nil || e.Reason != Timeout {
		t.Errorf("a resolution out of time not remembered: %v", e)
	}
	r = New(blocking{}, Options{Limits: Limits{Timeout: 50 * time.Millisecond}, FailureTTL: -1})
	r.Resolve(context.Background(), "www.example.com.", dns.TypeA)
	if r.fails != nil {
		t.Error("failure cache with FailureTTL -1")
	}
}

// TestFailureCacheBounded: no more than maxFailures questions are kept.
func TestFailureCacheBounded(t *testing.T) {
	f := newFailures(0)
	now := time.Now()
	for i := range 3 * maxFailures {
		f.put(strings.Repeat("a", i%50)+".example.", uint16(i), &Error{Reason: Timeout}, now)
	}
	n := 0
	for i := range f.shards {
		n += len(f.shards[i].m)
	}
	if n > maxFailures {
		t.Errorf("%d failures kept, limit %d", n, maxFailures)
	}
}
