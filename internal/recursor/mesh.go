package recursor

import (
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/zone"
)

// replier sends a deferred answer: *server.Reply. The mesh releases
// it rather than close it (the server may then reuse it): each waiter's
// reply is sent and released by one goroutine, its resolution's or the
// client response timer's that took it off the flight, and not touched
// after.
type replier interface {
	Send(msg []byte) error
	Release()
}

// question is what a resolution answers: the name (lowercased, in
// presentation form) and type. Questions that differ only in their
// clients' flags, EDNS or case share a resolution; each client's
// response is built from the shared result.
type question struct {
	name  string
	qtype uint16
}

// asked is a question as a query asks it: the name in presentation form
// in its worker's buffer (Worker.question). The mesh looks it up among
// the questions in flight without a string (m[question{string(b), t}]
// allocates nothing) and makes one only for a new flight: a query that
// joins a resolution in flight allocates no name.
type asked struct {
	name  []byte
	qtype uint16
}

// waiter is a client query deferred until its question is resolved, or
// (reply nil) the query whose cached response a prefetch refreshes.
type waiter struct {
	reply replier
	// query is a copy of the client's query, in its flight's queries:
	// it lives as long as the flight's use (see flight).
	query []byte
	// limit is the largest response the client takes (see
	// Worker.limit).
	limit int
	// tcp: the query came over TCP (for the metrics).
	tcp bool
	// logged: the query is its worker's sample for the query log
	// (Recursor.LogQueries): its answer is logged when sent.
	logged bool
	client netip.Prefix
	// from is the client's address, for the query log.
	from netip.AddrPort
	// to is where the response goes for a response cache (to.box nil:
	// nowhere).
	to mailTo
	// joined is when the query began to wait (the monotonic clock; set
	// only with the client response timer on).
	joined time.Time
}

// mailTo is where a response goes for a worker's response cache: the
// worker's mailbox, and the set of local zones its cache was made beside
// when the query came (Worker.zones). A response whose resolution began
// beside another set is not stored: the set may since have gained the
// zone of its name, whose answers come from local data.
type mailTo struct {
	box   *mailbox
	zones *zone.Set
}

// flight is a resolution running, and the queries waiting on it. A
// waiter answered before the resolution ends (from stale data, see
// clientTimeout) stays, its reply nil, for its response cache's mail.
//
// Flights are reused (mesh.free) with their buffers, so that a
// resolution allocates no flight, waiter slice, copy of a query or
// response: these were 4 of the 11 allocations and 354 of the 640
// bytes per query of BenchmarkDeferred. A use ends when its
// resolution's goroutine has answered the waiters (recycle); nothing of
// it may be touched after, which is why the mail and the replies copy
// what they are given, and why a timer of an earlier use, which may
// still fire, finds gen changed.
type flight struct {
	// q is the question resolved.
	q       question
	waiters []waiter
	// timer is the client response timer (RFC 8767 §5) of the waiter
	// that joined first among those still waiting, when it is on; nil
	// when none is armed.
	timer *time.Timer
	// gen counts the flight's uses, under the mesh's lock.
	gen uint64
	// queries holds the waiters' copies of their queries.
	queries []byte
	// out is the buffer each waiter's response is built in, in turn:
	// quickResponse packs its records there, with no buffer of its own.
	out []byte
}

// Bounds of what a flight keeps for its next use, and of the flights
// kept: beyond them a burst's buffers go to the garbage collector
// rather than stay for good.
const (
	maxFreeFlights = 128
	maxKeptWaiters = 64
	maxKeptBytes   = 4096
)

// mesh runs resolutions, as Unbound's mesh does: each question in flight
// once, however many clients ask it meanwhile; at most maxResolutions at
// once; at most lim.PerClient queries of one client (its address within
// the client prefix) waiting, and at most lim.Waiting of all clients.
// Its lock is taken only on the way into and out of a resolution, never
// on a query answered without one.
type mesh struct {
	r              *Recursor
	resolver       Resolver
	maxResolutions int
	lim            waitLimits
	// staleAfter is the client response timer (Options.StaleClientTimeout);
	// 0: off.
	staleAfter time.Duration

	mu      sync.Mutex
	flights map[question]*flight
	// free are flights whose use ended, for the next (flight).
	free      []*flight
	perClient map[netip.Prefix]int
	waiting   int
	// closed is set by Recursor.Close: no resolution starts after it,
	// so that none is added to the WaitGroup Close waits on.
	closed bool
	// idle are the goroutines that have finished a resolution and wait
	// for another (start), each as the channel it waits on, the last to
	// finish on top; resolvers counts them and those resolving.
	idle      []chan job
	resolvers int
	// idleFor is how long one waits before it ends: resolverIdle, but
	// in tests.
	idleFor time.Duration
}

