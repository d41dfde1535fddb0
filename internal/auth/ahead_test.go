package auth

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/tern-dns/tern/internal/wire"
)

// TestAheadMatchesAnswer: queries started ahead, stepped and answered get
// byte for byte what Answer gives, for every answer kind and EDNS variant
// of the cache test, with a whole batch in flight at once as the server
// runs them, with and without a response cache (over rounds, so that the
// cache is filled and then hit), and with any number of steps.
func TestAheadMatchesAnswer(t *testing.T) {
	r := cacheResponder(t)
	pkts := cacheQueries(t)
	out1 := make([]byte, 0, BufferSize)
	out2 := make([]byte, 0, BufferSize)
	as := make([]Ahead, len(pkts))
	for _, cached := range []bool{false, true} {
		var plain, ahead Scratch
		var c *Cache
		if cached {
			c = NewCache(DefaultCacheSize)
			ahead.UseCache(c)
		}
		for round := 0; round < 3; round++ {
			for steps := 0; steps <= Steps; steps++ {
				for i, pkt := range pkts {
					r.Start(&ahead, &as[i], pkt)
				}
				for j := 0; j < steps; j++ {
					for i := range as {
						r.Step(&ahead, &as[i])
					}
				}
				answered := 0
				for i, pkt := range pkts {
					want := r.Answer(&plain, pkt, out1, false)
					got := r.AnswerAhead(&ahead, &as[i], pkt, out2)
					if !bytes.Equal(got, want) {
						t.Fatalf("cache %v, round %d, steps %d: query % x\nahead  % x\nAnswer % x", cached, round, steps, pkt, got, want)
					}
					if got != nil {
						answered++
					}
				}
				if answered < len(pkts)-2 {
					t.Fatalf("cache %v, steps %d: %d of %d queries answered", cached, steps, answered, len(pkts))
				}
			}
		}
		if cached {
			// Every distinct key (question and EDNS variant; ID, RD and
			// CD are not part of it) is stored.
			keys := map[string]bool{}
			for _, pkt := range pkts {
				var ps Scratch
				if res, _ := ps.q.Parse(pkt); res == wire.Answer && ps.q.Opcode == wire.OpcodeQuery {
					keys[fmt.Sprint(pkt[wire.HeaderLen:ps.q.QuestionEnd], variant(&ps.q, r.udpLimit(&ps.q)))] = true
				}
			}
			if c.used() != len(keys) {
				t.Errorf("%d responses stored after three rounds, want %d", c.used(), len(keys))
			}
		}
	}
}

func TestAheadZeroAllocs(t *testing.T) {
	r := cacheResponder(t)
	pkts := cacheQueries(t)
	var s Scratch
	s.UseCache(NewCache(DefaultCacheSize))
	var a Ahead
	out := make([]byte, 0, BufferSize)
	if n := testing.AllocsPerRun(20, func() {
		for _, pkt := range pkts {
			r.Start(&s, &a, pkt)
			for j := 0; j < Steps; j++ {
				r.Step(&s, &a)
			}
			r.AnswerAhead(&s, &a, pkt, out)
		}
	}); n != 0 {
		t.Errorf("%v allocations per round of queries started ahead, want 0", n)
	}
}
