package zone

import (
	"iter"
	"reflect"
	"unsafe"
)

// ByOrigin maps zones' origins (any one form: wire or presentation, as
// the user chooses) to values, immutable once built: the copy-on-write
// map that a Set and the settings published beside it (ACLs, NOTIFY
// targets) are kept in. Its keys are spread over SetShards maps by
// ShardOf, so that With copies only the shards its changes fall in: a
// zone added beside 100,000 copies about 400 entries and the shard
// table, not 100,000 entries. A shard's map is never written once in a
// ByOrigin, and versions share the shards they have in common. The
// zero ByOrigin, and a nil one, are empty.
type ByOrigin[V any] struct {
	shards [SetShards]map[string]V
	n      int
}

// shardOfKey is ShardOf of a key.
func shardOfKey(key string) int {
	return ShardOf(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// Get returns the value of key, and whether it has one.
func (b *ByOrigin[V]) Get(key string) (V, bool) {
	if b == nil {
		var zero V
		return zero, false
	}
	v, ok := b.shards[shardOfKey(key)][key]
	return v, ok
}

// GetBytes is Get of the key's bytes, without making a string of them.
func (b *ByOrigin[V]) GetBytes(key []byte) V {
	if b == nil {
		var zero V
		return zero
	}
	return b.shards[ShardOf(key)][string(key)]
}

// Len is the number of keys.
func (b *ByOrigin[V]) Len() int {
	if b == nil {
		return 0
	}
	return b.n
}

// With returns b with changes made: each key given its value, or
// removed when drop (nil: never) reports its value as none. b is
// unchanged, and shares with the result every shard no change falls
// in.
func (b *ByOrigin[V]) With(changes map[string]V, drop func(V) bool) *ByOrigin[V] {
	next := &ByOrigin[V]{}
	if b != nil {
		*next = *b
	}
	copied := [SetShards]bool{}
	for key, v := range changes {
		i := shardOfKey(key)
		if !copied[i] {
			copied[i] = true
			m := make(map[string]V, len(next.shards[i])+1)
			for k, v := range next.shards[i] {
				m[k] = v
			}
			next.shards[i] = m
		}
		before := len(next.shards[i])
		if drop != nil && drop(v) {
			delete(next.shards[i], key)
		} else {
			next.shards[i][key] = v
		}
		next.n += len(next.shards[i]) - before
	}
	return next
}

// SameShard reports whether b and o hold shard i in common (the same
// entries: a shard With did not copy). Nil is empty.
func (b *ByOrigin[V]) SameShard(o *ByOrigin[V], i int) bool {
	var x, y map[string]V
	if b != nil {
		x = b.shards[i]
	}
	if o != nil {
		y = o.shards[i]
	}
	return len(x) == len(y) && (len(x) == 0 || reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer())
}

// Shard yields the entries of shard i, in no particular order.
func (b *ByOrigin[V]) Shard(i int) iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		if b == nil {
			return
		}
		for k, v := range b.shards[i] {
			if !yield(k, v) {
				return
			}
		}
	}
}

// All yields every entry, in no particular order.
func (b *ByOrigin[V]) All() iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		if b == nil {
			return
		}
		for _, m := range b.shards {
			for k, v := range m {
				if !yield(k, v) {
					return
				}
			}
		}
	}
}