// job is a resolution to run: its question, and whether it is a
// prefetch's refresh.
type job struct {
	q       question
	refresh bool
}

// resolverIdle is how long a goroutine that has finished a resolution
// waits for the next before it ends (mesh.start). Ending costs the stack
// grown anew by the next goroutine started (a few thousand instructions
// of copying, against some 50,000 for a cold resolution), which a longer
// wait saves only where the load rises and falls again within it: with
// BenchmarkMix (internal/dnstest/hierarchy, 15,651 resolutions) 2 s,
// 200 ms and 100 ms started 117, 116 and 188 goroutines, and left 89, 34
// and 37 waiting at the end of the 2-4 s replay (2 s: most of those the
// cold start's burst began).
const resolverIdle = 200 * time.Millisecond

// waitLimits bound the client queries waiting on resolutions.
type waitLimits struct {
	// PerClient bounds one client's; a client is its address within
	// a prefix of PrefixIPv4 or PrefixIPv6 bits.
	PerClient              int
	PrefixIPv4, PrefixIPv6 int
	// Waiting bounds all clients' together.
	Waiting int
}

// client returns the prefix a client address counts in: one host on
// IPv6 has a whole /64 to send from (RFC 4291 §2.5.4's interface IDs),
// so counting per address would let it hold PerClient queries per
// address it cares to use.
func (l waitLimits) client(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	bits := l.PrefixIPv6
	if a.Is4() {
		bits = l.PrefixIPv4
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return netip.PrefixFrom(a, a.BitLen()) // no address (a zero Addr)
	}
	return p
}

func newMesh(r *Recursor, res Resolver, maxResolutions int, lim waitLimits, staleAfter time.Duration) *mesh {
	return &mesh{
		r: r, resolver: res, maxResolutions: maxResolutions, lim: lim, staleAfter: max(staleAfter, 0),
		flights: make(map[question]*flight), perClient: make(map[netip.Prefix]int),
		idleFor: resolverIdle,
	}
}

// joined is what became of a query given to join.
type joined int

const (
	// deferred: the query waits on a resolution; its answer will come
	// through its reply.
	deferred joined = iota
	// overClient: the client (its prefix) has lim.PerClient queries
	// waiting already; the query gets no answer.
	overClient
	// overWaiting: lim.Waiting queries of all clients wait already;
	// the query gets no answer, as Unbound drops a query when its
	// request list (num-queries-per-thread) is full and none can be
	// jostled out: the client retries later, when there may be room.
	overWaiting
	// overResolutions: the question is not in flight and
	// maxResolutions are, or the Recursor is closed: SERVFAIL now.
	overResolutions
	// noDefer: the request cannot be deferred (SERVFAIL now).
	noDefer
)

// join makes the query (a copy of which it keeps) of client address
// from wait on the resolution of a, starting it if it is not in flight;
// its response is built for limit and also mailed to to (when to.box is
// not nil). defer is called, under the mesh's lock, only once the query
// is admitted, and returns the query's reply (nil when it cannot be
// deferred).
func (m *mesh) join(a asked, query []byte, limit int, tcp, logged bool, from netip.AddrPort, to mailTo, deferReply func() replier) joined {
	client := m.lim.client(from.Addr())
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.perClient[client] >= m.lim.PerClient {
		return overClient
	}
	if m.waiting >= m.lim.Waiting {
		return overWaiting
	}
	f := m.flights[question{string(a.name), a.qtype}]
	if f == nil && (len(m.flights) >= m.maxResolutions || m.closed) {
		return overResolutions
	}
	reply := deferReply()
	if reply == nil {
		return noDefer
	}
	if f == nil {
		q := question{string(a.name), a.qtype}
		f = m.newFlight(q)
		m.flights[q] = f
		m.start(q, false)
	}
	wt := waiter{reply: reply, query: f.keep(query), limit: limit, tcp: tcp, logged: logged, client: client, from: from, to: to}
	if m.staleAfter > 0 {
		wt.joined = time.Now()
		if f.timer == nil {
			m.arm(f, m.staleAfter)
		}
	}
	f.waiters = append(f.waiters, wt)
	m.perClient[client]++
	m.waiting++
	return deferred
}

