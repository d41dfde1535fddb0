package zone

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"testing"

	"github.com/tern-dns/tern/internal/wire"
)

func testNodes(n int) []*Node {
	nodes := make([]*Node, n)
	for i := range nodes {
		w, err := wire.NameWire(fmt.Sprintf("n%d.example.test.", i))
		if err != nil {
			panic(err)
		}
		nodes[i] = &Node{Name: w}
	}
	return nodes
}

// TestIndex: every node is found by its name, absent names are not, for
// sizes around the table's powers of two; the zero index finds nothing.
func TestIndex(t *testing.T) {
	var zero index
	if zero.get([]byte{0}) != nil {
		t.Fatal("zero index found a node")
	}
	for _, n := range []int{0, 1, 2, 3, 4, 5, 63, 64, 65, 1000} {
		nodes := testNodes(n + 50)
		x := newIndex(0)
		for _, nd := range nodes[:n] {
			_, h := x.find(nd.Name)
			x.add(nd, h)
		}
		if used := x.used(); used != n || x.count != n || len(x.slots) < 2*n || len(x.slots) > max(4*n, 2) {
			t.Fatalf("n=%d: %d slots used of %d", n, used, len(x.slots))
		}
		for _, nd := range nodes[:n] {
			if got := x.get(nd.Name); got != nd {
				t.Fatalf("n=%d: get(%q) = %v", n, nd.Name, got)
			}
		}
		for _, nd := range nodes[n:] {
			if got := x.get(nd.Name); got != nil {
				t.Fatalf("n=%d: absent %q found %q", n, nd.Name, got.Name)
			}
		}
		// A hint far above the count leaves a table that fit shrinks to
		// the smallest that is at most half full, with every name found.
		y := newIndex(64 * (n + 1))
		for _, nd := range nodes[:n] {
			_, h := y.find(nd.Name)
			y.add(nd, h)
		}
		y.fit()
		if want := max(uint64(1)<<bits.Len64(uint64(max(2*n, 2)-1)), 2); uint64(len(y.slots)) != want {
			t.Fatalf("n=%d: %d slots after fit, want %d", n, len(y.slots), want)
		}
		for _, nd := range nodes[:n] {
			if y.get(nd.Name) != nd {
				t.Fatalf("n=%d: %q lost by fit", n, nd.Name)
			}
		}
	}
}

// TestIndexHashCollision: a slot whose hash matches but whose node has
// another name is passed over; the probe goes on to the right node.
func TestIndexHashCollision(t *testing.T) {
	nodes := testNodes(2)
	a, b := nodes[0], nodes[1]
	x := index{slots: make([]indexSlot, 4), mask: 3, seed: maphash.MakeSeed()}
	h := maphash.Bytes(x.seed, a.Name)
	i := h & x.mask
	x.slots[i] = indexSlot{h, b} // b posing under a's hash
	x.slots[(i+1)&x.mask] = indexSlot{h, a}
	if got := x.get(a.Name); got != a {
		t.Fatalf("get(a) = %q, want a", got.Name)
	}
	x.slots[(i+1)&x.mask] = indexSlot{}
	if got := x.get(a.Name); got != nil {
		t.Fatalf("get(a) without a = %q, want nil", got.Name)
	}
}

func (x *index) used() int {
	n := 0
	for _, s := range x.slots {
		if s.node != nil {
			n++
		}
	}
	return n
}
