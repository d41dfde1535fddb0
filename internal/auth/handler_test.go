package auth

import (
	"bytes"
	"maps"
	"path/filepath"
	"testing"

	"github.com/tern-dns/tern/internal/dnstap"
	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/zone"
)

// testBatch is a batch's requests and response buffers, for tests that
// answer batches of datagrams.
type testBatch struct {
	reqs       []server.Request
	outs, bufs [][]byte
}

func newTestBatch(n int) *testBatch {
	tb := &testBatch{reqs: make([]server.Request, n), outs: make([][]byte, n), bufs: make([][]byte, n)}
	for i := range tb.bufs {
		tb.bufs[i] = make([]byte, 0, BufferSize)
	}
	return tb
}

// answer has w answer pkts as one batch, the responses in tb.outs.
func (tb *testBatch) answer(w server.Batcher, pkts [][]byte) {
	for i := range pkts {
		tb.outs[i] = tb.bufs[i][:0]
		tb.reqs[i].Packet = pkts[i]
	}
	w.AnswerBatch(tb.reqs[:len(pkts)], tb.outs[:len(pkts)])
}

// TestWorkerBatch: a Worker's AnswerBatch answers every datagram of a
// batch byte for byte as Answer does, and goes ahead (Start, Step,
// AnswerAhead) exactly when the batch has several datagrams over UDP and
// Scratch.AheadPays says so (always without a response cache; with one,
// while it is cold). It allocates nothing once its Aheads are grown.
func TestWorkerBatch(t *testing.T) {
	r := cacheResponder(t)
	pkts := cacheQueries(t)
	tb := newTestBatch(len(pkts))
	outs := tb.outs
	batch := tb.answer
	var plain Scratch
	want := make([]byte, 0, BufferSize)
	for _, tc := range []struct {
		name  string
		tcp   bool
		cache int
		n     int // datagrams per batch
		// ahead and plain say whether batches went ahead, and one by one.
		ahead, plain bool
	}{
		{"no cache", false, 0, 16, true, false},
		{"cache", false, DefaultCacheSize, 16, true, true},
		{"single datagrams", false, 0, 1, false, true},
		{"tcp", true, 0, 16, false, true},
	} {
		w := r.NewWorker(tc.tcp, tc.cache)
		var ahead, plainBatches int
		for round := 0; round < 6; round++ {
			for lo := 0; lo < len(pkts); lo += tc.n {
				b := pkts[lo:min(lo+tc.n, len(pkts))]
				pays := len(b) > 1 && !tc.tcp && w.scr.AheadPays()
				before := w.aheadBatches
				batch(w, b)
				if went := w.aheadBatches > before; went != pays {
					t.Fatalf("%s, round %d, batch at %d: went ahead %v, want %v", tc.name, round, lo, went, pays)
				} else if went {
					ahead++
				} else {
					plainBatches++
				}
				for i, pkt := range b {
					if exp := r.Answer(&plain, pkt, want, tc.tcp); !bytes.Equal(outs[i], exp) {
						t.Fatalf("%s, round %d: query % x\nbatch  % x\nAnswer % x", tc.name, round, pkt, outs[i], exp)
					}
				}
			}
		}
		if (ahead > 0) != tc.ahead || (plainBatches > 0) != tc.plain {
			t.Errorf("%s: %d batches ahead, %d one by one", tc.name, ahead, plainBatches)
		}
		if n := testing.AllocsPerRun(20, func() { batch(w, pkts) }); n != 0 {
			t.Errorf("%s: %v allocations per batch, want 0", tc.name, n)
		}
	}
}

