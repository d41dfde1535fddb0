package zone

import (
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
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

// TestNSECCoverZeroOctet: `b.a.z.` and `a\000b.z.` are different names in
// canonical order (RFC 4034 §6.1: the label "a" sorts before "a\000b"), so
// each matches its own NSEC and the names between them are covered by the
// right one. The zone's own key gave both names the key "z\0a\0b\0", and
// one of the two matched the other's NSEC.
func TestNSECCoverZeroOctet(t *testing.T) {
	const text = `$ORIGIN z.
$TTL 300
@ SOA ns hm 1 2 3 4 5
@ NS ns
@ DNSKEY 257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==
@ NSEC a.z. NS SOA NSEC DNSKEY
a NSEC b.a.z. NSEC
b.a NSEC a\000b.z. NSEC
a\000b NSEC ns.z. NSEC
ns A 192.0.2.1
ns NSEC z. A NSEC
`
	z, err := Read(strings.NewReader(text), "z.zone", "z.")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ qname, cover string }{
		{"b.a.z.", "b.a.z."},
		{"a\\000b.z.", "a\\000b.z."},
		{"c.a.z.", "b.a.z."},
		{"x.b.a.z.", "b.a.z."},
		{"a\\000a.z.", "b.a.z."},
		{"a\\000c.z.", "a\\000b.z."},
		{"x.a\\000b.z.", "a\\000b.z."},
		{"a.z.", "a.z."},
		{"b.z.", "a\\000b.z."},
	} {
		var w [256]byte
		n, err := dns.PackDomainName(tc.qname, w[:], 0, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		name := w[:n]
		wire.Lower(name, name)
		got := z.NSECCover(wire.CanonicalKey(nil, name))
		if got == nil {
			t.Fatalf("no NSEC covers %s", tc.qname)
		}
		if NameString(got.Name) != tc.cover {
			t.Errorf("NSEC covering %s: %s, want %s", tc.qname, NameString(got.Name), tc.cover)
		} else if got.Get(dns.TypeNSEC) == nil {
			t.Errorf("%s: cover %s has no NSEC", tc.qname, tc.cover)
		}
	}
}
