package cache

// Ways is the slots of a Set.
const Ways = 4

// Way and remembers are written out for four ways: this fails to compile
// if Ways changes.
var _ = [1]struct{}{}[Ways-4]

// Set is the bookkeeping of one set of a four-way set-associative cache
// owned by one goroutine, as the authoritative engine's response cache
// (auth.Cache) is (Responses keeps the same rules in a set of its own,
// one cache line: respSet): the hash of the key each slot holds,
// when each was last used (a tick of the set's clock), and the last four
// keys that missed in it. A key has two sets (Choices): it is looked for
// in both, and a new one goes to the set PlaceSecond picks. auth.Cache admits a
// key the second time it misses (Admit), so that one-off keys cost a hash
// and a few compares and cannot push out what repeats (Responses stores
// at once: its responses each took a resolution, see there); in its set a
// key goes into its own slot, else an empty one, else the one unused
// longest (Victim). Clients and benchmarks repeat their names in cycles,
// and a cycle of more names than a set has ways misses every time under
// LRU: with 2000 repeating names in 4096 slots, two ways per set lost a
// quarter of them that way, one way a third; with one set per key, four
// ways still lost the 1-3% of a working set that fell five or more to a
// set.
type Set struct {
	// Hash is the hash of the key each slot holds; 0: empty.
	Hash [Ways]uint64
	// Way, Touch and Victim read and write only these first 52 bytes:
	// within one cache line when the Set starts one.
	used  [Ways]uint32
	clock uint32
	// seen is the last Ways misses (Admit): each key's fingerprint
	// (never 0: an empty place) and when, in ticks of the owner's
	// clock of misses; seenNext is the place written next.
	seen     [Ways]uint32
	seenAt   [Ways]uint32
	seenNext uint8
}

// Way returns the slot holding hash h, or -1.
func (s *Set) Way(h uint64) int {
	// Written out (Ways is 4): the loop cost a lookup that misses 36
	// instructions, this about 17 (callgrind, auth's BenchmarkCacheMiss).
	switch h {
	case s.Hash[0]:
		return 0
	case s.Hash[1]:
		return 1
	case s.Hash[2]:
		return 2
	case s.Hash[3]:
		return 3
	}
	return -1
}

// Touch records a use of slot w.
func (s *Set) Touch(w int) {
	s.clock++
	s.used[w] = s.clock
}

// Admit reports whether the key of hash h missed before in a or b, its
// two sets (Choices), and if not records the miss, at tick now of the
// owner's clock of misses: only a key that missed before is worth
// storing. A set remembers its last Ways misses; the miss goes to the set
// with a place never used (of two, the one remembering fewer), else to
// the one whose next place to reuse was written longer ago. With every miss remembered in its first set, the
// sets that five or more keys of a working set fall into forgot each of
// them before it came back, and none was ever stored (auth's
// TestCachePlacement).
func Admit(a, b *Set, h uint64, now uint32) bool {
	f := uint32(h>>32^h) | 1 // 0 marks a place never used
	if a.remembers(f) || b.remembers(f) {
		return true
	}
	s := a
	switch ea, eb := a.seen[a.seenNext] == 0, b.seen[b.seenNext] == 0; {
	case ea && eb:
		if b.seenNext < a.seenNext { // b remembers fewer
			s = b
		}
	case ea:
	case eb:
		s = b
	case now-b.seenAt[b.seenNext] > now-a.seenAt[a.seenNext]:
		s = b
	}
	s.seen[s.seenNext], s.seenAt[s.seenNext] = f, now
	s.seenNext = (s.seenNext + 1) % Ways
	return false
}

// remembers reports whether fingerprint f is among the set's last
// misses (written out, as Way).
func (s *Set) remembers(f uint32) bool {
	return s.seen[0] == f || s.seen[1] == f || s.seen[2] == f || s.seen[3] == f
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

// Choices locates a hash's two sets in a cache of a power of two of
// them (two-choice placement, as Responses and auth.Cache place keys):
// its first set is its top bits, its second its low bits (but bit 0,
// which the caches' hashes always set, 0 marking an empty slot). A
// lookup looks in the first, then the second; a new key goes where
// PlaceSecond says. With one set per hash the sets that five or more keys of
// a working set fall into miss on every round of them (LRU in a set of
// four); two choices make that all but impossible at the loads the
// caches run at (TestResponsesPlacement, auth's TestCachePlacement).
type Choices struct {
	shift uint   // the first set is h >> shift
	mask  uint64 // the second is h >> 1 & mask
}

// NewChoices returns the Choices of a cache of about size slots and its
// number of sets: a power of two, at least one, of Ways slots each.
func NewChoices(size int) (Choices, int) {
	sets, shift := 1, uint(64)
	for sets*Ways < size {
		sets *= 2
		shift--
	}
	return Choices{shift: shift, mask: uint64(sets - 1)}, sets
}

// First returns the index of the first set of hash h.
func (c Choices) First(h uint64) uint64 { return h >> c.shift }

// Second returns the index of the second set of hash h.
func (c Choices) Second(h uint64) uint64 { return h >> 1 & c.mask }

// PlaceSecond reports whether a new key of hash h goes to b, its second
// set, rather than to a, its first: the one that holds the hash already,
// else one with an empty slot (the first before the second), else the one
// whose least recently used slot was used longer ago (in ticks of each
// set's clock). Victim then picks the slot in it.
func PlaceSecond(a, b *Set, h uint64) bool {
	switch {
	case a.Way(h) >= 0:
		return false
	case b.Way(h) >= 0:
		return true
	}
	if ea, eb := a.empty(), b.empty(); ea+eb > 0 {
		return eb > ea
	}
	return b.Oldest() > a.Oldest()
}

// empty counts the set's empty slots.
func (s *Set) empty() int {
	n := 0
	for _, h := range s.Hash {
		if h == 0 {
			n++
		}
	}
	return n
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
