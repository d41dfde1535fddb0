package dnstap

import (
	"runtime"
	"time"

	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/server"
)

// Handler returns h with every answer its workers send recorded into t
// as kind. Put outermost, around DNS cookies and RRL, it records what
// is sent: the answer with its COOKIE option, a BADCOOKIE or FORMERR the
// cookie layer made, an RRL slip's truncated answer. Auth (the
// authoritative listeners): an AUTH_QUERY and an AUTH_RESPONSE message
// per answer; a query given no answer (an RRL drop, a transfer answered
// later) is not recorded. Client (the resolver's listeners): every
// query as a CLIENT_QUERY, with its answer's CLIENT_RESPONSE when it is
// answered at once; an answer sent later (after a resolution: the query
// was deferred) is recorded as sent, through the Reply
// (server.Amender), as a CLIENT_RESPONSE alone into t's shared ring.
// Each worker has a ring of its own, given back to t when the worker is
// no longer used.
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
	tap   *Tap
	ring  *Ring
	kind  Kind
	tcp   bool
	// m is the inner Worker's metrics Shard (Metrics), where a record
	// the ring has no room for is counted; nil: not counted.
	m *metrics.Shard
}

// NewWorker returns inner with its answers recorded into t as kind
// (Auth or Client; see Handler), over TCP when tcp is set.
func NewWorker(inner server.Worker, t *Tap, kind Kind, tcp bool) *Worker {
	w := &Worker{inner: inner, tap: t, ring: t.NewRing(), kind: kind, tcp: tcp}
	w.batch, _ = inner.(server.Batcher)
	if m, ok := inner.(interface{ Metrics() *metrics.Shard }); ok {
		w.m = m.Metrics()
	}
	runtime.AddCleanup(w, t.Release, w.ring)
	return w
}

// Answer answers req through the inner Worker and records the answer.
func (w *Worker) Answer(req *server.Request, out []byte) []byte {
	var resp []byte
	if w.kind == Client {
		req.PushAmender(w)
		resp = w.inner.Answer(req, out)
		req.PopAmender()
	} else {
		resp = w.inner.Answer(req, out)
	}
	if w.recorded(resp) && !w.ring.Record(w.kind, req.Remote(), req.Local(), w.tcp, req.Packet, resp, time.Now().UnixNano()) {
		w.dropped(1)
	}
	return resp
}

// AnswerBatch answers the batch through the inner Worker and records
// its answers, reading the clock once.
func (w *Worker) AnswerBatch(reqs []server.Request, outs [][]byte) {
	client := w.kind == Client
	if client {
		for i := range reqs {
			reqs[i].PushAmender(w)
		}
	}
	if w.batch != nil {
		w.batch.AnswerBatch(reqs, outs)
	} else {
		for i := range reqs {
			outs[i] = w.inner.Answer(&reqs[i], outs[i])
		}
	}
	if client {
		for i := range reqs {
			reqs[i].PopAmender()
		}
	}
	now := time.Now().UnixNano()
	lost := 0
	for i := range reqs {
		if w.recorded(outs[i]) && !w.ring.Record(w.kind, reqs[i].Remote(), reqs[i].Local(), w.tcp, reqs[i].Packet, outs[i], now) {
			lost++
		}
	}
	if lost > 0 {
		w.dropped(lost)
	}
}

// recorded reports whether a query answered resp (nil: no answer now)
// is recorded: every query to the resolver's listeners, the answered
// ones to the authoritative listeners'.
func (w *Worker) recorded(resp []byte) bool { return resp != nil || w.kind == Client }

// Deferred returns what records the deferred answer to req as it is
// sent, a CLIENT_RESPONSE alone (its CLIENT_QUERY was recorded when the
// query came) in the Tap's shared ring: the goroutine that sends it
// (the resolution's) has no ring of its own. It makes w a
// server.Amender, pushed only by a Client Worker; the Reply calls the
// function after the inner layers' (the cookie option added).
func (w *Worker) Deferred(req *server.Request) func(msg []byte) []byte {
	t, remote, local, tcp := w.tap, req.Remote(), req.Local(), w.tcp
	return func(msg []byte) []byte {
		t.RecordShared(ClientResponse, remote, local, tcp, nil, msg, time.Now().UnixNano())
		return msg
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
