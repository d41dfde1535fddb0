package difftest

import (
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// TestGenerateDeterministic checks that the generator gives the same list
// twice and covers each feature the brief lists, so a change to the zones
// or the generator that drops a category fails here rather than silently
// shrinking the differential test.
func TestGenerateDeterministic(t *testing.T) {
	zones, err := TestZones("testdata")
	if err != nil {
		t.Fatal(err)
	}
	a, b := Generate(zones), Generate(zones)
	if !slices.Equal(a, b) {
		t.Fatal("two runs of Generate gave different query lists")
	}
	if len(a) < 2000 || len(a) > 6000 {
		t.Errorf("generated %d queries, want a few thousand", len(a))
	}
	cats := map[string]int{}
	var mixed, tcp, noedns, e4096, anyQ int
	for _, q := range a {
		cats[q.Category]++
		if q.Name != strings.ToLower(q.Name) {
			mixed++
		}
		if q.Net == "tcp" {
			tcp++
		}
		if q.EDNS == 0 {
			noedns++
		}
		if q.EDNS == 4096 {
			e4096++
		}
		if q.Type == dns.TypeANY {
			anyQ++
		}
	}
	for _, c := range []string{"apex", "wildcard-owner", "wildcard-synth", "empty-non-terminal",
		"delegation", "below-delegation", "glue", "cname", "dname", "dname-below", "nxdomain", "outside", "existing", "huge"} {
		if cats[c] == 0 {
			t.Errorf("no query in category %q", c)
		}
	}
	for what, n := range map[string]int{"mixed-case": mixed, "tcp": tcp, "no-EDNS": noedns, "EDNS 4096": e4096, "ANY": anyQ} {
		if n == 0 {
			t.Errorf("no %s query", what)
		}
	}
	t.Logf("%d queries: %v", len(a), cats)
}

// TestExpandGenerateTTL checks that $GENERATE records inherit $TTL as BIND
// documents, not the miekg/dns default of 3600 s.
func TestExpandGenerateTTL(t *testing.T) {
	z, err := LoadZone("testdata/gen.test.zone", "gen.test.")
	if err != nil {
		t.Fatal(err)
	}
	var generated, included int
	for _, rr := range z.Records {
		name := rr.Header().Name
		switch {
		case strings.HasPrefix(name, "host"), strings.HasSuffix(name, ".rev.gen.test."):
			generated++
			if rr.Header().Ttl != 300 {
				t.Errorf("%s: TTL %d, want the $TTL 300", rr, rr.Header().Ttl)
			}
		case strings.HasPrefix(name, "inc."):
			included++
		}
	}
	if generated != 40 || included != 2 {
		t.Errorf("got %d generated and %d included records, want 40 and 2", generated, included)
	}
}
