package cookie

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/wire"
)

// RcodeBadCookie is BADCOOKIE (RFC 7873 §8): 23, an extended RCODE (7 in
// the header, 1 in the OPT record).
const RcodeBadCookie = 23

// optLen is the COOKIE option a response carries: code, length, client
// and server cookie.
const optLen = 4 + ClientLen + ServerLen

// Handler returns h with cookies answered on its workers, UDP and TCP,
// under keys; payload is the server's UDP payload limit (server.udp-payload).
func Handler(h server.Handler, keys *Keys, payload int) server.Handler {
	return server.HandlerFunc(func(tcp bool) server.Worker {
		return NewWorker(h.NewWorker(tcp), keys, payload)
	})
}

// Worker answers the cookies of the queries its inner Worker answers.
// It is not safe for concurrent use.
type Worker struct {
	inner   server.Worker
	batch   server.Batcher
	keys    *Keys
	payload int
	// valid marks the requests of the last batch (or the last Answer,
	// at 0) that carried a valid server cookie (Valid): RRL exempts
	// them.
	valid []bool
	clock func() time.Time
	// m is the inner Worker's metrics Shard (nil: none): each query's
	// cookie outcome counts there, before the inner Worker answers (its
	// Flush publishes it); flush says an answer of this layer's own
	// (FORMERR, BADCOOKIE) was counted, to be published here.
	m     *metrics.Shard
	flush bool
	// pending is the cookie of the query being answered, for its
	// answer should the inner Worker defer it (Deferred).
	pending pendingCookie
}

// pendingCookie is what the COOKIE option of a deferred answer needs:
// the client cookie, the server cookie made for it, the query's UDP
// payload size and transport.
type pendingCookie struct {
	cc   [ClientLen]byte
	sc   [ServerLen]byte
	size uint16
	tcp  bool
}

// outcomes are the metrics outcomes of the Verdicts (Bad over UDP is
// metrics.CookieBadCookie).
var outcomes = [...]metrics.Cookie{
	None: metrics.CookieNone, ClientOnly: metrics.CookieClientOnly, Valid: metrics.CookieValid,
	Stale: metrics.CookieRefreshed, Bad: metrics.CookieBad, Malformed: metrics.CookieMalformed,
}

// NewWorker returns inner with cookies answered under keys.
func NewWorker(inner server.Worker, keys *Keys, payload int) *Worker {
	w := &Worker{inner: inner, keys: keys, payload: payload, valid: make([]bool, 1), clock: time.Now}
	w.batch, _ = inner.(server.Batcher)
	if m, ok := inner.(interface{ Metrics() *metrics.Shard }); ok {
		w.m = m.Metrics()
	}
	return w
}

// isQuery reports whether pkt has a header and is not a response: what
// the inner Worker does not drop as malformed (those are not counted as
// cookie outcomes).
func isQuery(pkt []byte) bool { return len(pkt) >= 12 && pkt[2]&0x80 == 0 }

// count counts n queries of outcome c.
func (w *Worker) count(c metrics.Cookie, n int) {
	if w.m != nil {
		w.m.Cookies(c, n)
	}
}

// publish publishes the counts of the answers this layer made itself.
func (w *Worker) publish() {
	if w.flush {
		w.flush = false
		w.m.Flush()
	}
}

// ValidCookie reports whether the i-th request of the last batch (0:
// the last Answer) carried a valid server cookie of ours.
func (w *Worker) ValidCookie(i int) bool { return i < len(w.valid) && w.valid[i] }

// Answer answers req through the inner Worker, with its cookie.
func (w *Worker) Answer(req *server.Request, out []byte) []byte {
	s := w.keys.p.Load()
	now := uint32(w.clock().Unix())
	w.valid[0] = false
	opt, size, found := find(req.Packet)
	if !found {
		if isQuery(req.Packet) {
			w.count(metrics.CookieNone, 1)
		}
		return w.inner.Answer(req, out)
	}
	resp := w.answer(s, req, opt, size, out, now, &w.valid[0])
	w.publish()
	return resp
}

// AnswerBatch answers a batch through the inner Worker, with cookies:
// one inner AnswerBatch when no query needs an answer of this layer's
// own (FORMERR, BADCOOKIE), else one Answer per query.
func (w *Worker) AnswerBatch(reqs []server.Request, outs [][]byte) {
	if cap(w.valid) < len(reqs) {
		w.valid = make([]bool, len(reqs))
	}
	w.valid = w.valid[:len(reqs)]
	any := false
	none := 0
	for i := range reqs {
		w.valid[i] = false
		if _, found := Find(reqs[i].Packet); found {
			any = true
		} else if isQuery(reqs[i].Packet) {
			none++
		}
	}
	if none > 0 {
		w.count(metrics.CookieNone, none)
	}
	if !any {
		if w.batch != nil {
			w.batch.AnswerBatch(reqs, outs)
			return
		}
		for i := range reqs {
			outs[i] = w.inner.Answer(&reqs[i], outs[i])
		}
		return
	}
	s := w.keys.p.Load()
	now := uint32(w.clock().Unix())
	for i := range reqs {
		opt, size, found := find(reqs[i].Packet)
		if !found {
			outs[i] = w.inner.Answer(&reqs[i], outs[i])
			continue
		}
		outs[i] = w.answer(s, &reqs[i], opt, size, outs[i], now, &w.valid[i])
	}
	w.publish()
}

