package cache

import "testing"

// TestSet: a key is admitted on its second miss, goes to its own slot,
// else an empty one, else the one unused longest.
func TestSet(t *testing.T) {
	var s Set
	if Admit(&s, &s, 7, 1) {
		t.Fatal("admitted on the first miss")
	}
	if !Admit(&s, &s, 7, 2) {
		t.Fatal("not admitted on the second miss")
	}
	// Four keys fill the four slots in order.
	for h := uint64(1); h <= Ways; h++ {
		w := s.Victim(h)
		if w != int(h-1) {
			t.Fatalf("key %d into slot %d, want %d", h, w, h-1)
		}
		s.Fill(w, h)
	}
	// Use every slot but the third: it is the victim.
	for _, h := range []uint64{1, 2, 4} {
		s.Touch(s.Way(h))
	}
	if w := s.Victim(9); w != 2 {
		t.Errorf("victim %d, want 2 (unused longest)", w)
	}
	// A key already held goes back into its own slot.
	if w := s.Victim(4); w != 3 {
		t.Errorf("key 4 into slot %d, want its own 3", w)
	}
	if s.Way(99) != -1 {
		t.Error("a key never stored found")
	}
	// Admission remembers the last four misses only.
	for h := uint64(100); h < 100+Ways+1; h++ {
		Admit(&s, &s, h<<33, uint32(h))
	}
	if Admit(&s, &s, 100<<33, 200) {
		t.Error("the fifth miss back still remembered")
	}
}

// TestTwoSets: a key's two sets. A new key goes to the set holding it,
// else the one with more empty slots (the first on a tie), else the one
// whose least recently used slot is older; a miss is remembered in
// either, in the one remembering fewer, else the one whose next place to
// reuse is older.
func TestTwoSets(t *testing.T) {
	ch, sets := NewChoices(64)
	if sets != 16 {
		t.Fatalf("%d sets for 64 slots, want 16", sets)
	}
	if h := uint64(0xB)<<60 | 0x6<<1 | 1; ch.First(h) != 0xB || ch.Second(h) != 0x6 {
		t.Errorf("hash %#x: sets %d and %d, want 11 and 6", h, ch.First(h), ch.Second(h))
	}
	if _, sets := NewChoices(1); sets != 1 {
		t.Errorf("%d sets for one slot, want 1", sets)
	}

	var a, b Set
	fill := func(s *Set, hs ...uint64) {
		for _, h := range hs {
			s.Fill(s.Victim(h), h)
		}
	}
	if PlaceSecond(&a, &b, 1) {
		t.Error("both empty: placed in the second")
	}
	fill(&a, 3)
	if !PlaceSecond(&a, &b, 1) {
		t.Error("the second emptier: placed in the first")
	}
	fill(&b, 5, 7)
	if PlaceSecond(&a, &b, 1) {
		t.Error("the first emptier: placed in the second")
	}
	if !PlaceSecond(&a, &b, 5) {
		t.Error("held in the second: placed in the first")
	}
	fill(&a, 9, 11, 13)
	fill(&b, 15, 17)
	// Both full: b's least recently used slot (5, used 12 ticks of its
	// clock ago) is older than a's (3, 3 ticks ago).
	for i := 0; i < 3; i++ {
		for _, h := range []uint64{7, 15, 17} {
			b.Touch(b.Way(h))
		}
	}
	for _, h := range []uint64{3, 9, 11, 13} {
		a.Touch(a.Way(h))
	}
	if !PlaceSecond(&a, &b, 1) {
		t.Errorf("the second's oldest (%d ticks) older than the first's (%d): placed in the first", b.Oldest(), a.Oldest())
	}

	var c, d Set
	tick := uint32(0)
	miss := func(h uint64) bool { tick++; return Admit(&c, &d, h, tick) }
	// Five misses of distinct keys: the two sets remember all of them
	// (a set alone remembers four).
	for h := uint64(1); h <= 5; h++ {
		if miss(h << 33) {
			t.Fatalf("key %d admitted on its first miss", h)
		}
	}
	for h := uint64(1); h <= 5; h++ {
		if !miss(h << 33) {
			t.Errorf("key %d not admitted on its second miss", h)
		}
	}
	// Eight more distinct misses go to the set whose next place is
	// older, alternating: the first five were forgotten, nothing newer.
	for h := uint64(10); h < 18; h++ {
		miss(h << 33)
	}
	for h := uint64(1); h <= 5; h++ {
		if miss(h << 33) {
			t.Errorf("key %d still remembered after eight newer misses", h)
		}
	}
}