// newFlight returns a flight for a new use, the resolution of q: a free
// one, else a new one; the caller holds m.mu.
func (m *mesh) newFlight(q question) *flight {
	var f *flight
	if n := len(m.free); n > 0 {
		f = m.free[n-1]
		m.free[n-1] = nil
		m.free = m.free[:n-1]
	} else {
		f = new(flight)
	}
	f.q = q
	return f
}

// keep returns a copy of query in f.queries. An earlier waiter's copy
// stays where it is when the buffer grows: in the array it was made in,
// which its slice keeps alive.
func (f *flight) keep(query []byte) []byte {
	n := len(f.queries)
	f.queries = append(f.queries, query...)
	return f.queries[n:len(f.queries):len(f.queries)]
}

// recycle ends f's use, once its waiters are answered and nothing of
// them is used any more: f goes to the free flights, without what
// refers to its waiters' replies and mailboxes, and without the buffers
// grown past the bounds.
func (m *mesh) recycle(f *flight) {
	clear(f.waiters)
	f.waiters = f.waiters[:0]
	if cap(f.waiters) > maxKeptWaiters {
		f.waiters = nil
	}
	f.queries = f.queries[:0]
	if cap(f.queries) > maxKeptBytes {
		f.queries = nil
	}
	if cap(f.out) > maxKeptBytes {
		f.out = nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	f.gen++
	f.timer = nil
	f.q = question{}
	if len(m.free) < maxFreeFlights {
		m.free = append(m.free, f)
	}
}

// arm starts f's client response timer, to fire after d; the caller
// holds m.mu.
func (m *mesh) arm(f *flight, d time.Duration) {
	q, gen := f.q, f.gen
	f.timer = time.AfterFunc(d, func() { m.clientTimeout(q, f, gen) })
}

// clientTimeout is RFC 8767 §5's client response timer firing for flight
// f of q: the queries that have waited staleAfter or longer are answered
// from the resolver's cache (stale data: TTL 30, EDE 3, Unbound's
// serve-expired-client-timeout) when it holds an answer, and the
// resolution goes on, its fresh response still mailed to their workers'
// response caches; without one they wait for the resolution. The timer
// is armed again for the first of the queries still waiting. Stale
// answers are never mailed: a response cache keeps only resolutions'.
// f's use is gen: a timer that fires after the use ended (its Stop too
// late) does nothing, whatever f is used for since.
func (m *mesh) clientTimeout(q question, f *flight, gen uint64) {
	res, ok := m.resolver.Stale(q.name, q.qtype)
	now := time.Now()
	var due []waiter
	m.mu.Lock()
	if f.gen != gen || m.flights[q] != f || m.closed {
		m.mu.Unlock()
		return
	}
	f.timer = nil
	var first time.Time
	for i := range f.waiters {
		w := &f.waiters[i]
		switch {
		case w.reply == nil:
		case ok && now.Sub(w.joined) >= m.staleAfter:
			due = append(due, *w)
			// A copy of the query: the flight's may be reused once
			// the lock is let go and the resolution ends.
			due[len(due)-1].query = slices.Clone(w.query)
			w.reply = nil
			m.release(w.client)
		case first.IsZero() || w.joined.Before(first):
			first = w.joined
		}
	}
	if ok && !first.IsZero() {
		m.arm(f, first.Add(m.staleAfter).Sub(now))
	}
	if len(due) == 0 {
		m.mu.Unlock()
		return
	}
	// Under the lock, not closed: Close's Wait comes after this Add.
	m.r.wg.Add(1)
	m.mu.Unlock()
	defer m.r.wg.Done()
	for _, w := range due {
		if msg := m.r.response(nil, w.query, w.limit, res, nil); msg != nil {
			w.reply.Send(msg) // a client gone is no concern of ours
			m.r.metrics.DeferredAnswer(w.tcp, q.qtype, msg)
			m.r.logDeferred(&w, q, msg)
		}
		w.reply.Release()
	}
}

// release takes a query of client off the counts of those waiting; the
// caller holds m.mu.
func (m *mesh) release(client netip.Prefix) {
	if n := m.perClient[client]; n <= 1 {
		delete(m.perClient, client)
	} else {
		m.perClient[client] = n - 1
	}
	m.waiting--
}

// prefetch starts the resolution of a, unless it is in flight already
// or maxResolutions are: the refresh of a cached response close to
// expiry (Unbound's prefetch), whose response to query (built for
// limit) is mailed to to, no client waiting on it.
func (m *mesh) prefetch(a asked, query []byte, limit int, to mailTo) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.flights[question{string(a.name), a.qtype}] != nil || len(m.flights) >= m.maxResolutions || m.closed {
		return false
	}
	q := question{string(a.name), a.qtype}
	f := m.newFlight(q)
	f.waiters = append(f.waiters, waiter{query: f.keep(query), limit: limit, to: to})
	m.flights[q] = f
	m.start(q, true)
	return true
}

