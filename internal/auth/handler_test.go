package auth

import (
	"bytes"
	"testing"

	"github.com/tern-dns/tern/internal/server"
)

// TestWorkerBatch: a Worker's AnswerBatch answers every datagram of a
// batch byte for byte as Answer does, and goes ahead (Start, Step,
// AnswerAhead) exactly when the batch has several datagrams over UDP and
// Scratch.AheadPays says so (always without a response cache; with one,
// while it is cold). It allocates nothing once its Aheads are grown.
func TestWorkerBatch(t *testing.T) {
	r := cacheResponder(t)
	pkts := cacheQueries(t)
	outs := make([][]byte, len(pkts))
	bufs := make([][]byte, len(pkts))
	for i := range bufs {
		bufs[i] = make([]byte, 0, BufferSize)
	}
	reqs := make([]server.Request, len(pkts))
	batch := func(w *Worker, pkts [][]byte) {
		for i := range pkts {
			outs[i] = bufs[i][:0]
			reqs[i].Packet = pkts[i]
		}
		w.AnswerBatch(reqs[:len(pkts)], outs[:len(pkts)])
	}
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
