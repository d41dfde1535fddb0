package cache

import "slices"

// Ways is the slots of a Set.
const Ways = 4

// Set is the bookkeeping of one set of a four-way set-associative cache
// owned by one goroutine, as Responses and the authoritative engine's
// response cache (auth.Cache) are: the hash of the key each slot holds,
// when each was last used (a tick of the set's clock), and the last four
// keys that missed in it. auth.Cache admits a key the second time it
// misses (Admit), so that one-off keys cost a hash and a few compares and
// cannot push out what repeats (Responses stores at once: its responses
// each took a resolution, see there); a key goes into its own slot, else an empty one,
// else the one unused longest (Victim). Clients and benchmarks repeat
// their names in cycles, and a cycle of more names than a set has ways
// misses every time under LRU: with 2000 repeating names in 4096 slots,
// two ways per set lost a quarter of them that way, one way a third.
type Set struct {
	// Hash is the hash of the key each slot holds; 0: empty.
	Hash [Ways]uint64
	// Way, Touch and Victim read and write only these first 52 bytes:
	// within one cache line when the Set starts one.
	used     [Ways]uint32
	clock    uint32
	seen     [Ways]uint64
	seenNext uint8
}

// Way returns the slot holding hash h, or -1.
func (s *Set) Way(h uint64) int {
	for w := range s.Hash {
		if s.Hash[w] == h {
			return w
		}
	}
	return -1
}

// Touch records a use of slot w.
func (s *Set) Touch(w int) {
	s.clock++
	s.used[w] = s.clock
}

// Admit reports whether the key of hash h missed in the set before, and
// remembers it as a miss if not: only then is it worth storing.
func (s *Set) Admit(h uint64) bool {
	if slices.Contains(s.seen[:], h) {
		return true
	}
	s.seen[s.seenNext] = h
	s.seenNext = (s.seenNext + 1) % Ways
	return false
}

// Victim returns the slot to store the key of hash h in: its own, else an
// empty one, else the one unused longest (ages are differences of ticks,
// right across the clock's wrap). Fill then takes it.
func (s *Set) Victim(h uint64) int {
	s.clock++
	w, age := 0, uint32(0)
	for j := 0; j < Ways; j++ {
		if s.Hash[j] == h || s.Hash[j] == 0 {
			return j
		}
		if a := s.clock - s.used[j]; a > age {
			w, age = j, a
		}
	}
	return w
}

// Oldest returns how long ago, in ticks of the set's clock, its least
// recently used slot was used.
func (s *Set) Oldest() uint32 {
	age := uint32(0)
	for j := range s.used {
		age = max(age, s.clock-s.used[j])
	}
	return age
}

// Fill records that slot w now holds the key of hash h (never 0), used
// now.
func (s *Set) Fill(w int, h uint64) {
	s.Hash[w] = h
	s.used[w] = s.clock
}