// start runs the resolution of q on a goroutine, from the authorities
// rather than the resolver's cache when refresh is set (a prefetch: the
// cache holds the answer about to expire); the caller holds m.mu and has
// put q's flight in m.flights. The goroutine is one that finished a
// resolution and waits for another, else a new one: a resolution's calls
// go deep, and a new goroutine's stack grew by copying several times
// through each (copystack was 10% of a cold resolution's CPU, 6% of the
// mix's, and left the profile with this); a waiting one keeps the stack
// it grew until a GC shrinks it. The one that waited least is taken (the
// top of m.idle), so that at a steady load the same few take every job
// and those a burst started, not needed since, wait resolverIdle without
// one and end, their stacks given back (a resolving goroutine's stack
// stays in the 8 KiB it starts with through a resolution of one upstream
// query, about 6.2 KiB deep below Resolve, and grows to 16 KiB through
// one that resolves an NS name first, 8.7 KiB; resolve's TestStackUse).
// BenchmarkMix's replay starts with 100 resolutions at once and then has
// about 35 at a time; when each waiting goroutine was handed the next job
// in turn, all 100 lived on to its end. The bench's
// res-mix (its authorities on the generator's CPU, slower to answer)
// keeps about 100 in flight to the end of its replay (92-117 goroutines,
// 2.0-2.3 MB of stacks at their peak, 1.6 MB once a one-query resolution
// fitted 8 KiB (ec41f49), scraped from the metrics listener): there the
// goroutines are needed, and end 200 ms after it rather than 2 s.
func (m *mesh) start(q question, refresh bool) {
	j := job{q, refresh}
	if n := len(m.idle); n > 0 {
		ch := m.idle[n-1]
		m.idle = m.idle[:n-1]
		ch <- j // buffered, and only start sends: never blocks
		return
	}
	m.r.wg.Add(1)
	m.resolvers++
	go m.resolving(j)
}

// resolving runs j, then each job start hands it, until none comes for
// m.idleFor or the recursor closes.
func (m *mesh) resolving(j job) {
	defer m.r.wg.Done()
	idle := time.NewTimer(m.idleFor)
	defer idle.Stop()
	jobs := make(chan job, 1)
	for {
		m.resolve(j)
		idle.Reset(m.idleFor)
		if !m.wait(jobs) {
			return
		}
		select {
		case j = <-jobs:
			continue
		case <-idle.C:
		case <-m.r.ctx.Done():
		}
		if m.leave(jobs) {
			return
		}
		// start took it off m.idle and handed it a job meanwhile: it
		// runs that one (failed at once when the recursor has closed).
		j = <-jobs
	}
}

// wait puts the goroutine whose channel is jobs on top of m.idle, and
// reports false (the goroutine ends) when the recursor has closed.
func (m *mesh) wait(jobs chan job) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		m.resolvers--
		return false
	}
	m.idle = append(m.idle, jobs)
	return true
}

// leave takes the goroutine whose channel is jobs off m.idle (it ends),
// and reports false when it was no longer there: start has sent it a job.
func (m *mesh) leave(jobs chan job) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := slices.Index(m.idle, jobs)
	if i < 0 {
		return false
	}
	m.idle = slices.Delete(m.idle, i, i+1)
	m.resolvers--
	return true
}

// resolve resolves j's question and answers its flight's waiters.
func (m *mesh) resolve(j job) {
	resolveFn := m.resolver.Resolve
	if j.refresh {
		resolveFn = m.resolver.Refresh
	}
	began := time.Now()
	res, err := resolveFn(m.r.ctx, j.q.name, j.q.qtype)
	m.answer(j.q, res, err, began)
}

