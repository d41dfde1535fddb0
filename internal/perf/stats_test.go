package perf

import (
	"math"
	"testing"
	"time"
)

func TestHistIndexBounds(t *testing.T) {
	// Every value must fall inside its bucket, and buckets must be ordered.
	prev := -1
	for _, v := range []uint64{0, 1, 127, 128, 129, 255, 256, 257, 1000, 1 << 20, 123456789, 5e9, 1 << 62, math.MaxInt64} {
		i := histIndex(v)
		if i < prev {
			t.Errorf("index %d for %d below %d", i, v, prev)
		}
		prev = i
		lo, w := histBounds(i)
		if v < lo || v-lo >= w {
			t.Errorf("value %d in bucket %d [%d, +%d)", v, i, lo, w)
		}
		if i >= histBuckets {
			t.Fatalf("index %d out of range for %d", i, v)
		}
	}
}

func TestQuantileKnownInputs(t *testing.T) {
	var h Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(int64(i) * int64(time.Microsecond))
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{
		{0.5, 500 * time.Microsecond},
		{0.9, 900 * time.Microsecond},
		{0.99, 990 * time.Microsecond},
		{0.999, 999 * time.Microsecond},
		{1, 1000 * time.Microsecond},
		{0, 1 * time.Microsecond},
	} {
		got := h.Quantile(tc.q)
		if rel := math.Abs(float64(got-tc.want)) / float64(tc.want); rel > 0.008 {
			t.Errorf("q%.3f = %v, want %v (rel err %.4f)", tc.q, got, tc.want, rel)
		}
	}
	// Small values are exact.
	var e Histogram
	for _, v := range []int64{5, 1, 3, 2, 4} {
		e.Record(v)
	}
	if got := e.Quantile(0.5); got != 3 {
		t.Errorf("median of 1..5 = %d, want 3", got)
	}
	if got := e.Quantile(0.8); got != 4 {
		t.Errorf("p80 of 1..5 = %d, want 4", got)
	}
	var empty Histogram
	if empty.Quantile(0.5) != 0 {
		t.Error("empty histogram quantile not 0")
	}
}

func TestLatencyStats(t *testing.T) {
	// Samples 2,4,4,4,5,5,7,9 ms: mean 5 ms, sample stddev sqrt(32/7) ms.
	var l LatencyStats
	for _, ms := range []int64{2, 4, 4, 4, 5, 5, 7, 9} {
		l.Record(ms * int64(time.Millisecond))
	}
	if math.Abs(l.Mean()-0.005) > 1e-12 {
		t.Errorf("mean %v, want 0.005", l.Mean())
	}
	want := math.Sqrt(32.0/7) * 1e-3
	if math.Abs(l.StdDev()-want) > 1e-12 {
		t.Errorf("stddev %v, want %v", l.StdDev(), want)
	}
	if l.Min != 2e6 || l.Max != 9e6 {
		t.Errorf("min %d max %d", l.Min, l.Max)
	}
	// Merging two halves gives the same result.
	var a, b LatencyStats
	for i, ms := range []int64{2, 4, 4, 4, 5, 5, 7, 9} {
		if i%2 == 0 {
			a.Record(ms * 1e6)
		} else {
			b.Record(ms * 1e6)
		}
	}
	a.Merge(&b)
	if a.N != 8 || math.Abs(a.StdDev()-want) > 1e-12 || a.Min != 2e6 || a.Max != 9e6 {
		t.Errorf("merged: n %d stddev %v min %d max %d", a.N, a.StdDev(), a.Min, a.Max)
	}
	if a.Hist.Quantile(0.5) != l.Hist.Quantile(0.5) {
		t.Error("merged histogram differs")
	}
	var one LatencyStats
	one.Record(1)
	if one.StdDev() != 0 {
		t.Error("stddev of one sample not 0")
	}
}

func TestPacerBudget(t *testing.T) {
	p := newPacer(1000) // 1 per ms
	if got := p.budget(0, 0); got != 1 {
		t.Errorf("budget at 0: %d", got)
	}
	if got := p.budget(int64(500*time.Microsecond), 1); got != 0 {
		t.Errorf("budget at 0.5ms after 1 sent: %d", got)
	}
	if got := p.budget(int64(time.Millisecond), 1); got != 1 {
		t.Errorf("budget at 1ms after 1 sent: %d", got)
	}
	if got := p.budget(int64(10*time.Millisecond), 1); got != 10 {
		t.Errorf("catch-up budget at 10ms after 1 sent: %d", got)
	}
	if at := p.nextAt(5); at != int64(5*time.Millisecond) {
		t.Errorf("nextAt(5) = %d", at)
	}
	var u pacer
	if u.budget(0, 1e9) < 1<<20 {
		t.Error("unlimited pacer limited")
	}
}

func TestLatencyQuantileClamped(t *testing.T) {
	var l LatencyStats
	l.Record(931_000) // one sample: every quantile is that sample exactly
	for _, q := range []float64{0, 0.5, 0.999, 1} {
		if got := l.Quantile(q); got != 931*time.Microsecond {
			t.Errorf("q%v = %v, want 931us", q, got)
		}
	}
}
