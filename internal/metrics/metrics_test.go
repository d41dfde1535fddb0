package metrics

import (
	"errors"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tern-dns/tern/internal/cache"
)

// gather returns the value of every sample of s's metrics, by
// "name{label=value,...}" (labels in the order Prometheus sorts them);
// histograms give their _count, _sum and cumulative buckets
// (_le=bound).
func gather(t *testing.T, s *Set) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var l []string
			for _, lp := range m.GetLabel() {
				l = append(l, lp.GetName()+"="+lp.GetValue())
			}
			key := mf.GetName() + "{" + strings.Join(l, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[key+"_count"] = float64(m.GetHistogram().GetSampleCount())
				out[key+"_sum"] = m.GetHistogram().GetSampleSum()
				for _, b := range m.GetHistogram().GetBucket() {
					out[key+"_le="+strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)] = float64(b.GetCumulativeCount())
				}
			}
		}
	}
	return out
}

// resp is a response header with rcode, padded to n bytes.
func resp(rcode byte, n int) []byte {
	b := make([]byte, n)
	b[2], b[3] = 0x84, rcode
	return b
}

// TestShardsSummed: what workers count is seen by a scrape once their
// batch is flushed, summed over the workers, by transport, QTYPE, RCODE,
// size and zone; nothing before the flush.
func TestShardsSummed(t *testing.T) {
	s := New()
	a, b := s.Shard(Auth), s.Shard(Auth)
	r := s.Shard(Resolver)
	zone := s.Zone("example.test.")
	if again := s.Zone("example.test."); again != zone || zone == 0 {
		t.Fatalf("zone index %d, then %d", zone, again)
	}
	a.Answered(false, 1, resp(0, 100))
	a.FromZone(zone)
	a.Answered(false, 1, resp(0, 600))
	a.FromZone(zone)
	b.Answered(true, 28, resp(3, 50))
	b.FromZone(zone)
	b.Answered(false, 65280, resp(5, 40)) // an unnamed type, no zone
	b.Dropped(DropMalformed)
	r.Answered(false, 1, resp(2, 30))
	r.CacheLookup(true)
	r.CacheLookup(false)
	r.CacheLookup(false)
	a.Observe(4*time.Microsecond, 2)
	if got := gather(t, s)[`tern_queries_total{qtype=A,rcode=NOERROR,server=auth,transport=udp}`]; got != 0 {
		t.Fatalf("before Flush: %v queries, want 0", got)
	}
	a.Flush()
	b.Flush()
	r.Flush()
	got := gather(t, s)
	for k, want := range map[string]float64{
		`tern_queries_total{qtype=A,rcode=NOERROR,server=auth,transport=udp}`:      2,
		`tern_queries_total{qtype=AAAA,rcode=NXDOMAIN,server=auth,transport=tcp}`:  1,
		`tern_queries_total{qtype=other,rcode=REFUSED,server=auth,transport=udp}`:  1,
		`tern_queries_total{qtype=A,rcode=SERVFAIL,server=resolver,transport=udp}`: 1,
		`tern_response_size_bytes{server=auth,transport=udp}_count`:                3,
		`tern_response_size_bytes{server=auth,transport=udp}_sum`:                  740,
		`tern_response_size_bytes{server=auth,transport=tcp}_sum`:                  50,
		`tern_zone_queries_total{zone=example.test.}`:                              3,
		`tern_dropped_queries_total{reason=malformed,server=auth}`:                 1,
		`tern_resolver_response_cache_total{result=hit}`:                           1,
		`tern_resolver_response_cache_total{result=miss}`:                          2,
		`tern_answer_duration_seconds{server=auth}_count`:                          2,
		`tern_answer_duration_seconds{server=auth}_sum`:                            4e-6,
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	snap := s.Snapshot()
	if snap.Queries["auth"] != 4 || snap.Queries["resolver"] != 1 || snap.Rcodes["NOERROR"] != 2 || snap.CacheHits != 1 || snap.CacheMisses != 2 {
		t.Errorf("snapshot %+v", snap)
	}
}

// TestZonesGrow: a worker counting zones beyond what it published
// before keeps the counts published earlier.
func TestZonesGrow(t *testing.T) {
	s := New()
	m := s.Shard(Auth)
	first := s.Zone("a.test.")
	m.Answered(false, 1, resp(0, 40))
	m.FromZone(first)
	m.Flush()
	var last uint32
	for i := 0; i < 100; i++ {
		last = s.Zone("z" + string(rune('a'+i%26)) + strings.Repeat("x", i) + ".test.")
	}
	m.Answered(false, 1, resp(0, 40))
	m.FromZone(last)
	m.Answered(false, 1, resp(0, 40))
	m.FromZone(first)
	m.Flush()
	got := gather(t, s)
	if got[`tern_zone_queries_total{zone=a.test.}`] != 2 {
		t.Errorf("a.test.: %v queries, want 2", got[`tern_zone_queries_total{zone=a.test.}`])
	}
	if n := len(s.zoneNames); n != 102 {
		t.Errorf("%d zone names, want 102 (with the empty one)", n)
	}
}

// TestAttachReuses: the Shard of a worker that was collected goes to
// the next worker, its counts kept.
func TestAttachReuses(t *testing.T) {
	s := New()
	type worker struct{ _ [64]byte }
	w := &worker{}
	m := Attach(s, w, Auth)
	m.Answered(true, 1, resp(0, 40))
	m.Flush()
	w = nil
	var again *Shard
	for i := 0; i < 20 && again != m; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		s.mu.Lock()
		if f := s.free[Auth]; len(f) > 0 {
			again = f[0]
		}
		s.mu.Unlock()
	}
	if again != m {
		t.Skip("the worker was not collected in time (a test of the runtime's cleanups, not of the counts)")
	}
	if next := s.Shard(Auth); next != m {
		t.Errorf("a new Shard, not the released one")
	}
	if len(s.shards) != 1 {
		t.Errorf("%d shards, want 1", len(s.shards))
	}
	if got := s.Snapshot().Queries["auth"]; got != 1 {
		t.Errorf("%d queries after the release, want 1", got)
	}
}

