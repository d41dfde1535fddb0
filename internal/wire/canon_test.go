package wire

import (
	"bytes"
	"math/rand/v2"
	"sort"
	"testing"
)

// canonicalCompare is RFC 4034 §6.1 as written: labels compared from the
// rightmost, each as an octet string with upper case folded, a missing
// label (fewer labels) sorting first. It is the oracle for CanonicalKey.
func canonicalCompare(a, b []byte) int {
	la, lb := splitLabels(a), splitLabels(b)
	for i, j := len(la)-1, len(lb)-1; ; i, j = i-1, j-1 {
		switch {
		case i < 0 && j < 0:
			return 0
		case i < 0:
			return -1
		case j < 0:
			return 1
		}
		x, y := make([]byte, len(la[i])), make([]byte, len(lb[j]))
		Lower(x, la[i])
		Lower(y, lb[j])
		if c := bytes.Compare(x, y); c != 0 {
			return c
		}
	}
}

func splitLabels(name []byte) [][]byte {
	var ls [][]byte
	for i := 0; name[i] != 0; i += int(name[i]) + 1 {
		ls = append(ls, name[i+1:i+1+int(name[i])])
	}
	return ls
}

func key(t *testing.T, name string) string {
	return string(CanonicalKey(nil, wireName(t, name)))
}

// TestCanonicalOrder sorts the example of RFC 4034 §6.1 by key, from the
// reverse order and shuffled, and checks names with \000, \001 and upper
// case: `b.a.` and `a\000b.` must not share a key (zone.CanonicalKey gave
// both "a\0b\0").
func TestCanonicalOrder(t *testing.T) {
	want := []string{"example.", "a.example.", "yljkjljk.a.example.", "Z.a.example.",
		"zABC.a.EXAMPLE.", "z.example.", "\\001.z.example.", "*.z.example.", "\\200.z.example."}
	for _, start := range [][]string{
		{want[8], want[7], want[6], want[5], want[4], want[3], want[2], want[1], want[0]},
		{want[4], want[0], want[8], want[2], want[6], want[1], want[5], want[3], want[7]},
	} {
		got := append([]string(nil), start...)
		sort.Slice(got, func(i, j int) bool { return key(t, got[i]) < key(t, got[j]) })
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("sorted by key:\n got %q\nwant %q", got, want)
			}
		}
	}
	for _, tc := range []struct {
		a, b string
		cmp  int
	}{
		{"b.a.", "a\\000b.", -1}, // "a" is a prefix of "a\000b"
		{"a.", "a\\000.", -1},
		{"a\\000.", "a\\000b.", -1},
		{"a\\000.", "a\\001.", -1},
		{"a\\001.", "a\\002.", -1},
		{"b.a\\000.", "a\\001.", -1},
		{"\\000.", "a.", -1},
		{"x.\\000.", "\\000\\000.", -1},
		{"A.EXAMPLE.", "a.example.", 0},
		{"a.Example.", "B.example.", -1},
		{"a.example.", "[.example.", 1}, // '[' (0x5B) sorts below 'a' but above 'A'
		{"z.", "\\200.", -1},
		{".", "a.", -1},
	} {
		ka, kb := key(t, tc.a), key(t, tc.b)
		got := bytesCmp(ka, kb)
		if got != tc.cmp {
			t.Errorf("%s vs %s: keys compare %d, want %d (%q, %q)", tc.a, tc.b, got, tc.cmp, ka, kb)
		}
		if o := canonicalCompare(wireName(t, tc.a), wireName(t, tc.b)); o != tc.cmp {
			t.Errorf("%s vs %s: the oracle says %d, the table %d", tc.a, tc.b, o, tc.cmp)
		}
	}
}

func bytesCmp(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestCanonicalKeyMatchesOracle compares key order with the RFC's
// definition on random names built from octets that matter: 0x00, 0x01,
// 0x02, upper and lower case, '[' (between them), 0xFF.
func TestCanonicalKeyMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(4034, 61))
	alphabet := []byte{0, 1, 2, 'A', 'B', 'a', 'b', '[', 0xFF}
	randName := func() []byte {
		var w []byte
		for n := rng.IntN(4); n > 0; n-- {
			l := 1 + rng.IntN(3)
			w = append(w, byte(l))
			for range l {
				w = append(w, alphabet[rng.IntN(len(alphabet))])
			}
		}
		return append(w, 0)
	}
	for range 20000 {
		a, b := randName(), randName()
		want := canonicalCompare(a, b)
		if got := bytesCmp(string(CanonicalKey(nil, a)), string(CanonicalKey(nil, b))); got != want {
			t.Fatalf("% x vs % x: keys compare %d, RFC 4034 order %d", a, b, got, want)
		}
	}
}

func TestKeyParentAndBelow(t *testing.T) {
	for _, tc := range []struct{ name, parent string }{
		{"www.example.", "example."},
		{"\\000x.example.", "example."},
		{"x\\000.\\001.example.", "\\001.example."},
		{"example.", "."},
	} {
		k, pk := key(t, tc.name), key(t, tc.parent)
		if p, ok := KeyParent(k); !ok || p != pk {
			t.Errorf("KeyParent(%s) = %q %v, want %q", tc.name, p, ok, pk)
		}
		if p, ok := KeyParent([]byte(k)); !ok || string(p) != pk {
			t.Errorf("KeyParent([]byte %s) = %q %v, want %q", tc.name, p, ok, pk)
		}
		if !KeyBelow(k, pk) || KeyBelow(pk, k) || KeyBelow(k, k) {
			t.Errorf("KeyBelow(%s, %s) wrong", tc.name, tc.parent)
		}
	}
	if _, ok := KeyParent(key(t, ".")); ok {
		t.Error("the root has a parent")
	}
	// A name whose last label extends the other's is not below it.
	if KeyBelow(key(t, "ab.example."), key(t, "a.example.")) || KeyBelow(key(t, "a\\000.b."), key(t, "a.b.")) {
		t.Error("KeyBelow across a label boundary")
	}
	if !KeyBelow(key(t, "x.a\\000.b."), key(t, "a\\000.b.")) {
		t.Error("KeyBelow with an escaped octet")
	}
}

// TestCanonicalLessAllocs: the validator's NSEC checks compare names
// several times per proof; a comparison allocates nothing.
func TestCanonicalLessAllocs(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { CanonicalLess("a.example.", "B.a.example.") }); n != 0 {
		t.Errorf("%v allocations per comparison", n)
	}
}
