// Package recursor is the serving side of the recursive resolver, as
// Unbound's daemon/worker is to its iterator: a server.Handler for the
// resolver's own listeners that decides, per query, who may recurse and
// how the query is answered, and hands the questions that need the
// network to resolve on goroutines of their own.
//
// Per query, on the worker's goroutine:
//   - parse (internal/wire); a malformed query gets FORMERR, an unknown
//     opcode NOTIMP, as the authoritative engine answers them;
//   - a client outside the allow list gets REFUSED (EDE 18, Prohibited);
//   - another class than IN gets REFUSED (CHAOS identity queries aside),
//     AXFR and IXFR too, a meta-type as QTYPE FORMERR;
//   - with RD set, a UDP worker looks in its response cache
//     (cache.Responses: zero allocations per hit; it never holds local
//     data, and is emptied when the local zones change); a hit close to
//     expiry starts one background refresh (prefetch, de-duplicated by
//     the mesh);
//   - a question inside a zone this server serves from its own data is
//     answered by the authoritative engine (auth), whatever RD says;
//   - RA is set on every response but REFUSED to a client outside the
//     allow list (RFC 1035 §4.1.1: it says recursion is available, to
//     this client, whatever the query's RD; Unbound's local-zone, CHAOS
//     and error responses carry it so);
//   - RD=0 gets REFUSED (EDE 20, Not Authoritative): Unbound's default
//     access control "allow" refuses non-recursive queries rather than
//     answer them from the cache, which would let anyone see what its
//     clients asked (cache snooping; "allow_snoop" is the opt-in);
//   - otherwise the query is deferred (server.Request.Defer) and joins the
//     resolution of its question (see mesh); when that outlasts the client
//     response timer (Options.StaleClientTimeout, RFC 8767 §5) and the
//     resolver's cache holds stale data, the query is answered with it
//     meanwhile (mesh.clientTimeout).
//
// Results and the per-worker response cache: a resolution runs on a
// goroutine of its own, which must never write a worker's response cache
// (owned by its worker's goroutine, it takes no lock). So the response a
// resolution builds for a waiting query is sent to the client from the
// resolution's goroutine, and also posted to the mailbox of the worker
// that deferred the query; that worker, on its own goroutine, takes its
// mail before it next looks in its cache (one atomic load per query when
// there is none) and stores it there. A prefetch's response goes back
// the same way to the worker whose hit asked for it.
package recursor

import (
	"context"
	"log/slog"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/wire"
)

// Resolver resolves one question iteratively; *resolve.Resolver is the
// one tern serve uses, tests use others. Refresh resolves it from its
// authorities even when the resolver's cache holds the answer (a
// prefetch). Stale answers it from the cache alone, past its TTL or not
// (resolve.Resolver.Stale), for the clients of a resolution that
// outlasts Options.StaleClientTimeout.
type Resolver interface {
	Resolve(ctx context.Context, name string, qtype uint16) (*resolve.Result, error)
	Refresh(ctx context.Context, name string, qtype uint16) (*resolve.Result, error)
	Stale(name string, qtype uint16) (*resolve.Result, bool)
}

// Defaults of Options' bounds.
const (
	DefaultMaxResolutions = 1024
	DefaultMaxPerClient   = 32
	// DefaultClientPrefixIPv4 and DefaultClientPrefixIPv6 are the
	// prefixes a client counts in for MaxPerClient: an IPv4 address,
	// an IPv6 /64 (the block one host or LAN gets; dnsdist's
	// MaxQPSIPRule counts IPv6 clients so by default).
	DefaultClientPrefixIPv4 = 32
	DefaultClientPrefixIPv6 = 64
	// DefaultMaxWaiting bounds the client queries waiting on
	// resolutions, all clients together: Unbound's
	// num-queries-per-thread (1024) for four threads.
	DefaultMaxWaiting = 4096
)

