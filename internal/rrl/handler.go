package rrl

import (
	"encoding/binary"

	"github.com/tern-dns/tern/internal/cookie"
	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/server"
)

// Metered is a Worker that counts in a metrics Shard of its own
// (auth.Worker, recursor.Worker): the limiter counts its drops and
// slips there, as drop reason "rrl".
type Metered interface {
	Metrics() *metrics.Shard
}

// Handler returns h with its UDP workers' responses limited by cfg: each
// UDP Worker of h is wrapped in a Worker with a Limiter of its own; TCP
// workers are h's own (TCP is never limited).
func Handler(h server.Handler, cfg Config) server.Handler {
	return server.HandlerFunc(func(tcp bool) server.Worker {
		inner := h.NewWorker(tcp)
		if tcp {
			return inner
		}
		return NewWorker(inner, New(cfg))
	})
}

// Worker limits the responses of a UDP Worker. It answers batches
// (server.Batcher) whether or not its inner Worker does.
type Worker struct {
	inner server.Worker
	batch server.Batcher
	l     *Limiter
	m     *metrics.Shard
	// cookies is the inner Worker when it answers DNS cookies: a
	// client with a valid server cookie is not limited (its address is
	// proven).
	cookies *cookie.Worker
	// outs keeps a batch's response buffers, into which a slipped
	// response is written (the inner Worker's response may be a buffer
	// of its own, not to be written).
	outs [][]byte
}

// NewWorker returns inner limited by l.
func NewWorker(inner server.Worker, l *Limiter) *Worker {
	w := &Worker{inner: inner, l: l}
	w.batch, _ = inner.(server.Batcher)
	w.cookies, _ = inner.(*cookie.Worker)
	if m, ok := inner.(Metered); ok {
		w.m = m.Metrics()
	}
	return w
}

// Metrics is the inner Worker's metrics Shard (nil: none), for a layer
// put around this one (dnstap's).
func (w *Worker) Metrics() *metrics.Shard { return w.m }

// Answer answers req through the inner Worker and limits the response.
func (w *Worker) Answer(req *server.Request, out []byte) []byte {
	resp := w.inner.Answer(req, out)
	resp, counted := w.limit(req, resp, out, w.l.Now(), 0)
	if counted && w.m != nil {
		w.m.Flush()
	}
	return resp
}

// AnswerBatch answers the batch through the inner Worker and limits its
// responses, reading the clock once.
func (w *Worker) AnswerBatch(reqs []server.Request, outs [][]byte) {
	w.outs = append(w.outs[:0], outs...)
	if w.batch != nil {
		w.batch.AnswerBatch(reqs, outs)
	} else {
		for i := range reqs {
			outs[i] = w.inner.Answer(&reqs[i], outs[i])
		}
	}
	now := w.l.Now()
	counted := false
	for i := range reqs {
		var c bool
		outs[i], c = w.limit(&reqs[i], outs[i], w.outs[i], now, i)
		counted = counted || c
	}
	if counted && w.m != nil {
		w.m.Flush()
	}
}

// limit accounts resp, the response to req (the i-th of its batch), and
// returns what to send: resp, nil, or its truncated form written into
// out; counted says a drop or slip was counted in the metrics.
func (w *Worker) limit(req *server.Request, resp, out []byte, now int64, i int) ([]byte, bool) {
	if resp == nil || req.TCP || w.cookies != nil && w.cookies.ValidCookie(i) {
		return resp, false
	}
	addr := req.Remote().Addr()
	if w.l.Exempt(addr) {
		return resp, false
	}
	k, name, qtype, qend := Classify(resp)
	key, ok := w.l.Key(addr, k, qtype, resp, name)
	if !ok {
		key, _ = w.l.Key(addr, Error, 0, resp, 0)
	}
	v := w.l.Account(key, now)
	if v == Pass {
		return resp, false
	}
	if w.m != nil {
		w.m.Dropped(metrics.DropRRL)
	}
	if v == Drop {
		return nil, true
	}
	return Truncate(resp, qend, out), true
}

// Truncate writes into out (capacity at least qend) the slip form of
// resp, whose question ends at qend: its header and question, TC set,
// no records.
func Truncate(resp []byte, qend int, out []byte) []byte {
	if qend < 12 || qend > len(resp) {
		return nil
	}
	out = append(out[:0], resp[:qend]...)
	out[2] |= 0x02 // TC
	binary.BigEndian.PutUint16(out[6:], 0)
	binary.BigEndian.PutUint16(out[8:], 0)
	binary.BigEndian.PutUint16(out[10:], 0)
	return out
}
