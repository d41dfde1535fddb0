// Package perf is Tern's DNS load generator (tern perf): it replays a
// dnsperf-style query file ("name TYPE" per line) against a server as fast
// as the server answers, or at a fixed rate, and reports dnsperf's
// statistics block plus latency percentiles, as text or JSON.
//
// Example, against a server pinned to CPU 0, with the generator on CPU 1:
//
//	taskset -c 1 tern perf -s 127.0.0.1 -p 5300 -d queries.txt -l 10 -q 256 -c 4
//	taskset -c 1 tern perf -s ::1 -p 5300 -d queries.txt -n 3 -D --json
//
// The UDP engine is built for minimum CPU per query so that one generator
// core can saturate a server core. Queries are encoded once; each batch
// slot copies its query and patches in a DNS ID. One event loop, on a
// locked OS thread, drives all of its connected non-blocking sockets with
// raw sendmmsg/recvmmsg (RawSyscall: the calls never block) and sleeps in
// ppoll only when there is nothing to send or read. Responses are matched by
// DNS ID in a per-socket table of 65536 preallocated slots whose busy
// entries form a send-ordered list, so completion and timeout handling are
// O(1) and nothing is allocated per query. Send times come from one clock
// read per batch. Per query the loop spends well under a microsecond in user
// space; the rest is the kernel's UDP and loopback path.
//
// The x/net engine (ipv4/ipv6 PacketConn ReadBatch/WriteBatch, one goroutine
// per socket) is kept for comparison and for systems without the raw
// engine; it costs more user CPU per query and allocates an address per
// received datagram.
//
// Optional UDP GSO (UDP_SEGMENT) sends the equal-size queries of a batch as
// one super-datagram, which the kernel splits just before delivery.
//
// Accounting follows dnsperf: queries unanswered after the timeout are
// lost; run time ends when sending stopped or at the last response,
// whichever is later; QPS is completed queries over run time.
package perf

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Engine names accepted in Config.Engine.
const (
	EngineMmsg = "mmsg" // raw sendmmsg/recvmmsg event loop (Linux)
	EngineXnet = "xnet" // golang.org/x/net ipv4/ipv6 batch I/O, goroutine per socket
)

// Config describes one load run.
type Config struct {
	Server         netip.AddrPort
	Queries        []Query
	Encode         EncodeOptions
	Duration       time.Duration // stop sending after this long; 0: no limit
	Runs           int           // times through the query list; 0: no limit
	MaxOutstanding int           // queries in flight across all sockets
	Clients        int           // sockets (UDP) or connections (TCP)
	Timeout        time.Duration // per query; unanswered queries are lost
	MaxQPS         float64       // 0: unlimited
	TCP            bool
	SockBuf        int    // SO_SNDBUF/SO_RCVBUF in bytes; 0: kernel default
	Batch          int    // datagrams per sendmmsg/recvmmsg
	Engine         string // EngineMmsg (default) or EngineXnet
	Threads        int    // UDP event loops; sockets are split among them
	Spin           bool   // busy-poll instead of sleeping in ppoll (mmsg engine)
	GSO            bool   // coalesce equal-size queries with UDP_SEGMENT (mmsg engine)

	// Progress, if set, is called about once a second from another
	// goroutine with the running totals.
	Progress func(Snapshot)
}

// Snapshot is a progress sample.
type Snapshot struct {
	Elapsed   time.Duration
	Sent      uint64
	Completed uint64
	Lost      uint64
}

// Result is the outcome of a run.
type Result struct {
	Counters
	RunTime     time.Duration // start to the later of end of sending and the last response
	Interrupted bool          // the context was cancelled
	Config      Config
}

// QPS is completed queries per second of run time, as dnsperf reports.
func (r *Result) QPS() float64 {
	if r.RunTime <= 0 {
		return 0
	}
	return float64(r.Completed) / r.RunTime.Seconds()
}

// wireSet holds every query pre-encoded back to back.
type wireSet struct {
	buf    []byte
	off    []int // len(queries)+1 offsets into buf
	maxLen int
}

func (w *wireSet) n() int { return len(w.off) - 1 }

