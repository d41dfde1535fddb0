package zone

import (
	"math/rand/v2"
	"sort"
	"testing"
)

// TestUpperBound checks the head-word search against a plain scan, on keys
// built to tie in their first 8 bytes, to be shorter than 8 bytes, and to
// differ only in a zero byte against padding.
func TestUpperBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{0, 1, 'a', 'b', 'z', 0xff}
	randKey := func() []byte {
		k := make([]byte, rng.IntN(14))
		for i := range k {
			k[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return k
	}
	for round := 0; round < 200; round++ {
		keys := make([][]byte, 1+rng.IntN(40))
		for i := range keys {
			keys[i] = randKey()
		}
		sort.Slice(keys, func(a, b int) bool { return string(keys[a]) < string(keys[b]) })
		heads := make([]uint64, len(keys))
		for i, k := range keys {
			heads[i] = keyHead(k)
		}
		for probe := 0; probe < 50; probe++ {
			key := randKey()
			if probe%5 == 0 {
				key = keys[rng.IntN(len(keys))]
			}
			want := 0
			for want < len(keys) && string(keys[want]) <= string(key) {
				want++
			}
			if got := upperBound(heads, keys, key); got != want {
				t.Fatalf("upperBound(%q) = %d, want %d; keys %q", key, got, want, keys)
			}
		}
	}
}
