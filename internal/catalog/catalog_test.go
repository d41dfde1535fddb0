package catalog

import (
	"reflect"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest"
)

// TestIDStable: a member's ID (SHA-1 of its wire form) is the same whatever
// the case or the trailing dot, and differs between members.
func TestIDStable(t *testing.T) {
	got := ID("Example.COM.")
	if got != ID("example.com") || len(got) != 40 {
		t.Fatalf("ID not stable or not SHA-1 hex: %s / %s", got, ID("example.com"))
	}
	if ID("a.example.") == ID("b.example.") {
		t.Fatal("two members with one ID")
	}
}

func TestBuildParse(t *testing.T) {
	recs := Build("Catalog.Example", 7, []string{"b.test.", "a.test", "A.TEST."})
	var ptrs, txts, ns int
	for _, rr := range recs {
		switch r := rr.(type) {
		case *dns.SOA:
			if r.Serial != 7 || r.Hdr.Name != "catalog.example." {
				t.Errorf("SOA %v", r)
			}
		case *dns.NS:
			ns++
			if r.Ns != "invalid." {
				t.Errorf("NS %v, want invalid. (RFC 9432 §4.1)", r)
			}
		case *dns.TXT:
			txts++
			if r.Hdr.Name != "version.catalog.example." || r.Txt[0] != "2" {
				t.Errorf("version %v", r)
			}
		case *dns.PTR:
			ptrs++
			if !strings.HasSuffix(r.Hdr.Name, ".zones.catalog.example.") || r.Hdr.Name != ID(r.Ptr)+".zones.catalog.example." {
				t.Errorf("member %v", r)
			}
		}
	}
	if ptrs != 2 || txts != 1 || ns != 1 {
		t.Fatalf("ptrs %d txts %d ns %d, want 2 1 1", ptrs, txts, ns)
	}
	// What Build makes passes the wire: pack and unpack each record.
	for _, rr := range recs {
		buf := make([]byte, 512)
		n, err := dns.PackRR(rr, buf, 0, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := dns.UnpackRR(buf[:n], 0); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Parse("catalog.example.", recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Members) != 2 || c.Members["a.test."].ID != ID("a.test.") || len(c.Ignored) != 0 {
		t.Fatalf("parsed %+v", c)
	}
}

func TestParse(t *testing.T) {
	head := []string{"cat. 0 IN SOA invalid. invalid. 1 60 60 1209600 0", "cat. 0 IN NS invalid."}
	ver := "version.cat. 0 IN TXT \"2\""
	for _, tc := range []struct {
		name    string
		lines   []string
		err     bool
		members map[string]Member
		ignored int
	}{
		{name: "no version", lines: []string{"m1.zones.cat. 0 IN PTR a.test."}, err: true},
		{name: "version 1", lines: []string{"version.cat. 0 IN TXT \"1\""}, err: true},
		{name: "two versions", lines: []string{ver, "version.cat. 0 IN TXT \"3\""}, err: true},
		{name: "empty", lines: []string{ver}, members: map[string]Member{}},
		{name: "members and properties", lines: []string{ver,
			"m1.zones.cat. 0 IN PTR A.test.",
			"coo.m1.zones.cat. 0 IN PTR other.cat.",
			"group.m1.zones.cat. 0 IN TXT \"blue\"",
			"M2.zones.cat. 0 IN PTR b.test.",
			"unknown.m2.zones.cat. 0 IN TXT \"x\"",
			"zones.cat. 0 IN PTR c.test.",
			"m3.zones.cat. 0 IN TXT \"not a ptr\"",
		}, members: map[string]Member{
			"a.test.": {Zone: "a.test.", ID: "m1", COO: "other.cat.", Group: []string{"blue"}},
			"b.test.": {Zone: "b.test.", ID: "m2"},
		}},
		{name: "two PTRs at one ID", lines: []string{ver,
			"m1.zones.cat. 0 IN PTR a.test.", "m1.zones.cat. 0 IN PTR b.test.", "m2.zones.cat. 0 IN PTR c.test."},
			members: map[string]Member{"c.test.": {Zone: "c.test.", ID: "m2"}}, ignored: 1},
		{name: "one zone under two IDs", lines: []string{ver,
			"m1.zones.cat. 0 IN PTR a.test.", "m2.zones.cat. 0 IN PTR a.test."},
			members: map[string]Member{}, ignored: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("cat.", dnstest.RRs(t, append(append([]string{}, head...), tc.lines...)...))
			if tc.err {
				if err == nil {
					t.Fatal("invalid catalog accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.Members, tc.members) || len(c.Ignored) != tc.ignored {
				t.Fatalf("members %+v ignored %q", c.Members, c.Ignored)
			}
		})
	}
}

func TestChanges(t *testing.T) {
	cat := func(origin string, ms ...Member) *Catalog {
		c := &Catalog{Origin: origin, Members: map[string]Member{}}
		for _, m := range ms {
			c.Members[m.Zone] = m
		}
		return c
	}
	a := Member{Zone: "a.", ID: "1"}
	b := Member{Zone: "b.", ID: "2"}
	for _, tc := range []struct {
		name       string
		prev, next *Catalog
		owner      Owner
		want       []Change
	}{
		{name: "first version", next: cat("cat.", a, b), want: []Change{{Add, "a."}, {Add, "b."}}},
		{name: "unchanged", prev: cat("cat.", a), next: cat("cat.", a)},
		{name: "added and removed", prev: cat("cat.", a), next: cat("cat.", b),
			want: []Change{{Remove, "a."}, {Add, "b."}}},
		{name: "ID changed: reset (§5.5)", prev: cat("cat.", a), next: cat("cat.", Member{Zone: "a.", ID: "9"}),
			want: []Change{{Reset, "a."}}},
		{name: "left with coo: released (§5.4)", prev: cat("cat.", Member{Zone: "a.", ID: "1", COO: "new."}),
			next: cat("cat."), want: []Change{{Release, "a."}}},
		{name: "owned elsewhere without coo: not taken", next: cat("cat.", a),
			owner: func(string) (string, Member, bool) { return "other.", a, true }},
		{name: "owned elsewhere, coo to us: adopted", next: cat("cat.", a),
			owner: func(string) (string, Member, bool) {
				return "other.", Member{Zone: "a.", ID: "1", COO: "cat."}, true
			}, want: []Change{{Adopt, "a."}}},
		{name: "owned by us already", next: cat("cat.", a),
			owner: func(string) (string, Member, bool) { return "cat.", a, true }, want: []Change{{Add, "a."}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Changes(tc.prev, tc.next, tc.owner)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzParse: any zone text parses or is refused, never panics, and what it
// accepts gives a consistent member set and Changes from nothing adds each.
func FuzzParse(f *testing.F) {
	f.Add("version.cat. 0 IN TXT \"2\"\nm1.zones.cat. 0 IN PTR a.test.\ncoo.m1.zones.cat. 0 IN PTR x.\n")
	f.Add("version.cat. 0 IN TXT \"1\"\n")
	f.Add("version.cat. 0 IN TXT \"2\"\nm1.zones.cat. 0 IN PTR a.\nm2.zones.cat. 0 IN PTR a.\n")
	f.Add("version.cat. 0 IN TXT \"2\"\nzones.cat. 0 IN PTR a.\ngroup.m1.zones.cat. 0 IN TXT \"g\"\n")
	f.Fuzz(func(t *testing.T, text string) {
		zp := dns.NewZoneParser(strings.NewReader(text), "cat.", "")
		var in []dns.RR
		for rr, ok := zp.Next(); ok && len(in) < 1000; rr, ok = zp.Next() {
			in = append(in, rr)
		}
		c, err := Parse("cat.", in)
		if err != nil {
			return
		}
		for zone, m := range c.Members {
			if m.Zone != zone || m.ID == "" {
				t.Fatalf("member %q: %+v", zone, m)
			}
		}
		if ch := Changes(nil, c, nil); len(ch) != len(c.Members) {
			t.Fatalf("%d changes for %d members", len(ch), len(c.Members))
		}
	})
}