func (w *wireSet) get(i int) []byte { return w.buf[w.off[i]:w.off[i+1]] }

func encodeAll(qs []Query, o EncodeOptions) (*wireSet, error) {
	w := &wireSet{off: make([]int, 0, len(qs)+1)}
	w.off = append(w.off, 0)
	for i, q := range qs {
		var err error
		w.buf, err = AppendQuery(w.buf, q.Name, q.Type, o)
		if err != nil {
			return nil, fmt.Errorf("query %d: %w", i+1, err)
		}
		w.off = append(w.off, len(w.buf))
		w.maxLen = max(w.maxLen, w.off[i+1]-w.off[i])
	}
	return w, nil
}

// live holds counters published for progress reporting; padded so loops on
// different cores do not share a cache line.
type live struct {
	sent, completed, lost atomic.Uint64
	_                     [40]byte
}

func (l *live) publish(c *Counters) {
	l.sent.Store(c.Sent)
	l.completed.Store(c.Completed)
	l.lost.Store(c.Lost)
}

// share is one event loop's (or goroutine's) part of the run.
type share struct {
	clients int     // sockets
	window  int     // outstanding limit, summed over its sockets
	qps     float64 // 0: unlimited
	limit   uint64  // queries to send; 0: unlimited
	cursor  int     // first query index
}

// split divides the totals evenly over n parts.
func split(cfg *Config, nq, n int) []share {
	total := uint64(0)
	if cfg.Runs > 0 {
		total = uint64(cfg.Runs) * uint64(nq)
	}
	out := make([]share, n)
	for i := range out {
		s := &out[i]
		s.clients = cfg.Clients / n
		if i < cfg.Clients%n {
			s.clients++
		}
		s.window = cfg.MaxOutstanding / n
		if i < cfg.MaxOutstanding%n {
			s.window++
		}
		s.window = max(s.window, 1)
		s.qps = cfg.MaxQPS / float64(n)
		if total > 0 {
			s.limit = total / uint64(n)
			if uint64(i) < total%uint64(n) {
				s.limit++
			}
		}
		s.cursor = i * nq / n
	}
	return out
}

// perSocketWindow divides a loop's window over its sockets.
func perSocketWindow(window, sockets, i int) int {
	w := window / sockets
	if i < window%sockets {
		w++
	}
	return w
}

// pacer enforces a maximum send rate against absolute time: a loop that
// wakes late catches up (at most a batch per socket per round), so the
// long-run rate stays exact even on a loaded machine.
type pacer struct {
	perNs float64 // queries per nanosecond; 0: unlimited
}

func newPacer(qps float64) pacer {
	if qps <= 0 {
		return pacer{}
	}
	return pacer{perNs: qps / 1e9}
}

// budget is how many queries may be sent at now given sent so far.
func (p pacer) budget(now int64, sent uint64) int {
	if p.perNs == 0 {
		return 1 << 30
	}
	allowed := int64(float64(now)*p.perNs) + 1 - int64(sent)
	if allowed < 0 {
		return 0
	}
	return int(min(allowed, 1<<30))
}

// nextAt is when the next query may be sent, in ns since start.
func (p pacer) nextAt(sent uint64) int64 {
	return int64(float64(sent) / p.perNs)
}

// loopEnv is what every engine loop needs.
type loopEnv struct {
	cfg      *Config
	wire     *wireSet
	base     time.Time
	deadline int64 // ns since base; 0: none
	stop     *atomic.Bool
	live     *live
}

func (e *loopEnv) now() int64 { return int64(time.Since(e.base)) }

