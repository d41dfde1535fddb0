package recursor

import (
	"bytes"
	"context"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/server"
)

// instantResolver answers every question at once with one A record,
// built anew per call as a resolution's result is: what the serving
// side costs around a resolution, without it.
type instantResolver struct{}

func (instantResolver) Resolve(_ context.Context, name string, _ uint16) (*resolve.Result, error) {
	return &resolve.Result{Answer: []dns.RR{&dns.A{
		Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60},
		A:   []byte{192, 0, 2, 1},
	}}}, nil
}

func (r instantResolver) Refresh(ctx context.Context, name string, qtype uint16) (*resolve.Result, error) {
	return r.Resolve(ctx, name, qtype)
}

func (instantResolver) Stale(string, uint16) (*resolve.Result, bool) { return nil, false }

// BenchmarkDeferred is the serving side of a cache miss, per query:
// a UDP worker's batch of 32 queries for new names (parse, response
// cache miss, join the mesh, defer), their resolutions (instant)
// handed to the mesh's goroutines, each response built, sent through
// its Reply and mailed back, and stored in the worker's response cache
// when it next looks there. The resolution itself costs nothing here.
func BenchmarkDeferred(b *testing.B) { benchmarkDeferred(b, false) }

// BenchmarkDeferredJoined is BenchmarkDeferred with the 32 queries of a
// batch asking one question (a new one per batch): one resolution, the
// other 31 queries joining it.
func BenchmarkDeferredJoined(b *testing.B) { benchmarkDeferred(b, true) }

func benchmarkDeferred(b *testing.B, same bool) {
	batch, n := deferredBatch(b, instantResolver{}, same)
	batch() // goroutines started, caches warm
	b.ResetTimer()
	for range b.N {
		batch()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/query")
}

// deferredBatch returns BenchmarkDeferred's batch, over res, and its
// number of queries: each call asks them all of a worker and returns
// once every one is answered. Each query asks a new question, or with
// same all of a batch's ask one (new per batch), whose resolution waits
// until all have joined it (else its response could be in the cache
// before the last ones look there).
func deferredBatch(tb testing.TB, res Resolver, same bool) (batch func(), n int) {
	var gate chan struct{}
	if same {
		gate = make(chan struct{})
		res = gatedResolver{res, gate}
	}
	r := newRecursor(tb, res, Options{ResponseCache: 32768, MaxPerClient: 1024})
	w := r.NewWorker(false).(*Worker)
	n = 32
	pkts := make([][]byte, n)
	for i := range pkts {
		// q00000000.example.tld.: the digits at 13..20 change per query.
		pkts[i], _ = query("q00000000.example.tld.", dns.TypeA, true, true).Pack()
	}
	var wg sync.WaitGroup
	deliver := func([]byte) { wg.Done() }
	reqs := make([]server.Request, n)
	outs := make([][]byte, n)
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = make([]byte, 0, server.BufferSize)
	}
	seq := 0
	return func() {
		for i := range reqs {
			if !same || i == 0 {
				seq++
			}
			p := pkts[i]
			for j, v := 20, seq; j >= 13; j, v = j-1, v/10 {
				p[j] = byte('0' + v%10)
			}
			reqs[i] = *server.NewRequest(p, client, false, deliver)
			outs[i] = bufs[i][:0]
		}
		wg.Add(n)
		w.AnswerBatch(reqs, outs)
		for i := range outs {
			if outs[i] != nil {
				tb.Fatalf("query %d answered at once", i)
			}
		}
		if gate != nil {
			gate <- struct{}{}
		}
		wg.Wait()
	}, n
}

// gatedResolver is a Resolver whose resolutions each wait for a value
// on gate.
type gatedResolver struct {
	Resolver
	gate chan struct{}
}

func (g gatedResolver) Resolve(ctx context.Context, name string, qtype uint16) (*resolve.Result, error) {
	<-g.gate
	return g.Resolver.Resolve(ctx, name, qtype)
}

// fixedResolver answers every question with the same result, made once:
// a resolution that allocates nothing, for counting what the serving
// side allocates around it.
type fixedResolver struct{ res *resolve.Result }

func (f fixedResolver) Resolve(context.Context, string, uint16) (*resolve.Result, error) {
	return f.res, nil
}

func (f fixedResolver) Refresh(context.Context, string, uint16) (*resolve.Result, error) {
	return f.res, nil
}

func (fixedResolver) Stale(string, uint16) (*resolve.Result, bool) { return nil, false }

// TestDeferredAllocs: the serving side of a cache miss (BenchmarkDeferred's
// batch, around resolutions that allocate nothing) allocates at most
// what is listed per query. The flight, its waiters, the query's copy,
// the response, the mail and the Reply (released to the server) are
// reused; a query that joins a resolution in flight allocates nothing.
func TestDeferredAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts mean nothing under -race; make test runs it without")
	}
	// The question's name as the resolver takes it (questionOf), each
	// query's question being new.
	const want = 1
	res, _ := instantResolver{}.Resolve(context.Background(), "q.example.tld.", dns.TypeA)
	batch, n := deferredBatch(t, fixedResolver{res}, false)
	batch()
	if got := testing.AllocsPerRun(20, batch) / float64(n); got > want {
		t.Errorf("%.2f allocations per deferred query, want at most %d", got, want)
	}
	// One question per batch: its name, once.
	batch, _ = deferredBatch(t, fixedResolver{res}, true)
	batch()
	if got := testing.AllocsPerRun(20, batch); got > 1 {
		t.Errorf("%.2f allocations per batch of %d queries asking one question, want 1", got, n)
	}
}