// answer answers a query with a COOKIE option opt: FORMERR when it is
// malformed (RFC 7873 §5.2.2), BADCOOKIE over UDP when its server cookie
// is not ours (§5.2.4; over TCP the query is answered, §5.2.3), else the
// inner Worker's answer with the client cookie and a server cookie:
// the query's own when valid and younger than RefreshAge, else a fresh
// one (RFC 9018 §4.3).
func (w *Worker) answer(s *secrets, req *server.Request, opt []byte, size uint16, out []byte, now uint32, valid *bool) []byte {
	addr := req.Remote().Addr()
	v := check(s, opt, addr, now)
	switch {
	case v == Malformed:
		w.count(metrics.CookieMalformed, 1)
		w.flush = w.m != nil
		return w.errorReply(req.Packet, out, wire.RcodeFormErr, nil, s, addr, now)
	case v == Bad && !req.TCP:
		w.count(metrics.CookieBadCookie, 1)
		w.flush = w.m != nil
		return w.errorReply(req.Packet, out, RcodeBadCookie, opt, s, addr, now)
	}
	w.count(outcomes[v], 1)
	*valid = v == Valid || v == Stale
	p := &w.pending
	if v == Valid {
		copy(p.sc[:], opt[ClientLen:])
	} else {
		make1(s, p.sc[:], opt, addr, now)
	}
	copy(p.cc[:], opt)
	p.size, p.tcp = size, req.TCP
	// A query the inner Worker defers (the resolver's, waiting on a
	// resolution) gets its cookie when its answer is sent: Deferred.
	req.PushAmender(w)
	resp := w.inner.Answer(req, out)
	req.PopAmender()
	if resp == nil {
		return nil
	}
	return patch(resp, p, w.payload)
}

// Deferred returns what adds the COOKIE option of the query being
// answered to its deferred answer (server.Amender): a copy of the
// answer (the resolver's message is its own: it builds the next
// waiter's in it, and mails it to its response cache, which holds no
// cookie) with the option, under the same rules as an answer
// made at once. Only a deferred query with a cookie pays for it.
func (w *Worker) Deferred(*server.Request) func(msg []byte) []byte {
	p, payload := w.pending, w.payload
	return func(msg []byte) []byte {
		out := make([]byte, len(msg), len(msg)+optLen)
		copy(out, msg)
		return patch(out, &p, payload)
	}
}

// patch appends the COOKIE option of p (its client and server cookie)
// to resp's OPT record when it is the message's last record and the
// response stays within the size limit (over UDP: the query's payload
// size, at least 512, and at most the server's payload; over TCP a
// message's 65535 bytes); otherwise resp goes as it is. A TSIG-signed
// response ends with TSIG, not OPT: it is left as signed.
func patch(resp []byte, p *pendingCookie, payload int) []byte {
	end, ok := lastOPT(resp)
	if !ok {
		return resp
	}
	limit := 65535
	if !p.tcp {
		limit = max(512, min(int(p.size), payload))
	}
	if len(resp)+optLen > limit {
		return resp
	}
	rdlen := binary.BigEndian.Uint16(resp[end+9:])
	binary.BigEndian.PutUint16(resp[end+9:], rdlen+optLen)
	resp = append(resp, 0, OptionCode, 0, ClientLen+ServerLen)
	resp = append(resp, p.cc[:]...)
	return append(resp, p.sc[:]...)
}

// lastOPT finds the OPT record that ends msg (a response the engine
// built) and returns the offset of its owner name (the root, one
// zero byte), so that its type is at +1, its class (payload) at +3 and
// its RDLENGTH at +9.
func lastOPT(msg []byte) (int, bool) {
	if len(msg) < 12 || msg[10] == 0 && msg[11] == 0 {
		return 0, false
	}
	qd := int(binary.BigEndian.Uint16(msg[4:]))
	n := int(binary.BigEndian.Uint16(msg[6:])) + int(binary.BigEndian.Uint16(msg[8:])) + int(binary.BigEndian.Uint16(msg[10:]))
	off := 12
	for range qd {
		end, ok := wire.SkipName(msg, off)
		if !ok {
			return 0, false
		}
		off = end + 4
	}
	last := -1
	for range n {
		start := off
		end, t, ok := wire.SkipRecord(msg, off)
		if !ok {
			return 0, false
		}
		if end == len(msg) && t == 41 && msg[start] == 0 {
			last = start
		}
		off = end
	}
	return last, last >= 0 && off == len(msg)
}

// errorReply writes into out the FORMERR or BADCOOKIE response to pkt:
// its ID, flags and question (wire.FormErr), and an OPT record with the
// RCODE's upper bits, carrying for BADCOOKIE the client cookie of opt
// and a fresh server cookie (RFC 7873 §5.2.4).
func (w *Worker) errorReply(pkt, out []byte, rcode int, opt []byte, s *secrets, addr netip.Addr, now uint32) []byte {
	out = wire.FormErr(pkt, out)
	if out == nil {
		return nil
	}
	out[3] = out[3]&0xF0 | byte(rcode&0xF)
	out[11] = 1
	payload := uint16(max(512, min(w.payload, 65535)))
	out = append(out, 0, 0, 41, byte(payload>>8), byte(payload), byte(rcode>>4), 0, 0, 0, 0, 0)
	if opt == nil {
		return out
	}
	out[len(out)-1] = optLen
	out = append(out, 0, OptionCode, 0, ClientLen+ServerLen)
	out = append(out, opt[:ClientLen]...)
	var sc [ServerLen]byte
	make1(s, sc[:], opt, addr, now)
	return append(out, sc[:]...)
}

// Metrics is the inner Worker's metrics Shard, when it has one (so that
// a layer above, rrl's, counts in it); nil otherwise.
func (w *Worker) Metrics() *metrics.Shard {
	if m, ok := w.inner.(interface{ Metrics() *metrics.Shard }); ok {
		return m.Metrics()
	}
	return nil
}
