package rrl

import (
	"net/netip"
	"testing"
	"time"
)

const sec = int64(time.Second)

// TestAccount follows accounts through steps at injected times: the
// burst of a second's worth, the rate, the debt bounded by the window,
// slip, and accounts kept apart.
func TestAccount(t *testing.T) {
	type step struct {
		at    int64 // nanoseconds
		key   uint64
		n     int   // responses from at
		every int64 // apart by this
		want  [3]int
	}
	cases := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{"burst then drop", Config{Rate: 5, Window: 2 * time.Second, Slip: 0},
			[]step{{0, 7, 8, 0, [3]int{5, 3, 0}}}},
		{"slip 2", Config{Rate: 5, Window: 2 * time.Second, Slip: 2},
			[]step{{0, 7, 15, 0, [3]int{5, 5, 5}}}},
		{"slip 1: every drop truncated", Config{Rate: 5, Window: 2 * time.Second, Slip: 1},
			[]step{{0, 7, 9, 0, [3]int{5, 0, 4}}}},
		{"refill at the rate", Config{Rate: 10, Window: time.Second, Slip: 0},
			[]step{{0, 7, 10, 0, [3]int{10, 0, 0}}, {sec / 2, 7, 10, 0, [3]int{5, 5, 0}}}},
		{"credit capped at a second's worth", Config{Rate: 10, Window: time.Second, Slip: 0},
			[]step{{0, 7, 1, 0, [3]int{1, 0, 0}}, {100 * sec, 7, 12, 0, [3]int{10, 2, 0}}}},
		{"debt keeps a flood limited", Config{Rate: 10, Window: 3 * time.Second, Slip: 0},
			// 100 a second for 5 s: 11 pass in the first 100 ms (10
			// and the credit of 100 ms),
			// then nothing (the debt stays at the window's worth);
			// once the flood stops the client is answered again
			// after the window.
			[]step{{0, 7, 500, sec / 100, [3]int{11, 489, 0}},
				{5*sec + 2*sec, 7, 1, 0, [3]int{0, 1, 0}},
				{5*sec + 3*sec + 3*sec/10, 7, 1, 0, [3]int{1, 0, 0}}}},
		{"accounts apart", Config{Rate: 3, Window: time.Second, Slip: 0},
			[]step{{0, 7, 5, 0, [3]int{3, 2, 0}}, {0, 8, 5, 0, [3]int{3, 2, 0}}, {0, 7, 1, 0, [3]int{0, 1, 0}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := New(c.cfg)
			for i, s := range c.steps {
				var got [3]int
				for j := range s.n {
					got[l.Account(s.key, s.at+int64(j)*s.every)]++
				}
				if got != s.want {
					t.Errorf("step %d: pass, drop, slip = %v, want %v", i, got, s.want)
				}
			}
		})
	}
}

// TestEviction: accounts of more keys than a set holds take the
// slots of the least indebted, so that a flooding account is kept.
func TestEviction(t *testing.T) {
	l := New(Config{Rate: 1, Window: 10 * time.Second})
	flood := uint64(TableSize * 100) // set 0
	for range 5 {
		l.Account(flood, 0)
	}
	// Other keys of the same set, each answered once (no debt).
	for i := uint64(1); i <= 3*Ways; i++ {
		if v := l.Account(i*TableSize, sec); v != Pass {
			t.Fatalf("key %d: %v", i, v)
		}
	}
	if v := l.Account(flood, 2*sec); v == Pass {
		t.Error("the flooding account was evicted by answered ones")
	}
}

// TestKey: the prefix, kind, type and name (case-folded, through
// compression) make the key.
func TestKey(t *testing.T) {
	l := New(Config{Rate: 1, Window: time.Second, IPv4Prefix: 24, IPv6Prefix: 56})
	name := []byte("\x03www\x07example\x04test\x00")
	upper := []byte("\x03WWW\x07Example\x04TEST\x00")
	// "www" then a pointer to "example.test." at offset 20.
	comp := append([]byte("\x03www\xc0\x14"), make([]byte, 14)...)
	comp = append(comp, "\x07example\x04test\x00"...)
	a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	key := func(addr string, k Kind, qt uint16, msg []byte, off int) uint64 {
		t.Helper()
		h, ok := l.Key(a(addr), k, qt, msg, off)
		if !ok {
			t.Fatalf("Key(%s) not ok", addr)
		}
		return h
	}
	base := key("192.0.2.1", Positive, 1, name, 0)
	same := []struct {
		what string
		h    uint64
	}{
		{"same /24", key("192.0.2.200", Positive, 1, name, 0)},
		{"IPv4-mapped", key("::ffff:192.0.2.9", Positive, 1, name, 0)},
		{"case", key("192.0.2.1", Positive, 1, upper, 0)},
		{"compressed", key("192.0.2.1", Positive, 1, comp, 0)},
	}
	for _, s := range same {
		if s.h != base {
			t.Errorf("%s: key differs", s.what)
		}
	}
	differ := []struct {
		what string
		h    uint64
	}{
		{"other /24", key("192.0.3.1", Positive, 1, name, 0)},
		{"type", key("192.0.2.1", Positive, 28, name, 0)},
		{"kind", key("192.0.2.1", NoData, 1, name, 0)},
		{"name", key("192.0.2.1", Positive, 1, name, 4)},
	}
	for _, d := range differ {
		if d.h == base {
			t.Errorf("%s: same key", d.what)
		}
	}
	if key("192.0.2.1", NXDomain, 1, name, 0) != key("192.0.2.1", NXDomain, 28, name, 0) {
		t.Error("NXDOMAIN keyed by type")
	}
	if key("192.0.2.1", Error, 1, name, 0) != key("192.0.2.7", Error, 28, upper, 4) {
		t.Error("errors keyed by more than the prefix")
	}
	if key("2001:db8:0:ff::1", Positive, 1, name, 0) != key("2001:db8:0:ff:1::2", Positive, 1, name, 0) {
		t.Error("same /56 keyed apart")
	}
	if key("2001:db8:0:ff::1", Positive, 1, name, 0) == key("2001:db8:0:100::1", Positive, 1, name, 0) {
		t.Error("other /56 keyed together")
	}
	for _, bad := range [][]byte{[]byte("\x03ww"), []byte("\xc0\x00"), []byte("\x80a\x00")} {
		if _, ok := l.Key(a("192.0.2.1"), Positive, 1, bad, 0); ok {
			t.Errorf("Key(%q) ok", bad)
		}
	}
}
