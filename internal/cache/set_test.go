package cache

import "testing"

// TestSet: a key is admitted on its second miss, goes to its own slot,
// else an empty one, else the one unused longest.
func TestSet(t *testing.T) {
	var s Set
	if s.Admit(7) {
		t.Fatal("admitted on the first miss")
	}
	if !s.Admit(7) {
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
		s.Admit(h)
	}
	if s.Admit(100) {
		t.Error("the fifth miss back still remembered")
	}
}
