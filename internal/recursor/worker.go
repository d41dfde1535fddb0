package recursor

import (
	"encoding/binary"
	"log/slog"
	"slices"
	"time"
	"unsafe"
	"weak"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// Worker answers the queries of one goroutine of the resolver's
// listeners: it owns the parsed query, the builder of its refusals, the
// authoritative engine's Worker for local data, and the response cache
// and the mailbox through which resolutions hand it responses to store.
// It is not safe for concurrent use. Its Answer makes it a
// server.Worker.
type Worker struct {
	r    *Recursor
	tcp  bool
	q    wire.Query
	b    wire.Builder
	auth *auth.Worker
	// rc is the response cache and what goes with it (nil when
	// configured off); mq parses the queries of its mail, and spare
	// and spareBuf take the next mail in (store).
	rc       *respCache
	mq       wire.Query
	spare    []mail
	spareBuf []byte
	// text holds the name of the question being deferred (question).
	text []byte
	// now is the time of the batch being answered (AnswerBatch reads
	// the clock once per batch); zero outside one.
	now time.Time
	// m counts the answers; nil: not counted.
	m *metrics.Shard
	// qlog logs one answer in qevery (Recursor.LogQueries), qleft
	// queries to go until the next; qturn: the query being answered
	// is the one (a deferred one is logged when its answer is sent).
	// nil: no query log.
	qlog   *slog.Logger
	qevery int
	qleft  int
	qturn  bool
}

// respCache is a worker's response cache and what goes with it: the
// mailbox through which resolutions hand it the responses they built
// (stored by the worker's own goroutine, store), the set of local zones
// its responses were made beside (when a reload publishes another, the
// cache is emptied: a name resolved before may now be answered from
// local data), and the Recursor's flushes it was last emptied for. They
// are kept together so that a TCP worker's can outlive the worker
// (Recursor.tcpCache).
type respCache struct {
	cache   *cache.Responses
	box     *mailbox
	zones   *zone.Set
	flushed uint64
}

// newRespCache returns an empty response cache of the configured size,
// listed for ResponseCaches.
func (r *Recursor) newRespCache() *respCache {
	rc := &respCache{cache: cache.NewResponses(r.respCache), box: &mailbox{}}
	r.cachesMu.Lock()
	defer r.cachesMu.Unlock()
	// Drop the caches collected since (a TCP worker's the spares had
	// no room for), so that the list stays as long as those alive.
	r.caches = slices.DeleteFunc(r.caches, func(p weak.Pointer[respCache]) bool { return p.Value() == nil })
	r.caches = append(r.caches, weak.Make(rc))
	return rc
}

// ResponseCaches returns what the workers' response caches hold
// together: responses and bytes (cache.Responses.Held), for the metrics.
// Safe to call from any goroutine; it reads what each cache's owner
// published, not the caches.
func (r *Recursor) ResponseCaches() (entries int, bytes int64) {
	r.cachesMu.Lock()
	defer r.cachesMu.Unlock()
	for _, p := range r.caches {
		if rc := p.Value(); rc != nil {
			n, b := rc.cache.Held()
			entries += n
			bytes += b
		}
	}
	return entries, bytes
}

// Answer answers req into out (capacity server.BufferSize), or defers it
// until its question is resolved (see the package comment for the
// order of the decisions).
func (w *Worker) Answer(req *server.Request, out []byte) []byte {
	// A batch of one: req and out as slices of length 1 (no copy, no
	// allocation), so that answers are observed in one place.
	w.serve(unsafe.Slice(req, 1), unsafe.Slice(&out, 1))
	if m := w.m; m != nil {
		m.Flush()
	}
	return out
}

// AnswerBatch answers reqs[i] into outs[i] as Answer does, reading the
// clock once for the batch: read per query it was 28% of a cache hit's
// CPU in BenchmarkCacheHit's profile on this project's VMs. It makes a
// UDP Worker a server.Batcher.
func (w *Worker) AnswerBatch(reqs []server.Request, outs [][]byte) {
	w.now = w.r.now()
	m := w.m
	var start time.Time
	if m != nil {
		start = time.Now()
	}
	w.serve(reqs, outs)
	if m != nil {
		// Deferred queries count here only their share of the
		// worker's time; their answers count when sent (mesh).
		m.Observe(time.Since(start), len(reqs))
		m.Flush()
	}
	w.now = time.Time{}
}

// serve answers reqs[i] into outs[i] (nil: no answer now), with the
// query log when configured, and observes each answer: counted in w.m,
// with one query in metrics.SampleEvery kept by name and client for the
// status page, when configured (a nil check when not); dnstap records
// the answers as sent, around DNS cookies and RRL (dnstap.Handler).
// Answer and AnswerBatch both answer through it; the caller flushes
// w.m, after.
//
// The observing is written out in the loop, not in a function called
// per answer: such a call was a fifth of what counting cost
// (BenchmarkCountedHits under callgrind), and no function holding the
// hooks' calls is small enough for the compiler to inline.
func (w *Worker) serve(reqs []server.Request, outs [][]byte) {
	m := w.m
	for i := range reqs {
		req := &reqs[i]
		var resp []byte
		if w.qlog != nil {
			resp = w.answerLogged(req, outs[i])
		} else {
			resp = w.answer(req, outs[i])
		}
		outs[i] = resp
		if m != nil {
			if resp != nil {
				m.Answered(w.tcp, w.q.QType, resp)
			}
			if m.Sampled() {
				w.sample(req)
			}
		}
	}
}

// sample keeps req's name and client for the status page.
func (w *Worker) sample(req *server.Request) { w.m.Sample(w.q.Name(), req.Remote().Addr()) }

// clock is the time for the response cache: the batch's, else now.
func (w *Worker) clock() time.Time {
	if !w.now.IsZero() {
		return w.now
	}
	return w.r.now()
}

func (w *Worker) answer(req *server.Request, out []byte) []byte {
	pkt := req.Packet
	res, rcode := w.q.Parse(pkt)
	if res == wire.Drop {
		if w.m != nil {
			w.m.Dropped(metrics.DropMalformed)
		}
		return nil
	}
	q := &w.q
	// Unbound checks its access control first: a client that may not
	// recurse learns nothing else, not even that its query is malformed.
	if !w.r.allowed(req.Remote().Addr()) {
		return w.errorResponse(pkt, out, wire.RcodeRefused, false, wire.EDEProhibited)
	}
	if res == wire.Error {
		return w.errorResponse(pkt, out, rcode, true, 0)
	}
	switch {
	case q.QClass == wire.ClassCHAOS && w.auth != nil:
		// The server's identity (id.server., version.bind.), as the
		// authoritative listeners answer it.
		return w.local(req, out)
	case q.QClass != wire.ClassINET:
		return w.errorResponse(pkt, out, wire.RcodeRefused, true, 0)
	case q.QType == wire.TypeAXFR || q.QType == wire.TypeIXFR:
		// A resolver has no zone to transfer (Unbound refuses them).
		return w.errorResponse(pkt, out, wire.RcodeRefused, true, 0)
	case metaType(q.QType):
		// RFC 6895 §3.1: meta-types are not asked about (Unbound:
		// FORMERR).
		return w.errorResponse(pkt, out, wire.RcodeFormErr, true, 0)
	}
	rd := q.Flags&wire.FlagRD != 0
	limit := w.limit()
	if w.rc != nil && rd {
		// Before the local zones: the cache holds no answer from them
		// (only resolutions' responses are mailed to it), and a hit
		// then costs no zone lookup.
		resp := w.cached(pkt, limit, out)
		if w.m != nil {
			w.m.CacheLookup(resp != nil)
		}
		if resp != nil {
			return resp
		}
	}
	if w.auth != nil && w.inLocalZone() {
		if resp := w.local(req, out); resp != nil {
			return resp
		}
	}
	if !rd {
		return w.errorResponse(pkt, out, wire.RcodeRefused, true, wire.EDENotAuthoritative)
	}
	return w.resolve(req, out, limit)
}

// cached answers the query w.q holds from the response cache, after
// storing the mail; nil on a miss. A hit close to expiry is resolved
// again in the background, once (the mesh drops a prefetch of a
// question in flight), the fresh response coming back by mail.
func (w *Worker) cached(pkt []byte, limit int, out []byte) []byte {
	rc := w.rc
	if w.auth != nil {
		if set := w.r.auth.Zones(); set != rc.zones {
			rc.zones = set
			rc.cache.Clear()
		}
	}
	if f := w.r.flushes.Load(); f != rc.flushed {
		// A read of a word no query writes: a hit stays lock- and
		// write-free.
		rc.flushed = f
		rc.cache.Clear()
	}
	if rc.box.pending.Load() {
		w.store()
	}
	q := &w.q
	resp, refresh := rc.cache.Get(q, pkt, limit, w.clock(), out)
	if refresh {
		w.r.mesh.prefetch(w.question(), pkt, limit, w.mailTo())
	}
	return resp
}

// question is the question of the query w.q holds, as the mesh takes it:
// its name (lowercased: wire.Query's, well formed, so it unpacks) in
// presentation form in w.text, reused from query to query.
func (w *Worker) question() asked {
	w.text, _ = wire.AppendNameText(w.text[:0], w.q.Name())
	return asked{w.text, w.q.QType}
}

// mailTo is where the responses to this worker's questions go: its
// response cache's mailbox (none without a cache).
func (w *Worker) mailTo() mailTo {
	if w.rc == nil {
		return mailTo{}
	}
	return mailTo{w.rc.box, w.rc.zones}
}

// limit is the largest response to the query w.q holds that its client
// takes: over UDP 512 without EDNS, with it the client's size within
// 512 and ours (RFC 6891 §6.2.5); over TCP 65535.
func (w *Worker) limit() int {
	switch {
	case w.tcp:
		return 65535
	case !w.q.EDNS:
		return 512
	}
	return max(512, min(int(w.q.UDPSize), w.r.payload))
}

// store puts the responses resolutions mailed into the response cache,
// each as of the time it was built: a response that waited in the box
// longer than its TTL is stored expired, and never served. Each is
// stored as it comes, so that the next identical query hits: the
// resolution it took is the evidence that its question is asked (the
// authoritative engine's cache waits for a question's second miss, its
// answers costing no resolution). Mail for queries that came
// beside other local zones than the cache now is (cached emptied it for
// the change) is dropped: the question may now be answered locally.
func (w *Worker) store() {
	rc := w.rc
	got, buf := rc.box.take(w.spare, w.spareBuf)
	for i := range got {
		m := &got[i]
		if res, _ := w.mq.Parse(m.query); res == wire.Answer && m.zones == rc.zones {
			rc.cache.Put(&w.mq, m.query, m.limit, m.resp, m.built)
		}
		got[i] = mail{}
	}
	w.spare, w.spareBuf = got, buf
}

// metaType reports whether t is a meta-type or QTYPE that is never asked
// of a resolver (RFC 6895 §3.1: OPT, TKEY, TSIG, and 128-248 but for
// the query types a resolver answers; MAILA and MAILB are obsolete).
func metaType(t uint16) bool {
	switch t {
	case wire.TypeOPT, 249, 250, 253, 254:
		return true
	}
	return t >= 128 && t <= 248
}

// inLocalZone reports whether the question falls inside a zone this
// server serves: one map probe per label of the name, as auth finds its
// zones.
func (w *Worker) inLocalZone() bool {
	set := w.r.auth.Zones()
	if set.Len() == 0 {
		return false
	}
	q := &w.q
	for i := range q.Labels() {
		if set.Get(q.Suffix(i)) != nil {
			return true
		}
	}
	return false
}

// local answers from this server's own data (zones, CHAOS identity),
// with RA set whatever RD says, or returns nil when the data holds no answer but a referral (AA
// clear, NOERROR, nothing in the answer section): a delegation below a
// local zone is resolved as any other name.
func (w *Worker) local(req *server.Request, out []byte) []byte {
	resp := w.auth.Answer(req, out)
	if len(resp) < wire.HeaderLen {
		return resp
	}
	flags := binary.BigEndian.Uint16(resp[2:])
	if flags&wire.FlagAA == 0 && flags&0xF == wire.RcodeSuccess && binary.BigEndian.Uint16(resp[6:]) == 0 && w.q.QClass == wire.ClassINET {
		return nil
	}
	// RFC 1035 §4.1.1: RA says whether the server offers recursion,
	// not whether this query asked for it; on the resolver's listener
	// it does (to this client: allowed), so every answer but the
	// refusal of a client outside the allow list carries it, as
	// Unbound's local-zone data and CHAOS answers and its error
	// responses (REFUSED to RD=0 among them) do.
	binary.BigEndian.PutUint16(resp[2:], flags|wire.FlagRA)
	return resp
}

// resolve defers the query until its question is resolved (see mesh),
// or answers it SERVFAIL now when no resolution can start, or drops it
// when its client, or all clients, have too many waiting already.
func (w *Worker) resolve(req *server.Request, out []byte, limit int) []byte {
	got := w.r.mesh.join(w.question(), req.Packet, limit, w.tcp, w.qturn, req.Remote(), w.mailTo(), func() replier {
		if r := req.Defer(); r != nil {
			return r
		}
		return nil
	})
	switch got {
	case deferred:
		return nil
	case overClient, overWaiting:
		// DNSBomb, or too many waiting: no answer, as Unbound drops
		// them. Over TCP nil closes the connection.
		if w.m != nil {
			w.m.Dropped(metrics.DropLimit)
		}
		return nil
	}
	return w.errorResponse(req.Packet, out, wire.RcodeServFail, true, 0)
}

// answerLogged is answer with w's query log: one query in qevery is
// the worker's sample, its answer logged now, or when sent after its
// resolution (the waiter carries qturn); a sampled query that gets no
// answer (dropped) is not logged.
func (w *Worker) answerLogged(req *server.Request, out []byte) []byte {
	w.qleft--
	w.qturn = w.qleft <= 0
	resp := w.answer(req, out)
	if w.qturn {
		w.qturn = false
		w.qleft = w.qevery
		if resp != nil {
			auth.LogAnswer(w.qlog, req.Remote(), zone.NameString(w.q.Name()), w.q.QType, w.tcp, resp)
		}
	}
	return resp
}

// Metrics is the Shard w counts in; nil: none.
func (w *Worker) Metrics() *metrics.Shard { return w.m }
