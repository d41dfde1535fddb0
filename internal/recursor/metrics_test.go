package recursor

import (
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/metrics"
)

// TestMetrics: a query that waits on a resolution counts when its
// answer is sent, with the resolution; the next one is a response-cache
// hit, counted on the worker with the miss before it; a hit allocates
// nothing with the counters on.
func TestMetrics(t *testing.T) {
	set := metrics.New()
	r := newRecursor(t, &fakeResolver{}, Options{ResponseCache: 64, Metrics: set})
	w := r.NewWorker(false).(*Worker)
	if resp, deferred := exchange(t, w, query("m.example.tld.", dns.TypeA, true, true), client, false); !deferred || resp.Rcode != dns.RcodeSuccess {
		t.Fatalf("first query: deferred %v, %v", deferred, resp)
	}
	mailed(t, w)
	if resp, deferred := exchange(t, w, query("m.example.tld.", dns.TypeA, true, true), client, false); deferred || resp.Rcode != dns.RcodeSuccess {
		t.Fatalf("second query: deferred %v, %v", deferred, resp)
	}
	snap := set.Snapshot()
	if snap.Queries["resolver"] != 2 || snap.Rcodes["NOERROR"] != 2 || snap.Qtypes["A"] != 2 {
		t.Errorf("queries %v, rcodes %v, qtypes %v; want 2 A NOERROR", snap.Queries, snap.Rcodes, snap.Qtypes)
	}
	if snap.CacheHits != 1 || snap.CacheMisses != 1 || snap.Resolutions != 1 {
		t.Errorf("cache hits %d, misses %d, resolutions %d; want 1, 1, 1", snap.CacheHits, snap.CacheMisses, snap.Resolutions)
	}
	hitAllocsNothing(t, w, "m.example.tld.")
}