// TestWorkerCounts: a Worker counting its answers (CountIn) counts each
// one once, over the batched, the ahead and the TCP path, and still
// allocates nothing per batch.
func TestWorkerCounts(t *testing.T) {
	set := metrics.New()
	r := New(cacheResponder(t).Zones(), Options{Metrics: set})
	pkts := cacheQueries(t)
	tb := newTestBatch(len(pkts))
	outs := tb.outs
	batch := func(w *Worker) { tb.answer(w, pkts) }
	answered := func() (n uint64) {
		for i := range outs {
			if outs[i] != nil {
				n++
			}
		}
		return n
	}
	var want uint64
	for _, tc := range []struct {
		name  string
		tcp   bool
		cache int
	}{{"no cache", false, 0}, {"cache", false, DefaultCacheSize}, {"tcp", true, 0}} {
		w := r.NewWorker(tc.tcp, tc.cache)
		w.CountIn(set.Shard(metrics.Auth))
		for round := 0; round < 4; round++ {
			batch(w)
			want += answered()
		}
		if got := set.Snapshot().Queries["auth"]; got != want {
			t.Errorf("%s: %d queries counted, want %d", tc.name, got, want)
		}
		if n := testing.AllocsPerRun(20, func() { batch(w) }); n != 0 {
			t.Errorf("%s: %v allocations per batch, want 0", tc.name, n)
		}
		want += 21 * answered()
	}
	if got := set.Snapshot().Queries["auth"]; got != want {
		t.Errorf("%d queries counted, want %d", got, want)
	}
}

// TestCachedCountsZone: an answer from the response cache counts under
// its zone as the answer built for it did (the zone is stored with the
// response): the per-zone counts with and without a cache agree.
func TestCachedCountsZone(t *testing.T) {
	pkts := cacheQueries(t)
	zones := cacheResponder(t).Zones()
	counts := func(cacheSize int) map[string]uint64 {
		set := metrics.New()
		r := New(zones, Options{Metrics: set})
		set.SetZones(func() (out []metrics.ZoneState) {
			for _, z := range zones.Zones() {
				out = append(out, metrics.ZoneState{Origin: zone.NameString(z.Origin)})
			}
			return out
		})
		w := r.NewWorker(false, cacheSize)
		w.CountIn(set.Shard(metrics.Auth))
		out := make([]byte, 0, BufferSize)
		for round := 0; round < 4; round++ {
			for _, pkt := range pkts {
				w.Answer(&server.Request{Packet: pkt}, out)
			}
		}
		if cacheSize > 0 && w.scr.cache.bytes == 0 {
			t.Fatal("nothing cached")
		}
		got := map[string]uint64{}
		for _, z := range set.Snapshot().Zones {
			got[z.Origin] = z.Queries
		}
		return got
	}
	plain, cached := counts(0), counts(DefaultCacheSize)
	if len(plain) == 0 || !maps.Equal(plain, cached) {
		t.Errorf("per zone without a cache %v, with one %v", plain, cached)
	}
	var n uint64
	for _, v := range plain {
		n += v
	}
	if n == 0 {
		t.Error("no query counted under a zone")
	}
}

// BenchmarkWorkerBatch is a UDP worker's batch of 32 datagrams (the
// cacheQueries mix) answered from its response cache (hits) or from the
// zones (no cache), with the answers counted (metrics) or not: the A/B
// of what counting costs per answer.
func BenchmarkWorkerBatch(b *testing.B) {
	pkts := cacheQueries(b)[:32]
	for _, bc := range []struct {
		name    string
		cache   int
		counted bool
		tap     bool
	}{
		{"hits", DefaultCacheSize, false, false}, {"hits-metrics", DefaultCacheSize, true, false},
		{"hits-dnstap", DefaultCacheSize, false, true},
		{"zones", 0, false, false}, {"zones-metrics", 0, true, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var set *metrics.Set
			if bc.counted {
				set = metrics.New()
			}
			r := New(cacheResponder(b).Zones(), Options{Metrics: set})
			aw := r.NewWorker(false, bc.cache)
			aw.CountIn(set.Shard(metrics.Auth))
			var w server.Batcher = aw
			if bc.tap {
				// The writer drains on its own goroutine: the
				// worker's CPU (cpu-ns/answer) leaves it out.
				tap, err := dnstap.Open(dnstap.Options{File: filepath.Join(b.TempDir(), "d.fstrm")})
				if err != nil {
					b.Fatal(err)
				}
				defer tap.Close()
				w = dnstap.NewWorker(aw, tap, dnstap.Auth, false)
			}
			tb := newTestBatch(len(pkts))
			dnstest.CPUPerAnswer(b, len(pkts), func() { tb.answer(w, pkts) })
		})
	}
}
