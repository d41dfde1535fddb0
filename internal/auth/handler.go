package auth

import "github.com/tern-dns/tern/internal/server"

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

// Answer answers req's query into out (capacity BufferSize), as
// Responder.Answer does.
func (w *Worker) Answer(req *server.Request, out []byte) []byte {
	w.scr.req = req
	return w.r.Answer(&w.scr, req.Packet, out, w.tcp)
}

// AnswerBatch answers reqs[i] into outs[i] (capacity BufferSize each) and
// stores the responses back into outs. Where it pays (Scratch.AheadPays:
// answers that need the zones, or a response cache larger than the CPU's
// fast caches), the batch is started together and advanced in steps
// before any is answered, so that the memory each answer reads (the
// cache's entry, or the zone lookup's chain) loads for all of them at
// once (Ahead). Only for UDP workers.
func (w *Worker) AnswerBatch(reqs []server.Request, outs [][]byte) {
	r, s := w.r, &w.scr
	if len(reqs) < 2 || w.tcp || !s.AheadPays() {
		for i := range reqs {
			s.req = &reqs[i]
			outs[i] = r.Answer(s, reqs[i].Packet, outs[i], w.tcp)
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
	}
}

// CacheSize is how many responses w's response cache holds at most; 0
// without one.
func (w *Worker) CacheSize() int { return w.scr.CacheSize() }