// TestZoneEvents: loads, refreshes and transfers counted by result, the
// last one per zone kept for the status page.
func TestZoneEvents(t *testing.T) {
	s := New()
	s.SetZones(func() []ZoneState {
		return []ZoneState{{Origin: "b.test.", Role: "secondary", Serial: 7, Serving: true}, {Origin: "a.test.", Role: "primary", Serial: 3}}
	})
	s.ZoneEvent("a.test.", Load, nil, time.Millisecond)
	s.ZoneEvent("a.test.", Load, errors.New("a.zone:3: bad"), time.Millisecond)
	s.ZoneEvent("b.test.", Transfer, nil, time.Second)
	got := gather(t, s)
	for k, want := range map[string]float64{
		`tern_zone_events_total{event=load,result=ok}`:         1,
		`tern_zone_events_total{event=load,result=failed}`:     1,
		`tern_zone_events_total{event=transfer,result=ok}`:     1,
		`tern_zone_serial{role=secondary,zone=b.test.}`:        7,
		`tern_zone_serving{role=primary,zone=a.test.}`:         0,
		`tern_zone_event_duration_seconds{event=load}_count`:   2,
		`tern_zone_event_duration_seconds{event=transfer}_sum`: 1,
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	snap := s.Snapshot()
	if len(snap.Zones) != 2 || snap.Zones[0].Origin != "a.test." || snap.Zones[0].LastError != "a.zone:3: bad" || snap.Zones[1].LastEvent != "transfer" {
		t.Errorf("zones %+v", snap.Zones)
	}
}

// TestNilSet: with metrics off every call counts nothing and panics
// not.
func TestNilSet(t *testing.T) {
	var s *Set
	if s.Shard(Auth) != nil || s.Zone("a.") != 0 {
		t.Error("a nil Set gave a Shard or a zone index")
	}
	s.ZoneEvent("a.", Load, nil, 0)
	s.Resolved(0, cache.Secure)
	s.DeferredAnswer(false, 1, resp(0, 20))
	s.Upstream(time.Millisecond, false)
	s.SetZones(nil)
	s.SetResolverCache(nil)
}

// TestShardAllocs: counting and flushing allocate nothing once a
// worker's zone counters are grown.
func TestShardAllocs(t *testing.T) {
	s := New()
	m := s.Shard(Auth)
	z := s.Zone("a.test.")
	r := resp(0, 80)
	m.Answered(false, 1, r)
	m.FromZone(z)
	m.Flush()
	if n := testing.AllocsPerRun(100, func() {
		m.Answered(false, 1, r)
		m.FromZone(z)
		m.Answered(true, 28, r)
		m.FromZone(z)
		m.Dropped(DropMalformed)
		m.Observe(time.Microsecond, 2)
		m.Flush()
	}); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// BenchmarkAnswered is the cost a query's count adds: three counters
// and its zone's run, flushed once per batch of 32.
func BenchmarkAnswered(b *testing.B) {
	s := New()
	m := s.Shard(Auth)
	z := s.Zone("a.test.")
	r := resp(0, 80)
	for i := 0; i < b.N; i++ {
		m.Answered(false, 1, r)
		m.FromZone(z)
		if i%32 == 31 {
			m.Flush()
		}
	}
}

// TestSampler: one query in SampleEvery is sampled (the first one
// included); the samples reach the sampler through Flush and a Tick; the
// busiest names and clients come first, a frequent one is kept however
// many one-off names pass through the bounded table, and decay halves
// the counts.
func TestSampler(t *testing.T) {
	s := New()
	m := s.Shard(Auth)
	busy := []byte("\x04busy\x04test\x00")
	one := netip.MustParseAddr("192.0.2.1")
	sampled := 0
	for i := 0; i < 100*SampleEvery; i++ {
		if !m.Sampled() {
			continue
		}
		if i%SampleEvery != 0 {
			t.Fatalf("query %d sampled", i)
		}
		sampled++
		if sampled%2 == 0 {
			m.Sample(busy, one)
		} else {
			// A one-off name and client each time.
			label := "n" + strconv.Itoa(i)
			name := append(append([]byte{byte(len(label))}, label...), "\x04test\x00"...)
			m.Sample(name, netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}))
		}
		// A batch of 8 sampled queries, then its Flush; the sampler
		// takes the buffer every other batch (the other's samples
		// wait in the worker's second buffer).
		if sampled%8 == 0 {
			m.Flush()
			if sampled%16 == 0 {
				s.sampler.collect(s.shards)
			}
		}
	}
	m.Flush()
	s.sampler.collect(s.shards)
	m.Flush()
	s.sampler.collect(s.shards)
	if sampled != 100 || s.sampler.total != 100 {
		t.Errorf("%d sampled of %d, %d collected, want 100", sampled, 100*SampleEvery, s.sampler.total)
	}
	names, clients := s.sampler.top(3)
	if len(names) == 0 || names[0].Key != "busy.test." || len(clients) == 0 || clients[0].Key != "192.0.2.1" {
		t.Fatalf("top names %v, clients %v", names, clients)
	}
	before := names[0].Count
	s.sampler.decay()
	if names, _ = s.sampler.top(1); names[0].Count != before/2 {
		t.Errorf("after decay %d, want %d", names[0].Count, before/2)
	}
	if s.sampler.nclient > topSize || s.sampler.nnames > topSize {
		t.Errorf("%d names, %d clients kept, at most %d", s.sampler.nnames, s.sampler.nclient, topSize)
	}
}