// TestQuickResponse: quickResponse writes the very bytes the general
// way (packedResponse) writes, for every kind of result and query
// shape, and gives way to it for what does not fit.
func TestQuickResponse(t *testing.T) {
	f := &fakeResolver{}
	r := newRecursor(t, f, Options{NSID: []byte("rec1")})
	quick := 0
	var reused []byte
	for _, prefix := range []string{"", "Fail.", "stale.", "nx.", "signed.", "signednx.", "secure.", "insecure.", "iterations.", "bogus.", "big."} {
		name := prefix + "Www.Example.tld."
		for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
			res, err := f.Resolve(context.Background(), strings.ToLower(name), qtype)
			for shape := range 32 {
				m := query(name, qtype, true, shape&1 != 0)
				if opt := m.IsEdns0(); opt != nil {
					if shape&2 == 0 {
						opt.SetDo(false)
					}
					if shape&4 != 0 {
						opt.Option = append(opt.Option, &dns.EDNS0_NSID{Code: dns.EDNS0NSID})
					}
				}
				m.CheckingDisabled = shape&8 != 0
				m.AuthenticatedData = shape&16 != 0
				pkt, perr := m.Pack()
				if perr != nil {
					t.Fatal(perr)
				}
				for _, limit := range []int{512, 1232, 65535} {
					want := r.packedResponse(pkt, limit, res, err)
					got, ok := r.quickResponse(nil, pkt, limit, res, err)
					if !ok {
						// Fair when the general way truncated or
						// compressed it: it did not fit as it was.
						var w dns.Msg
						if w.Unpack(want) != nil {
							t.Fatalf("%s %d shape %d limit %d: %x does not unpack", name, qtype, shape, limit, want)
						}
						if !w.Truncated && w.Len() == len(want) {
							t.Errorf("%s %d shape %d limit %d: quick gave way for a response that fits", name, qtype, shape, limit)
						}
						continue
					}
					quick++
					if !bytes.Equal(got, want) {
						t.Errorf("%s %d shape %d limit %d:\n got %x\nwant %x", name, qtype, shape, limit, got, want)
					}
					// The same bytes in the buffer a flight keeps,
					// holding an earlier response, and in buffers
					// of every size around this one's.
					checkInBuffers(t, r, pkt, limit, res, err, want, reused)
					reused = got
				}
			}
		}
	}
	if quick == 0 {
		t.Fatal("quickResponse never answered")
	}
}

// checkInBuffers: quickResponse writes want into dst buffers of every
// capacity from too small (it writes in a new one) to ample (in place,
// the sections packed where they go), whatever they held, and into
// reused's array (the previous response's, as a flight reuses it).
func checkInBuffers(t *testing.T, r *Recursor, pkt []byte, limit int, res *resolve.Result, err error, want, reused []byte) {
	t.Helper()
	check := func(dst []byte) {
		t.Helper()
		got, ok := r.quickResponse(dst, pkt, limit, res, err)
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("into a buffer of %d bytes (ok %v):\n got %x\nwant %x", cap(dst), ok, got, want)
		}
		// In place when there is room for it and the byte more
		// PackBuffer asks for.
		if cap(dst) > len(want) && cap(dst) >= minResponseBuf && &got[0] != &dst[:1][0] {
			t.Fatalf("into a buffer of %d bytes, %d written: not in place", cap(dst), len(want))
		}
	}
	for c := max(minResponseBuf, len(want)-16); c <= len(want)+16; c++ {
		dst := bytes.Repeat([]byte{0xA5}, c)
		check(dst[:0])
		check(dst[:c/2])
	}
	check(make([]byte, 0, 1))
	if reused != nil {
		check(reused[:0])
	}
}

// TestQuickResponseGarbage: quickResponse into a flight's buffer
// allocates nothing, however many GC cycles came before. It once packed
// in a 64 KiB buffer from a sync.Pool, which a P allocated anew when it
// had built no response for two cycles (the pool's victim cache
// survives one).
func TestQuickResponseGarbage(t *testing.T) {
	r := newRecursor(t, instantResolver{}, Options{})
	res, _ := instantResolver{}.Resolve(context.Background(), "q.example.tld.", dns.TypeA)
	pkt, _ := query("q.example.tld.", dns.TypeA, true, true).Pack()
	out, ok := r.quickResponse(nil, pkt, 1232, res, nil)
	if !ok {
		t.Fatal("quickResponse gave way")
	}
	// The fewest bytes of any run: TotalAlloc counts the whole
	// process's, and another goroutine (the runtime's, the race
	// detector's) may allocate meanwhile now and then.
	fewest := uint64(math.MaxUint64)
	var before, after runtime.MemStats
	for range 10 {
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&before)
		out, _ = r.quickResponse(out[:0], pkt, 1232, res, nil)
		runtime.ReadMemStats(&after)
		fewest = min(fewest, after.TotalAlloc-before.TotalAlloc)
	}
	if fewest != 0 {
		t.Errorf("%d bytes allocated per response after two GC cycles, want none (65,800 with the pool)", fewest)
	}
}