// Options configure a Recursor.
type Options struct {
	// Resolver resolves the questions that need the network.
	Resolver Resolver
	// Auth answers the questions inside the zones this server serves;
	// nil for none.
	Auth *auth.Responder
	// Allow lists the clients allowed to recurse; others get REFUSED.
	Allow []netip.Prefix
	// UDPPayload is the EDNS payload size advertised and the largest UDP
	// response (as auth.Options.UDPPayload); 0 means 1232.
	UDPPayload int
	// MaxResolutions bounds the resolutions running at once; a query
	// that needs one more gets SERVFAIL. 0 means DefaultMaxResolutions.
	MaxResolutions int
	// MaxPerClient bounds the queries of one client waiting on
	// resolutions; more are dropped. 0 means DefaultMaxPerClient.
	MaxPerClient int
	// ClientPrefixIPv4 and ClientPrefixIPv6 are the prefix lengths
	// whose addresses count as one client for MaxPerClient; 0 means
	// DefaultClientPrefixIPv4, DefaultClientPrefixIPv6.
	ClientPrefixIPv4, ClientPrefixIPv6 int
	// MaxWaiting bounds the queries of all clients waiting on
	// resolutions; more are dropped. 0 means DefaultMaxWaiting.
	MaxWaiting int
	// ResponseCache is how many responses each UDP worker's response
	// cache holds (cache.NewResponses); 0 means none.
	ResponseCache int
	// Logger gets a debug line per failed resolution; nil for none.
	Logger *slog.Logger
	// Now is the response cache's clock; nil means time.Now.
	Now func() time.Time
	// NSID is the RFC 5001 server identifier sent to clients that ask
	// for it (identity.nsid, as the authoritative listeners send it);
	// nil for none.
	NSID []byte
	// StaleClientTimeout is RFC 8767 §5's client response timer: a
	// query that has waited this long on its question's resolution is
	// answered from the resolver's cache (Resolver.Stale: stale data,
	// TTL 30, EDE 3) when it holds an answer, the resolution going on
	// to refresh it; without one the query waits for the resolution.
	// 0 turns the timer off (set it only with serve-stale on:
	// without a stale window the cache has nothing to give);
	// cache.StaleClientTimeout is RFC 8767's suggestion.
	StaleClientTimeout time.Duration
	// Metrics counts the answers (a Shard per worker), resolutions and
	// deferred answers; nil: none.
	Metrics *metrics.Set
}