// answer answers the waiters of q's flight with the result of its
// resolution, begun at began. Apart from resolve, whose frame is on the
// stack through the whole resolution, so that this one's (a waiter
// copied, a response built, the log's arguments) is not: resolve's frame
// went from 792 bytes to 192.
//
//go:noinline
func (m *mesh) answer(q question, res *resolve.Result, err error, began time.Time) {
	if err != nil {
		m.r.log.Debug("resolution failed", "name", q.name, "type", q.qtype, "err", err)
		if res == nil {
			res = &resolve.Result{Rcode: rcodeServFail}
		}
	}
	m.r.metrics.Resolved(time.Since(began), res.Security)
	// The responses' TTLs count from now: mail carries the time,
	// for the worker may store it long after (it takes its mail
	// only when it next looks in its cache).
	built := m.r.now()
	f := m.finish(q)
	for i := range f.waiters {
		w := &f.waiters[i]
		// Each response in f.out in turn: Send and post copy it.
		msg := m.r.response(f.out[:0], w.query, w.limit, res, err)
		if cap(msg) > cap(f.out) {
			f.out = msg[:0]
		}
		if w.reply != nil {
			if msg != nil {
				w.reply.Send(msg) // a client gone is no concern of ours
				m.r.metrics.DeferredAnswer(w.tcp, q.qtype, msg)
				m.r.logDeferred(w, q, msg)
			}
			w.reply.Release()
		}
		if msg != nil && w.to.box != nil {
			w.to.box.post(w.query, w.limit, msg, built, w.to.zones)
		}
	}
	m.recycle(f)
}

// finish takes q's flight out of the mesh and returns it.
func (m *mesh) finish(q question) *flight {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.flights[q]
	delete(m.flights, q)
	if f.timer != nil {
		f.timer.Stop()
	}
	for _, w := range f.waiters {
		if w.reply != nil { // not a prefetch's, nor answered stale
			m.release(w.client)
		}
	}
	return f
}

// close stops resolutions from starting: queries that would need one get
// SERVFAIL, prefetches are not made.
func (m *mesh) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
}

// count returns the goroutines resolving or waiting for a resolution.
func (m *mesh) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.resolvers
}

// idlers returns the goroutines waiting for a resolution, the last to
// finish one last, and whether every goroutine waits.
func (m *mesh) idlers() ([]chan job, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.idle), len(m.idle) == m.resolvers
}

func (m *mesh) counts() (resolutions, waiting int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.flights), m.waiting
}

// maxMail bounds a mailbox: responses beyond it, arriving faster than
// the worker answers queries, are not cached.
const maxMail = 256

// mailbox hands responses built on resolutions' goroutines to the worker
// that owns a response cache, which alone may write it (it takes no
// lock). A resolution posts; the worker, before it looks in its cache,
// sees pending (one atomic load, written only when mail arrives) and
// takes the mail under the lock.
type mailbox struct {
	pending atomic.Bool
	mu      sync.Mutex
	mail    []mail
	// buf holds the mail's queries and responses: copies, for what a
	// resolution posts is its flight's, reused once it ends. It is
	// swapped with the worker's at each take, as mail is.
	buf []byte
}

// maxMailBuf bounds the buffer a mailbox keeps for the next mail: more
// came in a burst than is worth keeping.
const maxMailBuf = 16384

// mail is a response for a worker's response cache: the query it
// answers, the limit it was built for, the response, when it was built
// (its TTLs count from then) and the local zones it was asked beside
// (mailTo.zones). query and resp are in the buffer take returned with
// the mail (mailbox.buf).
type mail struct {
	query []byte
	limit int
	resp  []byte
	built time.Time
	zones *zone.Set
}

// post leaves a response, built at built for a query that came beside
// zones, for the worker; query and resp are copied. A copy made before
// buf grew stays in the array it was made in, which its slice keeps
// alive until the worker is done with it.
func (b *mailbox) post(query []byte, limit int, resp []byte, built time.Time, zones *zone.Set) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.mail) < maxMail {
		n := len(b.buf)
		b.buf = append(append(b.buf, query...), resp...)
		q, r := b.buf[n:n+len(query):n+len(query)], b.buf[n+len(query):len(b.buf):len(b.buf)]
		b.mail = append(b.mail, mail{q, limit, r, built, zones})
		b.pending.Store(true)
	}
}

// take returns the mail and the buffer of its bytes, and empties the
// box, reusing spare and spareBuf (the caller's from the take before,
// which it is done with) as its next ones.
func (b *mailbox) take(spare []mail, spareBuf []byte) ([]mail, []byte) {
	if cap(spareBuf) > maxMailBuf {
		spareBuf = nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	got, buf := b.mail, b.buf
	b.mail, b.buf = spare[:0], spareBuf[:0]
	b.pending.Store(false)
	return got, buf
}
