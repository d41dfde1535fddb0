package zone

import (
	"strings"
	"testing"
)

// FuzzCompile feeds arbitrary zone text to the parser and compiler: they
// may reject it, but must not panic, and a compiled zone must answer
// lookups of its own names.
func FuzzCompile(f *testing.F) {
	f.Add(head)
	f.Add(head + "sub NS ns.sub\nns.sub A 192.0.2.3\n*.wild A 192.0.2.4\n")
	f.Add(head + "a CNAME b\nb DNAME c\nx.b A 1.2.3.4\n")
	f.Add(head + "mx MX 10 ns1\nsrv SRV 1 2 3 ns1\nunk TYPE65280 \\# 2 0102\n")
	f.Add("$ORIGIN example.test.\n$GENERATE 1-3 h$ A 10.0.0.$\n")
	// Syntax errors, after which the parser goes on (see parser.run).
	f.Add(head + "a FOO 1\n  A 1.2.3.4\nb MX ( ten\n mail )\nc TXT \"open\nd A 192.0.2.9\n")
	f.Add(head + "$TTL 7\n$ORIGIN sub\nx A 999.0.0.1\n  AAAA ::1\n(\n")
	// Warnings, not errors (see warning.go): an out-of-zone record,
	// an RRset with different TTLs, an in-zone NS target without an address.
	f.Add(head + "other.invalid. A 192.0.2.1\nt 10 A 192.0.2.1\nt 20 A 192.0.2.2\nsub NS nowhere.sub\n")
	f.Fuzz(func(t *testing.T, text string) {
		if strings.Contains(text, "$INCLUDE") {
			return // no file system access from fuzz inputs
		}
		recs, err := Parse(strings.NewReader(text), "fuzz.zone", "example.test.")
		if err != nil {
			return
		}
		z, err := Compile("example.test.", recs)
		if err != nil {
			return
		}
		count := 0
		z.Nodes(func(n *Node) {
			count++
			if z.Lookup(n.Name) != n {
				t.Fatalf("node %q not found by its own name", n.Name)
			}
			// A name one byte longer is a different name, and absent
			// unless the zone has it.
			longer := append([]byte{1, 'q'}, n.Name...)
			if m := z.Lookup(longer); m != nil && string(m.Name) != string(longer) {
				t.Fatalf("lookup %q found node %q", longer, m.Name)
			}
		})
		if count != z.Names {
			t.Fatalf("Nodes visited %d nodes, Names is %d", count, z.Names)
		}
	})
}
