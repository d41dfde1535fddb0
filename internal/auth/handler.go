package auth

import (
	"log/slog"
	"time"

	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/wire"
)

// Worker answers queries from a Responder for one goroutine of a server:
// it owns the Scratch and, over UDP, the response cache and the batch's
// Aheads, and decides per batch whether answering ahead pays. It is not
// safe for concurrent use. Its methods make it a server.Worker and a
// server.Batcher.
type Worker struct {
	r   *Responder
	tcp bool
	scr Scratch
	// ahead holds a batch's started queries; grown to the largest batch
	// seen, once.
	ahead []Ahead
	// aheadBatches counts the batches answered ahead, for tests.
	aheadBatches int
	// m counts the answers (CountIn); nil: not counted.
	m *metrics.Shard
	// qlog logs one answer in qevery (LogQueries); qleft answers to go
	// until the next. nil: no query log.
	qlog          *slog.Logger
	qevery, qleft int
}

// NewWorker returns a Worker answering over UDP, or with TCP's size limit
// when tcp is set. A UDP worker keeps a response cache of cacheSize
// responses (rounded up to a power of two, see NewCache); 0 means none.
// TCP answers are never cached.
func (r *Responder) NewWorker(tcp bool, cacheSize int) *Worker {
	w := &Worker{r: r, tcp: tcp}
	if !tcp && cacheSize > 0 {
		w.scr.UseCache(NewCache(cacheSize))
	}
	return w
}

// CountIn makes w count its answers in m (a Shard of the auth server,
// this worker's alone); nil: not counted (the resolver's Worker for its
// local zones counts its answers itself).
func (w *Worker) CountIn(m *metrics.Shard) { w.m = m }

// Answer answers req's query into out (capacity BufferSize), as
// Responder.Answer does.
func (w *Worker) Answer(req *server.Request, out []byte) []byte {
	w.scr.req = req
	resp := w.r.Answer(&w.scr, req.Packet, out, w.tcp)
	w.observe(req, resp)
	if m := w.m; m != nil {
		m.Flush()
	}
	return resp
}

// observe counts resp, the answer to req, for the metrics and the query
// log, each when configured (a nil check each when not). It runs
// right after the answer, while w.scr still holds req's question.
//
// The metrics' count of an answer is written out here, not in a
// function of its own: a call per answer was a fifth of what counting
// cost (BenchmarkWorkerBatch under callgrind).
func (w *Worker) observe(req *server.Request, resp []byte) {
	if m := w.m; m != nil {
		if resp != nil {
			// An answer, by its QTYPE, RCODE, size and zone; one in
			// metrics.SampleEvery by name and client, for the status
			// page.
			m.Answered(w.tcp, w.scr.q.QType, resp)
			m.FromZone(w.scr.zone)
			if m.Sampled() {
				m.Sample(w.scr.q.Name(), req.Remote().Addr())
			}
		} else {
			w.countDrop(req)
		}
	}
	if w.qlog != nil {
		w.logQuery(req, resp)
	}
}

// countDrop counts a query given no answer: what is not a query (or
// did not fit the buffer) as a malformed drop. A transfer's deferred
// answer is not counted here.
func (w *Worker) countDrop(req *server.Request) {
	if len(req.Packet) < wire.HeaderLen || req.Packet[2]&0x80 != 0 {
		w.m.Dropped(metrics.DropMalformed)
	}
}

// AnswerBatch answers reqs[i] into outs[i] (capacity BufferSize each) and
// stores the responses back into outs. Where it pays (Scratch.AheadPays:
// answers that need the zones, or a response cache larger than the CPU's
// fast caches), the batch is started together and advanced in steps
// before any is answered, so that the memory each answer reads (the
// cache's entry, or the zone lookup's chain) loads for all of them at
// once (Ahead). Only for UDP workers.
func (w *Worker) AnswerBatch(reqs []server.Request, outs [][]byte) {
	m := w.m
	if m == nil {
		w.answerBatch(reqs, outs)
		return
	}
	// The clock is read once per batch: each answer counts the batch's
	// average time.
	start := time.Now()
	w.answerBatch(reqs, outs)
	m.Observe(time.Since(start), len(reqs))
	m.Flush()
}

// answerBatch is AnswerBatch without the batch's timing.
func (w *Worker) answerBatch(reqs []server.Request, outs [][]byte) {
	r, s := w.r, &w.scr
	if len(reqs) < 2 || w.tcp || !s.AheadPays() {
		for i := range reqs {
			s.req = &reqs[i]
			outs[i] = r.Answer(s, reqs[i].Packet, outs[i], w.tcp)
			w.observe(&reqs[i], outs[i])
		}
		return
	}
	if len(w.ahead) < len(reqs) {
		w.ahead = make([]Ahead, len(reqs))
	}
	ahead := w.ahead[:len(reqs)]
	w.aheadBatches++
	for i := range ahead {
		r.Start(s, &ahead[i], reqs[i].Packet)
	}
	for step := 0; step < Steps; step++ {
		for i := range ahead {
			r.Step(s, &ahead[i])
		}
	}
	for i := range ahead {
		s.req = &reqs[i]
		outs[i] = r.AnswerAhead(s, &ahead[i], reqs[i].Packet, outs[i])
		w.observe(&reqs[i], outs[i])
	}
}

// CacheSize is how many responses w's response cache holds at most; 0
// without one.
func (w *Worker) CacheSize() int { return w.scr.CacheSize() }

// Metrics is the Shard w counts in (CountIn); nil: none.
func (w *Worker) Metrics() *metrics.Shard { return w.m }