// Run executes a load run. It returns an error only when the run could not
// be set up or an unexpected socket error stopped it; lost queries are
// results, not errors.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := normalize(&cfg); err != nil {
		return nil, err
	}
	wire, err := encodeAll(cfg.Queries, cfg.Encode)
	if err != nil {
		return nil, err
	}
	var stop atomic.Bool
	unhook := context.AfterFunc(ctx, func() { stop.Store(true) })
	defer unhook()

	type part struct {
		share
		c    Counters
		live live
		err  error
		end  int64
	}
	var parts []*part
	var runOne func(env *loopEnv, p *part)
	switch {
	case cfg.TCP:
		for _, s := range split(&cfg, wire.n(), cfg.Clients) {
			parts = append(parts, &part{share: s})
		}
		runOne = func(env *loopEnv, p *part) { p.end, p.err = runTCP(env, p.share, &p.c) }
	case cfg.Engine == EngineXnet:
		for _, s := range split(&cfg, wire.n(), cfg.Clients) {
			parts = append(parts, &part{share: s})
		}
		runOne = func(env *loopEnv, p *part) { p.end, p.err = runXnet(env, p.share, &p.c) }
	default:
		for _, s := range split(&cfg, wire.n(), cfg.Threads) {
			parts = append(parts, &part{share: s})
		}
		runOne = func(env *loopEnv, p *part) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			p.end, p.err = runMmsg(env, p.share, &p.c)
		}
	}

	base := time.Now()
	var deadline int64
	if cfg.Duration > 0 {
		deadline = int64(cfg.Duration)
	}
	var wg sync.WaitGroup
	for _, p := range parts {
		env := &loopEnv{cfg: &cfg, wire: wire, base: base, deadline: deadline, stop: &stop, live: &p.live}
		wg.Go(func() { runOne(env, p) })
	}
	done := make(chan struct{})
	if cfg.Progress != nil {
		var pwg sync.WaitGroup
		pwg.Go(func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					var s Snapshot
					s.Elapsed = time.Since(base)
					for _, p := range parts {
						s.Sent += p.live.sent.Load()
						s.Completed += p.live.completed.Load()
						s.Lost += p.live.lost.Load()
					}
					cfg.Progress(s)
				}
			}
		})
		defer pwg.Wait()
	}
	wg.Wait()
	close(done)

	res := &Result{Config: cfg, Interrupted: ctx.Err() != nil}
	var errs []error
	seen := map[string]bool{} // every socket tends to fail the same way
	var end int64
	for _, p := range parts {
		res.Merge(&p.c)
		end = max(end, p.end)
		if p.err != nil && !seen[p.err.Error()] {
			seen[p.err.Error()] = true
			errs = append(errs, p.err)
		}
	}
	res.RunTime = time.Duration(end)
	return res, errors.Join(errs...)
}

// normalize fills defaults and rejects impossible settings.
func normalize(cfg *Config) error {
	if len(cfg.Queries) == 0 {
		return errors.New("no queries")
	}
	if !cfg.Server.IsValid() {
		return errors.New("no server address")
	}
	if cfg.Runs < 0 || cfg.Duration < 0 || cfg.MaxQPS < 0 || cfg.Timeout < 0 {
		return errors.New("negative limit")
	}
	if cfg.Runs == 0 && cfg.Duration == 0 {
		cfg.Runs = 1 // dnsperf: without -l, go through the file once
	}
	if cfg.MaxOutstanding <= 0 {
		cfg.MaxOutstanding = 256
	}
	if cfg.Clients <= 0 {
		cfg.Clients = 4
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 64
	}
	cfg.Batch = min(cfg.Batch, 1024)
	if cfg.Threads <= 0 {
		cfg.Threads = 1
	}
	cfg.Threads = min(cfg.Threads, cfg.Clients)
	// Each socket's IDs must stay unique with room for one batch.
	if maxOut := cfg.Clients * (65535 - cfg.Batch); cfg.MaxOutstanding > maxOut {
		return fmt.Errorf("-q %d too large for %d sockets (max %d)", cfg.MaxOutstanding, cfg.Clients, maxOut)
	}
	if cfg.MaxOutstanding < cfg.Clients {
		cfg.Clients = cfg.MaxOutstanding // a socket with no window would idle
		cfg.Threads = min(cfg.Threads, cfg.Clients)
	}
	switch cfg.Engine {
	case "":
		cfg.Engine = EngineMmsg
	case EngineMmsg, EngineXnet:
	default:
		return fmt.Errorf("unknown engine %q (want %s or %s)", cfg.Engine, EngineMmsg, EngineXnet)
	}
	return nil
}
