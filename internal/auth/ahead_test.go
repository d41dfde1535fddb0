package auth

import (
	"bytes"
	"testing"
)

// TestAheadMatchesAnswer: a query started ahead, stepped and answered
// gets byte for byte what Answer gives, for every answer kind and EDNS
// variant of the cache test, with the lookups of a whole batch in flight
// at once as the server runs them, and with steps left out.
func TestAheadMatchesAnswer(t *testing.T) {
	r := cacheResponder(t)
	pkts := cacheQueries(t)
	var plain, ahead Scratch
	out1 := make([]byte, 0, BufferSize)
	out2 := make([]byte, 0, BufferSize)
	as := make([]Ahead, len(pkts))
	for steps := 0; steps <= 3; steps++ {
		for i, pkt := range pkts {
			r.Start(&as[i], pkt)
		}
		for j := 0; j < steps; j++ {
			for i := range as {
				as[i].Step()
			}
		}
		answered := 0
		for i, pkt := range pkts {
			want := r.Answer(&plain, pkt, out1, false)
			got := r.AnswerAhead(&ahead, &as[i], pkt, out2)
			if !bytes.Equal(got, want) {
				t.Fatalf("steps %d: query % x\nahead  % x\nAnswer % x", steps, pkt, got, want)
			}
			if got != nil {
				answered++
			}
		}
		if answered < len(pkts)-2 {
			t.Fatalf("steps %d: %d of %d queries answered", steps, answered, len(pkts))
		}
	}
}

func TestAheadZeroAllocs(t *testing.T) {
	r := cacheResponder(t)
	pkts := cacheQueries(t)
	var s Scratch
	var a Ahead
	out := make([]byte, 0, BufferSize)
	if n := testing.AllocsPerRun(20, func() {
		for _, pkt := range pkts {
			r.Start(&a, pkt)
			a.Step()
			a.Step()
			r.AnswerAhead(&s, &a, pkt, out)
		}
	}); n != 0 {
		t.Errorf("%v allocations per round of queries started ahead, want 0", n)
	}
}
