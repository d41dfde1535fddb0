package metrics

import (
	"context"
	"sync"
	"time"
)

// historyLen is how many seconds of query rates the status page's
// chart gets: ten minutes, a ring of fixed size.
const historyLen = 600

// topShown is how many of the busiest names and clients Status gives.
const topShown = 10

// RatePoint is one second (or the time between two ticks) of the
// query-rate history: when it ended (Unix milliseconds), and the
// queries answered and those answered with an RCODE other than NOERROR,
// per second over it.
type RatePoint struct {
	T      int64   `json:"t"`
	QPS    float64 `json:"qps"`
	Errors float64 `json:"errors"`
}

// history is the ring of rate points kept by Tick.
type history struct {
	mu     sync.Mutex
	points [historyLen]RatePoint
	n      int // points kept, at most historyLen
	next   int // where the next point goes
	// last is the previous tick's totals; ticks counts them, for the
	// sampler's decay.
	last                time.Time
	lastQueries, lastOK uint64
	ticks               int
}

// Tick samples the counters at now: a point of the query-rate history
// from the queries answered since the last tick (the first tick only
// sets the start), the workers' sampled queries into the busiest names
// and clients, and every minute the halving of their counts. Run calls
// it every second; it reads the shards' published counters, never the
// query path.
func (s *Set) Tick(now time.Time) {
	t := s.sum()
	var queries, ok uint64
	for srv := range t.c {
		for i := 0; i < 2*numQtypes*numRcodes; i++ {
			v := t.c[srv][offQueries+i]
			queries += v
			if i%numRcodes == 0 {
				ok += v
			}
		}
	}
	s.mu.Lock()
	shards := append([]*Shard(nil), s.shards...)
	s.mu.Unlock()
	s.sampler.collect(shards)

	h := &s.history
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.last.IsZero() {
		secs := now.Sub(h.last).Seconds()
		if secs <= 0 {
			return
		}
		dq, dok := queries-h.lastQueries, ok-h.lastOK
		h.points[h.next] = RatePoint{T: now.UnixMilli(), QPS: round1(float64(dq) / secs), Errors: round1(float64(dq-dok) / secs)}
		h.next = (h.next + 1) % historyLen
		h.n = min(h.n+1, historyLen)
	}
	h.last, h.lastQueries, h.lastOK = now, queries, ok
	if h.ticks++; h.ticks%60 == 0 {
		s.sampler.decay()
	}
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

// rates returns the history, oldest first.
func (h *history) rates() []RatePoint {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]RatePoint, 0, h.n)
	for i := range h.n {
		out = append(out, h.points[(h.next-h.n+i+historyLen)%historyLen])
	}
	return out
}

// Run calls Tick every second until ctx ends.
func (s *Set) Run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	s.Tick(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			s.Tick(now)
		}
	}
}

// Status is what the status page shows (/status.json): the counters'
// Snapshot, the query rate over the last minutes, and the busiest names
// and clients among the sampled queries.
type Status struct {
	Snapshot
	// Rate is the queries per second, a point a second (Tick), oldest
	// first, for up to ten minutes.
	Rate []RatePoint `json:"rate"`
	// TopNames and TopClients are the busiest query names and clients
	// among the sampled queries (one in SampleEvery), busiest first;
	// Sampled is how many were sampled since the start.
	TopNames    []Top  `json:"top_names"`
	TopClients  []Top  `json:"top_clients"`
	SampleEvery int    `json:"sample_every"`
	Sampled     uint64 `json:"sampled"`
	// Resolver: a resolver runs (its cache hits and misses mean
	// something).
	Resolver bool `json:"resolver"`
}

// Status returns the status page's data now.
func (s *Set) Status() Status {
	st := Status{Snapshot: s.Snapshot(), Rate: s.history.rates(), SampleEvery: SampleEvery}
	st.TopNames, st.TopClients = s.sampler.top(topShown)
	s.sampler.mu.Lock()
	st.Sampled = s.sampler.total
	s.sampler.mu.Unlock()
	s.mu.Lock()
	for _, m := range s.shards {
		st.Resolver = st.Resolver || m.server == Resolver
	}
	s.mu.Unlock()
	if st.TopNames == nil {
		st.TopNames = []Top{}
	}
	if st.TopClients == nil {
		st.TopClients = []Top{}
	}
	return st
}