// Recursor answers recursive queries. It is a server.Handler; its
// Workers share its resolutions in flight.
type Recursor struct {
	auth      *auth.Responder
	respCache int
	allow     []netip.Prefix
	payload   int
	mesh      *mesh
	log       *slog.Logger
	now       func() time.Time
	nsid      []byte
	// spareTCP are the response caches of TCP workers the server let
	// go, for the next ones (tcpCache).
	spareMu  sync.Mutex
	spareTCP []*respCache
	// caches are every worker's response cache, UDP and TCP, for
	// ResponseCaches; weak, so that a TCP worker's cache dropped from
	// the spares goes.
	cachesMu sync.Mutex
	caches   []weak.Pointer[respCache]
	// flushes counts the Flush calls; a worker that has seen fewer
	// empties its response cache.
	flushes atomic.Uint64
	metrics *metrics.Set
	// qlog and qevery are the query log (LogQueries); nil: none.
	qlog   *slog.Logger
	qevery int
	// ctx ends the resolutions in flight when the Recursor is closed.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a Recursor.
func New(opt Options) *Recursor {
	r := &Recursor{auth: opt.Auth, respCache: opt.ResponseCache, allow: opt.Allow, payload: opt.UDPPayload, log: opt.Logger, nsid: opt.NSID, metrics: opt.Metrics}
	if r.payload == 0 {
		r.payload = auth.DefaultUDPPayload
	}
	r.payload = max(512, min(r.payload, 65535))
	if r.now = opt.Now; r.now == nil {
		r.now = time.Now
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.mesh = newMesh(r, opt.Resolver, orDefault(opt.MaxResolutions, DefaultMaxResolutions), waitLimits{
		PerClient:  orDefault(opt.MaxPerClient, DefaultMaxPerClient),
		PrefixIPv4: orDefault(min(opt.ClientPrefixIPv4, 32), DefaultClientPrefixIPv4),
		PrefixIPv6: orDefault(min(opt.ClientPrefixIPv6, 128), DefaultClientPrefixIPv6),
		Waiting:    orDefault(opt.MaxWaiting, DefaultMaxWaiting),
	}, opt.StaleClientTimeout)
	return r
}

// orDefault returns n, or def when n is not positive.
func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// LogQueries makes the workers made from now on log one answer in
// every (server.query-log) at info level on log, as the authoritative
// workers do (auth.LogAnswer): each worker counts its own queries (no
// shared state) and logs its every-th's answer, made at once (a cache
// hit, local data, a refusal) or sent after a resolution (deferred:
// logged by the resolution's goroutine). every <= 0 or a nil log: no
// query log, which costs one nil check per query. Call it before the
// server starts.
func (r *Recursor) LogQueries(log *slog.Logger, every int) {
	if log == nil || every <= 0 {
		r.qlog = nil
		return
	}
	r.qlog, r.qevery = log, every
}

// logDeferred logs msg, the answer sent after q's resolution to w's
// query, when w was its worker's query-log sample.
func (r *Recursor) logDeferred(w *waiter, q question, msg []byte) {
	if w.logged && r.qlog != nil {
		auth.LogAnswer(r.qlog, w.from, q.name, q.qtype, w.tcp, msg)
	}
}

// NewWorker returns a Worker for a UDP socket or for TCP connections.
func (r *Recursor) NewWorker(tcp bool) server.Worker {
	w := &Worker{r: r, tcp: tcp, text: make([]byte, 0, wire.MaxName)}
	if r.auth != nil {
		// No response cache: local data on a resolver's listener is
		// rarely what its clients repeat, and the worker's response
		// cache (the resolver's) will hold what they do.
		w.auth = r.auth.NewWorker(tcp, 0)
	}
	switch {
	case r.respCache <= 0:
	case tcp:
		w.rc = r.tcpCache()
		// The server keeps TCP workers in a sync.Pool, which lets them
		// go at a GC: the cache goes back for the next TCP worker
		// rather than with it.
		runtime.AddCleanup(w, r.recycleTCP, w.rc)
	default:
		w.rc = r.newRespCache()
	}
	w.m = metrics.Attach(r.metrics, w, metrics.Resolver)
	if r.qlog != nil {
		w.qlog, w.qevery, w.qleft = r.qlog, r.qevery, r.qevery
	}
	return w
}

// maxSpareTCP bounds the response caches kept for TCP workers to come.
const maxSpareTCP = 64

// tcpCache returns a response cache for a new TCP worker: one a worker
// the server let go held, else a new one. A TCP worker answers one
// connection's queries at a time and goes back to the server's pool
// between them, so each cache is used by one goroutine at a time, as a
// UDP worker's is, and its hits take no lock.
func (r *Recursor) tcpCache() *respCache {
	r.spareMu.Lock()
	defer r.spareMu.Unlock()
	if n := len(r.spareTCP); n > 0 {
		rc := r.spareTCP[n-1]
		r.spareTCP = r.spareTCP[:n-1]
		return rc
	}
	return r.newRespCache()
}

// recycleTCP keeps the response cache of a TCP worker that is gone for
// the next one (runtime.AddCleanup).
func (r *Recursor) recycleTCP(rc *respCache) {
	r.spareMu.Lock()
	defer r.spareMu.Unlock()
	if len(r.spareTCP) < maxSpareTCP {
		r.spareTCP = append(r.spareTCP, rc)
	}
}

// Close cancels the resolutions in flight (their clients get SERVFAIL)
// and waits for them to end; a query that needs a resolution afterwards
// gets SERVFAIL at once. Close it before the server whose Handler it is:
// the server's Close waits for every deferred TCP answer, which only the
// end of its resolution sends.
func (r *Recursor) Close() {
	r.mesh.close()
	r.cancel()
	r.wg.Wait()
}

// Flush empties every worker's response cache, each before its next
// hit: the responses there were made under settings a reload changed
// (the resolver's negative trust anchors: a bogus domain's data answered
// while under one must not be served after it is taken away). A
// response of a resolution that began before the Flush may still be
// stored after it.
func (r *Recursor) Flush() { r.flushes.Add(1) }

// allowed reports whether client may recurse: a linear scan, the list
// being a handful of prefixes.
func (r *Recursor) allowed(client netip.Addr) bool {
	client = client.Unmap()
	for _, p := range r.allow {
		if p.Contains(client) {
			return true
		}
	}
	return false
}

// InFlight returns the number of resolutions running and of queries
// waiting on them, for tests and monitoring.
func (r *Recursor) InFlight() (resolutions, waiting int) {
	return r.mesh.counts()
}
