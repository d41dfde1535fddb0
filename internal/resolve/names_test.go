package resolve

import (
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// subDomainCases are pairs (parent, child) whose answer from subDomain
// must be dns.IsSubDomain's; also the fuzz target's seeds.
var subDomainCases = [][2]string{
	{".", "."}, {".", "a."}, {"a.", "."}, {"example.tld.", "example.tld."},
	{"example.tld.", "www.example.tld."}, {"example.tld.", "wwwexample.tld."},
	{"Example.TLD.", "www.example.tld."}, {"example.tld.", "WWW.EXAMPLE.TLD."},
	{"tld.", "example.tld."}, {"example.tld.", "tld."}, {"b.c.", "a.b.c."},
	{"b.c.", "ab.c."}, {"example.tld", "www.example.tld."}, {"example.tld.", "www.example.tld"},
	{"a\\.b.c.", "x.a\\.b.c."}, {"b.c.", "a\\.b.c."}, {"b.c.", "a\\098.c."},
	{"c.", "a..c."}, {"", "a."}, {"a.", ""}, {"\u212a.", "k."}, {"k.", "\u212a."},
	{"é.", "É."}, {"x.", ".x."},
}

// TestSubDomain: subDomain answers as dns.IsSubDomain, which it replaces
// on the hot path.
func TestSubDomain(t *testing.T) {
	for _, c := range subDomainCases {
		if got, want := subDomain(c[0], c[1]), dns.IsSubDomain(c[0], c[1]); got != want {
			t.Errorf("subDomain(%q, %q) = %v, dns.IsSubDomain %v", c[0], c[1], got, want)
		}
	}
	// plainName against its definition, for names of dots, backslashes
	// and letters placed in every way over 18 octets (two words and a
	// tail) in pairs.
	plain := func(n string) bool {
		return n == "." || (len(n) > 1 && n[0] != '.' && n[len(n)-1] == '.' && !strings.Contains(n, "..") && !strings.Contains(n, "\\"))
	}
	base := []byte("abcdefghijklmnopq.")
	for i := range base {
		for j := i; j < len(base); j++ {
			for _, ci := range []byte(".\\a") {
				for _, cj := range []byte(".\\A") {
					n := append([]byte(nil), base...)
					n[i], n[j] = ci, cj
					if got, want := plainName(string(n)), plain(string(n)); got != want {
						t.Fatalf("plainName(%q) = %v, want %v", n, got, want)
					}
				}
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { subDomain("example.tld.", "www.example.tld.") }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// FuzzSubDomain: subDomain answers as dns.IsSubDomain for any two
// strings.
func FuzzSubDomain(f *testing.F) {
	for _, c := range subDomainCases {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, parent, child string) {
		if got, want := subDomain(parent, child), dns.IsSubDomain(parent, child); got != want {
			t.Fatalf("subDomain(%q, %q) = %v, dns.IsSubDomain %v", parent, child, got, want)
		}
	})
}

// canonicalCases are names whose canonical form must be
// dns.CanonicalName's; also the fuzz target's seeds.
var canonicalCases = []string{
	"", ".", "a.", "A.", "example.tld", "Example.TLD.", "www.example.tld.",
	"a\\.B.", "\\065.", "é.", "\xff.", "\u212a.", "x..",
}

// TestCanonical: canonical is dns.CanonicalName, without allocating for a
// name that already is canonical.
func TestCanonical(t *testing.T) {
	for _, n := range canonicalCases {
		if got, want := canonical(n), dns.CanonicalName(n); got != want {
			t.Errorf("canonical(%q) = %q, dns.CanonicalName %q", n, got, want)
		}
	}
	// Every octet at every place of a name of two words and a tail,
	// and of one shorter than a word.
	for _, base := range []string{"abcdefghijklmnopq.", "abcdef."} {
		for i := range len(base) - 1 {
			for c := range 256 {
				n := base[:i] + string([]byte{byte(c)}) + base[i+1:]
				if got, want := canonical(n), dns.CanonicalName(n); got != want {
					t.Fatalf("canonical(%q) = %q, dns.CanonicalName %q", n, got, want)
				}
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { canonical("www.example.tld.") }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// FuzzCanonical: canonical is dns.CanonicalName for any string.
func FuzzCanonical(f *testing.F) {
	for _, n := range canonicalCases {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := canonical(name), dns.CanonicalName(name); got != want {
			t.Fatalf("canonical(%q) = %q, dns.CanonicalName %q", name, got, want)
		}
	})
}
