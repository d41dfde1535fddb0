package dnstap

import (
	"runtime"
	"time"

	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/server"
)

// Handler returns h with every answer its workers send recorded into t
// as kind (Auth: an AUTH_QUERY and an AUTH_RESPONSE message). Put
// outermost, around DNS cookies and RRL, it records what is sent: the
// answer with its COOKIE option, a BADCOOKIE or FORMERR the cookie
// layer made, an RRL slip's truncated answer; a query given no answer
// (an RRL drop, a transfer answered later) is not recorded. Each
// worker has a ring of its own, given back to t when the worker is no
// longer used.
func Handler(h server.Handler, t *Tap, kind Kind) server.Handler {
	return server.HandlerFunc(func(tcp bool) server.Worker {
		return NewWorker(h.NewWorker(tcp), t, kind, tcp)
	})
}

// Worker records the answers of a server.Worker into a Tap. It answers
// batches (server.Batcher) whether or not its inner Worker does.
type Worker struct {
	inner server.Worker
	batch server.Batcher
	ring  *Ring
	kind  Kind
	tcp   bool
	// m is the inner Worker's metrics Shard (Metrics), where a record
	// the ring has no room for is counted; nil: not counted.
	m *metrics.Shard
}

// NewWorker returns inner with its answers recorded into t as kind,
// over TCP when tcp is set.
func NewWorker(inner server.Worker, t *Tap, kind Kind, tcp bool) *Worker {
	w := &Worker{inner: inner, ring: t.NewRing(), kind: kind, tcp: tcp}
	w.batch, _ = inner.(server.Batcher)
	if m, ok := inner.(interface{ Metrics() *metrics.Shard }); ok {
		w.m = m.Metrics()
	}
	runtime.AddCleanup(w, t.Release, w.ring)
	return w
}

// Answer answers req through the inner Worker and records the answer.
func (w *Worker) Answer(req *server.Request, out []byte) []byte {
	resp := w.inner.Answer(req, out)
	if resp != nil && !w.ring.Record(w.kind, req.Remote(), req.Local(), w.tcp, req.Packet, resp, time.Now().UnixNano()) {
		w.dropped(1)
	}
	return resp
}

// AnswerBatch answers the batch through the inner Worker and records
// its answers, reading the clock once.
func (w *Worker) AnswerBatch(reqs []server.Request, outs [][]byte) {
	if w.batch != nil {
		w.batch.AnswerBatch(reqs, outs)
	} else {
		for i := range reqs {
			outs[i] = w.inner.Answer(&reqs[i], outs[i])
		}
	}
	now := time.Now().UnixNano()
	lost := 0
	for i := range reqs {
		if outs[i] != nil && !w.ring.Record(w.kind, reqs[i].Remote(), reqs[i].Local(), w.tcp, reqs[i].Packet, outs[i], now) {
			lost++
		}
	}
	if lost > 0 {
		w.dropped(lost)
	}
}

// dropped counts n records the ring had no room for.
func (w *Worker) dropped(n int) {
	if w.m == nil {
		return
	}
	for range n {
		w.m.Dropped(metrics.DropDnstap)
	}
	w.m.Flush()
}

// Metrics is the inner Worker's metrics Shard (nil: none), for a layer
// put around this one.
func (w *Worker) Metrics() *metrics.Shard { return w.m }
