package zone

import (
	"fmt"
	"strings"
	"testing"
)

// TestSetWith: With adds, replaces and removes zones in a new Set, leaves
// the old one as it was, and shares with it every shard no change falls
// in; Get, Len and Zones agree; ShardOf spreads 10,000 origins alike at
// their start or their end over most shards.
func TestSetWith(t *testing.T) {
	mk := func(origin string) *Zone {
		z, err := Read(strings.NewReader("@ 300 SOA ns1 host 1 2 3 4 5\n@ 300 NS ns1\n"), origin, origin)
		if err != nil {
			t.Fatal(err)
		}
		return z
	}
	var zs []*Zone
	for i := range 300 {
		zs = append(zs, mk(fmt.Sprintf("z%d.test.", i)))
	}
	s := NewSet(zs...)
	if s.Len() != 300 || len(s.Zones()) != 300 {
		t.Fatalf("NewSet: %d, %d zones", s.Len(), len(s.Zones()))
	}
	added, replaced, removed := mk("new.test."), mk("z1.test."), zs[2]
	n := s.With(map[string]*Zone{string(added.Origin): added, string(replaced.Origin): replaced, string(removed.Origin): nil, "\x04none\x00": nil})
	if n.Len() != 300 || len(n.Zones()) != 300 {
		t.Errorf("With: %d, %d zones, want 300", n.Len(), len(n.Zones()))
	}
	if n.Get(added.Origin) != added || n.Get(replaced.Origin) != replaced || n.Get(removed.Origin) != nil || n.Get(zs[3].Origin) != zs[3] {
		t.Error("With: the new set serves the wrong zones")
	}
	if s.Get(added.Origin) != nil || s.Get(replaced.Origin) != zs[1] || s.Get(removed.Origin) != removed || s.Len() != 300 {
		t.Error("With changed the old set")
	}
	changed := map[int]bool{ShardOf(added.Origin): true, ShardOf(replaced.Origin): true, ShardOf(removed.Origin): true, ShardOf([]byte("\x04none\x00")): true}
	for i := range SetShards {
		if !changed[i] && !n.SameShard(s, i) {
			t.Errorf("shard %d copied without a change in it", i)
		}
	}
	if e := (*Set)(nil).With(map[string]*Zone{string(added.Origin): added}); e.Len() != 1 || e.Get(added.Origin) != added {
		t.Error("With on a nil set")
	}
	for _, form := range []string{"\x05c%04d\x07example\x03com\x00", "\x07example\x05c%04d\x00"} {
		used := map[int]bool{}
		for i := range 10000 {
			used[ShardOf([]byte(fmt.Sprintf(form, i)))] = true
		}
		if len(used) < SetShards*3/4 {
			t.Errorf("%q: 10,000 origins in %d shards of %d", form, len(used), SetShards)
		}
	}
}

// BenchmarkShardOf: the cost ShardOf adds to each label's probe on the
// query path.
func BenchmarkShardOf(b *testing.B) {
	names := [][]byte{[]byte("\x03www\x07example\x03com\x00"), []byte("\x07example\x03com\x00"), []byte("\x03com\x00")}
	n := 0
	for b.Loop() {
		for _, name := range names {
			n += ShardOf(name)
		}
	}
	if n < 0 {
		b.Fatal(n)
	}
}
