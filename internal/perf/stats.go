package perf

import (
	"math"
	"math/bits"
	"time"
)

// Histogram records durations in nanoseconds in log-linear buckets: exact
// below 128 ns, then 128 sub-buckets per power of two, so any percentile is
// within 0.8% of the true value. Recording is a few integer operations and
// one increment, cheap enough for the receive loop.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
}

const (
	histSubBits = 7
	histSub     = 1 << histSubBits // sub-buckets per power of two
	// Values up to 2^63 ns fit: groups 0..(63-histSubBits).
	histBuckets = (64 - histSubBits + 1) * histSub
)

// histIndex maps a value to its bucket.
func histIndex(v uint64) int {
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits - 1 // v>>shift is in [histSub, 2*histSub)
	return (shift+1)*histSub + int(v>>uint(shift)) - histSub
}

// histBounds returns the lowest value and the width of bucket i.
func histBounds(i int) (lo, width uint64) {
	if i < histSub {
		return uint64(i), 1
	}
	shift := uint(i/histSub - 1)
	mant := uint64(i%histSub + histSub)
	return mant << shift, 1 << shift
}

// Record adds one duration in nanoseconds; negative values count as zero.
func (h *Histogram) Record(ns int64) {
	if ns < 0 {
		ns = 0
	}
	h.counts[histIndex(uint64(ns))]++
	h.n++
}

// Merge adds all of o's samples to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// Quantile returns the q-quantile (0 <= q <= 1) as the midpoint of the
// bucket holding the sample of rank ceil(q*n) (nearest-rank definition);
// zero when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	if rank > h.n {
		rank = h.n
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, w := histBounds(i)
			return time.Duration(lo + (w-1)/2)
		}
	}
	return 0 // unreachable: counts sum to n
}

// LatencyStats accumulates per-response latency: count, sum, sum of
// squares, extremes and the histogram.
type LatencyStats struct {
	N     uint64
	Sum   float64 // seconds
	SumSq float64 // seconds squared
	Min   int64   // ns
	Max   int64   // ns
	Hist  Histogram
}

// Record adds one latency in nanoseconds.
func (l *LatencyStats) Record(ns int64) {
	if ns < 0 {
		ns = 0
	}
	if l.N == 0 || ns < l.Min {
		l.Min = ns
	}
	if ns > l.Max {
		l.Max = ns
	}
	l.N++
	s := float64(ns) * 1e-9
	l.Sum += s
	l.SumSq += s * s
	l.Hist.Record(ns)
}

// Merge adds o's samples to l.
func (l *LatencyStats) Merge(o *LatencyStats) {
	if o.N == 0 {
		return
	}
	if l.N == 0 || o.Min < l.Min {
		l.Min = o.Min
	}
	if o.Max > l.Max {
		l.Max = o.Max
	}
	l.N += o.N
	l.Sum += o.Sum
	l.SumSq += o.SumSq
	l.Hist.Merge(&o.Hist)
}

// Quantile is the histogram quantile clamped to the exact extremes, so a
// bucket midpoint never reports more than the true maximum.
func (l *LatencyStats) Quantile(q float64) time.Duration {
	if l.N == 0 {
		return 0
	}
	return min(max(l.Hist.Quantile(q), time.Duration(l.Min)), time.Duration(l.Max))
}

// Mean is the average latency in seconds.
func (l *LatencyStats) Mean() float64 {
	if l.N == 0 {
		return 0
	}
	return l.Sum / float64(l.N)
}

// StdDev is the sample standard deviation in seconds, computed as dnsperf
// does: sqrt((sumsq - sum^2/n) / (n-1)).
func (l *LatencyStats) StdDev() float64 {
	if l.N < 2 {
		return 0
	}
	n := float64(l.N)
	v := (l.SumSq - l.Sum*l.Sum/n) / (n - 1)
	if v < 0 {
		v = 0 // rounding when all samples are equal
	}
	return math.Sqrt(v)
}

// Counters are the per-run totals that every engine keeps.
type Counters struct {
	Sent       uint64
	Completed  uint64
	Lost       uint64 // timed out or still outstanding at the end
	Unexpected uint64 // responses matching no outstanding query
	Malformed  uint64 // datagrams too short to be DNS
	SendErrors uint64 // sends refused by the kernel (counted as not sent)
	GSOSends   uint64 // UDP GSO super-datagrams of more than one query sent
	Reconnects uint64 // TCP connections re-established after the server closed one
	SendCalls  uint64 // sendmmsg/WriteBatch calls (UDP), for tuning batching
	RecvCalls  uint64 // recvmmsg/ReadBatch calls that returned data
	Waits      uint64 // sleeps in ppoll (or blocking reads) with nothing to do
	Rcodes     [16]uint64
	ReqBytes   uint64
	RespBytes  uint64
	Latency    LatencyStats
}

// Merge adds o to c.
func (c *Counters) Merge(o *Counters) {
	c.Sent += o.Sent
	c.Completed += o.Completed
	c.Lost += o.Lost
	c.Unexpected += o.Unexpected
	c.Malformed += o.Malformed
	c.SendErrors += o.SendErrors
	c.GSOSends += o.GSOSends
	c.Reconnects += o.Reconnects
	c.SendCalls += o.SendCalls
	c.RecvCalls += o.RecvCalls
	c.Waits += o.Waits
	for i := range c.Rcodes {
		c.Rcodes[i] += o.Rcodes[i]
	}
	c.ReqBytes += o.ReqBytes
	c.RespBytes += o.RespBytes
	c.Latency.Merge(&o.Latency)
}