// TestSampleFull: a worker whose sampler is not collecting keeps two
// buffers of samples at most and drops the rest; the sampler then gets
// the first buffer, and the second at the next Flush.
func TestSampleFull(t *testing.T) {
	s := New()
	m := s.Shard(Auth)
	name := []byte("\x01a\x00")
	for range 10 * sampleBufLen {
		m.Sample(name, netip.IPv6Loopback())
	}
	m.Flush()
	for range 10 * sampleBufLen {
		m.Sample(name, netip.IPv6Loopback())
	}
	m.Flush() // not handed over: the sampler has not taken the first
	s.sampler.collect(s.shards)
	if s.sampler.total != sampleBufLen {
		t.Fatalf("%d collected, want %d", s.sampler.total, sampleBufLen)
	}
	m.Flush()
	s.sampler.collect(s.shards)
	if s.sampler.total != 2*sampleBufLen {
		t.Fatalf("%d collected, want %d", s.sampler.total, 2*sampleBufLen)
	}
}

// TestSampleAllocs: counting, sampling and flushing a query allocate
// nothing.
func TestSampleAllocs(t *testing.T) {
	s := New()
	m := s.Shard(Auth)
	name := []byte("\x04busy\x04test\x00")
	client := netip.MustParseAddr("2001:db8::1")
	resp := make([]byte, 100)
	n := 0
	allocs := testing.AllocsPerRun(10*SampleEvery*sampleBufLen, func() {
		m.Answered(false, 1, resp)
		if m.Sampled() {
			m.Sample(name, client)
		}
		if n++; n%4 == 0 {
			m.Flush()
		}
		if n%(SampleEvery*sampleBufLen) == 0 {
			s.sampler.collect(s.shards)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per query", allocs)
	}
	if s.sampler.total == 0 {
		t.Error("nothing sampled")
	}
}

// TestTick: each tick after the first adds a point of the queries (and
// the non-NOERROR ones) per second since the one before; the history
// keeps historyLen points, oldest first; Status gives them with the
// busiest names.
func TestTick(t *testing.T) {
	s := New()
	m := s.Shard(Auth)
	noerror, nxdomain := make([]byte, 12), make([]byte, 12)
	nxdomain[3] = 3
	start := time.Unix(1_000_000, 0)
	s.Tick(start)
	if got := s.history.rates(); len(got) != 0 {
		t.Fatalf("first tick: %v", got)
	}
	var all []RatePoint
	for i := 1; i <= historyLen+5; i++ {
		for range i % 7 {
			m.Answered(false, 1, noerror)
		}
		m.Answered(false, 1, nxdomain)
		if m.Sampled() {
			m.Sample([]byte("\x01x\x00"), netip.IPv4Unspecified())
		}
		m.Flush()
		// Every other tick is two seconds after the last.
		secs := 1 + i%2
		start = start.Add(time.Duration(secs) * time.Second)
		s.Tick(start)
		got := s.history.rates()
		if len(got) != min(i, historyLen) {
			t.Fatalf("tick %d: %d points", i, len(got))
		}
		want := RatePoint{T: start.UnixMilli(), QPS: round1(float64(i%7+1) / float64(secs)), Errors: round1(1 / float64(secs))}
		all = append(all, want)
		if !slices.Equal(got, all[len(all)-len(got):]) {
			t.Fatalf("tick %d: points %+v..., want %+v...", i, got[0], all[len(all)-len(got)])
		}
	}
	st := s.Status()
	if len(st.Rate) != historyLen || len(st.TopNames) != 1 || st.TopNames[0].Key != "x." || st.Resolver || st.SampleEvery != SampleEvery {
		t.Errorf("status: %d points, names %v, resolver %v", len(st.Rate), st.TopNames, st.Resolver)
	}
}

// TestStatusResolver: Status says a resolver runs once a resolver's
// worker counts, with its cache lookups.
func TestStatusResolver(t *testing.T) {
	s := New()
	s.Shard(Auth).Flush()
	if s.Status().Resolver {
		t.Fatal("resolver without one")
	}
	m := s.Shard(Resolver)
	m.CacheLookup(true)
	m.CacheLookup(true)
	m.CacheLookup(false)
	m.Flush()
	if st := s.Status(); !st.Resolver || st.CacheHits != 2 || st.CacheMisses != 1 {
		t.Errorf("resolver %v, hits %d, misses %d", st.Resolver, st.CacheHits, st.CacheMisses)
	}
}

// TestResolverCache: the resolver's caches' sizes, as SetResolverCache's
// function reports them at the moment of reading, are gauges and in the
// Snapshot; without one neither has them.
func TestResolverCache(t *testing.T) {
	s := New()
	if c := s.Snapshot().ResolverCache; c != nil {
		t.Errorf("without a resolver: Snapshot().ResolverCache = %+v", c)
	}
	for k := range gather(t, s) {
		if strings.HasPrefix(k, "tern_resolver_cache_") || strings.HasPrefix(k, "tern_resolver_response_cache_entries") || strings.HasPrefix(k, "tern_resolver_response_cache_bytes") {
			t.Errorf("%s without a resolver", k)
		}
	}
	n := int64(0)
	s.SetResolverCache(func() CacheSize {
		n++
		return CacheSize{RRsets: 10 * n, Negative: 2, Bytes: 3000, Responses: 7, ResponseBytes: 5000}
	})
	got := gather(t, s)
	for k, want := range map[string]float64{
		"tern_resolver_cache_rrsets{}":           10,
		"tern_resolver_cache_negative_entries{}": 2,
		"tern_resolver_cache_bytes{}":            3000,
		"tern_resolver_response_cache_entries{}": 7,
		"tern_resolver_response_cache_bytes{}":   5000,
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	if c := s.Snapshot().ResolverCache; c == nil || *c != (CacheSize{RRsets: 20, Negative: 2, Bytes: 3000, Responses: 7, ResponseBytes: 5000}) {
		t.Errorf("Snapshot().ResolverCache = %+v", c)
	}
}
